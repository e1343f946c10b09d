// A host as OpenChamber's web server runs one, in a process of its own
// (scripts/faults/openchamber-host.mjs: the goal runtime created with OpenChamber's option names
// only, so every tunable is the runtime's default; every payload of OpenCode's global stream
// forwarded to processPayload; the data directory from OPENCHAMBER_DATA_DIR; its auditor answers
// `complete` for a turn that says FINISHED:, else `continue`). A process, not a worker thread, so
// that a kill is a real one (SIGKILL: no stop, no cleanup) and the host started again is a new
// process that knows nothing but its settings and its data directory.
//
//   const host = await startHostProcess({ url: mock.url, dataDir })
//   host.kill()                          // SIGKILL, at once
//   await host.stop()                    // ends it cleanly (stdin closed), or kills it
//   host.output()                        // what it printed (its operator lines)
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const script = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'scripts', 'faults', 'openchamber-host.mjs')
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Starts the host on `url` with `dataDir` as OpenChamber's data directory. Resolves once the
 * process runs and its runtime exists (`ready` waits for its stream to connect as well, which
 * an OpenCode that refuses connections never lets happen).
 */
export async function startHostProcess({ url, dataDir, ready = true, readyTimeoutMs = 30_000 }) {
  const child = spawn(process.execPath, [script, url], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, OPENCHAMBER_DATA_DIR: dataDir },
  })
  let out = ''
  child.stdout.on('data', (chunk) => (out += chunk))
  child.stderr.on('data', (chunk) => (out += chunk))
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const host = {
    child,
    startedAt: Date.now(),
    output: () => out,
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      return exited
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.stdin.end()
      const deadline = Date.now() + 15_000
      while (child.exitCode === null && child.signalCode === null && Date.now() < deadline) await sleep(50)
      await host.kill()
    },
  }
  if (ready) {
    const deadline = Date.now() + readyTimeoutMs
    while (!/^ready$/m.test(out)) {
      if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
        await host.kill()
        throw new Error(`the host did not connect:\n${out.slice(-2000)}`)
      }
      await sleep(50)
    }
  }
  return host
}
