// Section 6: a host started again over a server of 200 directories and 10,000 sessions, each
// session with an active goal whose turn finished while the host was down. The new runtime knows
// nothing (OpenChamber's options: no directories) and gets no event of those sessions: it finds
// every goal by its census at start (docs/forks-and-restarts.md), audits each and continues it.
// The host forwards OpenCode's 10 s heartbeat, as a connected stream carries it.
//
// Measured in the host process (the mock runs in its own process):
//  - the census's requests (`GET /experimental/session` pages) until the last goal was driven;
//  - time from the runtime's creation to the first continuation and to the last;
//  - peak RSS growth: VmHWM (reset just before the runtime is made) minus VmRSS before;
//  - sessions missed (no continuation) and prompted twice (two different continuations).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { benchGoalRuntime, hrMs, procStatus, progress, resetPeakRss, rootDir, runSection, sleep, startMockProcess } from '../lib.mjs'

const require = createRequire(import.meta.url)

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 10_000)
const DIRECTORIES = 200
/** The replies finished long ago: the quiet window has passed, as after a host's downtime. */
const QUIET_MS = 15_000
/** OpenChamber's kickoff window: the census arms each goal this long after it is found. */
const KICKOFF_MS = 3_000
const DEADLINE_MS = Number(process.env.BENCH_SCALE_DEADLINE_MS ?? 180_000)
const HEARTBEAT_MS = 10_000

runSection(async () => {
  const pkg = require(rootDir + '/runtime.js')
  const mock = await startMockProcess({ directory: '/tmp/restart-0' })
  progress(`restart: ${SESSIONS} goal sessions in ${DIRECTORIES} directories in the mock`)
  const perDirectory = Math.ceil(SESSIONS / DIRECTORIES)
  for (let d = 0; d < DIRECTORIES; d++) {
    const count = Math.min(perDirectory, SESSIONS - d * perDirectory)
    if (count > 0) await mock.call('createGoalSessions', { count, directory: `/tmp/restart-${d}` })
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'goal-bench-'))
  let audits = 0
  await sleep(1000)
  globalThis.gc?.()
  const before = procStatus()
  const countsBefore = await mock.call('requestCounts')
  const peakResettable = resetPeakRss()
  let maxRssKb = before.rssKb
  let maxThreads = before.threads
  const sampler = setInterval(() => {
    const now = procStatus()
    if (now.rssKb > maxRssKb) maxRssKb = now.rssKb
    if (now.threads > maxThreads) maxThreads = now.threads
  }, 10)
  const t0 = hrMs()
  const runtime = benchGoalRuntime(pkg, {
    quietMs: QUIET_MS,
    kickoffQuietMs: KICKOFF_MS,
    recoverOnStart: true,
    dataDir,
    openCode: { baseUrl: mock.url },
    generateSmallModelText: async () => {
      audits++
      return { text: '{"verdict":"continue","note":"nesting still missing"}', providerID: 'mock', modelID: 'mock-model' }
    },
  })
  const heartbeat = setInterval(() => runtime.processPayload({ type: 'server.heartbeat', properties: {} }, ''), HEARTBEAT_MS)
  let stats = await mock.call('promptStats')
  while (stats.sessions < SESSIONS && hrMs() - t0 < DEADLINE_MS) {
    await sleep(250)
    stats = await mock.call('promptStats')
  }
  const counts = await mock.call('requestCounts')
  while (runtime.snapshot().inFlight > 0 && hrMs() - t0 < DEADLINE_MS + 30_000) await sleep(500)
  const after = procStatus()
  clearInterval(sampler)
  clearInterval(heartbeat)
  const snapshot = runtime.snapshot()
  await runtime.stop()
  await mock.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
  const peakKb = peakResettable ? Math.max(after.hwmKb, maxRssKb) : maxRssKb
  return {
    sessions: SESSIONS,
    directories: DIRECTORIES,
    kickoffMs: KICKOFF_MS,
    censusRequests: counts.censuses - countsBefore.censuses,
    requests: counts.total - countsBefore.total,
    firstSentAfterMs: stats.first - t0,
    allSentAfterMs: stats.last - t0,
    prompted: stats.sessions,
    missed: SESSIONS - stats.sessions,
    duplicated: stats.duplicated,
    audits,
    panics: snapshot.panics,
    rssBeforeMb: before.rssKb / 1024,
    peakRssGrowthMb: (peakKb - before.rssKb) / 1024,
    peakFromHwm: peakResettable,
    threadsBefore: before.threads,
    threadsMax: maxThreads,
  }
})
