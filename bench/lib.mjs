// Shared helpers of the benchmark sections: the mock OpenCode in a child process, clocks,
// /proc readers and statistics.
import { fork, spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const benchDir = path.dirname(fileURLToPath(import.meta.url))
export const rootDir = path.dirname(benchDir)

/** Milliseconds on CLOCK_MONOTONIC (the same clock in every process: see mock-server.mjs). */
export const hrMs = () => Number(process.hrtime.bigint()) / 1e6

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Starts the mock OpenCode in its own process; returns an RPC handle. */
/**
 * The mock OpenCode in a process of its own. `turns`: every prompt starts a turn that keeps
 * running, as on OpenCode; without it a prompt starts none (the runtime then finds it stranded
 * after the quiet window and posts it again under its own id).
 */
export async function startMockProcess({ directory, turns = false } = {}) {
  const child = fork(path.join(benchDir, 'mock-server.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const pending = new Map()
  const listeners = new Set()
  let nextId = 1
  child.on('message', (message) => {
    if (message && message.event) {
      for (const listener of listeners) listener(message)
      return
    }
    const waiter = pending.get(message?.id)
    if (!waiter) return
    pending.delete(message.id)
    if (message.error) waiter.reject(new Error(message.error))
    else waiter.resolve(message.result)
  })
  child.on('exit', (code) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`mock process exited (${code})`))
    pending.clear()
  })
  const call = (cmd, args) =>
    new Promise((resolve, reject) => {
      const id = nextId++
      pending.set(id, { resolve, reject })
      child.send({ id, cmd, args })
    })
  const { url } = await call('start', { directory, turns })
  return {
    url,
    call,
    pid: child.pid,
    onEvent(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    async close() {
      try {
        await call('close')
      } catch {
        // Already gone.
      }
      child.disconnect?.()
    },
  }
}

/** Fields of /proc/self/status in kB or counts. */
export function procStatus(pid = 'self') {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  const field = (name) => {
    const match = new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)
    return match ? Number(match[1]) : NaN
  }
  return { rssKb: field('VmRSS'), hwmKb: field('VmHWM'), threads: field('Threads') }
}

/** Resets VmHWM (peak RSS) to the current RSS; returns false where the kernel refuses. */
export function resetPeakRss() {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5')
    return true
  } catch {
    return false
  }
}

export function percentile(values, p) {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]
}

export function median(values) {
  return percentile(values, 50)
}

/**
 * The goal runtime a section measures: no console lines (they would cost the measured thread),
 * notifications dropped, kickoffs and resumes out of the way (60 s), idles evaluated after
 * `quietMs`, the data in `dataDir` when given. `host` holds the rest: how to reach OpenCode and
 * the small model (nested or in OpenChamber's flat names).
 */
export function benchGoalRuntime(pkg, { quietMs, dataDir, ...host }) {
  return pkg.createSessionGoalRuntime({
    logger: null,
    ...(dataDir === undefined ? {} : { settings: { dataDir } }),
    idleQuietMs: quietMs,
    kickoffQuietMs: 60_000,
    resumeKickoffMs: 60_000,
    // Each section measures its own path; the census at start is section 6's (restart.mjs).
    recoverOnStart: false,
    emitGoalNotification: () => {},
    ...host,
  })
}

/** Runs a section's main and reports its result to the parent (run.mjs) or stdout. */
export async function runSection(main) {
  try {
    const result = await main()
    if (process.send) process.send({ ok: true, result })
    else console.log(JSON.stringify(result, null, 2))
  } catch (error) {
    if (process.send) process.send({ ok: false, error: String(error?.stack ?? error) })
    else console.error(error)
    process.exitCode = 1
  }
  // Sections end their process: nothing may keep it alive past the result.
  setTimeout(() => process.exit(process.exitCode ?? 0), 50).unref()
}

export function progress(message) {
  process.stderr.write(`  · ${message}\n`)
}

/**
 * Other work on the same cores: `count` Node processes spinning at full CPU until the returned
 * stop() (a host machine that is busy while its goals go idle).
 */
export function startCpuHog(count) {
  const hogs = Array.from({ length: count }, () =>
    spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
  )
  return () => {
    for (const hog of hogs) hog.kill('SIGKILL')
  }
}
