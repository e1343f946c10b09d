// Option names a runtime does not know, top level and nested, are named in one warn line of the
// runtime's logger and ignored: a typo leaves the default in place and says so, a newer host's
// option never stops the runtime. The known names (lib/option-names.js) are checked against the
// option structs as index.d.ts declares them, so the list cannot drift from the binding.
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { pkg, waitFor } from './helpers.mjs'

const require = createRequire(import.meta.url)
const names = require('../lib/option-names.js')
const dropIn = require('../lib/drop-in.js')
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

const runtimes = []
afterEach(async () => {
  while (runtimes.length) await runtimes.pop().stop()
  vi.restoreAllMocks()
})

// Port 9 (discard): nothing is fetched before the test stops the runtime.
const OPEN_CODE = { baseUrl: 'http://127.0.0.1:9' }

function created(create, options) {
  const lines = []
  const runtime = create({ ...options, logger: (level, message) => lines.push([level, message]) })
  runtimes.push(runtime)
  return { runtime, lines }
}

const idle = (sessionID) => ({ type: 'session.status', properties: { sessionID, status: { type: 'idle' } } })

describe('unknown option names', () => {
  it('the goal runtime names each unknown name, top level and nested, in one warn line and goes on with its defaults', async () => {
    const { runtime, lines } = created(pkg.createSessionGoalRuntime, {
      openCode: { ...OPEN_CODE, baseURL: 'http://elsewhere' },
      idleQuietMS: 5,
      tunables: { kickoffQuietMs: 100, evidence: { maxFiles: 3, maxFile: 2 }, sweepInterval: 1 },
      smallModel: { providerID: 'p', modelID: 'm', model: 'x' },
      newerHostOption: { anything: true },
    })
    const warnings = lines.filter(([level]) => level === 'warn')
    expect(warnings).toHaveLength(1)
    const [, line] = warnings[0]
    expect(line).toBe(
      '[session-goal] unknown options ignored: openCode.baseURL (did you mean baseUrl?), idleQuietMS (did you mean idleQuietMs?), ' +
        'tunables.evidence.maxFile, tunables.sweepInterval, smallModel.model, newerHostOption',
    )
    // The typo was ignored: the quiet window is the default, not 5 ms. The payload is handed to
    // the runtime's own thread, so the timer shows in the snapshot a moment later.
    runtime.processPayload(idle('ses_unknown'))
    const armed = () => runtime.snapshot().sessions.find((s) => s.sessionId === 'ses_unknown')?.dueInMs
    await waitFor(() => armed() !== undefined)
    const due = armed()
    expect(due).toBeGreaterThan(pkg.goalRuntimeDefaults().idleQuietMs - 1000)
  })

  it('every known name is silent, OpenChamber flat names included', () => {
    const flatTunables = { idleQuietMs: 20_000, kickoffQuietMs: 3000, maxAutoTurns: 5, deriveCriteria: true, evidence: { maxFiles: 10 } }
    const { lines } = created(pkg.createSessionGoalRuntime, {
      buildOpenCodeUrl: (apiPath) => `${OPEN_CODE.baseUrl}${apiPath}`,
      getOpenCodeAuthHeaders: () => ({}),
      fetchTimeoutMs: 1000,
      getSmallModelService: async () => null,
      emitGoalNotification: () => {},
      settings: { dataDir: '/tmp/unused-data-dir' },
      directories: [],
      recoverOnStart: false,
      ...flatTunables,
    })
    expect(lines.filter(([level]) => level === 'warn')).toEqual([])
    const nested = created(pkg.createSessionGoalRuntime, { openCode: { ...OPEN_CODE, headers: {}, fetchTimeoutMs: 1000 }, smallModel: { generate: async () => ({}) }, tunables: flatTunables })
    expect(nested.lines.filter(([level]) => level === 'warn')).toEqual([])
  })

  it('the assist runtime names its own unknown names', () => {
    const { lines } = created(pkg.createSessionAssistRuntime, { openCode: OPEN_CODE, quietMS: 10, tunables: { quietMs: 1000, idleQuietMs: 5 } })
    expect(lines.filter(([level]) => level === 'warn').map(([, line]) => line)).toEqual([
      '[session-goal] unknown options ignored: quietMS (did you mean quietMs?), tunables.idleQuietMs',
    ])
  })

  it('without a logger option the line goes to the console once; logger: null and a throwing logger stay quiet and running', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    runtimes.push(pkg.createSessionGoalRuntime({ openCode: OPEN_CODE, idleQuietMS: 5 }))
    expect(warn.mock.calls).toEqual([['[session-goal] unknown option ignored: idleQuietMS (did you mean idleQuietMs?)']])
    warn.mockClear()
    runtimes.push(pkg.createSessionGoalRuntime({ openCode: OPEN_CODE, idleQuietMS: 5, logger: null }))
    const throwing = pkg.createSessionGoalRuntime({ openCode: OPEN_CODE, idleQuietMS: 5, logger: () => { throw new Error('logger broke') } })
    runtimes.push(throwing)
    expect(warn).not.toHaveBeenCalled()
    expect(throwing.snapshot().stopped).toBe(false)
  })

  it('the known names are the option structs of index.d.ts, plus the drop-in names', () => {
    const source = ts.createSourceFile('index.d.ts', fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8'), ts.ScriptTarget.Latest)
    const members = (name) => {
      const declaration = source.statements.find((s) => ts.isInterfaceDeclaration(s) && s.name.text === name)
      expect(declaration, name).toBeDefined()
      return declaration.members.map((member) => member.name.text ?? member.name.getText(source)).sort()
    }
    const keys = (shape) => Object.keys(shape).sort()
    const flat = new Set([...dropIn.FLAT_CONNECTION.keys(), 'generateSmallModelText', 'getSmallModelService'])
    const nativeOf = (shape, tunables) => keys(shape).filter((name) => !flat.has(name) && !(tunables.includes(name) && name !== 'tunables'))
    expect(nativeOf(names.GOAL_RUNTIME, dropIn.GOAL_TUNABLES)).toEqual(members('SessionGoalRuntimeOptions'))
    expect(nativeOf(names.ASSIST_RUNTIME, dropIn.ASSIST_TUNABLES)).toEqual(members('SessionAssistRuntimeOptions'))
    expect(keys(names.OPEN_CODE)).toEqual(members('OpenCodeConnection'))
    expect(keys(names.SMALL_MODEL)).toEqual(members('SmallModelOptions'))
    expect(keys(names.SETTINGS)).toEqual(members('RuntimeSettingsOptions'))
    expect(keys(names.EVIDENCE)).toEqual(members('EvidenceOptions'))
    expect([...dropIn.GOAL_TUNABLES].sort()).toEqual(members('GoalTunablesInput'))
    expect([...dropIn.ASSIST_TUNABLES].sort()).toEqual(members('AssistTunablesInput'))
  })
})
