#!/usr/bin/env node
// Chaos on a real `opencode serve` (offline, scripted model): two hosts in their own processes
// drive N goals, each needing one continuation and one acceptance check, spread over DIRECTORIES
// directories (the project, a git repository, and plain directories beside it), while OpenCode
// and, separately, one host at a time are SIGKILLed at points drawn from a printed seed and
// started again (a host as a new process on the same data directory, knowing nothing else). Then
// every goal must settle. Both hosts reach OpenCode through a counting proxy, so
// posts are counted at the wire; each check appends a line to a file, so its runs are counted
// where they happen.
//
//   node scripts/chaos-real.mjs [--hosts=openchamber|package] [--goals=100] [--kills=20] [--directories=10] [--seed=N] [--runs=1] [--stream-hang-ms=300000] [--write]
//
// Hosts (--hosts; openchamber is the default):
// - openchamber (scripts/faults/openchamber-host.mjs): each host behaves as OpenChamber's web
//   server with the package swapped in. It creates the runtime with OpenChamber's flat options
//   (buildOpenCodeUrl, getOpenCodeAuthHeaders, getSmallModelService, emitGoalNotification) and
//   nothing else: no directories (the runtime scans nothing at creation), and the quiet windows,
//   the fetch timeout and the sweep (every 5 min) at the runtime's defaults, as OpenChamber
//   leaves them. It forwards every payload of OpenCode's global event stream to processPayload
//   (read by the package's event follower, which reconnects after a failure: 250 ms doubling,
//   capped at 10 s, the loop's one backoff rule) and never calls recover().
//   host1 reconnects the way OpenChamber's own hub does after an OpenCode restart: its
//   event-stream request lands on an OpenCode that is still starting, is accepted, and no
//   headers come until Node's headers timeout. The proxy plays that part: an event-stream
//   request on host1's port that arrives while OpenCode is down or starting (from its kill until
//   it answers its health check) is held with no answer, and host1's follower waits
//   STREAM_HANG_MS for an answer (`answerTimeoutMs`; 300 s, or --stream-hang-ms / the
//   STREAM_HANG_MS environment variable; 0: host1 reconnects like host0). So from OpenCode's
//   first restart host1 hears no event and no heartbeat (for the rest of a run of the default
//   size), and its runtime finds the goals through its silence watch (docs/reliability.md,
//   "Bounded silence"). host0 uses the follower's own answer timeout (5 s) and hears OpenCode
//   again as soon as it answers. A restarted host connects afresh (OpenCode is up by then).
// - package (scripts/faults/second-host.mjs): the package's own nested options with short
//   quiet windows (400 ms), the default sweep (5 min); its event follower delivers the events
//   to the runtime itself and reconnects the same way, and it does not call recover() either.
//
// Time to act (openchamber): for each restart (OpenCode's or a host's) and each goal active then
// (created before the kill, not yet settled), the time from the restart (OpenCode answering its
// health check again, or the host's new process connected) to the goal's next action seen at the
// proxy (a continuation or check post, or a write of the goal, that OpenCode answered with 2xx),
// whoever acts. The bound is 60 s (docs/reliability.md), with no exemption for a lease a killed
// host left; a goal whose next action comes after the next kill is counted under that one
// instead. Each run reports the p50 and the max, and how many came later than the bound.
// Figures per seed: goals settled correctly (complete; or `blocked` turnInterrupted when the
// transcript ends in two cut turns in a row: docs/provider-limits.md), goals stuck (still active when
// the stuck deadline passes, see STUCK_AFTER_MS), actions later than the 60 s bound after an
// OpenCode restart (openchamber), posts of an id already posted (at the wire,
// delivered; a stranded message posted again is one, and is allowed; one made after the message
// was answered is a failure), continuations with different ids after one tail (in the
// transcript), checks run twice (lines in the check's file), writes lost (a goal record missing,
// or fewer turns counted than continuations in the transcript). Exit 1 when any seed has a failure
// figure or a goal settled any other way; rerun with its seed (the kill
// schedule, the turn delays and the goal pacing are drawn from it; the processes' own timing is
// not, so a rerun repeats the schedule, not every instant). A failing seed keeps its data
// directory (the hosts' console lines under logs/, and failing-goals.json: each goal not
// complete with its record, transcript and posts, times in ms from the seed's start) and prints
// where it is.
// --write puts the rows into RELIABILITY.md (section chaos-real; needs a clean, committed tree).
// Needs the built addon (npm run build:debug) and `npm ci` (the opencode-ai devDependency).
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startScriptedModel, scenarioTag } from '../__test__/mock/model.mjs'
import { createGoalSession, startOpenCode } from '../__test__/e2e/opencode-server.mjs'
import { measuredCommit, writeReliabilitySection } from './reliability-section.mjs'
import { SILENCE_BOUND_MS, diagnosis, goalEvidence, judge, table, timeToAct } from './chaos-real/figures.mjs'
import { startProxy } from './chaos-real/proxy.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)
const textArg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
const arg = (name, fallback) => {
  const hit = textArg(name)
  return hit === undefined ? fallback : Number(hit)
}
const GOALS = Math.max(1, arg('goals', 100))
const KILLS = Math.max(0, arg('kills', 20))
const FIRST_SEED = arg('seed', Math.floor(Math.random() * 2 ** 31))
const RUNS = Math.max(1, arg('runs', 1))
const WRITE = process.argv.includes('--write')
/**
 * How long host1's reconnect after an OpenCode restart waits for the answer that never comes
 * (openchamber hosts): OpenChamber's hub waits on Node's 300 s headers timeout.
 */
const STREAM_HANG_MS = Math.max(0, arg('stream-hang-ms', process.env.STREAM_HANG_MS ? Number(process.env.STREAM_HANG_MS) : 300_000))
const HOSTS = textArg('hosts') ?? 'openchamber'
/** The directories the goals are spread over: the project (a git repository) and plain ones beside it. */
const DIRECTORIES = Math.max(1, arg('directories', 10))
if (!['openchamber', 'package'].includes(HOSTS)) {
  console.error(`--hosts must be openchamber or package, not ${HOSTS}`)
  process.exit(2)
}
/** The runtime's defaults, which the OpenChamber hosts keep (crates/goal-core/src/config/mod.rs). */
const DEFAULTS = require('../runtime.js').goalRuntimeDefaults()
/** The package hosts' quiet window. */
const PACKAGE_QUIET_MS = 400
/** The idle quiet window the hosts run with; both kinds keep the default sweep (5 min). */
const QUIET_MS = HOSTS === 'openchamber' ? DEFAULTS.idleQuietMs : PACKAGE_QUIET_MS
const SWEEP_MS = DEFAULTS.sweepIntervalMs
/** The host whose reconnect hangs (openchamber, STREAM_HANG_MS above 0). */
const HANGING_HOST = HOSTS === 'openchamber' && STREAM_HANG_MS > 0 ? 1 : null
/**
 * How long after the last disturbance (the last kill's restart, or the last goal created if
 * later) a goal may still be active without counting as stuck.
 * - openchamber: the bound (60 s after a restart, whatever the hosts' streams did), plus the time
 *   an undisturbed goal takes from there, since a goal created at the last kill still has its
 *   whole way to go (the kickoff quiet window, two turns each followed by the idle quiet window,
 *   and 10 s for the turns, audits and the check), and the lease a host killed while it held the
 *   goal leaves behind: 60 + 3 + 30 + 10 + 40 = 143 s with the defaults.
 * - package: one sweep interval and 30 s (or 2 s per goal, if longer), as before.
 */
const STUCK_AFTER_MS =
  HOSTS === 'openchamber'
    ? SILENCE_BOUND_MS + DEFAULTS.kickoffQuietMs + 2 * QUIET_MS + 10_000 + DEFAULTS.leaseMs
    : Math.max(SWEEP_MS + 30_000, GOALS * 2_000)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A seeded generator of numbers in [0, 1) (mulberry32). */
function random(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The kill schedule and the goals' pacing a seed gives. */
function planFor(seed) {
  const next = random(seed)
  const kills = Array.from({ length: KILLS }, () => ({
    afterMs: Math.round(300 + next() * 2200),
    target: next() < 0.5 ? 'opencode' : next() < 0.5 ? 'host0' : 'host1',
  }))
  // Goals arrive across the whole kill window (an OpenCode restart takes about 3 s), so kills
  // land on goals at every stage.
  const windowMs = kills.reduce((sum, k) => sum + k.afterMs + (k.target === 'opencode' ? 3000 : 500), 0)
  const meanGapMs = Math.max(20, windowMs / GOALS)
  const goals = Array.from({ length: GOALS }, () => ({ gapMs: Math.round(next() * 2 * meanGapMs), firstTurnDelayMs: Math.round(next() * 1500) }))
  return { kills, goals }
}

/**
 * Host `index` (scripts/faults/openchamber-host.mjs or second-host.mjs, by --hosts) on the
 * proxy; the hanging host on the proxy's hanging port, waiting STREAM_HANG_MS for an answer to
 * each connection attempt. Resolves once its stream is connected. Its console lines go to
 * `logs/<name>.log` in the data directory, each prefixed with the ms since the seed started (`t0`).
 */
async function startHost(proxy, index, dataDir, name, t0) {
  const hanging = index === HANGING_HOST
  const url = hanging ? proxy.hangUrl : proxy.url
  const [script, args, env] =
    HOSTS === 'openchamber'
      ? ['openchamber-host.mjs', hanging ? [url, String(STREAM_HANG_MS)] : [url], { ...process.env, OPENCHAMBER_DATA_DIR: dataDir }]
      : ['second-host.mjs', [url, dataDir, String(QUIET_MS)], process.env]
  const child = spawn(process.execPath, [path.join(here, 'faults', script), ...args], { stdio: ['pipe', 'pipe', 'pipe'], env })
  const logFile = fs.createWriteStream(path.join(dataDir, 'logs', `${name}.log`), { flags: 'a' })
  const stamped = (chunk) => {
    const at = Date.now() - t0
    return String(chunk).split('\n').filter(Boolean).map((line) => `${at} ${line}\n`).join('')
  }
  let out = ''
  child.stdout.on('data', (d) => {
    out += d
    logFile.write(stamped(d))
  })
  child.stderr.on('data', (d) => logFile.write(stamped(d)))
  child.on('close', (code, signal) => logFile.end(`${Date.now() - t0} exited (${signal ?? code})\n`))
  const ready = () => /^ready$/m.test(out)
  const deadline = Date.now() + 30_000
  while (!ready() && child.exitCode === null && Date.now() < deadline) await sleep(50)
  if (!ready()) throw new Error('a host did not connect')
  return {
    child,
    /** Ends the host cleanly and returns its snapshot line (null if none came). */
    async stop() {
      if (child.exitCode !== null) return null
      child.stdin.end()
      const done = Date.now() + 15_000
      while (child.exitCode === null && Date.now() < done) await sleep(50)
      if (child.exitCode === null) child.kill('SIGKILL')
      const line = out.split('\n').find((l) => l.startsWith('{'))
      return line ? JSON.parse(line) : null
    },
  }
}

/**
 * Creates goals at the seed's pace: goal i starts at the sum of the first i+1 gaps, whether or
 * not the goals before it are made yet (a creation that lands on a starting OpenCode waits up to
 * 15 s per request, and one after another they would leave the kill window with almost no goal
 * in it). A creation OpenCode cut off is tried again once it answers.
 */
async function createGoals(oc, plan, seed, runsDir, created, t0) {
  const directories = Array.from({ length: DIRECTORIES }, (_, k) => (k === 0 ? oc.directory : oc.besideProject(`dir-${k}`)))
  const createOne = async (i) => {
    const directory = directories[i % directories.length]
    const objective = `Make the parser handle nested lists ${scenarioTag(`chaos-${seed}-${i}`)}`
    const check = { command: `echo run >> ${JSON.stringify(path.join(runsDir, `${i}.log`))}`, timeoutMs: 30_000 }
    // Each step is retried in the same session while OpenCode restarts, as a client would: a
    // new session for each failed try would leave goals whose first prompt never came.
    const retry = async (step) => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await step()
        } catch (error) {
          if (attempt >= 120) throw error
          await sleep(500)
        }
      }
    }
    const startedAt = Date.now() - t0
    const api = oc.apiIn(directory)
    const { sessionId, prompt } = await createGoalSession(api, { objective, checks: [check], retry })
    // OpenCode answers prompt_async before it stores the message: killed in between, it forgets
    // the prompt it accepted (docs/opencode.md, "Sending a turn"). A person would see the empty
    // session and send it again; this client reads it back and sends it again, under its own ids.
    await retry(async () => {
      const messages = await api('GET', `/session/${sessionId}/message`)
      if (messages.some((m) => m.info.role === 'user')) return
      await api('POST', `/session/${sessionId}/prompt_async`, prompt)
      throw new Error('the first prompt is not stored yet')
    })
    created.push({ goal: i, sessionId, directory, startedAt, createdAt: Date.now() - t0 })
  }
  let startAt = 0
  const creations = plan.goals.map((goal, i) => {
    startAt += goal.gapMs
    return sleep(startAt).then(() => createOne(i))
  })
  await Promise.all(creations)
}

/**
 * Runs the kill schedule: each kill, then the restart of what it killed. Each kill is recorded in
 * `timeline` ({target, killedAt, upAt}, ms from t0).
 */
async function runKills(plan, { oc, hosts, proxy, dataDir, log, t0, timeline }) {
  const made = { opencode: 0, host: 0 }
  for (const kill of plan.kills) {
    await sleep(kill.afterMs)
    const killedAt = Date.now() - t0
    if (kill.target === 'opencode') {
      proxy.setDown(true)
      oc.child.kill('SIGKILL')
      try {
        await oc.restart()
      } finally {
        proxy.setDown(false)
      }
      made.opencode++
    } else {
      const index = kill.target === 'host0' ? 0 : 1
      hosts[index].child.kill('SIGKILL')
      // The restart counts from the new process's start, not from its stream's connection.
      const startedAt = Date.now() - t0
      hosts[index] = await startHost(proxy, index, dataDir, `host${index}-${made.host + 1}`, t0)
      made.host++
      timeline.push({ target: kill.target, killedAt, upAt: startedAt })
      log(`killed ${kill.target} at ${killedAt} ms (${made.opencode + made.host}/${plan.kills.length})`)
      continue
    }
    timeline.push({ target: kill.target, killedAt, upAt: Date.now() - t0 })
    log(`killed ${kill.target} at ${killedAt} ms (${made.opencode + made.host}/${plan.kills.length})`)
  }
  return made
}

/** Every session carrying a goal, in every directory, with its goal and transcript (read directly from OpenCode). */
async function readGoals(oc) {
  const sessions = await oc.apiIn(null)('GET', '/experimental/session', undefined, { query: { roots: 'true', limit: 100_000 } })
  const out = []
  for (const s of sessions) {
    const goal = s.metadata?.openchamber?.goal
    if (!goal) continue
    out.push({ sessionId: s.id, goal, messages: await oc.apiIn(s.directory)('GET', `/session/${s.id}/message`) })
  }
  return out
}

/** Waits until no goal is active (or the deadline); returns when. */
async function waitSettled(oc, deadline) {
  while (Date.now() < deadline) {
    try {
      const goals = await readGoals(oc)
      if (goals.length && goals.every((g) => g.goal.status !== 'active')) return
    } catch {}
    await sleep(1000)
  }
}

async function runSeed(seed) {
  const plan = planFor(seed)
  const log = (line) => console.log(`[seed ${seed}] ${line}`)
  log(`${GOALS} goals in ${DIRECTORIES} directories, ${KILLS} kills, ${HOSTS} hosts (sweep ${SWEEP_MS} ms, quiet ${QUIET_MS} ms, stuck after ${STUCK_AFTER_MS} ms${HANGING_HOST === null ? '' : `, host${HANGING_HOST}'s reconnects hang ${STREAM_HANG_MS} ms`}): ${plan.kills.map((k) => `${k.target}+${k.afterMs}ms`).join(' ')}`)
  const model = await startScriptedModel()
  for (let i = 0; i < GOALS; i++) {
    model.scenario(`chaos-${seed}-${i}`, {
      turns: [
        { text: 'Started: the parser skeleton is in place. Remaining: nesting.', delayMs: plan.goals[i].firstTurnDelayMs },
        { text: 'FINISHED: nested lists parse; tests pass.' },
      ],
    })
  }
  const oc = await startOpenCode({ modelBaseURL: model.baseURL, git: true })
  const proxy = await startProxy(oc.url)
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'chaos-real-'))
  const runsDir = path.join(dataDir, 'check-runs')
  fs.mkdirSync(runsDir)
  fs.mkdirSync(path.join(dataDir, 'logs'))
  const hosts = []
  const started = Date.now()
  const timeline = []
  const created = []
  let keep = false
  try {
    hosts.push(await startHost(proxy, 0, dataDir, 'host0-0', started), await startHost(proxy, 1, dataDir, 'host1-0', started))
    const creating = createGoals(oc, plan, seed, runsDir, created, started)
    const made = await runKills(plan, { oc, hosts, proxy, dataDir, log, t0: started, timeline })
    await creating
    // Past the stuck deadline after the last disturbance (STUCK_AFTER_MS), a goal still active
    // is stuck.
    const lastDisturbance = Date.now()
    await waitSettled(oc, lastDisturbance + STUCK_AFTER_MS)
    const settledAfterMs = Date.now() - lastDisturbance
    // Then three quiet windows more, so that a late post or check run would show.
    await sleep(QUIET_MS * 3)
    const settled = await readGoals(oc)
    const notComplete = settled.filter((g) => g.goal.status !== 'complete')
    for (const goal of notComplete) log(`not complete: ${diagnosis(goal)}`)
    const figures = judge(settled, proxy.sends, runsDir)
    const acted = timeToAct(timeline, created, proxy, started)
    const seconds = (ms) => (ms === null ? '-' : (ms / 1000).toFixed(1))
    log(`time to act after a restart: p50 ${seconds(acted.p50Ms)} s, max ${seconds(acted.maxMs)} s over ${acted.n} (goal, restart) pairs (after a host's: max ${seconds(acted.hostMaxMs)} s over ${acted.hostN}); ${acted.superseded} acted after the next kill, ${acted.none} never; ${acted.overBound} over ${SILENCE_BOUND_MS / 1000} s; host1's reconnects held: ${proxy.held.count}`)
    for (const l of acted.late) log(`late: goal ${l.goal} (${l.sessionId}) acted ${seconds(l.ms)} s after ${l.target} came back (killed at ${l.killedAt}, up at ${l.upAt}, acted at ${l.actedAt} ms)`)
    const snapshots = await Promise.all(hosts.map((h) => h.stop()))
    const sum = (key) => snapshots.reduce((total, s) => total + (s?.[key] ?? 0), 0)
    const row = {
      seed,
      hosts: HOSTS,
      ...figures,
      kills: made,
      panics: sum('panics'),
      recoverCalls: sum('recoverCalls'),
      ticksTimedOut: sum('ticksTimedOut'),
      timeToAct: { n: acted.n, p50Ms: acted.p50Ms, maxMs: acted.maxMs, overBound: acted.overBound, superseded: acted.superseded, none: acted.none, hostN: acted.hostN, hostMaxMs: acted.hostMaxMs },
      heldReconnects: proxy.held.count,
      settledAfterMs,
      seconds: Math.round((Date.now() - started) / 1000),
    }
    if (failed(row)) {
      keep = true
      const evidence = { seed, hosts: HOSTS, kills: timeline, late: acted.late, goals: notComplete.map((g) => goalEvidence(g, proxy.sends, created, started)) }
      fs.writeFileSync(path.join(dataDir, 'failing-goals.json'), JSON.stringify(evidence, null, 2))
      log(`failing: data directory kept at ${dataDir} (logs/, failing-goals.json)`)
    }
    return row
  } finally {
    for (const h of hosts) if (h.child.exitCode === null) h.child.kill('SIGKILL')
    await proxy.close()
    await oc.close()
    await model.close()
    if (!keep) fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

const failed = (r) =>
  r.stuck + r.repostsAfterAnswer + r.differentIdsOneTail + r.checkRunsTwice + r.writesLost + r.panics + r.recoverCalls > 0 ||
  r.complete + r.allowed !== r.goals ||
  (HOSTS === 'openchamber' && r.timeToAct.overBound > 0)

const rows = []
for (let run = 0; run < RUNS; run++) {
  const row = await runSeed(FIRST_SEED + run)
  console.log(JSON.stringify(row))
  rows.push(row)
}
console.log(table(rows))
const bad = rows.filter(failed)
if (bad.length) console.log(`FAILED seeds: ${bad.map((r) => r.seed).join(', ')} (rerun with --seed=<seed> --runs=1)`)
if (WRITE) {
  const how =
    HOSTS === 'openchamber'
      ? `Hosts as OpenChamber runs them (OpenChamber's options only: default quiet windows, fetch timeout and sweep, every ${SWEEP_MS / 1000} s; each forwards every event of its stream and never calls recover(); a killed host comes back as a new process on the same data directory, knowing nothing else); goals spread over ${DIRECTORIES} directories (the project, a git repository, and plain directories beside it); ${HANGING_HOST === null ? 'both reconnect their streams after a restart' : `host1's reconnect after an OpenCode restart hangs ${STREAM_HANG_MS / 1000} s, as OpenChamber's does`}; stuck means active ${STUCK_AFTER_MS / 1000} s after the last disturbance; time to act is from a restart (OpenCode answering again, or a host's new process connected) to a goal's next post or write, whoever makes it, with no exemption for a killed host's lease (bound ${SILENCE_BOUND_MS / 1000} s).`
      : `Hosts with the package's options (quiet window ${QUIET_MS} ms, default sweep); stuck means active ${STUCK_AFTER_MS / 1000} s after the last disturbance.`
  const stamp = `Latest run: commit ${measuredCommit()}, ${new Date().toISOString().slice(0, 10)}, seeds ${FIRST_SEED}–${FIRST_SEED + RUNS - 1}, ${GOALS} goals and ${KILLS} kills per seed (\`node scripts/chaos-real.mjs --hosts=${HOSTS} --goals=${GOALS} --kills=${KILLS} --directories=${DIRECTORIES} --seed=${FIRST_SEED} --runs=${RUNS} --write\`, ${os.cpus().length} cores). ${how}`
  writeReliabilitySection('chaos-real', 'Chaos on a real OpenCode (scripts/chaos-real.mjs)', [stamp, '', table(rows)].join('\n'))
}
process.exit(bad.length ? 1 : 0)
