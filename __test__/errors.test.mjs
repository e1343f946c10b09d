// One error convention: every public function (lib/exports.json), given bad input or meeting a
// failure, throws or rejects with a SessionGoalError whose `code` is the documented one; partial
// success resolves with warning objects. Against the built addon and the mock OpenCode.
import { afterEach, describe, expect, it } from 'vitest'
import { createRequire } from 'node:module'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { DEAD_URL, pkg, goalMetadata, tempDataDir } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const listed = require('../lib/exports.json').exports
const { SessionGoalError } = pkg

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

async function world() {
  const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
  cleanups.push(() => mock.close())
  const dataDir = tempDataDir()
  const openCode = { baseUrl: mock.url }
  return { mock, dataDir, openCode, control: pkg.createSessionGoalControl({ openCode, dataDir }) }
}

// Nothing listens there (see DEAD_URL), so every OpenCode call fails at once.
async function deadUrl() {
  return DEAD_URL
}

/** What a call threw or rejected with (a call that succeeded fails the test). */
async function failureOf(call) {
  let outcome
  try {
    outcome = await call()
  } catch (error) {
    return error
  }
  throw new Error(`expected a failure, got ${JSON.stringify(outcome)}`)
}

function expectError(error, code, extra = {}) {
  expect(error, error?.stack).toBeInstanceOf(SessionGoalError)
  expect(error).toBeInstanceOf(Error)
  expect(error.code, error.message).toBe(code)
  expect(error).toMatchObject(extra)
}

// Each public name: the failing calls it has, with the code each must give. Values are
// async (w) => void and run against a fresh world.
const cases = {
  createSessionGoalRuntime: async () => {
    expectError(await failureOf(() => pkg.createSessionGoalRuntime({})), 'invalidInput')
    // A wrong type is refused in the package's words, naming the option (__test__/option-types).
    const typed = await failureOf(() => pkg.createSessionGoalRuntime({ openCode: { baseUrl: 42 } }))
    expectError(typed, 'invalidInput', { field: 'openCode.baseUrl', message: 'openCode.baseUrl must be a string' })
    const runtime = pkg.createSessionGoalRuntime({ openCode: { baseUrl: await deadUrl() }, logger: null, settings: { dataDir: tempDataDir() } })
    cleanups.push(() => runtime.stop())
    expectError(await failureOf(() => runtime.explain('ses_unreach1', '/tmp/project')), 'openCode')
  },
  createSessionAssistRuntime: async () => {
    expectError(await failureOf(() => pkg.createSessionAssistRuntime({})), 'invalidInput')
    expectError(await failureOf(() => pkg.createSessionAssistRuntime({ openCode: { baseUrl: ['x'] } })), 'invalidInput')
  },
  buildGoalIntroText: async () => {
    // Documented as total: anything that is not a positive budget means no budget.
    for (const odd of [null, 'lots', {}, -1]) expect(pkg.buildGoalIntroText(odd)).toBe(pkg.buildGoalIntroText())
  },
  createSessionGoal: async (w) => {
    expectError(await failureOf(() => pkg.createSessionGoal(null)), 'invalidInput', { field: 'options' })
    expectError(await failureOf(() => pkg.createSessionGoal({ sessionID: 'ses_x1234' })), 'invalidInput')
    const session = w.mock.createSession({ directory: '/tmp/project' })
    const call = { baseUrl: w.mock.url, dataDir: w.dataDir, sessionID: session.id, directory: '/tmp/project' }
    expectError(await failureOf(() => pkg.createSessionGoal({ ...call, objective: '  ' })), 'invalidInput', { field: 'objective', statusCode: 400 })
    expectError(await failureOf(() => pkg.createSessionGoal({ ...call, sessionID: 'ses_nosuch1', objective: 'x' })), 'notFound', { status: 404, statusCode: 404 })
    expectError(await failureOf(() => pkg.createSessionGoal({ ...call, objective: 'x', tokenBudget: 5 })), 'invalidInput', { field: 'tokenBudget' })
  },
  registerSessionGoalRoutes: async () => {
    expectError(await failureOf(() => pkg.registerSessionGoalRoutes({})), 'invalidInput', { field: 'app' })
  },
  handleObjectiveRequest: async (w) => {
    // An HTTP handler: bad input is an HTTP answer, never a throw.
    expect(await pkg.handleObjectiveRequest({ method: 'PUT', sessionId: '../x', body: { content: 'x' } }, { dataDir: w.dataDir })).toEqual({ status: 400, body: { error: 'invalid session id' } })
  },
  createSessionGoalControl: async (w) => {
    expectError(await failureOf(() => pkg.createSessionGoalControl(null)), 'invalidInput')
    expectError(await failureOf(() => pkg.createSessionGoalControl({ dataDir: w.dataDir })), 'invalidInput')
    const { control, mock } = w
    const plain = mock.createSession({ directory: '/tmp/project' })
    const active = mock.createSession({ directory: '/tmp/project', metadata: goalMetadata({ status: 'active' }) })
    const done = mock.createSession({ directory: '/tmp/project', metadata: goalMetadata({ status: 'complete' }) })
    expectError(await failureOf(() => control.createSessionGoal('x')), 'invalidInput', { field: 'request' })
    expectError(await failureOf(() => control.createSessionGoal({ sessionId: '../x', objective: 'x' })), 'invalidInput', { field: 'sessionId' })
    expectError(await failureOf(() => control.createSessionGoal({ sessionId: 42, objective: 'x' })), 'invalidInput')
    expectError(await failureOf(() => control.createSession({ directory: '' })), 'invalidInput', { field: 'directory' })
    expectError(await failureOf(() => control.createSession({ directory: '/tmp/project', prompt: 'x', goal: { costBudget: 0 } })), 'invalidInput', { field: 'goal.costBudget' })
    expectError(await failureOf(() => control.sendPrompt({ sessionId: plain.id, directory: '/tmp/project', prompt: 'x'.repeat(2_000_000) })), 'tooLarge', { statusCode: 413 })
    expectError(await failureOf(() => control.sendPrompt({ sessionId: plain.id, directory: '/tmp/project', prompt: 'x', model: 'nomodel' })), 'invalidInput', { field: 'model' })
    expectError(await failureOf(() => control.forkSession({ sessionId: 'ses_nosuch2', prompt: 'x' })), 'notFound')
    expectError(await failureOf(() => control.stampScheduledGoal({ sessionId: plain.id, prompt: 'x', tokenBudget: 12 })), 'invalidInput', { field: 'tokenBudget' })
    expectError(await failureOf(() => control.editGoal({ sessionId: active.id })), 'invalidInput')
    expectError(await failureOf(() => control.editGoal({ sessionId: active.id, checks: ['x'], clearChecks: true })), 'invalidInput', { field: 'checks' })
    expectError(await failureOf(() => control.editGoal({ sessionId: done.id, objective: 'y' })), 'conflict', { statusCode: 409 })
    expectError(await failureOf(() => control.pauseGoal({ sessionId: plain.id })), 'notFound', { statusCode: 404 })
    expectError(await failureOf(() => control.resumeGoal({ sessionId: active.id, goalId: 'stale-id' })), 'conflict')
    expectError(await failureOf(() => control.completeGoal({ sessionId: '../../x' })), 'invalidInput', { field: 'sessionId' })
    expectError(await failureOf(() => control.clearGoal({ sessionId: 'ses_nosuch3' })), 'notFound')
    expectError(await failureOf(() => control.getGoal('../x')), 'invalidInput', { field: 'sessionId' })
    expectError(await failureOf(() => control.listGoals('')), 'invalidInput', { field: 'directory' })
    const unreachable = pkg.createSessionGoalControl({ openCode: { baseUrl: await deadUrl() }, dataDir: w.dataDir })
    const down = await failureOf(() => unreachable.explain('ses_unreach2', '/tmp/project'))
    expectError(down, 'openCode', { statusCode: 502 })
    expect(down.cause).toBeInstanceOf(Error)
    expectError(await failureOf(() => unreachable.listGoals('/tmp/project')), 'openCode')
  },
  writeObjective: async (w) => {
    expectError(await failureOf(() => pkg.writeObjective('../x', 'x', { dataDir: w.dataDir })), 'invalidInput', { field: 'sessionId' })
    expectError(await failureOf(() => pkg.writeObjective('ses_obj1', { content: 'x' }, { dataDir: w.dataDir })), 'invalidInput', { field: 'content' })
    expectError(await failureOf(() => pkg.writeObjective('ses_obj1', '   ', { dataDir: w.dataDir })), 'invalidInput', { field: 'content' })
    fs.writeFileSync(path.join(w.dataDir, 'goals'), 'a file where the goals directory belongs')
    expectError(await failureOf(() => pkg.writeObjective('ses_obj1', 'x', { dataDir: w.dataDir })), 'local', { statusCode: 500 })
  },
  readObjective: async (w) => {
    expectError(await failureOf(() => pkg.readObjective('../x', { dataDir: w.dataDir })), 'invalidInput', { field: 'sessionId' })
    expectError(await failureOf(() => pkg.readObjective(7, { dataDir: w.dataDir })), 'invalidInput')
  },
  deleteObjective: async (w) => {
    expectError(await failureOf(() => pkg.deleteObjective('../x', { dataDir: w.dataDir })), 'invalidInput', { field: 'sessionId' })
  },
  createEventFollower: async () => {
    expectError(await failureOf(() => pkg.createEventFollower(null)), 'invalidInput', { field: 'options' })
    expectError(await failureOf(() => pkg.createEventFollower({})), 'invalidInput', { field: 'openCode' })
    expectError(await failureOf(() => pkg.createEventFollower({ openCode: { baseUrl: ['x'] } })), 'invalidInput', { field: 'openCode.baseUrl', message: 'openCode.baseUrl must be a string' })
    expectError(await failureOf(() => pkg.createEventFollower({ openCode: { baseUrl: 'http://127.0.0.1:9' }, firstRetryMs: 'soon' })), 'invalidInput', { field: 'firstRetryMs' })
    const both = () => pkg.createEventFollower({ buildOpenCodeUrl: () => 'http://127.0.0.1:9', openCode: { buildUrl: () => 'http://127.0.0.1:9' } })
    expectError(await failureOf(both), 'invalidInput', { field: 'buildOpenCodeUrl' })
  },
  writeSessionMetadataKey: async (w) => {
    expectError(await failureOf(() => pkg.writeSessionMetadataKey({ openCode: w.openCode, sessionId: '', key: 'k', value: 1 })), 'invalidInput')
    expectError(await failureOf(() => pkg.writeSessionMetadataKey({ openCode: w.openCode, sessionId: 5, key: 'k' })), 'invalidInput')
    const dead = { baseUrl: await deadUrl() }
    expectError(await failureOf(() => pkg.writeSessionMetadataKey({ openCode: dead, sessionId: 'ses_meta1', key: 'k', value: 1 })), 'openCode')
  },
  goalRuntimeDefaults: async () => {
    expect(pkg.goalRuntimeDefaults().maxAutoTurns).toBeGreaterThan(0) // takes no input
  },
  intakePayloadTypes: async () => {
    expect(pkg.intakePayloadTypes()).toContain('session.status') // takes no input
  },
  inputRules: async () => {
    expectError(await failureOf(() => pkg.inputRules.tokenBudget('lots')), 'invalidInput')
    expectError(await failureOf(() => pkg.inputRules.timeBudget(90)), 'invalidInput')
    // A value it can read but refuses is an answer, not a failure.
    expect(pkg.inputRules.tokenBudget(5).problem).toBeTruthy()
  },
  SessionGoalError: async () => {
    const error = new SessionGoalError({ code: 'conflict', message: 'x' }, { cause: new Error('under') })
    expect(error.cause.message).toBe('under')
    expect(() => new SessionGoalError({ code: 'teapot', message: 'x' })).toThrow(/unknown code/)
  },
}

describe('every public failure is a SessionGoalError with a documented code', () => {
  it('covers every name of lib/exports.json', () => {
    expect(Object.keys(cases).sort()).toEqual(listed.map((entry) => entry.name).sort())
  })

  for (const [name, run] of Object.entries(cases)) {
    it(name, async () => {
      await run(await world())
    })
  }

  it('docs/errors.md lists exactly the codes the class accepts', () => {
    const doc = fs.readFileSync(path.join(root, 'docs', 'errors.md'), 'utf8')
    const documented = [...doc.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1])
    for (const code of ['invalidInput', 'notFound', 'conflict', 'tooLarge', 'openCode', 'timeout', 'local']) {
      expect(documented, code).toContain(code)
      expect(() => new SessionGoalError({ code, message: 'x' })).not.toThrow()
    }
    for (const code of ['objectiveInline', 'abortFailed', 'commandListUnavailable']) expect(documented, code).toContain(code)
  })
})

describe('partial success', () => {
  it('resolves with warning objects {code, message}', async () => {
    const w = await world()
    fs.writeFileSync(path.join(w.dataDir, 'goals'), 'a file where the goals directory belongs')
    const session = w.mock.createSession({ directory: '/tmp/project' })
    const installed = await w.control.createSessionGoal({ sessionId: session.id, directory: '/tmp/project', objective: 'Stored inline' })
    expect(installed.objectiveFile).toBe(false)
    expect(installed.warnings).toEqual([{ code: 'objectiveInline', message: expect.stringMatching(/stored inline/) }])
  })
})

describe('the native module throws its own failures', () => {
  const native = require('../index.js')

  it('rejects with an Error carrying code, status and cause; the package wraps it as a SessionGoalError', async () => {
    const w = await world()
    const raw = native.createGoalControl({ openCode: w.openCode, dataDir: w.dataDir })
    const missing = await failureOf(() => raw.clearGoal({ sessionId: 'ses_nosuch4' }))
    expect(missing).toBeInstanceOf(Error)
    expect(missing).not.toBeInstanceOf(SessionGoalError)
    expect(missing).toMatchObject({ code: 'notFound', status: 404 })
    expect(missing.cause).toBeInstanceOf(Error)
    expect(missing.cause.message).toBe('HTTP 404')

    const down = native.createGoalControl({ openCode: { baseUrl: await deadUrl() }, dataDir: w.dataDir })
    const unreachable = await failureOf(() => down.explain('ses_unreach3', '/tmp/project'))
    expect(unreachable).toMatchObject({ code: 'openCode', message: expect.stringMatching(/^explain: /) })
    expect(unreachable.status).toBeUndefined()
    expect(unreachable.cause.message).toMatch(/network error/)

    const wrapped = await failureOf(() => pkg.createSessionGoalControl({ openCode: w.openCode, dataDir: w.dataDir }).clearGoal({ sessionId: 'ses_nosuch4' }))
    expectError(wrapped, 'notFound', { status: 404, statusCode: 404, message: missing.message })
    expect(wrapped.cause).toBeInstanceOf(Error)
    expect(wrapped.cause.message).toBe('HTTP 404')
    expect(wrapped.toJSON()).toEqual({ error: missing.message, code: 'notFound' })
  })

  it('throws from a synchronous function the same way, and names the field at fault', async () => {
    const thrown = await failureOf(() => native.createGoalControl({ dataDir: tempDataDir() }))
    expect(thrown).toMatchObject({ code: 'invalidInput', field: 'openCode' })
    const wrapped = await failureOf(() => pkg.createSessionGoalRuntime({ logger: null }))
    expectError(wrapped, 'invalidInput', { field: 'openCode', statusCode: 400 })
  })

  it('index.d.ts declares no failure value: every native function resolves to its result only', () => {
    const types = fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8')
    expect(types).not.toMatch(/GoalFailure|failed: true/)
  })
})
