#!/usr/bin/env node
// Chaos on a real `opencode serve` (offline, scripted model): two hosts in their own processes
// drive N goals, each needing one continuation and one acceptance check, while OpenCode and,
// separately, one host at a time are SIGKILLed at points drawn from a printed seed and started
// again. Then every goal must settle. Both hosts reach OpenCode through a counting proxy, so
// posts are counted at the wire; each check appends a line to a file, so its runs are counted
// where they happen.
//
//   node scripts/chaos-real.mjs [--hosts=openchamber|package] [--goals=100] [--kills=20] [--seed=N] [--runs=1] [--write]
//
// Hosts (--hosts; openchamber is the default):
// - openchamber (scripts/faults/openchamber-host.mjs): each host behaves as OpenChamber's web
//   server with the package swapped in. It creates the runtime with OpenChamber's flat options
//   (buildOpenCodeUrl, getOpenCodeAuthHeaders, getSmallModelService, emitGoalNotification; no
//   directories, so the runtime scans nothing at creation), leaves the quiet windows and the
//   fetch timeout at the runtime's defaults as OpenChamber does, forwards every payload of
//   OpenCode's global event stream to processPayload (read by the package's event follower,
//   which reconnects after OpenCode restarts: 250 ms doubling, capped at STREAM_BACKOFF_MS, the
//   loop's one backoff rule) and never calls recover().
//   The one option OpenChamber does not pass is sweepIntervalMs: the default (5 min) would make
//   every seed wait 5 min for its stuck-check, so the hosts sweep every OPENCHAMBER_SWEEP_MS
//   (10 s: several sweeps fall inside the kill window of about 90 s, and it is still longer
//   than the 3 s kickoff quiet window, so goals are driven by events first and by the sweep only
//   when an event was lost).
// - package (scripts/faults/second-host.mjs): the package's own nested options with short
//   quiet windows (400 ms), the default sweep (5 min); its event follower delivers the events
//   to the runtime itself and reconnects the same way, and it does not call recover() either.
//
// Figures per seed: goals settled correctly (complete; or `blocked` turnInterrupted when the
// transcript ends in two cut turns in a row, as SPEC A.6 asks), goals stuck (still active when
// the stuck deadline passes, see stuckAfterMs), posts of an id already posted (at the wire,
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
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startScriptedModel, scenarioTag } from '../__test__/mock/model.mjs'
import { createGoalSession, startOpenCode } from '../__test__/e2e/opencode-server.mjs'
import { measuredCommit, writeReliabilitySection } from './reliability-section.mjs'

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
const HOSTS = textArg('hosts') ?? 'openchamber'
if (!['openchamber', 'package'].includes(HOSTS)) {
  console.error(`--hosts must be openchamber or package, not ${HOSTS}`)
  process.exit(2)
}
/** The runtime's defaults, which the OpenChamber hosts keep (crates/goal-core/src/config/mod.rs). */
const DEFAULTS = require('../runtime.js').goalRuntimeDefaults()
/** The sweep interval the OpenChamber hosts are given (the header says why 10 s). */
const OPENCHAMBER_SWEEP_MS = 10_000
/** The cap of the hosts' stream reconnection backoff (crates/goal-core/src/time/backoff.rs). */
const STREAM_BACKOFF_MS = 10_000
/** The package hosts' quiet window. */
const PACKAGE_QUIET_MS = 400
/** The idle quiet window and the sweep interval the hosts run with. */
const QUIET_MS = HOSTS === 'openchamber' ? DEFAULTS.idleQuietMs : PACKAGE_QUIET_MS
const SWEEP_MS = HOSTS === 'openchamber' ? OPENCHAMBER_SWEEP_MS : DEFAULTS.sweepIntervalMs
/**
 * How long after the last disturbance (the last kill's restart, or the last goal created if
 * later) a goal may still be active without counting as stuck.
 * - openchamber: one sweep interval, plus the quiet window of the server showing the session
 *   idle, plus the stream's backoff cap (a host reconnecting late), is when the liveness rule
 *   (SPEC A.9 item 1) has driven a goal whose event was lost; plus the time an undisturbed goal
 *   takes from there (the kickoff quiet window, two turns each followed by the idle quiet window,
 *   and 10 s for the turns, audits and the check), since a goal created at the last kill still
 *   has its whole way to go: 10 + 15 + 10 + 3 + 30 + 10 = 78 s with the defaults.
 * - package: one sweep interval and 30 s (or 2 s per goal, if longer), as before.
 */
const STUCK_AFTER_MS =
  HOSTS === 'openchamber'
    ? SWEEP_MS + QUIET_MS + STREAM_BACKOFF_MS + DEFAULTS.kickoffQuietMs + 2 * QUIET_MS + 10_000
    : Math.max(SWEEP_MS + 30_000, GOALS * 2_000)
const CONTINUATION_PREFIX = 'Keep working toward the session goal'
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
 * A proxy to OpenCode that records every send: {sessionId, route, messageID, continuation,
 * status} (status: the answer's HTTP status, or null when none came). While OpenCode is down it
 * resets the connection, as OpenCode's own port would.
 */
function startProxy(targetUrl) {
  const sends = []
  const sockets = new Set()
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const send = /^\/session\/([^/?]+)\/(prompt_async|shell)(\?|$)/.exec(req.url)
      let record = null
      if (req.method === 'POST' && send) {
        let parsed = {}
        try {
          parsed = JSON.parse(body.toString('utf8') || '{}')
        } catch {}
        const text = (parsed.parts ?? []).map((p) => p?.text ?? '').join('\n')
        record = { sessionId: decodeURIComponent(send[1]), route: send[2], messageID: parsed.messageID ?? null, continuation: text.startsWith(CONTINUATION_PREFIX), status: null, at: Date.now() }
        sends.push(record)
      }
      const upstream = http.request(targetUrl + req.url, { method: req.method, headers: req.headers }, (answer) => {
        if (record) record.status = answer.statusCode
        res.writeHead(answer.statusCode, answer.headers)
        answer.pipe(res)
        answer.on('error', () => res.destroy())
      })
      upstream.on('error', () => req.socket.destroy())
      res.on('close', () => upstream.destroy())
      upstream.end(body)
    })
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}`,
        sends,
        close: () => {
          for (const s of sockets) s.destroy()
          return new Promise((done) => server.close(() => done()))
        },
      }),
    ),
  )
}

/**
 * A host process on `url` (scripts/faults/openchamber-host.mjs or second-host.mjs, by --hosts);
 * resolves once its stream is connected. Its console lines go to `logs/<name>.log` in the data
 * directory, each prefixed with the ms since the seed started (`t0`).
 */
async function startHost(url, dataDir, name, t0) {
  const [script, args, env] =
    HOSTS === 'openchamber'
      ? ['openchamber-host.mjs', [url, String(SWEEP_MS)], { ...process.env, OPENCHAMBER_DATA_DIR: dataDir }]
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

/** Creates goals at the seed's pace; a creation OpenCode cut off is tried again once it answers. */
async function createGoals(oc, plan, seed, runsDir, created, t0) {
  for (let i = 0; i < plan.goals.length; i++) {
    await sleep(plan.goals[i].gapMs)
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
    const { sessionId } = await createGoalSession(oc.api, { objective, checks: [check], retry })
    created.push({ goal: i, sessionId, startedAt, createdAt: Date.now() - t0 })
  }
}

/**
 * Runs the kill schedule: each kill, then the restart of what it killed. Each kill is recorded in
 * `timeline` ({target, killedAt, upAt}, ms from t0).
 */
async function runKills(plan, { oc, hosts, proxyUrl, dataDir, log, t0, timeline }) {
  const made = { opencode: 0, host: 0 }
  for (const kill of plan.kills) {
    await sleep(kill.afterMs)
    const killedAt = Date.now() - t0
    if (kill.target === 'opencode') {
      oc.child.kill('SIGKILL')
      await oc.restart()
      made.opencode++
    } else {
      const index = kill.target === 'host0' ? 0 : 1
      hosts[index].child.kill('SIGKILL')
      hosts[index] = await startHost(proxyUrl, dataDir, `host${index}-${made.host + 1}`, t0)
      made.host++
    }
    timeline.push({ target: kill.target, killedAt, upAt: Date.now() - t0 })
    log(`killed ${kill.target} at ${killedAt} ms (${made.opencode + made.host}/${plan.kills.length})`)
  }
  return made
}

/** Every session carrying a goal, with its goal and transcript (read directly from OpenCode). */
async function readGoals(oc) {
  const sessions = await oc.api('GET', '/session', undefined, { query: { roots: 'true' } })
  const out = []
  for (const s of sessions) {
    const goal = s.metadata?.openchamber?.goal
    if (!goal) continue
    out.push({ sessionId: s.id, goal, messages: await oc.api('GET', `/session/${s.id}/message`) })
  }
  return out
}

/**
 * One line on a goal that did not end complete: its status and cause, and the last messages of its
 * session (role, id, finished or not, finish, error name, continuation or claim), so a failing
 * seed says what the transcript looked like after the kills.
 */
function diagnosis({ sessionId, goal, messages }) {
  const shown = messages.slice(-4).map((m) => {
    const info = m.info
    if (info.role === 'user') {
      const kind = m.parts.some((p) => p.type === 'text' && String(p.text).startsWith(CONTINUATION_PREFIX)) ? 'continuation' : /zCHK/.test(info.id) ? 'check' : 'user'
      return `user ${info.id} (${kind})`
    }
    const state = info.time?.completed ? 'finished' : 'unfinished'
    return `assistant ${info.id} (${state}${info.finish ? `, finish ${info.finish}` : ''}${info.error ? `, error ${info.error.name ?? '?'}` : ''})`
  })
  const cause = goal.cause ? ` [${goal.cause.code}${goal.cause.detail ? `: ${goal.cause.detail}` : ''}]` : ''
  return `${sessionId} ${goal.status}: ${goal.statusReason ?? ''}${cause}; last messages: ${shown.join(' → ') || 'none'}`
}

/** Whether the transcript ends in two cut turns in a row: the last two replies unfinished. */
function twoCutTurns(messages) {
  const replies = messages.filter((m) => m.info.role === 'assistant')
  const cut = (m) => !m.info.time?.completed && !m.info.finish && !m.info.error
  return replies.length >= 2 && replies.slice(-2).every(cut)
}

/**
 * The settled state a goal that is not complete is counted under. `blocked` with
 * `turnInterrupted` is what SPEC A.6 asks for after two turns in a row cut by restarts; it is
 * allowed only when the transcript shows them.
 */
function settledOtherwise({ goal, messages }) {
  if (goal.status === 'blocked' && goal.cause?.code === 'turnInterrupted') {
    return twoCutTurns(messages) ? 'allowed: blocked turnInterrupted after two cut turns in a row' : 'blocked turnInterrupted WITHOUT two cut turns'
  }
  return `${goal.status}: ${goal.statusReason}`
}

/** The figures of one seed, from the goals, the wire and the check files. */
function judge(goals, sends, runsDir) {
  const figures = { goals: goals.length, complete: 0, allowed: 0, stuck: 0, otherwise: {}, sameIdReposts: 0, repostsAfterAnswer: 0, differentIdsOneTail: 0, checkRunsTwice: 0, writesLost: 0 }
  const delivered = sends.filter((s) => s.status !== null && s.status < 300 && s.continuation)
  // What the counters saw: continuation posts and check posts delivered, check runs made.
  figures.continuationPosts = delivered.length
  figures.shellPosts = sends.filter((s) => s.route === 'shell' && s.status !== null && s.status < 300).length
  figures.checkRuns = 0
  // What the kills did to the transcripts (not a failure): replies a restart cut, and goals with one.
  figures.cutReplies = 0
  figures.goalsWithCutReply = 0
  for (const { sessionId, goal, messages } of goals) {
    const cuts = messages.filter((m) => m.info.role === 'assistant' && !m.info.time?.completed && !m.info.finish && !m.info.error).length
    figures.cutReplies += cuts
    if (cuts > 0) figures.goalsWithCutReply++
    if (goal.status === 'complete') figures.complete++
    else if (goal.status === 'active') figures.stuck++
    else {
      const key = settledOtherwise({ goal, messages })
      if (key.startsWith('allowed')) figures.allowed++
      figures.otherwise[key] = (figures.otherwise[key] ?? 0) + 1
    }
    // A post of an id already posted: a stranded message posted again, or a post whose answer
    // was lost, is allowed; one made after the message was answered is a post too many.
    const seen = new Set()
    for (const s of delivered.filter((s) => s.sessionId === sessionId)) {
      if (!seen.has(s.messageID)) {
        seen.add(s.messageID)
        continue
      }
      figures.sameIdReposts++
      const answered = messages.some((m) => m.info.role === 'assistant' && m.info.parentID === s.messageID && m.info.time?.created < s.at)
      if (answered) figures.repostsAfterAnswer++
    }
    const perTail = new Map()
    let tail = null
    let continuations = 0
    for (const m of messages) {
      if (m.info.role === 'assistant') tail = m.info.id
      else if (m.parts.some((p) => p.type === 'text' && p.text.startsWith(CONTINUATION_PREFIX))) {
        continuations++
        perTail.set(tail, (perTail.get(tail) ?? 0) + 1)
      }
    }
    for (const n of perTail.values()) figures.differentIdsOneTail += n - 1
    if (typeof goal.turnsUsed !== 'number' || goal.turnsUsed < continuations) figures.writesLost++
    const tag = /\[scenario:chaos-\d+-(\d+)\]/.exec(String(goal.objective))
    const runs = tag && fs.existsSync(path.join(runsDir, `${tag[1]}.log`)) ? fs.readFileSync(path.join(runsDir, `${tag[1]}.log`), 'utf8').split('\n').filter(Boolean).length : 0
    figures.checkRuns += runs
    if (runs > 1) figures.checkRunsTwice += runs - 1
  }
  return figures
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

/**
 * What a failing seed keeps about a goal not complete: its record, its transcript (ids, roles,
 * parents, times, finish, error, part types and the first characters of text), the posts the
 * proxy saw for it, when it was created; times in ms from t0.
 */
function goalEvidence({ sessionId, goal, messages }, sends, created, t0) {
  const rel = (at) => (typeof at === 'number' ? at - t0 : at)
  return {
    sessionId,
    created: created.find((c) => c.sessionId === sessionId) ?? null,
    goal,
    messages: messages.map(({ info, parts }) => ({
      id: info.id,
      role: info.role,
      parentID: info.parentID,
      created: rel(info.time?.created),
      completed: rel(info.time?.completed),
      finish: info.finish,
      error: info.error?.name,
      parts: parts.map((p) => `${p.type}${p.type === 'text' ? `: ${String(p.text).slice(0, 60)}` : p.type === 'tool' ? ` ${p.tool} ${p.state?.status}` : ''}`),
    })),
    sends: sends.filter((x) => x.sessionId === sessionId).map((x) => ({ ...x, at: rel(x.at) })),
  }
}

async function runSeed(seed) {
  const plan = planFor(seed)
  const log = (line) => console.log(`[seed ${seed}] ${line}`)
  log(`${GOALS} goals, ${KILLS} kills, ${HOSTS} hosts (sweep ${SWEEP_MS} ms, quiet ${QUIET_MS} ms, stuck after ${STUCK_AFTER_MS} ms): ${plan.kills.map((k) => `${k.target}+${k.afterMs}ms`).join(' ')}`)
  const model = await startScriptedModel()
  for (let i = 0; i < GOALS; i++) {
    model.scenario(`chaos-${seed}-${i}`, {
      turns: [
        { text: 'Started: the parser skeleton is in place. Remaining: nesting.', delayMs: plan.goals[i].firstTurnDelayMs },
        { text: 'FINISHED: nested lists parse; tests pass.' },
      ],
    })
  }
  const oc = await startOpenCode({ modelBaseURL: model.baseURL })
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
    hosts.push(await startHost(proxy.url, dataDir, 'host0-0', started), await startHost(proxy.url, dataDir, 'host1-0', started))
    const creating = createGoals(oc, plan, seed, runsDir, created, started)
    const made = await runKills(plan, { oc, hosts, proxyUrl: proxy.url, dataDir, log, t0: started, timeline })
    await creating
    // Past the stuck deadline after the last disturbance (STUCK_AFTER_MS): a goal whose wake-up
    // was lost with a killed process is driven by the sweep; one still active after it is stuck.
    const lastDisturbance = Date.now()
    await waitSettled(oc, lastDisturbance + STUCK_AFTER_MS)
    const settledAfterMs = Date.now() - lastDisturbance
    // Then three quiet windows more, so that a late post or check run would show.
    await sleep(QUIET_MS * 3)
    const settled = await readGoals(oc)
    const notComplete = settled.filter((g) => g.goal.status !== 'complete')
    for (const goal of notComplete) log(`not complete: ${diagnosis(goal)}`)
    const figures = judge(settled, proxy.sends, runsDir)
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
      settledAfterMs,
      seconds: Math.round((Date.now() - started) / 1000),
    }
    if (failed(row)) {
      keep = true
      const evidence = { seed, hosts: HOSTS, kills: timeline, goals: notComplete.map((g) => goalEvidence(g, proxy.sends, created, started)) }
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

const failed = (r) => r.stuck + r.repostsAfterAnswer + r.differentIdsOneTail + r.checkRunsTwice + r.writesLost + r.panics + r.recoverCalls > 0 || r.complete + r.allowed !== r.goals

function table(rows) {
  const lines = [
    '| seed | goals | kills (OpenCode / host) | settled complete | settled otherwise | stuck | continuations posted (wire) | same-id re-posts (wire; after an answer) | different ids after one tail | checks run | checks run twice | writes lost | s |',
    '|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const r of rows) {
    lines.push(`| ${r.seed} | ${r.goals} | ${r.kills.opencode} / ${r.kills.host} | ${r.complete} | ${Object.entries(r.otherwise).map(([why, n]) => `${n} ${why}`).join('; ') || 0} | ${r.stuck} | ${r.continuationPosts} | ${r.sameIdReposts}; ${r.repostsAfterAnswer} | ${r.differentIdsOneTail} | ${r.checkRuns} | ${r.checkRunsTwice} | ${r.writesLost} | ${r.seconds} |`)
  }
  return lines.join('\n')
}

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
      ? `Hosts as OpenChamber runs them (OpenChamber's options, default quiet windows; each reconnects its stream and forwards every event after a restart and never calls recover()), sweeping every ${SWEEP_MS / 1000} s; stuck means active ${STUCK_AFTER_MS / 1000} s after the last disturbance.`
      : `Hosts with the package's options (quiet window ${QUIET_MS} ms, default sweep); stuck means active ${STUCK_AFTER_MS / 1000} s after the last disturbance.`
  const stamp = `Latest run: commit ${measuredCommit()}, ${new Date().toISOString().slice(0, 10)}, seeds ${FIRST_SEED}–${FIRST_SEED + RUNS - 1}, ${GOALS} goals and ${KILLS} kills per seed (\`node scripts/chaos-real.mjs --hosts=${HOSTS} --goals=${GOALS} --kills=${KILLS} --seed=${FIRST_SEED} --runs=${RUNS} --write\`, ${os.cpus().length} cores). ${how}`
  writeReliabilitySection('chaos-real', 'Chaos on a real OpenCode (scripts/chaos-real.mjs)', [stamp, '', table(rows)].join('\n'))
}
process.exit(bad.length ? 1 : 0)
