// Options and their defaults: the defaults the binding exports are the ones a runtime uses, and
// an unusable number (NaN, negative, infinite) means the default, never an error.
import { createRequire } from 'node:module'
import { afterEach, describe, expect, it } from 'vitest'
import { pkg } from './helpers.mjs'

const require = createRequire(import.meta.url)
const dropIn = require('../lib/drop-in.js')

let runtime
afterEach(async () => {
  await runtime?.stop()
  runtime = undefined
})

const idle = (sessionID) => ({ type: 'session.status', properties: { sessionID, status: { type: 'idle' } } })

/** Arms one idle timer and returns how far away it is (`create`: the package's entry by default). */
function armedDelay(options, create = pkg.createSessionGoalRuntime) {
  // Port 9 (discard): the timer is inspected before it could fire, so nothing is fetched.
  runtime = create({ openCode: { baseUrl: 'http://127.0.0.1:9' }, ...options })
  runtime.processPayload(idle('ses_options'))
  return runtime.snapshot().sessions.find((s) => s.sessionId === 'ses_options')?.dueInMs
}

describe('options', () => {
  it('exports the goal runtime defaults from the one definition in the core', () => {
    const defaults = pkg.goalRuntimeDefaults()
    expect(defaults).toMatchObject({ idleQuietMs: 15000, kickoffQuietMs: 3000, resumeKickoffMs: 250, maxAutoTurns: 20, maxProviderWaitMs: 21600000, maxProviderWaits: 6 })
    expect(defaults.deriveCriteria).toBe(true)
    expect(defaults.wrapUp).toBe(true)
    const switches = ['deriveCriteria', 'wrapUp']
    for (const [name, value] of Object.entries(defaults)) if (!switches.includes(name)) expect(value, name).toBeGreaterThan(0)
  })

  it('an unset quiet window is the exported default', async () => {
    const { idleQuietMs } = pkg.goalRuntimeDefaults()
    const due = await waitForDue({})
    expect(due).toBeGreaterThan(idleQuietMs - 1000)
    expect(due).toBeLessThanOrEqual(idleQuietMs)
  })

  it('unusable numbers fall back to the default; usable ones are taken', async () => {
    const { idleQuietMs } = pkg.goalRuntimeDefaults()
    for (const value of [Number.NaN, -5, Number.POSITIVE_INFINITY]) {
      const due = await waitForDue({ tunables: { idleQuietMs: value } })
      expect(due).toBeGreaterThan(idleQuietMs - 1000)
      await runtime.stop()
    }
    const due = await waitForDue({ idleQuietMs: 40_000 })
    expect(due).toBeGreaterThan(39_000)
  })

  it('the tunables nested in `tunables` are taken', async () => {
    const due = await waitForDue({ tunables: { idleQuietMs: 40_000 } })
    expect(due).toBeGreaterThan(39_000)
    expect(due).toBeLessThanOrEqual(40_000)
  })

  it("OpenChamber's flat idleQuietMs reaches the same setting through the drop-in adapter", async () => {
    const due = await waitForDue({ idleQuietMs: 40_000 })
    expect(due).toBeGreaterThan(39_000)
    expect(due).toBeLessThanOrEqual(40_000)
  })

  it('the native binding itself takes the nested form only: a flat name there is not read', async () => {
    const { idleQuietMs } = pkg.goalRuntimeDefaults()
    const native = require('../index.js')
    const flat = await waitForDue({ idleQuietMs: 40_000 }, native.createSessionGoalRuntime)
    expect(flat).toBeLessThanOrEqual(idleQuietMs)
    await runtime.stop()
    const nested = await waitForDue({ tunables: { idleQuietMs: 40_000 } }, native.createSessionGoalRuntime)
    expect(nested).toBeGreaterThan(39_000)
  })

  it('one tunable given flat and nested is refused, naming the flat field', () => {
    const options = { openCode: { baseUrl: 'http://127.0.0.1:9' }, idleQuietMs: 1000, tunables: { idleQuietMs: 2000 } }
    expect(() => pkg.createSessionGoalRuntime(options)).toThrow(expect.objectContaining({ name: 'SessionGoalError', code: 'invalidInput', field: 'idleQuietMs' }))
    const assist = { openCode: { baseUrl: 'http://127.0.0.1:9' }, quietMs: 1000, tunables: { quietMs: 2000 } }
    expect(() => pkg.createSessionAssistRuntime(assist)).toThrow(expect.objectContaining({ code: 'invalidInput', field: 'quietMs' }))
  })

  it('the drop-in adapter moves every flat tunable, and only those, into `tunables`', () => {
    const flat = Object.fromEntries(dropIn.GOAL_TUNABLES.map((name, i) => [name, name === 'deriveCriteria' ? false : name === 'evidence' ? { maxToolCalls: 5 } : i + 1]))
    const { options } = dropIn.nestedTunables({ openCode: { baseUrl: 'x' }, fetchTimeoutMs: 7, directories: ['/p'], ...flat, tunables: { leaseMs: undefined } }, dropIn.GOAL_TUNABLES)
    expect(options).toEqual({ openCode: { baseUrl: 'x' }, fetchTimeoutMs: 7, directories: ['/p'], tunables: flat })
    // OpenChamber's names are among them, and every default the runtime reports (but the
    // connection's fetchTimeoutMs) names a tunable the adapter knows.
    expect(dropIn.GOAL_TUNABLES).toEqual(expect.arrayContaining(['idleQuietMs', 'kickoffQuietMs', 'maxAutoTurns', 'deriveCriteria']))
    const defaults = Object.keys(pkg.goalRuntimeDefaults()).filter((name) => name !== 'fetchTimeoutMs')
    expect(dropIn.GOAL_TUNABLES).toEqual(expect.arrayContaining(defaults))
    const assist = dropIn.nestedTunables({ quietMs: 1, messageFetchLimit: 2, modelTimeoutMs: 3 }, dropIn.ASSIST_TUNABLES)
    expect(assist.options).toEqual({ tunables: { quietMs: 1, messageFetchLimit: 2, modelTimeoutMs: 3 } })
    // Options without flat tunables are passed on as they are.
    const nested = { tunables: { idleQuietMs: 5 } }
    expect(dropIn.nestedTunables(nested, dropIn.GOAL_TUNABLES).options).toBe(nested)
  })

  it('a URL with a Unicode host name is refused with a clear error (ASCII host names only)', async () => {
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: 'http://bücher.example:4096' }, dataDir: '/tmp' })
    await expect(control.getGoal('ses_unicode', '/tmp')).rejects.toThrow(/host name must be ASCII/)
  })
})

/** The armed timer's delay, once the runtime's actor has taken the idle event. */
async function waitForDue(options, create) {
  let due = armedDelay(options, create)
  for (let i = 0; due === undefined && i < 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5))
    due = runtime.snapshot().sessions.find((s) => s.sessionId === 'ses_options')?.dueInMs
  }
  return due
}
