// What every end-to-end file sets up: the scripted model and a real `opencode serve` for the
// whole file, and a host that forwards OpenCode's /global/event stream into a goal runtime the
// way OpenChamber does (the package's event follower reads it, `deliver: false`, and the host
// passes each payload to processPayload), plus the recover() after a reconnect that
// INTEGRATION.md recommends (OpenChamber itself never calls it: its goals are found by the sweep).
//
//   const env = useOpenCode()            // env.model, env.oc once beforeAll has run
//   const host = await startForwardingHost(env.oc, { maxAutoTurns: 2 })
//   ... host.runtime, host.notifications, host.logs ...
//   await host.stop()                    // or left to the end of the test: every host still
//                                        // running then is stopped (E2E_LOG=1 prints its log)

import { afterAll, afterEach, beforeAll } from 'vitest'
import { createRequire } from 'node:module'
import { tempDataDir, waitFor } from '../helpers.mjs'
import { startScriptedModel } from '../mock/model.mjs'
import { startOpenCode } from './opencode-server.mjs'

const require = createRequire(import.meta.url)
const pkg = require('../../runtime.js')

/** Hosts started and not yet stopped. */
const running = new Set()

/**
 * Starts the scripted model and `opencode serve` before the file's tests and closes both after.
 * `openCodeOptions` go to startOpenCode (e.g. `{ git: true }`).
 */
export function useOpenCode(openCodeOptions = {}) {
  const env = { model: undefined, oc: undefined }
  beforeAll(async () => {
    env.model = await startScriptedModel()
    env.oc = await startOpenCode({ modelBaseURL: env.model.baseURL, ...openCodeOptions })
    console.log(`opencode serve answered after ${env.oc.startMs} ms`)
  }, 120_000)
  afterEach(async (context) => {
    for (const host of [...running]) {
      // E2E_LOG=1 prints each scenario's runtime log lines (never prompts, output or keys).
      if (process.env.E2E_LOG) console.log(`--- ${context.task.name}\n${host.logs.join('\n')}`)
      await host.stop()
    }
  })
  afterAll(async () => {
    await env.oc?.close()
    await env.model?.close()
  })
  return env
}

/**
 * A goal runtime on `oc` (quiet windows of 400 ms, a fresh data directory, notifications and log
 * lines collected; `options` override any of it), fed from OpenCode's event stream. Resolves once
 * the stream is connected.
 */
export async function startForwardingHost(oc, options = {}) {
  const notifications = []
  const logs = []
  const runtime = pkg.createSessionGoalRuntime({
    openCode: { baseUrl: oc.url },
    settings: { dataDir: tempDataDir() },
    idleQuietMs: 400,
    kickoffQuietMs: 400,
    emitGoalNotification: (event) => notifications.push(event),
    logger: (level, message) => logs.push(`${new Date().toISOString().slice(11, 23)} ${level} ${message}`),
    ...options,
  })
  let connected = false
  let dropped = false
  const stream = pkg.createEventFollower({
    openCode: { baseUrl: oc.url },
    deliver: false,
    onPayload: (payload, directory) => runtime.processPayload(payload, directory),
    onStatus: ({ state }) => {
      if (state === 'disconnected') dropped = true
      if (state !== 'connected') return
      connected = true
      if (dropped) {
        dropped = false
        runtime.recover()
      }
    },
  })
  try {
    await waitFor(() => connected, 10_000)
  } catch (error) {
    stream.close()
    await runtime.stop()
    throw error
  }
  const host = {
    runtime,
    notifications,
    logs,
    async stop() {
      running.delete(host)
      stream.close()
      await runtime.stop()
    },
  }
  running.add(host)
  return host
}
