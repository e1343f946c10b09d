// Options and their defaults: the defaults the binding exports are the ones a runtime uses, and
// an unusable number (NaN, negative, infinite) means the default, never an error.
import { afterEach, describe, expect, it } from 'vitest'
import { pkg } from './helpers.mjs'

let runtime
afterEach(async () => {
  await runtime?.stop()
  runtime = undefined
})

const idle = (sessionID) => ({ type: 'session.status', properties: { sessionID, status: { type: 'idle' } } })

/** Arms one idle timer and returns how far away it is. */
function armedDelay(options) {
  // Port 9 (discard): the timer is inspected before it could fire, so nothing is fetched.
  runtime = pkg.createSessionGoalRuntime({ openCode: { baseUrl: 'http://127.0.0.1:9' }, ...options })
  runtime.processPayload(idle('ses_options'))
  return runtime.snapshot().sessions.find((s) => s.sessionId === 'ses_options')?.dueInMs
}

describe('options', () => {
  it('exports the goal runtime defaults from the one definition in the core', () => {
    const defaults = pkg.goalRuntimeDefaults()
    expect(defaults).toMatchObject({ idleQuietMs: 15000, kickoffQuietMs: 3000, resumeKickoffMs: 250, maxAutoTurns: 20, maxProviderWaitMs: 21600000, maxProviderWaits: 6 })
    for (const value of Object.values(defaults)) expect(value).toBeGreaterThan(0)
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
      const due = await waitForDue({ idleQuietMs: value })
      expect(due).toBeGreaterThan(idleQuietMs - 1000)
      await runtime.stop()
    }
    const due = await waitForDue({ idleQuietMs: 40_000 })
    expect(due).toBeGreaterThan(39_000)
  })

  it('a URL with a Unicode host name is refused with a clear error (ASCII host names only)', async () => {
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: 'http://bücher.example:4096' }, dataDir: '/tmp' })
    await expect(control.getGoal('ses_unicode', '/tmp')).rejects.toThrow(/host name must be ASCII/)
  })
})

/** The armed timer's delay, once the runtime's actor has taken the idle event. */
async function waitForDue(options) {
  let due = armedDelay(options)
  for (let i = 0; due === undefined && i < 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5))
    due = runtime.snapshot().sessions.find((s) => s.sessionId === 'ses_options')?.dueInMs
  }
  return due
}
