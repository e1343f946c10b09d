// A host that behaves as OpenChamber's web server does with the package swapped in (the default
// host of scripts/chaos-real.mjs; INTEGRATION.md, "OpenChamber's web server"):
// - it imports the ESM entry and creates the goal runtime at start with OpenChamber's own flat
//   options (`buildOpenCodeUrl`, `getOpenCodeAuthHeaders`, `getSmallModelService`,
//   `emitGoalNotification`) and nothing else: no `directories` and no `recoverOnStart` (the
//   runtime scans nothing at creation), no quiet windows, no fetch timeout and no sweep interval
//   (the runtime's defaults: 15 s idle quiet, 3 s kickoff quiet, 10 s per request, a sweep every
//   5 minutes); the data directory comes from OPENCHAMBER_DATA_DIR, as OpenChamber's;
// - it reads OpenCode's global event stream (the package's event follower, `deliver: false`)
//   and forwards every payload itself to `processPayload(payload, directory)` (the envelope
//   unwrapped, `global` → ''); when the stream breaks (OpenCode restarted) the follower
//   reconnects with the loop's backoff (250 ms doubling, at most 10 s:
//   crates/goal-core/src/time/backoff.rs), and the runtime learns nothing but what the stream
//   carries (OpenCode's `server.connected` among it);
// - `answerTimeoutMs` (the second argument, optional) is how long one connection attempt waits
//   for the server's answer: the follower's default (5 s) when absent; OpenChamber's own hub
//   waits on Node's headers timeout (300 s), which chaos-real gives its hanging host;
// - it never calls `recover()` (the runtime's `recover` is replaced by a counter, reported at
//   the end, so a call would show).
//
//   OPENCHAMBER_DATA_DIR=<dir> node scripts/faults/openchamber-host.mjs <openCodeUrl> [answerTimeoutMs]
// Prints "ready" once its stream is connected; on stdin end it stops and prints its snapshot
// (one JSON line). Operator lines ([session-goal] …) go to the console, as in OpenChamber.
import { createEventFollower, createSessionGoalRuntime } from '../../runtime.mjs'
import { defaultAuditor } from './harness.mjs'

const [url, answerTimeoutMs] = process.argv.slice(2)
const base = String(url).replace(/\/+$/, '')
const notifications = {}

const runtime = createSessionGoalRuntime({
  // OpenChamber's (path, prefix) => URL of the managed OpenCode, asked per request.
  buildOpenCodeUrl: (pathname, prefix = '') => `${base}${prefix || ''}${pathname}`,
  getOpenCodeAuthHeaders: () => ({}),
  // OpenChamber imports its small-model service lazily; here it is the scripted auditor.
  getSmallModelService: async () => ({ generateSmallModelText: defaultAuditor }),
  emitGoalNotification: async ({ status }) => {
    notifications[status] = (notifications[status] ?? 0) + 1
  },
})
let recoverCalls = 0
runtime.recover = () => {
  recoverCalls++
}

let announced = false
const stream = createEventFollower({
  openCode: { baseUrl: base },
  deliver: false,
  ...(Number(answerTimeoutMs) > 0 ? { answerTimeoutMs: Number(answerTimeoutMs) } : {}),
  onStatus: ({ state }) => {
    if (state === 'connected' && !announced) {
      announced = true
      process.stdout.write('ready\n')
    }
  },
  onPayload: (payload, directory) => runtime.processPayload(payload, directory),
})

process.stdin.resume()
process.stdin.on('end', async () => {
  stream.close()
  const snapshot = runtime.snapshot()
  await runtime.stop()
  const line = { panics: snapshot.panics, continuations: snapshot.continuations, ticksTimedOut: snapshot.ticksTimedOut, recoverCalls, notifications }
  process.stdout.write(JSON.stringify(line) + '\n')
  process.exit(0)
})
