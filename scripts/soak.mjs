#!/usr/bin/env node
// Soak: many rounds of goals through one runtime, measuring whether memory settles on a plateau.
// Each round makes G sessions with an active goal (written without `sessionId`, as OpenChamber's
// UI writes them) in the mock OpenCode (its own process), hands the runtime one idle payload per
// session, waits until every goal settled (the auditor answers "complete"), deletes the round's
// sessions, collects garbage twice and samples the host process: RSS, the V8 heap (used, total,
// external, array buffers) and the anonymous memory of /proc/self/smaps_rollup. RSS minus the
// V8 heap's total is the native side (the addon's Rust heap and allocator, libuv, Node's own).
//
//   node --expose-gc scripts/soak.mjs [--rounds=60] [--goals=300] [--write]
//   MALLOC_ARENA_MAX=2 node --expose-gc scripts/soak.mjs ...   (fewer glibc arenas: see RELIABILITY.md)
//   LD_PRELOAD=<built scripts/soak/malloc-stats.c> MALLINFO_FILE=/tmp/mallinfo node --expose-gc scripts/soak.mjs
//     adds glibc's own figures (bytes in use, free bytes kept); TRIM=1 trims every 50 ms
//     (see docs/chaos-and-soak.md)
//
// The verdict: the growth of RSS from the first third's end to the last round, per 10 rounds.
// --write puts the row into RELIABILITY.md (section soak; needs a clean, committed tree).
// Needs the built addon.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { procStatus, rootDir, sleep, startMockProcess } from '../bench/lib.mjs'
import { measuredCommit, writeReliabilitySection } from './reliability-section.mjs'

const require = createRequire(import.meta.url)
const arg = (name, fallback) => {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`))
  return hit ? Number(hit.slice(name.length + 3)) : fallback
}
const ROUNDS = Math.max(3, arg('rounds', 60))
const GOALS = Math.max(1, arg('goals', 300))
const WRITE = process.argv.includes('--write')
const DIRECTORY = '/tmp/project'
const MB = 1024 * 1024

if (typeof globalThis.gc !== 'function') {
  console.error('run with node --expose-gc')
  process.exit(2)
}

function anonymousKb() {
  try {
    const text = fs.readFileSync('/proc/self/smaps_rollup', 'utf8')
    return Number(/^Anonymous:\s+(\d+)/m.exec(text)?.[1] ?? NaN)
  } catch {
    return NaN
  }
}

/** What the runtime still holds: sessions with a timer or a tick, armed timers, goals seen active. */
function liveCounts(runtime) {
  const snapshot = runtime.snapshot()
  return { sessionsHeld: snapshot.sessions.length, armedTimers: snapshot.armedTimers, activeGoals: snapshot.activeGoals }
}

/** glibc's figures, when scripts/soak/malloc-stats.c is preloaded (`MALLINFO_FILE`). */
const MALLINFO = process.env.MALLINFO_FILE ? `${process.env.MALLINFO_FILE}.${process.pid}` : null

function mallocStats() {
  if (!MALLINFO) return {}
  try {
    const [arena, inUse, free] = fs.readFileSync(MALLINFO, 'utf8').trim().split(' ').map(Number)
    if (![arena, inUse, free].every(Number.isFinite)) return {}
    return { mallocArenaMb: arena / MB, mallocInUseMb: inUse / MB, mallocFreeMb: free / MB }
  } catch {
    return {}
  }
}

function isAlive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const mib = (v) => (v === undefined ? '?' : v.toFixed(2))

async function sample(runtime) {
  for (let i = 0; i < 2; i++) {
    globalThis.gc()
    await sleep(50)
  }
  // The preloaded helper writes every 50 ms: one write after the collections.
  if (MALLINFO) await sleep(60)
  const heap = process.memoryUsage()
  return {
    rssMb: procStatus().rssKb / 1024,
    anonMb: anonymousKb() / 1024,
    heapUsedMb: heap.heapUsed / MB,
    heapTotalMb: heap.heapTotal / MB,
    externalMb: heap.external / MB,
    arrayBuffersMb: heap.arrayBuffers / MB,
    nativeMb: procStatus().rssKb / 1024 - heap.heapTotal / MB,
    ...liveCounts(runtime),
    ...mallocStats(),
  }
}

/** One round: GOALS goals made, woken, settled, deleted. */
async function round(mock, runtime, settledBefore) {
  const ids = await mock.call('createGoalSessions', { count: GOALS, directory: DIRECTORY })
  for (const id of ids) runtime.processPayload({ type: 'session.status', properties: { sessionID: id, status: { type: 'idle' } } }, DIRECTORY)
  const deadline = Date.now() + 120_000
  while (runtime.snapshot().settled < settledBefore + GOALS) {
    if (Date.now() > deadline) throw new Error(`round stalled: ${runtime.snapshot().settled - settledBefore} of ${GOALS} settled`)
    await sleep(20)
  }
  while (runtime.snapshot().inFlight > 0) await sleep(10)
  await mock.call('deleteSessions', { ids })
}

function slopePer10(points) {
  const n = points.length
  const mx = points.reduce((s, p) => s + p[0], 0) / n
  const my = points.reduce((s, p) => s + p[1], 0) / n
  const num = points.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0)
  const den = points.reduce((s, p) => s + (p[0] - mx) ** 2, 0)
  return den ? (num / den) * 10 : 0
}

async function main() {
  const pkg = require(rootDir + '/runtime.js')
  const mock = await startMockProcess({ directory: DIRECTORY })
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'goal-soak-'))
  const runtime = pkg.createSessionGoalRuntime({
    logger: null,
    openCode: { baseUrl: mock.url },
    settings: { dataDir },
    idleQuietMs: 50,
    kickoffQuietMs: 60_000,
    resumeKickoffMs: 60_000,
    generateSmallModelText: async () => ({ text: '{"verdict":"complete","note":"done"}', providerID: 'mock', modelID: 'mock-model' }),
    emitGoalNotification: () => {},
  })
  const started = Date.now()
  const base = await sample(runtime)
  const rows = []
  try {
    for (let r = 1; r <= ROUNDS; r++) {
      await round(mock, runtime, (r - 1) * GOALS)
      const s = await sample(runtime)
      rows.push({ round: r, ...s })
      console.log(`round ${String(r).padStart(2)}: RSS ${s.rssMb.toFixed(1)} MiB (+${(s.rssMb - base.rssMb).toFixed(1)}), heap used ${s.heapUsedMb.toFixed(1)} / total ${s.heapTotalMb.toFixed(1)}, external ${s.externalMb.toFixed(1)} (array buffers ${s.arrayBuffersMb.toFixed(1)}), native (RSS − heap total) ${s.nativeMb.toFixed(1)}, anonymous ${s.anonMb.toFixed(1)}; held: ${s.sessionsHeld} sessions, ${s.armedTimers} timers, ${s.activeGoals} active goals${MALLINFO ? `; malloc in use ${mib(s.mallocInUseMb)}, free ${mib(s.mallocFreeMb)}, arenas ${mib(s.mallocArenaMb)}` : ''}`)
    }
  } finally {
    await runtime.stop()
    await mock.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
    if (MALLINFO) {
      // The mock process inherited the helper: its last write may follow close().
      for (let waited = 0; waited < 2000 && isAlive(mock.pid); waited += 50) await sleep(50)
      for (const pid of [process.pid, mock.pid]) {
        for (const file of [`${process.env.MALLINFO_FILE}.${pid}`, `${process.env.MALLINFO_FILE}.${pid}.partial`]) fs.rmSync(file, { force: true })
      }
    }
  }
  const third = Math.max(1, Math.floor(ROUNDS / 3))
  const tail = rows.filter((r) => r.round >= third)
  const summary = {
    rounds: ROUNDS,
    goals: GOALS,
    arenaMax: process.env.MALLOC_ARENA_MAX ?? 'default',
    allocator: (process.env.LD_PRELOAD ? path.basename(process.env.LD_PRELOAD) : 'glibc') + (process.env.TRIM === '1' ? ' + malloc_trim' : ''),
    baseRssMb: base.rssMb,
    growthAtThirdMb: rows[third - 1].rssMb - base.rssMb,
    growthAtEndMb: rows.at(-1).rssMb - base.rssMb,
    rssSlopePer10: slopePer10(tail.map((r) => [r.round, r.rssMb])),
    heapUsedSlopePer10: slopePer10(tail.map((r) => [r.round, r.heapUsedMb])),
    nativeSlopePer10: slopePer10(tail.map((r) => [r.round, r.nativeMb])),
    externalSlopePer10: slopePer10(tail.map((r) => [r.round, r.externalMb])),
    ...(MALLINFO
      ? {
          mallocInUseSlopePer10: slopePer10(tail.filter((r) => r.mallocInUseMb !== undefined).map((r) => [r.round, r.mallocInUseMb])),
          mallocFreeSlopePer10: slopePer10(tail.filter((r) => r.mallocFreeMb !== undefined).map((r) => [r.round, r.mallocFreeMb])),
        }
      : {}),
    heldAtEnd: { sessions: rows.at(-1).sessionsHeld, timers: rows.at(-1).armedTimers, activeGoals: rows.at(-1).activeGoals },
    maxRssRound: rows.reduce((m, r) => (r.rssMb > m.rssMb ? r : m)).round,
    seconds: Math.round((Date.now() - started) / 1000),
  }
  console.log(JSON.stringify(summary))
  if (WRITE) {
    const f = (v) => v.toFixed(1)
    const stamp = `Latest run: commit ${measuredCommit()}, ${new Date().toISOString().slice(0, 10)} (\`node --expose-gc scripts/soak.mjs --rounds=${ROUNDS} --goals=${GOALS} --write\`, MALLOC_ARENA_MAX ${summary.arenaMax}, ${os.cpus().length} cores, ${summary.seconds} s).`
    const table = [
      '| rounds × goals | RSS growth at round ' + third + ' | at round ' + ROUNDS + ' | RSS slope from round ' + third + ' (per 10 rounds) | V8 heap used slope | native (RSS − heap total) slope | highest RSS at round |',
      '|---|---:|---:|---:|---:|---:|---:|',
      `| ${ROUNDS} × ${GOALS} | +${f(summary.growthAtThirdMb)} MiB | +${f(summary.growthAtEndMb)} MiB | ${f(summary.rssSlopePer10)} MiB | ${f(summary.heapUsedSlopePer10)} MiB | ${f(summary.nativeSlopePer10)} MiB | ${summary.maxRssRound} |`,
    ].join('\n')
    writeReliabilitySection('soak', 'Soak: goals through one runtime (scripts/soak.mjs)', [stamp, '', table].join('\n'))
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
