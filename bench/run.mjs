#!/usr/bin/env node
// `npm run bench`: builds the release addon, runs every benchmark section in its own process and
// prints one Markdown report (machine, figures, targets). Ratios are always taken within the same
// run. Not part of the test run.
//
//   node bench/run.mjs [--no-build] [--only=intake,tick,scale,scale-hog,footprint,failing,restart] [--json=out.json] [--write]
//
// --write puts the report into BENCHMARKS.md (complete runs of a committed tree only).
//
// Environment knobs (defaults are the reported configuration): BENCH_PAYLOADS (1000000),
// BENCH_DELTAS_PER_TURN (300), BENCH_TICKS (200), BENCH_SESSIONS (10000), BENCH_IDLE_MS (10000).
import { execFileSync, fork } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { benchDir, rootDir } from './lib.mjs'

const SECTIONS = ['intake', 'tick', 'scale', 'scale-hog', 'footprint', 'failing', 'restart']
/** Sections that run another section's file with its own environment. */
const VARIANTS = { 'scale-hog': { file: 'scale', env: { BENCH_CPU_HOG: String(os.availableParallelism?.() ?? os.cpus().length) } } }
const BINARY = path.join(rootDir, 'session-goal-runtime.linux-x64-gnu.node')

const args = process.argv.slice(2)
const flag = (name) => args.find((a) => a === `--${name}` || a.startsWith(`--${name}=`))
const value = (name) => flag(name)?.split('=').slice(1).join('=')
const only = value('only') ? value('only').split(',') : SECTIONS

function log(line) {
  process.stderr.write(line + '\n')
}

function build() {
  log('== release build: npx napi build --platform --release --target x86_64-unknown-linux-gnu')
  execFileSync('npx', ['napi', 'build', '--platform', '--release', '--target', 'x86_64-unknown-linux-gnu'], {
    cwd: rootDir,
    stdio: ['ignore', process.stderr, process.stderr],
  })
}

/** Names of an ELF64 file's sections. */
function elfSectionNames(file) {
  const elf = fs.readFileSync(file)
  if (elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 2) throw new Error(`${file} is not an ELF64 file`)
  const sectionsAt = Number(elf.readBigUInt64LE(0x28))
  const entrySize = elf.readUInt16LE(0x3a)
  const count = elf.readUInt16LE(0x3c)
  const namesIndex = elf.readUInt16LE(0x3e)
  const header = (i) => sectionsAt + i * entrySize
  const namesAt = Number(elf.readBigUInt64LE(header(namesIndex) + 0x18))
  const names = []
  for (let i = 0; i < count; i++) {
    const start = namesAt + elf.readUInt32LE(header(i))
    names.push(elf.toString('latin1', start, elf.indexOf(0, start)))
  }
  return names
}

/** A debug build carries DWARF sections (.debug_*); the release profile strips them. */
function assertReleaseBinary() {
  if (!fs.existsSync(BINARY)) throw new Error(`${BINARY} is missing: run without --no-build`)
  if (elfSectionNames(BINARY).some((name) => name.startsWith('.debug_'))) {
    throw new Error(`${path.basename(BINARY)} is a debug build (has .debug_* sections): run without --no-build`)
  }
}

function machine() {
  const cpus = os.cpus()
  let rustc = 'unknown'
  try {
    rustc = execFileSync('rustc', ['-V'], { encoding: 'utf8' }).trim()
  } catch {
    // Reported as unknown.
  }
  let commit = 'unknown'
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: rootDir, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain'], { cwd: rootDir, encoding: 'utf8' }).trim()
    if (dirty) commit += ' (uncommitted changes)'
  } catch {
    // Reported as unknown.
  }
  return {
    nproc: os.availableParallelism?.() ?? cpus.length,
    cpu: cpus[0]?.model ?? 'unknown',
    memoryGb: os.totalmem() / 1024 ** 3,
    node: process.version,
    rustc,
    kernel: os.release(),
    commit,
    date: new Date().toISOString(),
  }
}

function runSection(name) {
  return new Promise((resolve, reject) => {
    log(`== ${name}`)
    const variant = VARIANTS[name] ?? { file: name, env: {} }
    const child = fork(path.join(benchDir, 'sections', `${variant.file}.mjs`), [], {
      execArgv: ['--expose-gc'],
      env: { ...process.env, ...variant.env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    let settled = false
    child.on('message', (message) => {
      settled = true
      if (message?.ok) resolve(message.result)
      else reject(new Error(`${name}: ${message?.error ?? 'failed'}`))
    })
    child.on('exit', (code) => {
      if (!settled) reject(new Error(`${name}: exited with ${code} before reporting`))
    })
  })
}

const f = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a')
const ns = (n) => (Number.isFinite(n) ? (n >= 1000 ? `${(n / 1000).toFixed(2)} µs` : `${n.toFixed(0)} ns`) : 'n/a')
const x = (n) => `${f(n, 2)}×`
const int = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a')

function verdict(ok, miss) {
  return ok ? 'met' : `**missed** (${miss})`
}

function report(env, load, results) {
  const out = []
  const targets = []
  out.push('### Machine')
  out.push('')
  out.push('| nproc | CPU | memory | Node | rustc | kernel | commit | load avg 1/5/15 min (start → end) |')
  out.push('|---|---|---|---|---|---|---|---|')
  out.push(
    `| ${env.nproc} | ${env.cpu} | ${f(env.memoryGb)} GiB | ${env.node} | ${env.rustc} | ${env.kernel} | ${env.commit} | ${load.start.map((l) => f(l, 2)).join(' / ')} → ${load.end.map((l) => f(l, 2)).join(' / ')} |`,
  )
  out.push('')
  out.push(`Run at ${env.date}; release build of the addon.`)

  const intake = results.intake
  if (intake) {
    out.push('')
    out.push('### 1. Main-thread cost per forwarded payload')
    out.push('')
    out.push(
      `${int(intake.mix.count)} payloads: \`server.connected\`, then ${int(intake.copies)} copies of the capture (${intake.copySize} payloads each: the capture's ${intake.copySize - intake.deltasPerTurn} with the reply streamed as ${intake.deltasPerTurn} deltas), each copy on its own session. Host JSON.parse of one SSE data line: ${ns(intake.parseNs)} on average.`,
    )
    out.push('')
    out.push('| payload type | count | pre-parsed: no-op floor | type read | runtime | runtime ÷ floor | with JSON.parse: no-op floor | runtime | runtime ÷ floor |')
    out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|')
    const row = (r, bold) => {
      const name = bold ? `**${r.type}**` : r.type
      return `| ${name} | ${int(r.count)} | ${ns(r.parsed.noopNs)} | ${ns(r.parsed.typeReadNs)} | ${ns(r.parsed.runtimeNs)} | ${x(r.parsed.ratio)} | ${ns(r.withParse.noopNs)} | ${ns(r.withParse.runtimeNs)} | ${x(r.withParse.ratio)} |`
    }
    out.push(row(intake.partDeltas, true))
    for (const r of intake.perType) out.push(row(r))
    out.push(row(intake.dropped, true))
    out.push(row(intake.forwarded, true))
    out.push(row(intake.mix, true))
    out.push('')
    out.push(
      `After the replay: ${int(intake.afterReplay.armedTimers)} timers armed, ${int(intake.afterReplay.activeGoals)} goals seen active, ${int(intake.afterReplay.ticks)} ticks fired (quiet windows 60 s).`,
    )
    targets.push([
      'part deltas ≤ 1.2× the no-op floor',
      `pre-parsed ${x(intake.partDeltas.parsed.ratio)} (+${ns(intake.partDeltas.parsed.runtimeNs - intake.partDeltas.parsed.noopNs)}/payload; a bare type read alone is ${x(intake.partDeltas.parsed.typeReadRatio)}); with JSON.parse ${x(intake.partDeltas.withParse.ratio)}`,
      verdict(intake.partDeltas.parsed.ratio <= 1.2, `pre-parsed by ${f((intake.partDeltas.parsed.ratio / 1.2 - 1) * 100, 0)} %; ${intake.partDeltas.withParse.ratio <= 1.2 ? 'met' : 'missed'} with JSON.parse`),
    ])
  }

  const tick = results.tick
  if (tick) {
    out.push('')
    out.push('### 2. Tick latency (timer fired → mock receives prompt_async)')
    out.push('')
    out.push(`Quiet window ${tick.quietMs} ms, mock delay ${tick.delayMs} ms per request, auditor answers at once, ${tick.ticks} continuations per row (after ${10} warm-up).`)
    out.push('')
    out.push('| path | p50 | p99 | min | max | from the tick\'s first request, p50 | requests per continuation |')
    out.push('|---|---:|---:|---:|---:|---:|---:|')
    const t = (label, r) =>
      `| ${label} | ${f(r.fromFire.p50, 2)} ms | ${f(r.fromFire.p99, 2)} ms | ${f(r.fromFire.min, 2)} ms | ${f(r.fromFire.max, 2)} ms | ${f(r.fromFirstRequest.p50, 2)} ms | ${r.requests.min === r.requests.max ? r.requests.p50 : `${r.requests.min}–${r.requests.max}`} |`
    out.push(t('tick, `openCode.baseUrl`', tick.native))
    out.push(t('tick, OpenChamber `buildOpenCodeUrl` + `getOpenCodeAuthHeaders` + `getSmallModelService`', tick.hosted))
    out.push(`| the same ${tick.requestSequence.length} requests one after another (JS, one keep-alive connection) | ${f(tick.sequentialJs.p50, 2)} ms | ${f(tick.sequentialJs.p99, 2)} ms | ${f(tick.sequentialJs.min, 2)} ms | ${f(tick.sequentialJs.max, 2)} ms | | ${tick.requestSequence.length} |`)
    out.push(`| one round trip (JS, GET /session/:id) | ${f(tick.roundTrip.p50, 2)} ms | ${f(tick.roundTrip.p99, 2)} ms | ${f(tick.roundTrip.min, 2)} ms | ${f(tick.roundTrip.max, 2)} ms | | 1 |`)
    const slow = tick.slow
    const slowRow = (label, r) =>
      `| ${label} (${r.fromFire.n} continuations) | ${f(r.fromFire.p50, 2)} ms | ${f(r.fromFire.p99, 2)} ms | ${f(r.fromFire.min, 2)} ms | ${f(r.fromFire.max, 2)} ms | ${f(r.fromFirstRequest.p50, 2)} ms | ${r.requests.min === r.requests.max ? r.requests.p50 : `${r.requests.min}–${r.requests.max}`} |`
    out.push(slowRow(`tick, \`openCode.baseUrl\`, mock delay ${slow.delayMs} ms, goal with \`sessionId\``, slow))
    if (tick.slowOwnedEvents) out.push(slowRow(`tick, \`openCode.baseUrl\`, mock delay ${slow.delayMs} ms, events forwarded, goal with \`sessionId\``, tick.slowOwnedEvents))
    if (tick.slowUnowned) out.push(slowRow(`tick, \`openCode.baseUrl\`, mock delay ${slow.delayMs} ms, events forwarded, goal without \`sessionId\``, tick.slowUnowned))
    if (tick.slowUnseen) out.push(slowRow(`tick, \`openCode.baseUrl\`, mock delay ${slow.delayMs} ms, goal without \`sessionId\` first seen at its tick (status events only)`, tick.slowUnseen))
    out.push(`| one round trip (JS, GET /session/:id), mock delay ${slow.delayMs} ms | ${f(slow.roundTrip.p50, 2)} ms | ${f(slow.roundTrip.p99, 2)} ms | ${f(slow.roundTrip.min, 2)} ms | ${f(slow.roundTrip.max, 2)} ms | | 1 |`)
    out.push('')
    out.push(`Requests of one continuation, in arrival order: ${tick.requestSequence.map((s) => '`' + s + '`').join(', ')}.`)
    const fastTrips = tick.native.fromFire.p50 / tick.roundTrip.p50
    const slowTrips = slow.fromFire.p50 / slow.roundTrip.p50
    out.push(`Tick p50 ÷ sequential p50: ${x(tick.native.fromFire.p50 / tick.sequentialJs.p50)}; tick p50 in round trips: ${f(fastTrips, 2)} at ${tick.delayMs} ms per request, ${f(slowTrips, 2)} at ${slow.delayMs} ms per request.`)
    if (tick.slowUnowned && tick.slowOwnedEvents) {
      const trips = (r) => r.fromFire.p50 / slow.roundTrip.p50
      const [ownedTrips, unownedTrips, unseenTrips] = [trips(tick.slowOwnedEvents), trips(tick.slowUnowned), tick.slowUnseen ? trips(tick.slowUnseen) : NaN]
      out.push(`With events forwarded (each goal's write reaches the runtime before its idle, as from a host): ${f(unownedTrips, 2)} round trips at ${slow.delayMs} ms per request without \`sessionId\` (the owner list is read when the write is seen, before the tick), ${f(ownedTrips, 2)} with it. On a runtime that gets status events only, a goal without \`sessionId\` is first seen at its tick and reads the owner list there: ${f(unseenTrips, 2)} round trips; its requests: ${(tick.slowUnseen?.requestSequence ?? []).map((s) => '`' + s + '`').join(', ')}.`)
      targets.push([
        `first continuation without \`sessionId\` costs no more round trips than with it (at ${slow.delayMs} ms per request, events forwarded)`,
        `${f(unownedTrips, 2)} vs ${f(ownedTrips, 2)} round trips`,
        // "No more round trips": the p50s may differ by less than one round trip.
        verdict(unownedTrips < ownedTrips + 0.5, `by ${f(unownedTrips - ownedTrips, 2)} round trips`),
      ])
    }
  }

  const scales = [results.scale, results['scale-hog']].filter(Boolean)
  if (scales.length) {
    const scale = scales[0]
    out.push('')
    out.push(`### 3. Scale: ${int(scale.sessions)} sessions with active goals go idle together`)
    out.push('')
    out.push('| beside | forward all idle payloads | timers armed when the forward loop returned | last continuation after (from first payload / from due) | first after due | peak RSS growth | threads before → max (added) | sent | missed | prompted twice | settled instead | host CPU | mock CPU |')
    out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for (const row of scales) {
      const beside = row.cpuHog ? `${row.cpuHog} processes at full CPU` : 'nothing (quiet machine)'
      out.push(
        `| ${beside} | ${f(row.forwardMs)} ms | ${int(row.armedAfterForward)} | ${f(row.allSentAfterMs / 1000, 2)} s / ${f(row.allSentAfterDueMs / 1000, 2)} s | ${f(row.firstSentAfterDueMs, 0)} ms | ${f(row.peakRssGrowthMb)} MiB | ${row.threadsBefore} → ${row.threadsMax} (+${row.threadsAdded}) | ${int(row.prompted)} | ${int(row.missed)} | ${int(row.duplicated)} | ${int(row.settled)} | ${f(row.hostCpuMs / 1000, 1)} s | ${f(row.mockCpuMs / 1000, 1)} s |`,
      )
    }
    out.push('')
    for (const row of scales) {
      const which = row.cpuHog ? `Beside ${row.cpuHog} processes at full CPU` : 'On a quiet machine'
      out.push(`${which}: quiet window ${row.quietMs} ms, no mock delay. RSS before the burst ${f(row.rssBeforeMb)} MiB, after ${f(row.rssAfterMb)} MiB; of the growth, the JS heap (peak heapTotal) ${f(row.jsHeapTotalGrowthMb)} MiB; peak from ${row.peakFromHwm ? 'VmHWM (reset before the burst) and' : ''} 10 ms samples. Threads after the burst ${row.threadsAfter}, after stop() ${row.threadsAfterStop}. Audits ${int(row.audits)}, panics ${row.panics}. The mock starts no turn for a prompt (see How each figure is taken), so the runtime finds each continuation stranded after the quiet window and posts it again under its own id: ${int(row.reposted)} sessions; "prompted twice" counts two different continuations.`)
      out.push('')
      targets.push([
        `${int(row.sessions)} sessions${row.cpuHog ? ` beside ${row.cpuHog} CPU hogs` : ''}: RSS growth < 64 MiB, none missed`,
        `${f(row.peakRssGrowthMb)} MiB, ${int(row.missed)} missed, ${int(row.duplicated)} prompted twice`,
        verdict(row.peakRssGrowthMb < 64 && row.missed === 0 && row.duplicated === 0, `${row.peakRssGrowthMb >= 64 ? `RSS by ${f(row.peakRssGrowthMb - 64)} MiB` : 'RSS ok'}, ${row.missed} missed, ${row.duplicated} twice`),
      ])
    }
  }

  const footprint = results.footprint
  if (footprint) {
    out.push('')
    out.push('### 4. Footprint')
    out.push('')
    out.push('| require() first / median / max | .node size | CPU over 10 s idle, 1,000 timers armed | same 10 s, no addon | threads: bare node → after require → after create → 1,000 timers → at rest |')
    out.push('|---:|---:|---:|---:|---:|')
    const th = footprint.threads
    out.push(
      `| ${f(footprint.requireFirstMs, 2)} / ${f(footprint.requireMedianMs, 2)} / ${f(footprint.requireMaxMs, 2)} ms | ${f(footprint.nodeMb, 2)} MiB (${int(footprint.nodeBytes)} B) | ${f(footprint.idleCpuMs, 1)} ms (${footprint.timers} timers) | ${f(footprint.idleCpuMsWithoutAddon, 1)} ms | ${th.bareNode} → ${th.afterRequire} → ${th.afterCreate} → ${th.withTimers} → ${th.atRest} (bare node at rest: ${th.bareNodeAtRest}) |`,
    )
    out.push('')
    out.push(`require() runs: ${footprint.requireRuns} fresh node processes.`)
    targets.push(['require() < 30 ms', `median ${f(footprint.requireMedianMs, 2)} ms, first ${f(footprint.requireFirstMs, 2)} ms, max ${f(footprint.requireMaxMs, 2)} ms`, verdict(footprint.requireMaxMs < 30, `max by ${f(footprint.requireMaxMs - 30, 1)} ms`)])
    targets.push(['.node ≤ 4 MiB (linux-x64-gnu release)', `${f(footprint.nodeMb, 2)} MiB`, verdict(footprint.nodeMb <= 4, `by ${f(footprint.nodeMb - 4, 2)} MiB`)])
  }

  const failing = results.failing
  if (failing) {
    const a = failing.failing
    const b = failing.cannotList
    out.push('')
    out.push(`### 5. A session list that always fails: ${int(failing.sessions)} goals that name no session`)
    out.push('')
    out.push('| list answers | requests (window) | per second, whole window / last 30 s | lists (last 30 s) | continuations on a guess | after the list answers again: driven, all within | duplicated |')
    out.push('|---|---:|---:|---:|---:|---:|---:|')
    out.push(
      `| 503 | ${int(a.requests)} (${f(a.windowMs / 1000, 0)} s) | ${f(a.perSecond)} / ${f(a.perSecondTail)} | ${int(a.lists)} (${int(a.listsTail)}) | ${int(a.continuationsOnAGuess)} | ${int(a.drivenAfterRecovery)}, ${a.allDrivenAfterRecoveryMs === null ? 'n/a' : `${f(a.allDrivenAfterRecoveryMs / 1000, 2)} s`} | ${int(a.duplicated)} |`,
    )
    out.push('')
    out.push('| list answers | driven | missed | prompted twice | all driven after | lists | requests |')
    out.push('|---|---:|---:|---:|---:|---:|---:|')
    out.push(`| 404 | ${int(b.driven)} | ${int(b.missed)} | ${int(b.duplicated)} | ${f(b.allDrivenAfterMs / 1000, 2)} s | ${int(b.lists)} | ${int(b.requests)} |`)
    out.push('', `Sessions whose one continuation was posted again under its own id (the mock starts no turn here, so the runtime finds it stranded after the quiet window and posts it again, at most 3 times; not a second continuation): 503 ${int(a.reposted)}, 404 ${int(b.reposted)}.`)
    out.push('')
    out.push(`Quiet window ${failing.quietMs} ms, no mock delay, one idle payload per session and no event stream. With 503 the goals wait for the directory's list (one in flight, one backoff, at most one per 10 s after the first three) and send nothing of their own meanwhile; with 404 each goal was set on its session after the session was made, so the session decides it is its own.`)
    targets.push([
      `${int(failing.sessions)} goals, list 503: no continuation on a guess`,
      `${int(a.continuationsOnAGuess)} continuations, ${f(a.perSecondTail)} requests/s in the last 30 s`,
      verdict(a.continuationsOnAGuess === 0, `${a.continuationsOnAGuess} sent`),
    ])
    targets.push([`${int(failing.sessions)} goals, list 404: all driven`, `${int(b.driven)} driven, ${int(b.duplicated)} twice`, verdict(b.missed === 0 && b.duplicated === 0, `${b.missed} missed`)])
  }

  const restart = results.restart
  if (restart) {
    const pages = Math.floor(restart.sessions / 1000) + 1
    out.push('')
    out.push(`### 6. A host started again over ${int(restart.directories)} directories and ${int(restart.sessions)} sessions with active goals`)
    out.push('')
    out.push('| census requests | all requests | first continuation after | last continuation after | peak RSS growth | threads before → max | driven | missed | prompted twice | audits |')
    out.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    out.push(
      `| ${int(restart.censusRequests)} | ${int(restart.requests)} | ${f(restart.firstSentAfterMs / 1000, 2)} s | ${f(restart.allSentAfterMs / 1000, 2)} s | ${f(restart.peakRssGrowthMb)} MiB | ${restart.threadsBefore} → ${restart.threadsMax} | ${int(restart.prompted)} | ${int(restart.missed)} | ${int(restart.duplicated)} | ${int(restart.audits)} |`,
    )
    out.push('')
    out.push(`The runtime is created with OpenChamber's options (no directories, the scan at start on, the kickoff window ${restart.kickoffMs} ms) on a mock OpenCode whose ${int(restart.sessions)} sessions each hold an active goal whose turn finished before it started; it hears no event of them (the host forwards the 10 s heartbeat only). Times from the runtime's creation; RSS before ${f(restart.rssBeforeMb)} MiB, peak from ${restart.peakFromHwm ? 'VmHWM (reset before the start) and' : ''} 10 ms samples.`)
    targets.push([
      `host started over ${int(restart.sessions)} sessions in ${int(restart.directories)} directories: every goal driven, census ≤ ${pages} requests, RSS growth < 64 MiB`,
      `${int(restart.prompted)} driven (last after ${f(restart.allSentAfterMs / 1000, 1)} s), ${int(restart.censusRequests)} census requests, ${f(restart.peakRssGrowthMb)} MiB`,
      verdict(restart.missed === 0 && restart.duplicated === 0 && restart.censusRequests <= pages && restart.peakRssGrowthMb < 64, `${restart.missed} missed, ${restart.duplicated} twice, ${restart.censusRequests} census requests, ${f(restart.peakRssGrowthMb)} MiB`),
    ])
  }

  out.push('')
  out.push('### Targets')
  out.push('')
  out.push('| target | measured | verdict |')
  out.push('|---|---|---|')
  for (const [target, measured, result] of targets) out.push(`| ${target} | ${measured} | ${result} |`)
  return out.join('\n')
}

async function main() {
  if (!flag('no-build')) build()
  assertReleaseBinary()
  const env = machine()
  if (flag('write')) checkWritable(env)
  const load = { start: os.loadavg() }
  const results = {}
  for (const name of SECTIONS) {
    if (only.includes(name)) results[name] = await runSection(name)
  }
  load.end = os.loadavg()
  const text = report(env, load, results)
  if (value('json')) fs.writeFileSync(value('json'), JSON.stringify({ env, load, results }, null, 2))
  process.stdout.write(text + '\n')
  if (flag('write')) writeBenchmarks(text, env)
}

const RESULTS_BEGIN = '<!-- bench:results:begin (written by `npm run bench -- --write`; do not edit) -->'
const RESULTS_END = '<!-- bench:results:end -->'

/**
 * Puts the report of a complete run into BENCHMARKS.md between its markers, so the figures there
 * always come from one run whose commit the report names. A partial run (`--only`) or a run on
 * a tree with uncommitted changes is refused: its figures would name no commit.
 */
function checkWritable(env) {
  if (only.length !== SECTIONS.length) throw new Error('--write needs every section (no --only)')
  const knobs = Object.keys(process.env).filter((name) => name.startsWith('BENCH_'))
  if (knobs.length) throw new Error(`--write reports the default configuration only; unset ${knobs.join(', ')}`)
  if (env.commit.includes('uncommitted')) throw new Error('--write needs a clean work tree: commit first')
}

function writeBenchmarks(text, env) {
  const file = path.join(rootDir, 'BENCHMARKS.md')
  const doc = fs.readFileSync(file, 'utf8')
  const start = doc.indexOf(RESULTS_BEGIN)
  const stop = doc.indexOf(RESULTS_END)
  if (start < 0 || stop < start) throw new Error('BENCHMARKS.md has no results markers')
  const body = `${RESULTS_BEGIN}\n\nMeasured on commit ${env.commit}, ${env.date}.\n\n${text}\n\n`
  fs.writeFileSync(file, doc.slice(0, start) + body + doc.slice(stop))
  log('BENCHMARKS.md updated')
}

main().catch((error) => {
  log(String(error?.stack ?? error))
  process.exit(1)
})
