// The periodic sweep: an active goal whose idle event never reached the runtime (a dropped
// event) is found by the sweep and continued; the sweep's cost is a census of the server's
// sessions and one status read per directory holding an active goal.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep, pkg, tempDataDir } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const continueVerdict = { verdict: 'continue', note: 'keep going' }

describe('periodic sweep', () => {
  it('finds an idle session whose idle event was dropped and continues its goal, once', async () => {
    env = await setup({
      auditor: scriptedAuditor([continueVerdict]),
      forward: false,
      runtimeOptions: { sweepIntervalMs: 300, recoverOnStart: false },
    })
    const stranded = sessionWithReply(env.mock)
    const busy = sessionWithReply(env.mock)
    env.mock.setStatus(busy.id, 'busy')
    const paused = sessionWithReply(env.mock, { goal: { status: 'paused' } })
    await waitFor(() => env.mock.prompts.length === 1, 5000)
    expect(env.mock.prompts[0].sessionId).toBe(stranded.id)
    expect(goalOf(env.mock, stranded.id).turnsUsed).toBe(1)
    // Later sweeps find nothing new to do: the busy and paused goals stay untouched.
    await sleep(800)
    expect(env.mock.prompts).toHaveLength(1)
    expect(goalOf(env.mock, busy.id).turnsUsed).toBe(0)
    expect(goalOf(env.mock, paused.id).status).toBe('paused')
    // Each sweep: one census page (the server has fewer sessions than a page) and one status
    // read of the one directory holding active goals.
    const censuses = env.mock.requests.filter((r) => r.method === 'GET' && r.path === '/experimental/session')
    const statusReads = env.mock.requests.filter((r) => r.method === 'GET' && r.path === '/session/status')
    expect(censuses.length).toBeGreaterThanOrEqual(3)
    expect(censuses.every((r) => r.query.directory === undefined && r.query.roots === 'true')).toBe(true)
    expect(statusReads.length).toBeGreaterThanOrEqual(3)
    expect(statusReads.every((r) => r.query.directory === '/tmp/project')).toBe(true)
  })

  it('0 disables it: while a 200 ms sweep beside it runs three times and continues its goal, a 0 sweep reads nothing', async () => {
    // The runtime under test: sweepIntervalMs 0, no scan at start, one stranded goal.
    env = await setup({
      auditor: scriptedAuditor([continueVerdict]),
      forward: false,
      runtimeOptions: { sweepIntervalMs: 0, recoverOnStart: false },
    })
    const off = sessionWithReply(env.mock)
    // The comparison: the same setup with a 200 ms sweep, on a server of its own (a sweep finds
    // every goal of its server). Whatever wait shows its sweeps also rules out any short interval
    // the 0 could have turned into.
    const other = await startMockOpenCode({ heartbeatMs: 60_000, replyDelayMs: 15 })
    const on = sessionWithReply(other)
    const sweeping = pkg.createSessionGoalRuntime({
      openCode: { baseUrl: other.url },
      settings: { dataDir: tempDataDir() },
      idleQuietMs: 150,
      kickoffQuietMs: 100,
      sweepIntervalMs: 200,
      recoverOnStart: false,
      generateSmallModelText: scriptedAuditor([continueVerdict]).service.generateSmallModelText,
    })
    const censuses = (mock) => mock.requests.filter((r) => r.method === 'GET' && r.path === '/experimental/session').length
    try {
      await waitFor(() => censuses(other) >= 3, 5000)
      // The continuation is posted at the first sweep; the mock never answers it, so within the
      // next idle windows it is posted again under its own ids (a stranded message), which the
      // count includes: by the third sweep there may already be more than one.
      await waitFor(() => other.sends(on.id).length >= 1, 5000)
    } finally {
      await sweeping.stop()
      await other.close()
    }
    expect(censuses(env.mock)).toBe(0)
    expect(env.mock.requests).toHaveLength(0)
    expect(env.mock.sends(off.id)).toHaveLength(0)
    expect(goalOf(env.mock, off.id).turnsUsed).toBe(0)
  })
})
