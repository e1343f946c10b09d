// A second host in its own process (a desktop shell next to a web server): a goal runtime on the
// same OpenCode server, fed by its own event follower (which delivers each event to the runtime
// and reconnects with the loop's backoff). Used by the two-hosts measurement.
//   node scripts/faults/second-host.mjs <openCodeUrl> <dataDir> <quietMs>
// Prints "ready" once its stream is connected; on stdin end it stops and prints its snapshot.
import { createRequire } from 'node:module'
import { defaultAuditor } from './harness.mjs'

const require = createRequire(import.meta.url)
const pkg = require('../../runtime.js')

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
const stream = pkg.createEventFollower({
  openCode: { baseUrl: url },
  onStatus: ({ state }) => {
    if (state === 'connected' && !announced) {
      announced = true
      process.stdout.write('ready\n')
    }
  },
})
process.stdin.resume()
process.stdin.on('end', async () => {
  stream.close()
  const snapshot = runtime.snapshot()
  await runtime.stop()
  process.stdout.write(JSON.stringify({ panics: snapshot.panics, continuations: snapshot.continuations }) + '\n')
  process.exit(0)
})
