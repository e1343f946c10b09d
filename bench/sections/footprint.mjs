// Section 4: footprint.
//  - require() time: `require('<package>/runtime.js')` in a fresh `node` child process, timed
//    inside the child (process.hrtime around the require), several runs: the first run and the
//    median (the OS file cache is warm after the first);
//  - size of the release `.node`;
//  - threads: a bare node process, after require(), after creating a runtime, at rest with
//    1,000 armed timers;
//  - CPU used by the whole process (process.cpuUsage: every thread) over 10 s of idleness with
//    1,000 armed timers (quiet window 1 h, so none fires), next to the same 10 s of a process
//    that never loaded the addon.
import { execFileSync, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { median, progress, rootDir, runSection } from '../lib.mjs'

const REQUIRE_RUNS = 15
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 10_000)
const TIMERS = 1_000

const threadsOf = `() => Number(/^Threads:\\s+(\\d+)/m.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))[1])`

function requireTime() {
  const script = `const t = process.hrtime.bigint(); require(${JSON.stringify(rootDir + '/runtime.js')}); const ms = Number(process.hrtime.bigint() - t) / 1e6; process.stdout.write(String(ms))`
  return Number(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }))
}

/** Runs an idle child; with `addon`, it creates a runtime with TIMERS armed timers first. */
function idleChild(addon) {
  const script = `
    const threads = ${threadsOf}
    const out = { bare: threads() }
    const run = () => {
      const start = process.cpuUsage()
      setTimeout(() => {
        const used = process.cpuUsage(start)
        out.cpuMs = (used.user + used.system) / 1000
        out.atRest = threads()
        const finish = () => process.stdout.write(JSON.stringify(out))
        if (out.runtime) out.runtime.stop().then(() => { delete out.runtime; finish() })
        else finish()
      }, ${IDLE_MS})
    }
    if (${addon}) {
      const pkg = require(${JSON.stringify(rootDir + '/runtime.js')})
      out.afterRequire = threads()
      // Nothing is ever sent to OpenCode here (no timer fires), so the address is never dialled.
      const runtime = pkg.createSessionGoalRuntime({ openCode: { baseUrl: 'http://127.0.0.1:9' }, idleQuietMs: 3600000 })
      out.afterCreate = threads()
      for (let i = 0; i < ${TIMERS}; i++) {
        runtime.processPayload({ type: 'session.status', properties: { sessionID: 'ses_idle' + i, status: { type: 'idle' } } }, '/tmp/project')
      }
      setTimeout(() => {
        out.armed = runtime.snapshot().armedTimers
        out.afterArm = threads()
        Object.defineProperty(out, 'runtime', { value: runtime, enumerable: false, configurable: true })
        run()
      }, 500)
    } else {
      setTimeout(run, 500)
    }
  `
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: IDLE_MS + 30_000 })
  if (result.status !== 0) throw new Error(`idle child failed: ${result.stderr}`)
  return JSON.parse(result.stdout)
}

runSection(async () => {
  const binary = path.join(rootDir, 'session-goal-runtime.linux-x64-gnu.node')
  const sizeBytes = fs.statSync(binary).size
  progress('footprint: require() times')
  const times = []
  for (let i = 0; i < REQUIRE_RUNS; i++) times.push(requireTime())
  progress(`footprint: ${IDLE_MS / 1000} s idle with ${TIMERS} timers, and without the addon`)
  const withAddon = idleChild(true)
  const withoutAddon = idleChild(false)
  return {
    nodeBytes: sizeBytes,
    nodeMb: sizeBytes / (1024 * 1024),
    requireFirstMs: times[0],
    requireMedianMs: median(times),
    requireMaxMs: Math.max(...times),
    requireRuns: REQUIRE_RUNS,
    idleSeconds: IDLE_MS / 1000,
    timers: withAddon.armed,
    idleCpuMs: withAddon.cpuMs,
    idleCpuMsWithoutAddon: withoutAddon.cpuMs,
    threads: {
      bareNode: withAddon.bare,
      afterRequire: withAddon.afterRequire,
      afterCreate: withAddon.afterCreate,
      withTimers: withAddon.afterArm,
      atRest: withAddon.atRest,
      bareNodeAtRest: withoutAddon.atRest,
    },
  }
})
