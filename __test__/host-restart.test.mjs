// A goal outlives its host (docs/forks-and-restarts.md, "A host started again"). Each scenario
// runs a mock OpenCode (a heartbeat every 10 s, as OpenCode sends) and hosts as OpenChamber's
// server runs one, each in a process of its own (__test__/host-process.mjs): OpenChamber's option
// names only, so no `directories`, no sweep interval and no quiet windows are passed (15 s idle,
// 3 s kickoff, a sweep every 5 min), and the data directory from OPENCHAMBER_DATA_DIR. A host is
// killed with SIGKILL and a new process started on the same data directory: it knows nothing,
// and no event of the goal's session comes after it starts. Every active goal must be acted on
// (a turn-starting post or a goal write) within 60 s of the host and OpenCode both being up, with
// one continuation per tail counted at the wire, and then complete. The scenarios run at once.
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { firstActionAt, goalMetadata, goalOf, tempDataDir, waitFor } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'
import { startHostProcess } from './host-process.mjs'

/** The promise: acted on within this long of the host and OpenCode both being up. */
const BOUND_MS = 60_000
const SCENARIO_MS = 180_000
const STARTED = 'Started: the parser skeleton is in place. Remaining: nesting.'
/** The continuation's reply: the host's auditor answers `complete` for it. */
const FINISHED = { text: 'FINISHED: nested lists parse; tests pass.', tokens: { input: 1200, output: 90 } }
const CUT_NOTE = 'The last turn was cut: it ended with no finish (OpenCode restarted or its stream broke), so it was continued without an audit.'
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A mock OpenCode; `close()` ends it and every host started on it. */
async function world() {
  const mock = await startMockOpenCode({ heartbeatMs: 10_000 })
  const hosts = []
  const start = async (dataDir, options = {}) => {
    const host = await startHostProcess({ url: options.url ?? mock.url, dataDir, ...options })
    hosts.push(host)
    return host
  }
  const close = async () => {
    mock.releaseGates()
    mock.clearFaults()
    for (const host of hosts) await host.stop()
    await mock.close()
  }
  return { mock, start, close }
}

/** A session of `directory` with an active goal and its first turn running (the reply started). */
function goalWithRunningTurn(mock, directory) {
  const session = mock.createSession({ directory, metadata: goalMetadata() })
  mock.addUserMessage(session.id, 'Please make the parser handle nested lists')
  mock.setStatus(session.id, 'busy')
  const reply = mock.addAssistantMessage(session.id, { text: 'Working on the parser', completed: false })
  mock.scriptReplies(session.id, [FINISHED], { replyDelayMs: 500 })
  return { session, reply }
}

/** A session of `directory` with an active goal whose first turn finished `agoMs` ago, idle. */
function goalAfterTurn(mock, directory, agoMs = 0) {
  const session = mock.createSession({ directory, metadata: goalMetadata() })
  const at = Date.now() - agoMs
  mock.addUserMessage(session.id, 'Please make the parser handle nested lists', { created: at - 60_000 })
  mock.addAssistantMessage(session.id, { text: STARTED, tokens: { input: 1000, output: 100 }, created: at - 30_000, completed: at })
  mock.scriptReplies(session.id, [FINISHED], { replyDelayMs: 500 })
  return session
}


/** Waits for the session's first action after `since` and checks it came within the bound. */
async function expectActedWithinBound(mock, sessionId, since, name, { quiet = false } = {}) {
  await waitFor(() => firstActionAt(mock, sessionId, since) !== null, BOUND_MS + 5000, 50)
  const acted = firstActionAt(mock, sessionId, since) - since
  if (!quiet) console.log(`[host restart] ${name}: first action ${(acted / 1000).toFixed(1)} s after the host and OpenCode were both up`)
  expect(acted).toBeLessThanOrEqual(BOUND_MS)
  return acted
}

/** The goal completes with one continuation: every turn-starting post at the wire carried one message id. */
async function expectCompleteWithOneContinuation(mock, sessionId) {
  await waitFor(() => goalOf(mock, sessionId)?.status === 'complete', BOUND_MS, 100)
  const ids = new Set(mock.sends(sessionId).map((r) => r.body.messageID))
  expect(ids.size).toBe(1)
  expect(mock.prompts.filter((p) => p.sessionId === sessionId)).toHaveLength(1)
  expect(goalOf(mock, sessionId).turnsUsed).toBe(1)
}

/** The goal's audit trail, as the host wrote it in its data directory. */
function trailOf(dataDir, sessionId) {
  const file = path.join(dataDir, 'goals', `${sessionId}.history.jsonl`)
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line)) : []
}

describe.concurrent('a goal outlives its host, at OpenChamber settings', () => {
  it('a. the host killed mid-turn, the turn finished while it was down: acted on within 60 s of its restart, continued once', async () => {
    const { mock, start, close } = await world()
    try {
      const dataDir = tempDataDir()
      const host = await start(dataDir)
      const { session, reply } = goalWithRunningTurn(mock, '/tmp/restart-a')
      // One second into the first turn the host is killed; the turn finishes while it is down.
      await sleep(1000)
      await host.kill()
      mock.completeAssistantMessage(session.id, reply.info.id, { text: STARTED, tokens: { input: 1000, output: 100 } })
      mock.setStatus(session.id, 'idle')
      await sleep(5000)
      const restarted = await start(dataDir)
      await expectActedWithinBound(mock, session.id, restarted.startedAt, 'a. killed mid-turn')
      await expectCompleteWithOneContinuation(mock, session.id)
      expect(trailOf(dataDir, session.id).map((line) => line.verdict).filter(Boolean)).toEqual(['continue', 'complete'])
    } finally {
      await close()
    }
  }, SCENARIO_MS)

  it('b. the host killed right after its reservation, its post lost: its successor takes up its own lease and posts that continuation once', async () => {
    const { mock, start, close } = await world()
    try {
      const dataDir = tempDataDir()
      const session = goalAfterTurn(mock, '/tmp/restart-b')
      // The host's post never reaches OpenCode's handler: it is killed while waiting for it.
      const lost = mock.fault({ method: 'POST', path: `/session/${session.id}/prompt_async`, hang: true, times: 1 })
      const host = await start(dataDir)
      await waitFor(() => lost.remaining === 0, BOUND_MS, 50)
      await host.kill()
      const reserved = goalOf(mock, session.id)
      expect(reserved.lease?.expiresAt).toBeGreaterThan(Date.now())
      expect(mock.prompts).toHaveLength(0)
      const restarted = await start(dataDir)
      await expectActedWithinBound(mock, session.id, restarted.startedAt, 'b. killed after its reservation, its successor')
      await waitFor(() => mock.prompts.length === 1, BOUND_MS, 50)
      // The same host by its data directory: it did not wait for the dead process's lease.
      expect(mock.prompts[0].at).toBeLessThan(reserved.lease.expiresAt)
      expect(mock.prompts[0].messageID).toBe(reserved.continuationId)
      await expectCompleteWithOneContinuation(mock, session.id)
    } finally {
      await close()
    }
  }, SCENARIO_MS)

  it('b. the host killed right after its reservation, another host live: the live host acts within 60 s, one continuation at the wire', async () => {
    const { mock, start, close } = await world()
    try {
      const session = goalAfterTurn(mock, '/tmp/restart-b2')
      const lost = mock.fault({ method: 'POST', path: `/session/${session.id}/prompt_async`, hang: true, times: 1 })
      // Two hosts with data directories of their own (two identities), reaching OpenCode by two
      // names, so the requests tell which host sent them.
      const first = await start(tempDataDir())
      const second = await start(tempDataDir(), { url: mock.url.replace('127.0.0.1', 'localhost') })
      await waitFor(() => lost.remaining === 0, BOUND_MS, 50)
      const posted = mock.requests.find((r) => r.method === 'POST' && r.path.endsWith('/prompt_async'))
      const holder = posted.headers.host.startsWith('localhost') ? second : first
      await holder.kill()
      const killedAt = Date.now()
      await waitFor(() => mock.prompts.length === 1, BOUND_MS + 5000, 50)
      const acted = mock.prompts[0].at - killedAt
      console.log(`[host restart] b. another host live: the continuation ${(acted / 1000).toFixed(1)} s after the holder was killed`)
      expect(acted).toBeLessThanOrEqual(BOUND_MS)
      await expectCompleteWithOneContinuation(mock, session.id)
    } finally {
      await close()
    }
  }, SCENARIO_MS)

  it('c. the host and OpenCode killed and started again together: the cut turn is continued once within 60 s of both being up', async () => {
    const { mock, start, close } = await world()
    try {
      const dataDir = tempDataDir()
      const host = await start(dataDir)
      const { session, reply } = goalWithRunningTurn(mock, '/tmp/restart-c')
      await sleep(1000)
      // The machine restarts: the host is killed, OpenCode goes down with the turn cut (its reply
      // keeps no completion, no event says so), and the host starts again before OpenCode answers.
      await host.kill()
      mock.setStatus(session.id, 'idle', { silent: true })
      await mock.refuseConnections()
      await start(dataDir, { ready: false })
      await sleep(4000)
      await mock.acceptConnections()
      const bothUp = Date.now()
      await expectActedWithinBound(mock, session.id, bothUp, 'c. host and OpenCode restarted')
      await expectCompleteWithOneContinuation(mock, session.id)
      const cut = trailOf(dataDir, session.id).filter((line) => line.action === 'continue (turn cut)')
      expect(cut).toHaveLength(1)
      expect(cut[0]).toMatchObject({ cut: 1, tail: reply.info.id, reason: CUT_NOTE })
    } finally {
      await close()
    }
  }, SCENARIO_MS)

  it('d. down for 10 minutes while goals in several directories finished their turns: each is acted on once', async () => {
    const { mock, start, close } = await world()
    try {
      const dataDir = tempDataDir()
      // The host knew these goals, then was down while their turns finished 10 minutes ago (the
      // transcripts say so; the runtime cannot tell them from a real wait). One more goal lives in a
      // directory the host never heard of, and a paused goal and a goal-less session sit beside them.
      const host = await start(dataDir)
      const running = ['/tmp/down-a', '/tmp/down-b', '/tmp/down-c'].map((directory) => goalWithRunningTurn(mock, directory))
      await sleep(1000)
      await host.kill()
      for (const { session, reply } of running) {
        mock.completeAssistantMessage(session.id, reply.info.id, { text: STARTED, tokens: { input: 1000, output: 100 }, completed: Date.now() - 600_000 })
        mock.setStatus(session.id, 'idle')
      }
      const unheard = goalAfterTurn(mock, '/tmp/down-unheard', 600_000)
      const paused = mock.createSession({ directory: '/tmp/down-a', metadata: goalMetadata({ status: 'paused' }) })
      mock.createSession({ directory: '/tmp/down-b' })
      const restarted = await start(dataDir)
      const sessions = [...running.map((r) => r.session), unheard]
      for (const session of sessions) await expectActedWithinBound(mock, session.id, restarted.startedAt, `d. down 10 minutes, ${session.directory}`)
      for (const session of sessions) await expectCompleteWithOneContinuation(mock, session.id)
      expect(goalOf(mock, paused.id).status).toBe('paused')
      expect(mock.sends(paused.id)).toHaveLength(0)
    } finally {
      await close()
    }
  }, SCENARIO_MS)

  it('e. 200 directories and 10,000 sessions: the restarted host reads them in 11 pages (and one more when its stream connects) and acts on each active goal', async () => {
    const { mock, start, close } = await world()
    try {
      // 50 sessions in each of 200 directories; one active goal per directory, its turn finished.
      const active = []
      for (let d = 0; d < 200; d++) {
        const directory = `/tmp/scale-${d}`
        for (let s = 0; s < 49; s++) mock.createSession({ directory, metadata: s % 7 === 0 ? goalMetadata({ status: 'complete' }) : undefined })
        active.push(goalAfterTurn(mock, directory, 60_000))
      }
      const before = mock.requests.length
      const host = await start(tempDataDir())
      const acted = []
      for (const session of active) acted.push(await expectActedWithinBound(mock, session.id, host.startedAt, 'e', { quiet: true }))
      console.log(`[host restart] e. 200 directories, 10,000 sessions: every active goal acted on, the last ${(Math.max(...acted) / 1000).toFixed(1)} s after the host started`)
      // The census at start: 10,000 top-level sessions, 1,000 a page, and the empty page after
      // the last full one; then, at the stream's first connection, one page of what was updated
      // since the newest update that census saw.
      const censuses = mock.requests.slice(before).filter((r) => r.path === '/experimental/session')
      expect(censuses.length).toBe(12)
      expect(censuses.filter((r) => r.query.cursor === undefined)).toHaveLength(2)
      expect(censuses.every((r) => r.query.directory === undefined && r.query.limit === '1000')).toBe(true)
      for (const session of active) await expectCompleteWithOneContinuation(mock, session.id)
    } finally {
      await close()
    }
  }, SCENARIO_MS)
})
