// Runtimes in worker_threads: the addon is loaded once per process, but each JavaScript
// environment (the main thread, every Worker) must have its own event intake, and a terminated
// Worker's runtimes must stop (no more requests to its server, no callbacks into it).
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockOpenCode } from './mock/opencode.mjs'
import { goalMetadata, goalOf, pkg, scriptedAuditor, sleep, tempDataDir, waitFor } from './helpers.mjs'

const WORKER_SCRIPT = new URL('./fixtures/worker-runtime.mjs', import.meta.url)

const cleanups = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function mockServer() {
  const mock = await startMockOpenCode({ heartbeatMs: 60_000, replyDelayMs: 15 })
  cleanups.push(() => mock.close())
  return mock
}

/** A Worker running fixtures/worker-runtime.mjs; resolves once its runtime exists. */
async function startWorker(workerData) {
  const worker = new Worker(WORKER_SCRIPT, { workerData })
  const inbox = []
  worker.on('message', (message) => inbox.push(message))
  worker.on('error', (error) => inbox.push({ type: 'error', error: String(error) }))
  cleanups.push(() => worker.terminate())
  await waitFor(() => inbox.some((m) => m.type === 'ready' || m.type === 'error'), 10_000)
  expect(inbox.filter((m) => m.type === 'error')).toEqual([])
  const snapshot = async () => {
    const before = inbox.filter((m) => m.type === 'snapshot').length
    worker.postMessage('snapshot')
    await waitFor(() => inbox.filter((m) => m.type === 'snapshot').length > before, 5000)
    return inbox.filter((m) => m.type === 'snapshot').at(-1).snapshot
  }
  return { worker, inbox, snapshot }
}

/** An idle session with a goal and one finished exchange; its next turn replies "done". */
function goalSession(mock, id, directory) {
  const session = mock.createSession({ id, directory, metadata: goalMetadata() })
  mock.addUserMessage(session.id, 'Please make the parser handle nested lists')
  mock.addAssistantMessage(session.id, { text: 'Started: parser skeleton in place.', tokens: { input: 1000, output: 100 } })
  mock.scriptReplies(session.id, [{ text: 'Done: nesting works. Verified: tests pass.', tokens: { input: 3000, output: 200 } }])
  mock.setStatus(session.id, 'idle')
  return session
}

/** Session ids named in a mock's request paths (`/session/<id>/...`). */
const sessionIdsRequested = (mock) =>
  new Set(mock.requests.map((r) => /^\/session\/([^/]+)/.exec(r.path)?.[1]).filter((id) => id && id !== 'status'))

/** The main thread's own host: a runtime on `mock`, fed by its own event follower (delivering to this environment's runtimes). */
async function mainThreadRuntime(mock, { forward = true } = {}) {
  const auditor = scriptedAuditor([
    { verdict: 'continue', note: 'not yet' },
    { verdict: 'complete', note: 'verified on the main thread' },
  ])
  const runtime = pkg.createSessionGoalRuntime({
    openCode: { baseUrl: mock.url },
    settings: { dataDir: tempDataDir() },
    idleQuietMs: 150,
    kickoffQuietMs: 100,
    resumeKickoffMs: 50,
    logger: null,
    generateSmallModelText: auditor.service.generateSmallModelText,
  })
  cleanups.push(() => runtime.stop())
  if (forward) {
    const follower = pkg.createEventFollower({ openCode: { baseUrl: mock.url } })
    cleanups.push(() => follower.close())
  }
  return runtime
}

describe('runtimes in worker threads', () => {
  it('each environment sees only its own sessions, and a Worker terminated mid-tick stops for good', async () => {
    const [mainMock, mockA, mockB] = [await mockServer(), await mockServer(), await mockServer()]
    const main = await mainThreadRuntime(mainMock)
    const workerA = await startWorker({ url: mockA.url, runtimeOptions: { settings: { dataDir: tempDataDir() } } })
    // B would sweep its directory every 400 ms and time a held read out after 1 s: a runtime
    // left running after its Worker ends keeps reaching the mock.
    const workerB = await startWorker({
      url: mockB.url,
      runtimeOptions: {
        settings: { dataDir: tempDataDir() },
        directories: ['/tmp/wb'],
        sweepIntervalMs: 400,
        fetchTimeoutMs: 1000,
      },
    })
    for (const mock of [mainMock, mockA, mockB]) await mock.waitFor(() => mock.eventStreams > 0, { timeoutMs: 5000 })

    // B's first read of its session is held for 800 ms: B is mid-tick when it is terminated, and
    // the answer reaches a runtime whose environment has ended.
    let heldAt = 0
    mockB.fault({ method: 'GET', path: /^\/session\/ses_wb_goal/, delayMs: 800, times: 1, actionFirst: true, action: () => (heldAt = Date.now()) })
    goalSession(mainMock, 'ses_main_goal', '/tmp/main')
    goalSession(mockA, 'ses_wa_goal', '/tmp/wa')
    goalSession(mockB, 'ses_wb_goal', '/tmp/wb')

    const seenByMain = new Set()
    const seenByA = new Set()
    const sample = setInterval(() => {
      for (const s of main.snapshot().sessions) seenByMain.add(s.sessionId)
    }, 10)
    cleanups.push(() => clearInterval(sample))

    await waitFor(() => heldAt > 0, 10_000)
    for (const s of (await workerB.snapshot()).sessions) expect(s.sessionId).toBe('ses_wb_goal')
    await workerB.worker.terminate()
    // B's reads written before it ended can still be unread in the mock's sockets (or its
    // listener's backlog) when the exit is delivered. A request of our own, on a connection
    // made after the exit, is read no earlier than they are: once the mock has answered it,
    // whatever reaches the mock later was sent after termination.
    await fetch(`${mockB.url}/global/health`)
    const terminatedAt = Date.now()
    const requestsAtTermination = mockB.requests.length

    // The others carry on: each settles its own goal after one continuation.
    while (goalOf(mockA, 'ses_wa_goal')?.status !== 'complete') {
      for (const s of (await workerA.snapshot()).sessions) seenByA.add(s.sessionId)
      if (Date.now() - terminatedAt > 20_000) break
      await sleep(20)
    }
    await waitFor(() => goalOf(mainMock, 'ses_main_goal')?.status === 'complete', 20_000)
    expect(goalOf(mockA, 'ses_wa_goal')).toMatchObject({ status: 'complete', note: 'verified in the worker', turnsUsed: 1 })
    expect(goalOf(mainMock, 'ses_main_goal')).toMatchObject({ status: 'complete', note: 'verified on the main thread', turnsUsed: 1 })
    await waitFor(() => workerA.inbox.some((m) => m.type === 'notification'), 5000)
    expect(workerA.inbox.filter((m) => m.type === 'notification').map((m) => m.event.sessionId)).toEqual(['ses_wa_goal'])

    // No session crossed over: snapshots, requests and prompts stay with their own environment.
    expect([...seenByMain]).toEqual(['ses_main_goal'])
    expect([...seenByA].every((id) => id === 'ses_wa_goal')).toBe(true)
    expect([...sessionIdsRequested(mainMock)]).toEqual(['ses_main_goal'])
    expect([...sessionIdsRequested(mockA)]).toEqual(['ses_wa_goal'])
    expect([...sessionIdsRequested(mockB)]).toEqual(['ses_wb_goal'])
    expect(mainMock.prompts.map((p) => p.sessionId)).toEqual(['ses_main_goal'])
    expect(mockA.prompts.map((p) => p.sessionId)).toEqual(['ses_wa_goal'])
    expect(mockB.prompts).toEqual([])
    expect(main.snapshot()).toMatchObject({ panics: 0, continuations: 1 })
    expect((await workerA.snapshot()).panics).toBe(0)

    // B's event follower ended with its environment: its stream is closed.
    await mockB.waitFor(() => mockB.eventStreams === 0, { timeoutMs: 5000 })
    // Nothing reaches B's mock after termination, for longer than B's sweep period (400 ms),
    // its read timeout (1 s) plus a retry pause, several times over.
    await sleep(Math.max(0, terminatedAt + 4000 - Date.now()))
    expect(mockB.requests.slice(requestsAtTermination).map((r) => `${r.method} ${r.path}`)).toEqual([])
    expect(goalOf(mockB, 'ses_wb_goal').status).toBe('active')
  }, 60_000)

  it('a Worker on the same server as the main thread: its sessions never reach the main runtime', async () => {
    const mock = await mockServer()
    // The main thread's runtime points at the same OpenCode but is fed nothing.
    const main = await mainThreadRuntime(mock, { forward: false })
    const worker = await startWorker({ url: mock.url, runtimeOptions: { settings: { dataDir: tempDataDir() } } })
    await mock.waitFor(() => mock.eventStreams > 0, { timeoutMs: 5000 })

    goalSession(mock, 'ses_shared_url', '/tmp/shared')
    const seenByMain = new Set()
    const start = Date.now()
    while (goalOf(mock, 'ses_shared_url')?.status !== 'complete' && Date.now() - start < 20_000) {
      for (const s of main.snapshot().sessions) seenByMain.add(s.sessionId)
      await sleep(10)
    }
    expect(goalOf(mock, 'ses_shared_url')).toMatchObject({ note: 'verified in the worker', turnsUsed: 1 })
    expect(mock.prompts).toHaveLength(1)
    expect([...seenByMain]).toEqual([])
    expect(main.snapshot()).toMatchObject({ ticks: 0, activeGoals: 0, sessions: [] })
    expect((await worker.snapshot()).continuations).toBe(1)
  }, 60_000)
})
