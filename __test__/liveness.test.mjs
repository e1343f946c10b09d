// Liveness: nothing learnt from an event is trusted for ever, and every wait is bounded (the built
// addon against the mock OpenCode over real HTTP). Each case loses, repeats, reorders or stops
// events, or leaves a request unanswered, and the goal must still be driven to its end: by the
// sweep, which reads OpenCode's status (the truth about busy), or by the tick's own bounds.
// docs/reliability.md ("Liveness") lists what the loop remembers and what clears each memory.
import { afterEach, describe, expect, it } from 'vitest'
import { forwardEvents, pkg, setup, scriptedAuditor, goalOf, waitFor, sessionWithReply, sleep } from './helpers.mjs'

let env
let extraStream
afterEach(async () => {
  extraStream?.close()
  extraStream = undefined
  await env?.cleanup()
  env = undefined
})

const keepGoing = { verdict: 'continue', note: 'more to do' }
const complete = { verdict: 'complete', note: 'done' }
const SWEEP_MS = 400

/**
 * Polls `explain` every 50 ms until `stop()`: the number of looks, and those that showed the goal
 * active with no next look (an active goal always has one: a timer, a tick, a retry, the sweep).
 */
function watchNextLook(runtime, sessionId) {
  const watched = { looks: 0, without: [] }
  let running = true
  const done = (async () => {
    while (running) {
      const report = await runtime.explain(sessionId, '/tmp/project').catch(() => null)
      if (report?.status === 'active') {
        watched.looks++
        if (report.nextWakeAt === null) watched.without.push(report.findings.map((f) => f.code))
      }
      await sleep(50)
    }
  })()
  watched.stop = async () => {
    running = false
    await done
    return watched
  }
  return watched
}

/** Waits until the goal of the session is no longer active (or the time is up) and returns it. */
async function settled(mock, sessionId, timeoutMs = 8000) {
  await waitFor(() => goalOf(mock, sessionId)?.status !== 'active', timeoutMs).catch(() => {})
  return goalOf(mock, sessionId)
}

describe('a turn whose idle never arrives', () => {
  it('a finished turn with its idle lost is driven by the sweep, which reads the session idle', async () => {
    const auditor = scriptedAuditor([keepGoing, complete])
    env = await setup({ auditor, runtimeOptions: { sweepIntervalMs: SWEEP_MS } })
    const { mock, runtime } = env
    const session = sessionWithReply(mock, {})
    // The continuation's turn runs (busy reaches the host) and ends with no idle event.
    mock.scriptReplies(session.id, [{ text: 'Nesting works now.', idleEvent: false }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => mock.sends(session.id).length === 1, 5000)
    await waitFor(() => mock.messages(session.id).some((m) => m.info.role === 'assistant' && m.info.time.completed && m.info.parentID === mock.sends(session.id)[0].body.messageID), 5000)
    expect(mock.status(session.id).type).toBe('idle')
    const goal = await settled(mock, session.id)
    expect(goal.status).toBe('complete')
    expect(auditor.calls).toHaveLength(2)
    expect(mock.sends(session.id)).toHaveLength(1)
    expect(runtime.snapshot().ticksTimedOut).toBe(0)
  })

  it('a turn cut by a restart, with no event at all, is driven by the sweep and continued once', async () => {
    const auditor = scriptedAuditor([keepGoing, complete])
    env = await setup({ auditor, runtimeOptions: { sweepIntervalMs: SWEEP_MS } })
    const { mock } = env
    const session = sessionWithReply(mock, {})
    // The continuation's turn starts and never finishes; the server then restarts mid-turn: the
    // reply keeps no completion, the session is idle, and no event says so.
    mock.scriptReplies(session.id, [{ text: 'partial', completed: false }, { text: 'Nesting works now.' }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => mock.status(session.id).type === 'busy' && mock.sends(session.id).length === 1, 5000)
    expect(mock.cutTurns()).toEqual([session.id])
    const goal = await settled(mock, session.id)
    expect(goal.status).toBe('complete')
    // One continuation after the judged reply, one after the cut turn: never two after one tail.
    const sent = mock.sends(session.id)
    expect(sent).toHaveLength(2)
    expect(new Set(sent.map((r) => r.body.messageID)).size).toBe(2)
  })
})

describe('events that stop, repeat or come late', () => {
  it('a host whose event stream stops after the goal was set: the sweep alone drives the goal to its end', async () => {
    const auditor = scriptedAuditor([keepGoing, keepGoing, complete])
    env = await setup({ auditor, forward: false, runtimeOptions: { sweepIntervalMs: SWEEP_MS } })
    const { mock, runtime } = env
    extraStream = forwardEvents(mock.url, runtime)
    await mock.waitFor(() => mock.eventStreams > 0, { timeoutMs: 3000 })
    const session = sessionWithReply(mock, {})
    mock.scriptReplies(session.id, [{ text: 'step' }])
    mock.setStatus(session.id, 'idle')
    // The goal is seen (its directory is known) and continued; then the host's stream breaks
    // for good, with no reconnect: the turn's idle never reaches the runtime.
    await waitFor(() => mock.sends(session.id).length === 1, 5000)
    extraStream.close()
    extraStream = undefined
    await mock.waitFor(() => mock.eventStreams === 0, { timeoutMs: 3000 })
    const goal = await settled(mock, session.id, 10_000)
    expect(goal.status).toBe('complete')
    expect(mock.sends(session.id)).toHaveLength(2)
    expect(auditor.calls).toHaveLength(3)
  })

  it('events delivered twice, and a stale busy arriving after the idle, do not park the goal', async () => {
    const auditor = scriptedAuditor([keepGoing, complete])
    env = await setup({ auditor, forward: false, runtimeOptions: { sweepIntervalMs: SWEEP_MS } })
    const { mock, runtime } = env
    // A host that forwards every event twice and holds back each busy until after the idle
    // that follows it (a lagging, reordering relay).
    let heldBusy = null
    const forward = (payload, directory) => {
      const status = payload?.type === 'session.status' ? payload.properties?.status?.type : null
      if (status === 'busy') {
        heldBusy = [payload, directory]
        return
      }
      runtime.processPayload(payload, directory)
      runtime.processPayload(payload, directory)
      if ((status === 'idle' || payload?.type === 'session.idle') && heldBusy) {
        const [busy, dir] = heldBusy
        heldBusy = null
        runtime.processPayload(busy, dir)
        runtime.processPayload(busy, dir)
      }
    }
    extraStream = pkg.createEventFollower({ openCode: { baseUrl: mock.url }, deliver: false, onPayload: forward })
    await mock.waitFor(() => mock.eventStreams > 0, { timeoutMs: 3000 })
    const session = sessionWithReply(mock, {})
    mock.scriptReplies(session.id, [{ text: 'Nesting works now.' }])
    const looks = watchNextLook(runtime, session.id)
    mock.setStatus(session.id, 'idle')
    const goal = await settled(mock, session.id)
    const watched = await looks.stop()
    expect(goal.status).toBe('complete')
    expect(mock.sends(session.id)).toHaveLength(1)
    // The stale busy cleared the idle's timer: the next look is the sweep's, and explain says so.
    expect(watched.looks).toBeGreaterThan(5)
    expect(watched.without).toEqual([])
  })
})

describe('every wait is bounded', () => {
  it('a continuation accepted and never answered: the post gives up at the fetch timeout, the transcript shows it stored, and the goal goes on', async () => {
    const auditor = scriptedAuditor([keepGoing, complete])
    env = await setup({ auditor, openCode: { fetchTimeoutMs: 600 }, runtimeOptions: { sweepIntervalMs: SWEEP_MS } })
    const { mock } = env
    // OpenCode takes the post (the message is stored, its turn runs) and never answers it.
    const fault = mock.fault({ method: 'POST', path: /\/prompt_async$/, times: 1, hang: true, apply: true })
    const session = sessionWithReply(mock, {})
    mock.scriptReplies(session.id, [{ text: 'Nesting works now.' }])
    const looks = watchNextLook(env.runtime, session.id)
    mock.setStatus(session.id, 'idle')
    const goal = await settled(mock, session.id)
    const watched = await looks.stop()
    // While the post hangs, the tick runs: its next look is now.
    expect(watched.looks).toBeGreaterThan(5)
    expect(watched.without).toEqual([])
    expect(fault.remaining).toBe(0)
    const hung = mock.requests.filter((r) => r.fault?.kind === 'hang')
    expect(hung).toHaveLength(1)
    expect(hung[0].answered).toBeNull()
    expect(goal.status).toBe('complete')
    // Its turn ran once: the same message id is never a second turn.
    const replies = mock.messages(session.id).filter((m) => m.info.role === 'assistant')
    expect(replies).toHaveLength(2)
  })

  it('a long turn shows a next look throughout: explain never gives null for the active goal', async () => {
    const auditor = scriptedAuditor([keepGoing, complete])
    env = await setup({ auditor, runtimeOptions: { sweepIntervalMs: SWEEP_MS } })
    const { mock, runtime } = env
    const session = sessionWithReply(mock, {})
    // A turn that stays busy for several sweeps.
    mock.scriptReplies(session.id, [{ text: 'Nesting works now.' }], { replyDelayMs: 2500 })
    mock.setStatus(session.id, 'idle')
    await waitFor(() => mock.status(session.id).type === 'busy', 5000)
    const seen = []
    while (mock.status(session.id).type === 'busy') {
      const report = await runtime.explain(session.id, '/tmp/project')
      if (report.status !== 'active') break
      seen.push(report.nextWakeAt)
      expect(report.findings.map((f) => f.code)).not.toContain('noNextLook')
      await sleep(100)
    }
    expect(seen.length).toBeGreaterThan(10)
    expect(seen.filter((at) => at === null)).toEqual([])
    // Each next look is near: a timer, a tick, or the next sweep.
    expect(Math.max(...seen.map((at) => at - Date.now()))).toBeLessThanOrEqual(SWEEP_MS + 200)
    expect((await settled(mock, session.id)).status).toBe('complete')
  })
})
