// The periodic sweep: an active goal whose idle event never reached the runtime (a dropped
// event) is found by the sweep and continued; the sweep's cost is one session list and one
// status read per known directory.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep, pkg, tempDataDir } from './helpers.mjs'

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
      runtimeOptions: { sweepIntervalMs: 300, directories: ['/tmp/project'], recoverOnStart: false },
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
    const sweepReads = env.mock.requests.filter((r) => r.method === 'GET' && (r.path === '/session' || r.path === '/session/status'))
    expect(sweepReads.length).toBeGreaterThanOrEqual(4)
    expect(sweepReads.every((r) => r.query.directory === '/tmp/project')).toBe(true)
  })

  it('0 disables it: while a 200 ms sweep beside it runs three times and continues its goal, a 0 sweep reads nothing', async () => {
    // The runtime under test: sweepIntervalMs 0, one stranded goal in its directory.
    env = await setup({
      auditor: scriptedAuditor([continueVerdict]),
      forward: false,
      runtimeOptions: { sweepIntervalMs: 0, directories: ['/tmp/off'], recoverOnStart: false },
    })
    const off = sessionWithReply(env.mock, { directory: '/tmp/off' })
    // The comparison: the same setup with a 200 ms sweep, in a directory of its own. Whatever
    // wait shows its sweeps also rules out any short interval the 0 could have turned into.
    const on = sessionWithReply(env.mock, { directory: '/tmp/on' })
    const sweeping = pkg.createSessionGoalRuntime({
      openCode: { baseUrl: env.mock.url },
      settings: { dataDir: tempDataDir() },
      idleQuietMs: 150,
      kickoffQuietMs: 100,
      sweepIntervalMs: 200,
      directories: ['/tmp/on'],
      recoverOnStart: false,
      generateSmallModelText: scriptedAuditor([continueVerdict]).service.generateSmallModelText,
    })
    const sweepReads = (directory) => env.mock.requests.filter((r) => r.method === 'GET' && r.path === '/session' && r.query.directory === directory).length
    try {
      await waitFor(() => sweepReads('/tmp/on') >= 3, 5000)
      // The continuation is posted at the first sweep; the mock never answers it, so within the
      // next idle windows it is posted again under its own ids (a stranded message), which the
      // count includes: by the third sweep there may already be more than one.
      await waitFor(() => env.mock.sends(on.id).length >= 1, 5000)
    } finally {
      await sweeping.stop()
    }
    expect(sweepReads('/tmp/off')).toBe(0)
    expect(env.mock.requests.filter((r) => r.query.directory === '/tmp/off')).toHaveLength(0)
    expect(env.mock.sends(off.id)).toHaveLength(0)
    expect(goalOf(env.mock, off.id).turnsUsed).toBe(0)
  })
})
