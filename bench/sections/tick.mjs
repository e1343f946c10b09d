// Section 2: tick latency, from the quiet-window timer firing to the mock OpenCode receiving
// `prompt_async`, with an auditor that answers at once and a mock that delays every request by
// 2 ms (a `fault({path: /.*/, delayMs: 2})`, which answers normally, late).
//
// Method: the host forwards `session.status idle` for a session with an active goal and one
// finished exchange at t0 (process.hrtime); the timer is due at t0 + quiet window. The mock stamps
// the arrival of `POST /session/:id/prompt_async` with process.hrtime too (same CLOCK_MONOTONIC in
// both processes). Latency = arrival − (t0 + quiet). It therefore includes the timer's own lateness
// (tokio timers have 1 ms granularity); "from the tick's first request" is reported as well.
// Sessions go one at a time, each after the previous tick has ended.
//
// The comparison: the exact requests a tick made (taken from the mock's log), replayed one after
// another from JavaScript over one keep-alive connection against the same mock and delay, on a
// scratch session, timed the same way (start → arrival of prompt_async). One round trip = a single
// GET /session/:id from JavaScript.
//
// A second, shorter run repeats the native measurement with every request delayed by 10 ms, the
// scale at which the cost of a tick is counted in round trips (a tick's own CPU work and the
// timer's millisecond are then small next to the waiting, so the ratio is steady from run to run).
// It runs for goals that name their session (`sessionId`, as this package writes them) and for
// goals without one (as OpenChamber's UI writes them). For the comparison of the two, each
// session is made just before its tick (so no owner list read earlier shows it) and the runtime
// gets the mock's event stream, as a host forwards it: the goal's write reaches it as
// `session.updated` (200 ms before the idle here, far less than a real turn), which starts the
// owner list of a goal without `sessionId`; a write's echo arrives the same way. One more row:
// a goal without `sessionId` on a runtime that gets status events only (it first sees the goal at
// its tick, and reads the owner list there).
import http from 'node:http'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { benchGoalRuntime, hrMs, percentile, progress, rootDir, runSection, sleep, startMockProcess } from '../lib.mjs'

const require = createRequire(import.meta.url)

const TICKS = Number(process.env.BENCH_TICKS ?? 200)
const WARMUP = 10
const QUIET_MS = 100
const DELAY_MS = 2
const SLOW_DELAY_MS = 10
const SLOW_TICKS = Math.max(10, Math.round(TICKS / 4))
const DIRECTORY = '/tmp/project'

function auditor() {
  return async () => ({ text: '{"verdict":"continue","note":"nesting still missing"}', providerID: 'mock', modelID: 'mock-model' })
}

function stats(values) {
  return { p50: percentile(values, 50), p99: percentile(values, 99), min: Math.min(...values), max: Math.max(...values), n: values.length }
}

/** Waits for the mock to report the arrival of a prompt for `sessionId`. */
function promptArrival(mock, sessionId, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off()
      reject(new Error(`no prompt_async for ${sessionId} within ${timeoutMs} ms`))
    }, timeoutMs)
    const off = mock.onEvent((event) => {
      if (event.event === 'prompt' && event.sessionId === sessionId) {
        clearTimeout(timer)
        off()
        resolve(event.atHr)
      }
    })
  })
}

/** `sessions`: the session ids, or a count and `makeSession()` to create each one just before its tick. */
async function measureTicks(mock, runtime, sessions, label, makeSession = null) {
  const latencies = []
  const fromFirstRequest = []
  const requestCounts = []
  let lastLog = []
  const count = makeSession ? sessions : sessions.length
  for (let i = 0; i < count; i++) {
    const sessionId = makeSession ? await makeSession() : sessions[i]
    await mock.call('takeLog')
    const arrival = promptArrival(mock, sessionId)
    const t0 = hrMs()
    runtime.processPayload({ type: 'session.status', properties: { sessionID: sessionId, status: { type: 'idle' } } }, DIRECTORY)
    const arrivedAt = await arrival
    // Let the tick finish (the prompt's answer comes 2 ms later) before the next one.
    while (runtime.snapshot().inFlight > 0) await sleep(1)
    const log = (await mock.call('takeLog')).filter((r) => r.atHr >= t0 && r.atHr <= arrivedAt)
    if (i < WARMUP) continue
    latencies.push(arrivedAt - (t0 + QUIET_MS))
    fromFirstRequest.push(arrivedAt - log[0].atHr)
    requestCounts.push(log.length)
    lastLog = log
  }
  progress(`tick (${label}): ${latencies.length} continuations measured`)
  return { latencies, fromFirstRequest, requestCounts, lastLog }
}

function request(agent, base, { method, path: urlPath, query, body }) {
  return new Promise((resolve, reject) => {
    const search = new URLSearchParams(query ?? {}).toString()
    const payload = body === undefined || body === null ? undefined : JSON.stringify(body)
    const req = http.request(
      base + urlPath + (search ? '?' + search : ''),
      { method, agent, headers: payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {} },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(payload)
  })
}

runSection(async () => {
  const pkg = require(rootDir + '/runtime.js')
  // Real turns: each continuation starts one that keeps running (a turn that never ends once
  // stalled this section for 20 s; the tick watchdog bounds every tick now).
  const mock = await startMockProcess({ directory: DIRECTORY, turns: true })
  const perRun = TICKS + WARMUP
  const slowPerRun = SLOW_TICKS + WARMUP
  const created = await mock.call('createGoalSessions', { count: 2 * perRun + 1, directory: DIRECTORY })
  const nativeSessions = created.slice(0, perRun)
  const hostSessions = created.slice(perRun, 2 * perRun)
  const scratch = created[2 * perRun]
  const slowSessions = await mock.call('createGoalSessions', { count: slowPerRun, directory: DIRECTORY, owned: true })
  await mock.call('fault', { pathSource: '.*', delayMs: DELAY_MS })
  await mock.call('setLogging', { keep: true, prompts: true })
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'goal-bench-'))

  // Native-first options: a fixed base URL.
  const nativeRuntime = () =>
    benchGoalRuntime(pkg, { quietMs: QUIET_MS, dataDir, openCode: { baseUrl: mock.url }, generateSmallModelText: auditor() })
  const native = nativeRuntime()
  const nativeRun = await measureTicks(mock, native, nativeSessions, 'openCode.baseUrl')
  await native.stop()

  // OpenChamber's options: the URL and headers come from host callbacks on every request.
  const generate = auditor()
  const hosted = benchGoalRuntime(pkg, {
    quietMs: QUIET_MS,
    dataDir,
    buildOpenCodeUrl: (apiPath) => mock.url + apiPath,
    getOpenCodeAuthHeaders: () => ({ authorization: 'Bearer bench' }),
    getSmallModelService: async () => ({ generateSmallModelText: generate }),
  })
  const hostRun = await measureTicks(mock, hosted, hostSessions, 'buildOpenCodeUrl')
  await hosted.stop()

  // The same requests, one after another, from JavaScript.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const template = nativeRun.lastLog
  const original = nativeSessions[nativeSessions.length - 1]
  const replay = template.map((r) => ({
    method: r.method,
    path: r.path.split(original).join(scratch),
    query: r.query,
    body: r.body === undefined ? undefined : JSON.parse(JSON.stringify(r.body).split(original).join(scratch)),
  }))
  const sequential = []
  for (let i = 0; i < TICKS + WARMUP; i++) {
    const arrival = promptArrival(mock, scratch)
    const t0 = hrMs()
    for (const r of replay) await request(agent, mock.url, r)
    const arrivedAt = await arrival
    if (i >= WARMUP) sequential.push(arrivedAt - t0)
  }
  /** `count` single GET /session/:id round trips (after the warm-up), timed from JavaScript. */
  const measureRoundTrips = async (count) => {
    const times = []
    for (let i = 0; i < count + WARMUP; i++) {
      const t0 = hrMs()
      await request(agent, mock.url, { method: 'GET', path: `/session/${scratch}`, query: { directory: DIRECTORY } })
      if (i >= WARMUP) times.push(hrMs() - t0)
    }
    return times
  }
  const roundTrips = await measureRoundTrips(TICKS)

  // The same native tick with every request 10 ms late, and one round trip at that delay.
  await mock.call('clearFaults')
  await mock.call('fault', { pathSource: '.*', delayMs: SLOW_DELAY_MS })
  const slowRuntime = nativeRuntime()
  const slowRun = await measureTicks(mock, slowRuntime, slowSessions, `${SLOW_DELAY_MS} ms per request, sessionId`)
  await slowRuntime.stop()
  // Goals made one at a time, each seen by a runtime fed by the mock's event stream.
  const streamedRun = async (owned, label) => {
    const runtime = nativeRuntime()
    let connected = false
    // The package's event follower reads the stream; each payload is forwarded to this runtime,
    // as a host forwards it (deliver: false).
    const stream = pkg.createEventFollower({
      openCode: { baseUrl: mock.url },
      deliver: false,
      onStatus: ({ state }) => (connected ||= state === 'connected'),
      onPayload: (payload, directory) => runtime.processPayload(payload, directory),
    })
    while (!connected) await sleep(10)
    const make = async () => {
      const [sessionId] = await mock.call('createGoalSessions', { count: 1, directory: DIRECTORY, owned })
      await sleep(200)
      return sessionId
    }
    const run = await measureTicks(mock, runtime, slowPerRun, label, make)
    stream.close()
    await runtime.stop()
    return run
  }
  const ownedStreamRun = await streamedRun(true, `${SLOW_DELAY_MS} ms per request, events, sessionId`)
  const unownedRun = await streamedRun(false, `${SLOW_DELAY_MS} ms per request, events, no sessionId`)
  const unseenRuntime = nativeRuntime()
  const makeUnowned = async () => (await mock.call('createGoalSessions', { count: 1, directory: DIRECTORY }))[0]
  const unseenRun = await measureTicks(mock, unseenRuntime, slowPerRun, `${SLOW_DELAY_MS} ms per request, no sessionId, first seen at its tick`, makeUnowned)
  await unseenRuntime.stop()
  const slowRoundTrips = await measureRoundTrips(SLOW_TICKS)
  agent.destroy()
  await mock.close()
  fs.rmSync(dataDir, { recursive: true, force: true })

  const shape = (r) =>
    `${r.method} ${r.path.replace(/ses_[A-Za-z0-9]+/, ':id')}${r.query?.limit ? '?limit=' + r.query.limit : ''}${r.query?.roots ? `?roots=${r.query.roots}${r.query.start ? '&start=…' : ''}` : ''}`
  return {
    quietMs: QUIET_MS,
    delayMs: DELAY_MS,
    ticks: TICKS,
    native: {
      fromFire: stats(nativeRun.latencies),
      fromFirstRequest: stats(nativeRun.fromFirstRequest),
      requests: stats(nativeRun.requestCounts),
    },
    hosted: {
      fromFire: stats(hostRun.latencies),
      fromFirstRequest: stats(hostRun.fromFirstRequest),
      requests: stats(hostRun.requestCounts),
    },
    requestSequence: template.map(shape),
    sequentialJs: stats(sequential),
    roundTrip: stats(roundTrips),
    slow: {
      delayMs: SLOW_DELAY_MS,
      fromFire: stats(slowRun.latencies),
      fromFirstRequest: stats(slowRun.fromFirstRequest),
      requests: stats(slowRun.requestCounts),
      roundTrip: stats(slowRoundTrips),
    },
    /** The same at 10 ms with events forwarded, goals with `sessionId`, each made just before its tick. */
    slowOwnedEvents: {
      fromFire: stats(ownedStreamRun.latencies),
      fromFirstRequest: stats(ownedStreamRun.fromFirstRequest),
      requests: stats(ownedStreamRun.requestCounts),
    },
    /** The same with events forwarded, goals without `sessionId` (their write seen at intake). */
    slowUnowned: {
      fromFire: stats(unownedRun.latencies),
      fromFirstRequest: stats(unownedRun.fromFirstRequest),
      requests: stats(unownedRun.requestCounts),
      requestSequence: unownedRun.lastLog.map(shape),
    },
    /** The same, for goals without `sessionId` the runtime first sees at their tick. */
    slowUnseen: {
      fromFire: stats(unseenRun.latencies),
      fromFirstRequest: stats(unseenRun.fromFirstRequest),
      requests: stats(unseenRun.requestCounts),
      requestSequence: unseenRun.lastLog.map(shape),
    },
  }
})
