// A second host in its own process (a desktop shell next to a web server): a goal runtime on the
// same OpenCode server, fed by its own event stream. Used by the two-hosts measurement.
//   node scripts/faults/second-host.mjs <openCodeUrl> <dataDir> <quietMs>
// Prints "ready" once its stream is connected; on stdin end it stops and prints its snapshot.
import { createRequire } from 'node:module'
import { defaultAuditor } from './harness.mjs'

const require = createRequire(import.meta.url)
const pkg = require('../../runtime.js')
const { subscribeGlobalEvents } = require('../../lib/event-stream.js')

const [url, dataDir, quietMs] = process.argv.slice(2)
const runtime = pkg.createSessionGoalRuntime({
  logger: null, // no console lines: they would cost the measured thread
  openCode: { baseUrl: url },
  settings: { dataDir },
  idleQuietMs: Number(quietMs),
  kickoffQuietMs: 100,
  resumeKickoffMs: 50,
  fetchTimeoutMs: 1000,
  generateSmallModelText: defaultAuditor,
})
let announced = false
const stream = subscribeGlobalEvents({
  url,
  onStatus: (status) => {
    if (status === 'connected' && !announced) {
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
  process.stdout.write(JSON.stringify({ panics: snapshot.panics, continuations: snapshot.continuations }) + '\n')
  process.exit(0)
})
