// Section 5: 10,000 goals that name no session (as OpenChamber's UI writes them) on a server whose
// session list fails. Each part runs against a fresh mock process; the host forwards one idle
// payload per session (quiet window 1 s), as in the scale section.
//  - 503: `GET /session` always answers 503. Every request the mock receives over the window
//    (the event stream is not opened) is counted: per second over the whole window and over its
//    last 30 s (the steady state), the lists among them, and the continuations posted (a
//    continuation here would be sent on a guess: the owner is unknown). Then the list answers
//    again: time until every goal is driven.
//  - 404: `GET /session` always answers 404 (a server that cannot list). Goals were set on
//    their sessions after the sessions were made, so each is its session's own: time until all
//    are driven, missed, prompted twice, adopted as copies instead.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { benchGoalRuntime, hrMs, progress, rootDir, runSection, sleep, startMockProcess } from '../lib.mjs'

const require = createRequire(import.meta.url)

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 10_000)
const WINDOW_MS = Number(process.env.BENCH_FAILING_WINDOW_MS ?? 120_000)
const QUIET_MS = 1_000
const DEADLINE_MS = 180_000
const DIRECTORY = '/tmp/project'
const LIST = '^/session$'

async function world({ goalAfterSession }) {
  const pkg = require(rootDir + '/runtime.js')
  const mock = await startMockProcess({ directory: DIRECTORY })
  const sessions = []
  for (let start = 0; start < SESSIONS; start += 1000) {
    sessions.push(...(await mock.call('createGoalSessions', { count: Math.min(1000, SESSIONS - start), directory: DIRECTORY, goalAfterSession })))
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'goal-bench-'))
  const runtime = benchGoalRuntime(pkg, {
    quietMs: QUIET_MS,
    dataDir,
    openCode: { baseUrl: mock.url },
    generateSmallModelText: async () => ({ text: '{"verdict":"continue","note":"nesting still missing"}', providerID: 'mock', modelID: 'mock-model' }),
  })
  const idle = () => {
    for (const id of sessions) runtime.processPayload({ type: 'session.status', properties: { sessionID: id, status: { type: 'idle' } } }, DIRECTORY)
  }
  const close = async () => {
    await runtime.stop()
    await mock.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
  return { mock, runtime, idle, close }
}

async function waitAllPrompted(mock, since) {
  let stats = await mock.call('promptStats')
  while (stats.sessions < SESSIONS && hrMs() - since < DEADLINE_MS) {
    await sleep(250)
    stats = await mock.call('promptStats')
  }
  return stats
}

async function listFailing() {
  const { mock, runtime, idle, close } = await world({ goalAfterSession: false })
  await mock.call('fault', { method: 'GET', pathSource: LIST, status: 503 })
  progress(`failing: ${SESSIONS} goals, list answering 503, watching ${WINDOW_MS / 1000} s`)
  const before = await mock.call('requestCounts')
  const t0 = hrMs()
  idle()
  // The last 30 s of the window: the steady state, once every goal's first tick is over.
  const TAIL_MS = Math.min(30_000, WINDOW_MS / 2)
  await sleep(WINDOW_MS - TAIL_MS)
  const tail = await mock.call('requestCounts')
  await sleep(TAIL_MS)
  const end = await mock.call('requestCounts')
  const windowMs = hrMs() - t0
  const guessed = (await mock.call('promptStats')).prompts
  const waiting = runtime.snapshot()
  // The list answers again.
  await mock.call('clearFaults')
  const recovered = hrMs()
  const stats = await waitAllPrompted(mock, recovered)
  const result = {
    requests: end.total - before.total,
    lists: end.lists - before.lists,
    windowMs,
    perSecond: (end.total - before.total) / (windowMs / 1000),
    tailMs: TAIL_MS,
    perSecondTail: (end.total - tail.total) / (TAIL_MS / 1000),
    listsTail: end.lists - tail.lists,
    continuationsOnAGuess: guessed,
    armedWhileWaiting: waiting.armedTimers,
    drivenAfterRecovery: stats.sessions,
    allDrivenAfterRecoveryMs: stats.sessions === SESSIONS ? stats.last - recovered : null,
    duplicated: stats.duplicated,
    reposted: stats.reposted,
  }
  await close()
  return result
}

async function listAnswering404() {
  const { mock, runtime, idle, close } = await world({ goalAfterSession: true })
  await mock.call('fault', { method: 'GET', pathSource: LIST, status: 404 })
  progress(`failing: ${SESSIONS} goals, list answering 404`)
  const before = await mock.call('requestCounts')
  const t0 = hrMs()
  idle()
  const stats = await waitAllPrompted(mock, t0)
  while (runtime.snapshot().inFlight > 0 && hrMs() - stats.last < 30_000) await sleep(20)
  const end = await mock.call('requestCounts')
  const snapshot = runtime.snapshot()
  const result = {
    driven: stats.sessions,
    missed: SESSIONS - stats.sessions,
    duplicated: stats.duplicated,
    reposted: stats.reposted,
    allDrivenAfterMs: stats.last - t0,
    lists: end.lists - before.lists,
    requests: end.total - before.total,
    settledInstead: snapshot.settled,
  }
  await close()
  return result
}

runSection(async () => {
  const failing = await listFailing()
  const cannotList = await listAnswering404()
  return { sessions: SESSIONS, quietMs: QUIET_MS, failing, cannotList }
})
