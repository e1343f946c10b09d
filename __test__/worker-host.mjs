// A second host for the interleaving tests: a goal runtime in a worker thread, which is an
// environment of its own for the addon (its own write slots and dispatch claims, as another
// process would have), on the same OpenCode server reached by another name, fed by its own event
// follower (delivering to the Worker's runtime). Driven by messages: {snapshot} → the runtime's snapshot; {stop} → stopped.
import { createRequire } from 'node:module'
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import { fileURLToPath } from 'node:url'

const here = fileURLToPath(import.meta.url)

/**
 * Starts the worker host on `url` (use another host name than the first host's) with the data
 * directory, quiet window and the auditor's verdicts (the last repeats). Resolves once its event
 * stream is connected, with {snapshot(), ticking(sessionId), stop()}.
 */
export async function startWorkerHost({ url, dataDir, idleQuietMs, verdicts, runtimeOptions = {} }) {
  const worker = new Worker(here, { workerData: { url, dataDir, idleQuietMs, verdicts, runtimeOptions } })
  const pending = new Map()
  let next = 0
  worker.on('message', (m) => {
    const waiter = pending.get(m.id)
    pending.delete(m.id)
    waiter?.(m)
  })
  const ask = (kind) =>
    new Promise((resolve) => {
      const id = next++
      pending.set(id, resolve)
      worker.postMessage({ id, kind })
    })
  await new Promise((resolve, reject) => {
    worker.once('error', reject)
    pending.set('ready', resolve)
  })
  let stopped = false
  return {
    snapshot: async () => (await ask('snapshot')).snapshot,
    ticking: async (sessionId) => (await ask('snapshot')).snapshot.sessions.some((s) => s.sessionId === sessionId && s.ticking),
    async stop() {
      if (stopped) return
      stopped = true
      await ask('stop')
      await worker.terminate()
    },
  }
}

if (!isMainThread) {
  const require = createRequire(import.meta.url)
  const pkg = require('../runtime.js')
  const { url, dataDir, idleQuietMs, verdicts, runtimeOptions } = workerData
  let calls = 0
  const runtime = pkg.createSessionGoalRuntime({
    logger: null,
    openCode: { baseUrl: url },
    settings: { dataDir },
    idleQuietMs,
    kickoffQuietMs: 100,
    generateSmallModelText: async () => {
      const verdict = verdicts[Math.min(calls++, verdicts.length - 1)]
      return { text: JSON.stringify(verdict), providerID: 'small', modelID: 'nano' }
    },
    ...runtimeOptions,
  })
  let announced = false
  const stream = pkg.createEventFollower({
    openCode: { baseUrl: url },
    onStatus: ({ state }) => {
      if (state === 'connected' && !announced) {
        announced = true
        parentPort.postMessage({ id: 'ready' })
      }
    },
  })
  parentPort.on('message', async ({ id, kind }) => {
    if (kind === 'snapshot') parentPort.postMessage({ id, snapshot: runtime.snapshot() })
    if (kind === 'stop') {
      stream.close()
      await runtime.stop()
      parentPort.postMessage({ id })
    }
  })
}
