// A host as OpenChamber's server runs one, in a worker thread of its own (for
// __test__/silence.test.mjs). A worker is an environment of its own for the addon: runtimes
// created with OpenChamber's `buildOpenCodeUrl` all belong to one intake group (one OpenChamber
// server talks to one OpenCode), so a payload forwarded to one of them reaches every such runtime
// of its environment; hosts on different mocks in one test file need an environment each.
//
// In the worker: the goal runtime with OpenChamber's option names only (buildOpenCodeUrl,
// getOpenCodeAuthHeaders, getSmallModelService answering the scripted verdicts, the last
// repeating, emitGoalNotification) and a temp data directory, so every tunable is the runtime's
// default; the package's event follower (`deliver: false`) with each payload forwarded to
// processPayload by `onPayload`, as OpenChamber's server forwards them. The runtime's operator
// lines go to the console, as in OpenChamber.
//
//   const host = await startOpenChamberWorker({ url, dataDir, verdicts })
//   await host.loseTurnEnd({ messageID })   // drop the turn's idle (and that reply's message events)
//   await host.closeFollower()               // the stream stops for good: no event, no heartbeat
//   await host.payloads()                    // {forwarded, dropped}: [{type, at}] of each payload
//   await host.snapshot(), await host.history(sessionId), await host.auditCalls()
//   await host.stop()
import { createRequire } from 'node:module'
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import { fileURLToPath } from 'node:url'

const here = fileURLToPath(import.meta.url)

/** Starts the host on `url`; resolves once its event stream is connected. */
export async function startOpenChamberWorker({ url, dataDir, verdicts }) {
  const worker = new Worker(here, { workerData: { url, dataDir, verdicts } })
  const pending = new Map()
  let next = 0
  worker.on('message', (m) => {
    const waiter = pending.get(m.id)
    pending.delete(m.id)
    waiter?.(m)
  })
  const ask = (kind, args = {}) =>
    new Promise((resolve, reject) => {
      const id = next++
      pending.set(id, (m) => (m.error ? reject(new Error(m.error)) : resolve(m.value)))
      worker.postMessage({ id, kind, ...args })
    })
  await new Promise((resolve, reject) => {
    worker.once('error', reject)
    pending.set('ready', resolve)
  })
  let stopped = false
  return {
    snapshot: () => ask('snapshot'),
    history: (sessionId) => ask('history', { sessionId }),
    auditCalls: () => ask('auditCalls'),
    payloads: () => ask('payloads'),
    closeFollower: () => ask('closeFollower'),
    loseTurnEnd: ({ messageID = null } = {}) => ask('loseTurnEnd', { messageID }),
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
  const { url, dataDir, verdicts } = workerData
  const base = String(url).replace(/\/+$/, '')
  const buildOpenCodeUrl = (pathname, prefix = '') => `${base}${prefix || ''}${pathname}`
  const getOpenCodeAuthHeaders = () => ({})
  let auditCalls = 0
  const generateSmallModelText = async () => {
    const verdict = verdicts[Math.min(auditCalls++, verdicts.length - 1)]
    return { text: JSON.stringify(verdict), providerID: 'small', modelID: 'nano' }
  }
  const runtime = pkg.createSessionGoalRuntime({
    buildOpenCodeUrl,
    getOpenCodeAuthHeaders,
    getSmallModelService: async () => ({ generateSmallModelText }),
    emitGoalNotification: async () => {},
    settings: { dataDir },
  })

  // What the host loses: from loseTurnEnd until the session is busy again (the next turn
  // started), every idle (`session.status` idle and `session.idle`); and the message events of
  // the one reply named, whenever they come.
  let losingIdles = false
  let lostMessage = null
  const isIdle = (p) => (p?.type === 'session.status' && p.properties?.status?.type === 'idle') || p?.type === 'session.idle'
  const messageOf = (p) =>
    p?.type === 'message.updated' ? p.properties?.info?.id : p?.type === 'message.part.updated' ? p.properties?.part?.messageID : undefined
  const lost = (p) => {
    if (p?.type === 'session.status' && p.properties?.status?.type === 'busy') losingIdles = false
    return (losingIdles && isIdle(p)) || (lostMessage !== null && messageOf(p) === lostMessage)
  }
  const forwarded = []
  const dropped = []

  let announced = false
  const follower = pkg.createEventFollower({
    buildOpenCodeUrl,
    getOpenCodeAuthHeaders,
    deliver: false,
    onStatus: ({ state }) => {
      if (state === 'connected' && !announced) {
        announced = true
        parentPort.postMessage({ id: 'ready' })
      }
    },
    onPayload: (payload, directory) => {
      if (lost(payload)) {
        dropped.push({ type: payload.type, at: Date.now() })
        return
      }
      forwarded.push({ type: payload?.type, at: Date.now() })
      runtime.processPayload(payload, directory)
    },
  })

  const answers = {
    snapshot: () => runtime.snapshot(),
    history: ({ sessionId }) => runtime.history(sessionId),
    auditCalls: () => auditCalls,
    payloads: () => ({ forwarded, dropped }),
    closeFollower: () => follower.close(),
    loseTurnEnd: ({ messageID }) => {
      losingIdles = true
      lostMessage = messageID
    },
    stop: async () => {
      follower.close()
      await runtime.stop()
    },
  }
  parentPort.on('message', async ({ id, kind, ...args }) => {
    try {
      const value = await answers[kind](args)
      parentPort.postMessage({ id, value: value === undefined ? null : value })
    } catch (error) {
      parentPort.postMessage({ id, error: String(error?.message ?? error) })
    }
  })
}
