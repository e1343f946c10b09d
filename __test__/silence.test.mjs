// Bounded silence at OpenChamber's own settings (docs/reliability.md, "Bounded silence"). Each
// scenario has its own mock OpenCode (a heartbeat every 10 s, as OpenCode sends) and its own host
// as OpenChamber's server runs one (__test__/openchamber-worker.mjs, in a worker thread): the
// goal runtime created with OpenChamber's option names only (buildOpenCodeUrl,
// getOpenCodeAuthHeaders, getSmallModelService, emitGoalNotification; a temp data directory), so
// the quiet windows (15 s idle, 3 s kickoff), the fetch timeout (10 s) and the sweep (5 min) are
// the real defaults, and the package's follower (`deliver: false`) with each payload forwarded to
// processPayload. Each scenario takes the events away in its own way; the goal must be acted on
// (a turn-starting post or a goal write) within 60 s of the scenario's start point (the session
// going idle, or OpenCode answering again), with exactly one continuation per tail, counted at
// the wire, and then complete. The scenarios run at once, so the file takes about a minute; each
// prints how long its runtime took to act.
import { describe, expect, it } from 'vitest'
import { firstActionAt, goalMetadata, goalOf, tempDataDir, waitFor } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'
import { startOpenChamberWorker } from './openchamber-worker.mjs'

/** The promise: acted on within this long of the start point. */
const BOUND_MS = 60_000
/** Each scenario's own time limit: the start point comes 5-10 s in, then 60 s, then the completion. */
const SCENARIO_MS = 150_000
const CUT_NOTE = 'The last turn was cut: it ended with no finish (OpenCode restarted or its stream broke), so it was continued without an audit.'
const keepGoing = { verdict: 'continue', note: 'nesting is still left' }
const complete = { verdict: 'complete', note: 'nested lists parse' }
const DIRECTORY = '/tmp/project'
const FINAL_REPLY = { text: 'Done: nested lists parse; tests pass.', tokens: { input: 1200, output: 90 } }

/** A mock OpenCode and an OpenChamber host on it (the auditor answering `verdicts`); `close()` ends both. */
async function openChamberOn(verdicts) {
  const mock = await startMockOpenCode({ heartbeatMs: 10_000 })
  let host
  try {
    host = await startOpenChamberWorker({ url: mock.url, dataDir: tempDataDir(), verdicts })
  } catch (error) {
    await mock.close()
    throw error
  }
  const close = async () => {
    mock.releaseGates()
    await host.stop()
    await mock.close()
  }
  return { mock, host, close }
}

/**
 * A goal set by the user and its first turn running: the session carries the active goal, the
 * user's prompt is stored, the session is busy and the reply has started (no completion). Waits
 * until the host has forwarded the busy status and the runtime knows the goal (a goal whose
 * session is busy gets no kickoff look: the runtime remembers the session busy and waits).
 */
async function goalWithRunningTurn(mock, host) {
  const session = mock.createSession({ directory: DIRECTORY, metadata: goalMetadata() })
  mock.addUserMessage(session.id, 'Please make the parser handle nested lists')
  mock.setStatus(session.id, 'busy')
  const reply = mock.addAssistantMessage(session.id, { text: 'Working on the parser', completed: false })
  await waitFor(async () => (await host.snapshot()).activeGoals === 1 && (await host.payloads()).forwarded.some((p) => p.type === 'session.status'), 10_000, 50)
  return { session, reply }
}

/**
 * OpenCode restarting in the middle of the user's turn, as the session shows it afterwards: the
 * reply keeps no completion, finish or error and the session is idle, and no event says so (what
 * `mock.cutTurns()` does to a turn the mock's script runs).
 */
function cutTheTurn(mock, sessionId) {
  mock.setStatus(sessionId, 'idle', { silent: true })
  const reply = mock.messages(sessionId).at(-1).info
  expect(reply.role).toBe('assistant')
  expect(reply.time.completed ?? reply.finish ?? reply.error).toBeUndefined()
}


/** Waits for the first continuation after `since`, and checks it and the first action came within the bound. */
async function expectActedWithinBound(mock, sessionId, since, name) {
  await waitFor(() => mock.sends(sessionId).length >= 1, BOUND_MS + 5000, 50)
  const acted = firstActionAt(mock, sessionId, since)
  const posted = mock.sends(sessionId)[0].at
  console.log(`[silence] ${name}: first action ${((acted - since) / 1000).toFixed(1)} s, continuation ${((posted - since) / 1000).toFixed(1)} s after the start point`)
  expect(acted - since).toBeLessThanOrEqual(BOUND_MS)
  expect(posted - since).toBeLessThanOrEqual(BOUND_MS)
  expect(posted).toBeGreaterThanOrEqual(since)
  return acted
}

/** The continuation over the cut reply: the goal's note while its turn runs, and the trail's line. */
async function expectCutContinuation(mock, host, sessionId, cutReply) {
  const goal = goalOf(mock, sessionId)
  expect(goal.note).toBe(CUT_NOTE)
  expect(goal.cutTurns).toBe(1)
  const trail = await host.history(sessionId)
  const cut = trail.filter((line) => line.action === 'continue (turn cut)')
  expect(cut).toHaveLength(1)
  expect(cut[0]).toMatchObject({ cut: 1, tail: cutReply.info.id, reason: CUT_NOTE })
  expect(await host.auditCalls()).toBe(0)
}

/** The goal completes with one continuation in all (one tail, one post), audited once. */
async function expectCompleteWithOneContinuation(mock, host, sessionId, audits) {
  await waitFor(() => goalOf(mock, sessionId)?.status === 'complete', BOUND_MS, 100)
  const sends = mock.sends(sessionId)
  expect(sends).toHaveLength(1)
  expect(mock.repeatedPrompts).toHaveLength(0)
  expect(await host.auditCalls()).toBe(audits)
  expect(await host.snapshot()).toMatchObject({ panics: 0, ticksTimedOut: 0 })
}

/**
 * A finished turn whose idle never reaches the runtime while heartbeats keep flowing: the host
 * drops the turn's `session.status` idle and `session.idle` (and, with `completionLost`, the
 * message events of the reply's completion, so that nothing but OpenCode's own status can tell
 * the turn ended). Everything else, heartbeats included, is forwarded, and the continuation's
 * turn is heard in full.
 */
async function idleLostWhileHeartbeatsFlow({ completionLost }) {
  const { mock, host, close } = await openChamberOn([keepGoing, complete])
  try {
    const { session, reply } = await goalWithRunningTurn(mock, host)
    mock.scriptReplies(session.id, [FINAL_REPLY], { replyDelayMs: 500 })
    await host.loseTurnEnd({ messageID: completionLost ? reply.info.id : null })
    // The turn finishes: the reply completes and the session goes idle.
    mock.completeAssistantMessage(session.id, reply.info.id, { text: 'Started: parser skeleton in place. Remaining: nesting.', tokens: { input: 1000, output: 100 } })
    mock.setStatus(session.id, 'idle')
    const idleAt = Date.now()
    await waitFor(async () => {
      const types = (await host.payloads()).dropped.map((p) => p.type)
      return types.includes('session.status') && types.includes('session.idle') && (!completionLost || types.includes('message.updated'))
    }, 5000, 50)
    // Within 60 s of the idle: audited (continue) and continued once.
    const acted = await expectActedWithinBound(mock, session.id, idleAt, completionLost ? 'idle and completion lost, heartbeats flowing' : 'idle lost, heartbeats flowing')
    expect(await host.auditCalls()).toBe(1)
    // Heartbeats kept reaching the runtime meanwhile, on the one stream it had all along.
    const { forwarded } = await host.payloads()
    expect(forwarded.some((p) => p.type === 'server.heartbeat' && p.at >= idleAt && p.at <= acted)).toBe(true)
    expect(mock.requests.filter((r) => r.path === '/global/event')).toHaveLength(1)
    // The continuation's turn ends with its idle heard: audited, complete.
    await expectCompleteWithOneContinuation(mock, host, session.id, 2)
  } finally {
    await close()
  }
}

describe.concurrent('bounded silence at OpenChamber settings', () => {
  it('the stream hangs mid-turn and OpenCode restarts with the turn cut: continued once within 60 s of OpenCode answering', async () => {
    const { mock, host, close } = await openChamberOn([complete])
    try {
      const { session, reply } = await goalWithRunningTurn(mock, host)
      // The continuation's turn takes a few seconds: the note is read while it runs.
      mock.scriptReplies(session.id, [FINAL_REPLY], { replyDelayMs: 3000 })
      // The host's stream stops delivering anything, events and heartbeats (its reconnect hangs,
      // as OpenChamber's does after a restart). Then OpenCode restarts: the turn is cut with no
      // event, and the port refuses connections for 2 s.
      await host.closeFollower()
      await waitFor(() => mock.eventStreams === 0, 5000)
      cutTheTurn(mock, session.id)
      await mock.refuseConnections({ forMs: 2000 })
      await waitFor(() => mock.listening, 10_000, 20)
      const answering = Date.now()
      expect(mock.sends(session.id)).toHaveLength(0)
      // Within 60 s of OpenCode answering: one continuation over the cut turn, not audited.
      await expectActedWithinBound(mock, session.id, answering, 'stream hung, turn cut')
      await expectCutContinuation(mock, host, session.id, reply)
      // The continuation's idle is never heard either: the watch finds it, and the goal completes.
      await expectCompleteWithOneContinuation(mock, host, session.id, 1)
      expect(mock.requests.filter((r) => r.path === '/global/event')).toHaveLength(1)
    } finally {
      await close()
    }
  }, SCENARIO_MS)

  it('an idle lost while heartbeats flow: the finished turn is audited and continued once within 60 s of the idle', async () => {
    await idleLostWhileHeartbeatsFlow({ completionLost: false })
  }, SCENARIO_MS)

  it("an idle and the reply's completion lost while heartbeats flow: audited and continued once within 60 s of the idle", async () => {
    await idleLostWhileHeartbeatsFlow({ completionLost: true })
  }, SCENARIO_MS)

  it('OpenCode restarts with the turn cut and the stream comes back: continued once within 60 s of OpenCode answering', async () => {
    const { mock, host, close } = await openChamberOn([complete])
    try {
      const { session, reply } = await goalWithRunningTurn(mock, host)
      mock.scriptReplies(session.id, [FINAL_REPLY], { replyDelayMs: 3000 })
      // OpenCode restarts: the turn is cut with no event, the port refuses connections for 2 s
      // (the host's stream breaks), and the follower reconnects once it listens again.
      cutTheTurn(mock, session.id)
      await mock.refuseConnections({ forMs: 2000 })
      await waitFor(() => mock.listening, 10_000, 20)
      const answering = Date.now()
      await waitFor(() => mock.eventStreams > 0, 15_000, 50)
      await expectActedWithinBound(mock, session.id, answering, 'OpenCode restarted, stream back')
      await expectCutContinuation(mock, host, session.id, reply)
      await expectCompleteWithOneContinuation(mock, host, session.id, 1)
    } finally {
      await close()
    }
  }, SCENARIO_MS)
})
