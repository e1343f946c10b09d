// Shared test setup: a mock OpenCode, the built addon, and a host that forwards OpenCode's events
// (the package's event follower, its payloads forwarded to one runtime's processPayload).
import { createRequire } from 'node:module'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startMockOpenCode } from './mock/opencode.mjs'
import { freshGoal } from './mock/goal.mjs'

const require = createRequire(import.meta.url)
export const pkg = require('../runtime.js')

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * An OpenCode URL where nothing listens. A privileged port is never handed out as an ephemeral
 * one, so no mock of a test file running in parallel can be listening there; a port just closed
 * can be handed to such a mock at once, which then answers this test's requests (a session
 * created in another test's server). 1023 is not on fetch's list of blocked ports.
 */
export const DEAD_URL = 'http://127.0.0.1:1023'
// How much longer a test may give work that only takes CPU time (never the product's own timers:
// backoffs, quiet windows): 1, unless SESSION_GOAL_TEST_TIME_SCALE says otherwise. The platform
// test (scripts/test-platforms.mjs) runs a test that failed under emulation again with 4, to tell
// a slow CPU from a fault.
export const TIME_SCALE = Math.max(1, Number(process.env.SESSION_GOAL_TEST_TIME_SCALE) || 1)

const madeTempDirs = new Set()

/**
 * A new directory under the temp directory, named `prefix` + random characters. It is removed
 * after the test file (`__test__/setup/temp-dirs.mjs` calls `removeTempDirs`).
 */
export function tempDir(prefix = 'goal-test-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  madeTempDirs.add(dir)
  return dir
}

/** Removes every directory `tempDir` made in this test file so far. */
export function removeTempDirs() {
  for (const dir of madeTempDirs) fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5 })
  madeTempDirs.clear()
}

/** A data directory for a runtime (removed like any `tempDir`), with `settings.json` when given. */
export function tempDataDir(settings) {
  const dir = tempDir('goal-test-')
  if (settings) fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(settings))
  return dir
}

/** A scripted auditor: each call takes the next verdict (the last repeats). */
export function scriptedAuditor(verdicts) {
  const calls = []
  const generateSmallModelText = async (request) => {
    calls.push(request)
    const next = verdicts[Math.min(calls.length - 1, verdicts.length - 1)]
    if (typeof next === 'function') return next(request)
    if (next instanceof Error) throw next
    if (typeof next === 'string') return { text: next, providerID: 'small', modelID: 'nano' }
    return { text: JSON.stringify(next), providerID: 'small', modelID: 'nano' }
  }
  return { calls, service: { generateSmallModelText }, getSmallModelService: async () => ({ generateSmallModelText }) }
}

export function goalMetadata(fields = {}) {
  return {
    openchamber: {
      goal: freshGoal(fields),
    },
  }
}

export const goalOf = (mock, id) => mock.getSession(id)?.metadata?.openchamber?.goal

/**
 * The events of `url` forwarded to `runtime` alone, as a host that forwards payloads does (the
 * follower delivers nothing itself: another runtime of this file on the same server hears none
 * of it). `close()` ends it.
 */
export function forwardEvents(url, runtime) {
  return pkg.createEventFollower({ openCode: { baseUrl: url }, deliver: false, onPayload: (payload, dir) => runtime.processPayload(payload, dir) })
}

/**
 * Starts a mock OpenCode and a goal runtime wired like a host: the mock's events are forwarded
 * into processPayload (unless `forward` is false). `openCode` adds connection options (e.g.
 * `fetchTimeoutMs`). Returns helpers and a cleanup.
 */
export async function setup({ runtimeOptions = {}, mockOptions = {}, auditor, forward = true, openCode = {} } = {}) {
  const mock = await startMockOpenCode({ heartbeatMs: 60_000, replyDelayMs: 15, ...mockOptions })
  const notifications = []
  const dataDir = runtimeOptions.dataDir ?? tempDataDir()
  const runtime = pkg.createSessionGoalRuntime({
    openCode: { baseUrl: mock.url, ...openCode },
    settings: { dataDir },
    idleQuietMs: 150,
    kickoffQuietMs: 100,
    resumeKickoffMs: 50,
    emitGoalNotification: (event) => notifications.push(event),
    ...(auditor ? { generateSmallModelText: auditor.service.generateSmallModelText } : {}),
    ...runtimeOptions,
  })
  // The runtime lists the server at start (its census, docs/forks-and-restarts.md): a session the
  // test makes after that is found by its events, as on a server the host was started before.
  // (A host URL of the test's own making may not reach the mock at all.)
  const scans = runtimeOptions.recoverOnStart !== false && !runtimeOptions.buildOpenCodeUrl
  if (scans) await startScanRead(mock)
  let stream = null
  if (forward) {
    stream = forwardEvents(mock.url, runtime)
    await mock.waitFor(() => mock.eventStreams > 0, { timeoutMs: 3000 })
    // The stream's first connection takes one more census (of what the scan at start may have
    // missed): it is read before the test makes its sessions, which its events then announce.
    if (scans) await startScanRead(mock, 1)
  }
  const cleanup = async () => {
    stream?.close()
    await runtime.stop()
    await mock.close()
  }
  return { mock, runtime, notifications, dataDir, cleanup }
}

/**
 * Waits until a runtime's scan at start has been answered by `mock` (a census of its sessions):
 * until more than `before` censuses were answered.
 */
export async function startScanRead(mock, before = 0) {
  await mock.waitFor(() => censusesAnswered(mock) > before, { timeoutMs: 5000 })
}

const censusesAnswered = (mock) => mock.requests.filter((r) => r.path === '/experimental/session' && r.answered).length

/**
 * `setup` for a test that may run at the same time as others of its file (`describe.concurrent`):
 * the environment is cleaned up when that test finishes (`context` is the test's own context, whose
 * `onTestFinished` belongs to that test alone), not by a file-wide `afterEach` over one shared variable.
 */
export async function setupFor(context, options) {
  const env = await setup(options)
  context.onTestFinished(() => env.cleanup())
  return env
}

/**
 * A second host on the mock of `env` (from setup): its own runtime, reaching the same server by
 * another name (its own identity), sharing the data directory, fed by its own event stream.
 * Resolves once both hosts' streams are connected; `stop()` ends it.
 */
export async function startSecondHost(env, { idleQuietMs, auditor }) {
  const censuses = censusesAnswered(env.mock)
  const runtime = pkg.createSessionGoalRuntime({
    openCode: { baseUrl: env.mock.url.replace('127.0.0.1', 'localhost') },
    settings: { dataDir: env.dataDir },
    idleQuietMs,
    kickoffQuietMs: 100,
    generateSmallModelText: auditor.service.generateSmallModelText,
  })
  const stream = forwardEvents(env.mock.url, runtime)
  const stop = async () => {
    stream.close()
    await runtime.stop()
  }
  await waitFor(() => env.mock.eventStreams >= 2)
  // Its scan at start, then the census its stream's first connection takes.
  await startScanRead(env.mock, censuses + 1)
  return { runtime, stop }
}

/** A session with a goal and one completed exchange, idle. */
export function sessionWithReply(mock, { goal = {}, reply = {}, directory = '/tmp/project' } = {}) {
  const session = mock.createSession({ directory, metadata: goalMetadata(goal) })
  mock.addUserMessage(session.id, 'Please make the parser handle nested lists')
  mock.addAssistantMessage(session.id, { text: 'Started: parser skeleton in place. Remaining: nesting.', tokens: { input: 1000, output: 100 }, ...reply })
  return session
}

export async function waitFor(fn, timeoutMs = 5000, intervalMs = 10) {
  const start = Date.now()
  for (;;) {
    let value
    try {
      value = await fn()
    } catch {
      value = undefined
    }
    if (value) return value
    if (Date.now() - start > timeoutMs) throw new Error('waitFor timed out: ' + fn.toString().slice(0, 200))
    await sleep(intervalMs)
  }
}

/**
 * When a runtime (any host) first acted on the session at or after `since`: a turn-starting
 * post or a goal write; `null` before it did.
 */
export function firstActionAt(mock, sessionId, since) {
  const times = [
    ...mock.sends(sessionId).map((r) => r.at),
    ...mock.patches.filter((p) => p.sessionId === sessionId && p.body?.metadata?.openchamber?.goal).map((p) => p.at),
  ].filter((at) => at >= since)
  return times.length ? Math.min(...times) : null
}
