// Section 3: scale. 10,000 sessions with active goals go idle together: the host forwards
// 10,000 `session.status idle` payloads in one burst; every timer fires one quiet window later and
// every tick audits (the auditor answers at once) and sends a continuation.
//
// Measured in the host process (the mock runs in its own process):
//  - time from the first idle payload to the last continuation arriving at the mock, and from the
//    timers' due time (first payload + quiet window);
//  - peak RSS growth: VmHWM (reset to the current RSS just before the burst) minus VmRSS before;
//  - threads added: the highest /proc/self/status Threads seen (sampled every 10 ms) minus before;
//  - sessions missed: sessions whose continuation never arrived; sessions prompted twice.
// The mock's own CPU time is reported too, to show where the time goes. BENCH_CPU_HOG=N runs the
// same beside N processes spinning at full CPU (`npm run bench` reports it as the section
// scale-hog, with one per core), from before the baseline to the end of the measurement.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { benchGoalRuntime, hrMs, procStatus, progress, resetPeakRss, rootDir, runSection, sleep, startCpuHog, startMockProcess } from '../lib.mjs'

const require = createRequire(import.meta.url)

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 10_000)
const QUIET_MS = 1_000
const DEADLINE_MS = Number(process.env.BENCH_SCALE_DEADLINE_MS ?? 180_000)
const DIRECTORY = '/tmp/project'
const CPU_HOG = Number(process.env.BENCH_CPU_HOG ?? 0)
const SNAPSHOT_POLL_MS = 500
/** OpenCode 1.18.33's heartbeat interval on its event stream. */
const HEARTBEAT_MS = 10_000

runSection(async () => {
  const pkg = require(rootDir + '/runtime.js')
  const mock = await startMockProcess({ directory: DIRECTORY })
  progress(`scale: creating ${SESSIONS} goal sessions in the mock`)
  const sessions = []
  for (let start = 0; start < SESSIONS; start += 1000) {
    sessions.push(...(await mock.call('createGoalSessions', { count: Math.min(1000, SESSIONS - start), directory: DIRECTORY })))
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'goal-bench-'))
  let audits = 0
  const runtime = benchGoalRuntime(pkg, {
    quietMs: QUIET_MS,
    dataDir,
    openCode: { baseUrl: mock.url },
    generateSmallModelText: async () => {
      audits++
      return { text: '{"verdict":"continue","note":"nesting still missing"}', providerID: 'mock', modelID: 'mock-model' }
    },
  })
  // The payloads exist before the measurement, as the host's parsed events would.
  const payloads = sessions.map((id) => ({ type: 'session.status', properties: { sessionID: id, status: { type: 'idle' } } }))

  const stopHog = CPU_HOG > 0 ? startCpuHog(CPU_HOG) : () => {}
  if (CPU_HOG > 0) progress(`scale: ${CPU_HOG} processes spinning at full CPU beside the host`)
  // Settle, then take the baseline.
  await sleep(1000)
  globalThis.gc?.()
  const before = procStatus()
  const peakResettable = resetPeakRss()
  const mockBefore = await mock.call('usage')
  const cpuBefore = process.cpuUsage()
  const heapBefore = process.memoryUsage()
  let maxThreads = before.threads
  let maxRssKb = before.rssKb
  let maxHeapTotal = heapBefore.heapTotal
  let maxHeapUsed = heapBefore.heapUsed
  const sampler = setInterval(() => {
    const now = procStatus()
    if (now.threads > maxThreads) maxThreads = now.threads
    if (now.rssKb > maxRssKb) maxRssKb = now.rssKb
    const heap = process.memoryUsage()
    if (heap.heapTotal > maxHeapTotal) maxHeapTotal = heap.heapTotal
    if (heap.heapUsed > maxHeapUsed) maxHeapUsed = heap.heapUsed
  }, 10)

  // OpenCode's stream carries `server.heartbeat` every 10 s (docs/opencode.md) and the host
  // forwards it: without it the runtime's silence watch takes the stream for down after 25 s
  // and sweeps the directory, which is the cost of a stream that is down, not of this burst.
  const heartbeat = setInterval(() => runtime.processPayload({ type: 'server.heartbeat', properties: {} }, ''), HEARTBEAT_MS)
  const t0 = hrMs()
  for (const payload of payloads) runtime.processPayload(payload, DIRECTORY)
  const forwardedMs = hrMs() - t0
  const afterForward = runtime.snapshot()
  progress(`scale: ${SESSIONS} idle payloads forwarded in ${forwardedMs.toFixed(1)} ms; ${afterForward.armedTimers} timers armed`)

  let stats = await mock.call('promptStats')
  while (stats.sessions < SESSIONS && hrMs() - t0 < DEADLINE_MS) {
    await sleep(100)
    stats = await mock.call('promptStats')
  }
  const doneAt = hrMs()
  // Let in-flight ticks end before the final counts. A snapshot lists every tracked session
  // (about 22 ms and 2 MB of JS objects at 10,000): polled every 20 ms it kept the host's JS
  // thread busy and its heap growing, which is the bench's load, not the runtime's.
  while (runtime.snapshot().inFlight > 0 && hrMs() - doneAt < 30_000) await sleep(SNAPSHOT_POLL_MS)
  const after = procStatus()
  clearInterval(sampler)
  clearInterval(heartbeat)
  stopHog()
  const cpu = process.cpuUsage(cpuBefore)
  const mockAfter = await mock.call('usage')
  const snapshot = runtime.snapshot()
  stats = await mock.call('promptStats')
  await runtime.stop()
  const threadsAfterStop = procStatus().threads
  await mock.close()
  fs.rmSync(dataDir, { recursive: true, force: true })

  const peakKb = peakResettable ? Math.max(after.hwmKb, maxRssKb) : maxRssKb
  return {
    sessions: SESSIONS,
    cpuHog: CPU_HOG,
    quietMs: QUIET_MS,
    forwardMs: forwardedMs,
    armedAfterForward: afterForward.armedTimers,
    allSentAfterMs: stats.last - t0,
    allSentAfterDueMs: stats.last - (t0 + QUIET_MS),
    firstSentAfterDueMs: stats.first - (t0 + QUIET_MS),
    prompted: stats.sessions,
    missed: SESSIONS - stats.sessions,
    duplicated: stats.duplicated,
    reposted: stats.reposted,
    audits,
    continuations: snapshot.continuations,
    settled: snapshot.settled,
    panics: snapshot.panics,
    rssBeforeMb: before.rssKb / 1024,
    peakRssGrowthMb: (peakKb - before.rssKb) / 1024,
    peakFromHwm: peakResettable,
    rssAfterMb: after.rssKb / 1024,
    // The JS heap's share: V8 keeps garbage (audit requests, promises) until it collects.
    jsHeapTotalGrowthMb: (maxHeapTotal - heapBefore.heapTotal) / 1024 ** 2,
    jsHeapUsedGrowthMb: (maxHeapUsed - heapBefore.heapUsed) / 1024 ** 2,
    threadsBefore: before.threads,
    threadsMax: maxThreads,
    threadsAdded: maxThreads - before.threads,
    threadsAfter: after.threads,
    threadsAfterStop,
    hostCpuMs: (cpu.user + cpu.system) / 1000,
    mockCpuMs: (mockAfter.cpu.user + mockAfter.cpu.system - mockBefore.cpu.user - mockBefore.cpu.system) / 1000,
  }
})
