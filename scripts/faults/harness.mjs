// The fault suite's harness: one mock OpenCode per fault class, goal runtimes wired like a host
// (the mock's /global/event stream read by the package's event follower, each payload forwarded
// into that runtime's processPayload by the harness), a case per session, and the
// measurements every row of the table reports.
//
// A case is one session with a goal (or one hostile probe). The class decides how the case is
// disturbed and what "ended correctly" means for it (`expect`); the harness measures the same
// invariants for every case:
//   sent twice       two continuations answering the same assistant tail
//   sent after stop  a continuation admitted after a recorded user stop that it should honour
//   foreign lost     a metadata key another writer owns, missing or changed at the end (for an
//                    uncoordinated concurrent writer: dropped although it was in what we read)
//   panics           snapshot().panics of every runtime the class created
//   stuck            a valid active goal on an idle session that no runtime tracks (no timer,
//                    no tick) two quiet windows after the class settled
//   copied parts     a text part a same-id re-post appended to the stored message (the parts of
//                    every message the runtime posted under its own id are counted at the end)
// and two more counted at the wire, from the POSTs the mock received on its send routes
// (prompt_async, shell), before the server's de-duplication by messageID:
//   re-posted        a post answering a tail whose continuation the server had already taken,
//                    carrying the same messageID, while no earlier post of that id had been
//                    answered cleanly (an unclear answer: a timeout, a 5xx, a cut or HTML body),
//                    or for a reason the case declares (`repostsBecause`, e.g. a second host)
//   posted twice     every other such post: a re-post after a clean answer, or under another id
// A case also fails when a fault it injected (every `mock.fault()` of the class is checked) or a
// disturbance it arranged (`h.disturbance()`) never happened: an undisturbed run must not count.

import { createRequire } from 'node:module'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startMockOpenCode } from '../../__test__/mock/opencode.mjs'
import { wireReport } from './wire.mjs'
import { freshGoal } from '../../__test__/mock/goal.mjs'

const require = createRequire(import.meta.url)
export const pkg = require('../../runtime.js')
export const native = require('../../index.js')

/**
 * The first reconnect's wait of every host's event follower (short, so the suite stays fast).
 * Each failure in a row doubles it, up to the loop's cap of 10 s (crates/goal-core/src/
 * time/backoff.rs); a connection that stayed up less than the cap does not start it over.
 */
export const STREAM_FIRST_RETRY_MS = 50
/** How long a host's stream may take to be back after an outage: the backoff's cap, and 2 s. */
export const STREAM_BACK_MS = 12_000

/** The quiet window every class runs with (short, so the suite stays fast). */
export const QUIET_MS = 150
/** First line of every continuation prompt: how a continuation is told from a user message. */
export const CONTINUATION_MARK = 'Keep working toward the session goal that is currently active.'
/** The reply every scripted turn gives; the default auditor calls it complete. */
export const FINISHED_TEXT = 'FINISHED: every requirement is met and verified by the test suite.'
/** The reply the goal starts from; the default auditor says continue. */
export const STARTED_TEXT = 'Started: parser skeleton in place. Remaining: nesting.'
export const ABORTED = { name: 'MessageAbortedError', data: { message: 'Aborted' } }

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

export const verdict = (name, note = name === 'complete' ? 'verified' : 'keep going') => ({
  text: JSON.stringify({ verdict: name, note }),
  providerID: 'small',
  modelID: 'nano',
})

/** Continue until the tail says FINISHED, then complete: stateless, so retries see the same. */
export const defaultAuditor = (request) =>
  Promise.resolve(verdict(String(request?.prompt ?? '').includes('FINISHED:') ? 'complete' : 'continue'))

const STATUSES = new Set(['active', 'paused', 'blocked', 'budgetLimited', 'complete'])
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v)

/** The reference parser's validity rule (mirrors parseGoalMetadata). */
export function validGoal(metadata) {
  const goal = isObj(metadata) && isObj(metadata.openchamber) ? metadata.openchamber.goal : undefined
  if (!isObj(goal)) return null
  if (typeof goal.id !== 'string' || goal.id === '') return null
  if (typeof goal.status !== 'string' || !STATUSES.has(goal.status)) return null
  const objective = typeof goal.objective === 'string' ? goal.objective.trim() : ''
  if (!objective && goal.objectiveFile !== true) return null
  return goal
}

/** Everything in metadata that is not the goal: what other writers own. */
export function foreignPart(metadata) {
  if (!isObj(metadata)) return metadata
  const out = {}
  for (const [key, value] of Object.entries(metadata)) {
    if (key !== 'openchamber') out[key] = value
  }
  if (isObj(metadata.openchamber)) {
    for (const [key, value] of Object.entries(metadata.openchamber)) {
      if (key !== 'goal') out['openchamber.' + key] = value
    }
  }
  return out
}

/** Flattened leaf keys of the foreign part, for set comparisons. */
export function foreignKeys(metadata) {
  const keys = []
  const walk = (prefix, value, depth) => {
    if (isObj(value) && depth < 3 && Object.keys(value).length) {
      for (const [k, v] of Object.entries(value)) walk(prefix + '/' + k, v, depth + 1)
    } else keys.push(prefix)
  }
  const part = foreignPart(metadata)
  if (isObj(part)) for (const [k, v] of Object.entries(part)) walk(k, v, 0)
  return keys.sort()
}

/** Leaf path → JSON text of a value (for "every seeded key is still there" checks). */
function leaves(value) {
  const out = new Map()
  const walk = (prefix, v) => {
    if (isObj(v) && Object.keys(v).length) for (const [k, x] of Object.entries(v)) walk(prefix ? prefix + '/' + k : k, x)
    else out.set(prefix, JSON.stringify(v))
  }
  walk('', value)
  return out
}

function deepEqual(a, b) {
  return JSON.stringify(a) === JSON.stringify(b)
}

function tempDataDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'goal-faults-'))
}

/** FAULTS_MUTATE=1: the mock's fault matcher matches nothing (the suite's own mutation check). */
export const MUTATED = process.env.FAULTS_MUTATE === '1'

/** A fault as the failure names it: method, path (session id shortened), what it does, how often. */
function describeFault(spec, c) {
  const where = String(spec.path).replace(c?.sessionId ?? '\u0000', ':id')
  const what = spec.hang ? 'hang' : spec.destroy ? 'reset' : spec.html ? 'HTML' : spec.truncatedJson ? 'cut JSON' : spec.status !== undefined ? String(spec.status) : spec.trickleMs ? 'trickle' : 'delay'
  return `${spec.method ?? 'ANY'} ${where} ${what}${spec.apply ? ' (applied)' : ''}${Number.isFinite(spec.times) ? ' ×' + spec.times : ''}`
}

export async function createHarness(name, { mockOptions = {}, runtimeOptions = {} } = {}) {
  const mock = await startMockOpenCode({ heartbeatMs: 60_000, replyDelayMs: 20, faultsNeverMatch: MUTATED, ...mockOptions })
  const dataDir = tempDataDir()
  const cases = []
  const runtimes = [] // {runtime, stream, native, label, live}
  const notifications = []
  const logLines = []
  const notes = []
  const windowOverwrites = { count: 0 }
  let counter = 0
  const patchHooks = [] // {sessionId, fn}
  mock.onPatch = (sessionId, change) => {
    for (const hook of patchHooks.filter((x) => x.sessionId === sessionId)) hook.fn(change)
  }

  const caseByDirectory = (directory) => cases.find((c) => c.directory === directory)

  // Every fault the class injects, with the number of requests it must have matched by the end
  // (`mustFire`: `times` when finite, else at least one).
  const injected = [] // {spec, handle, mustFire, case}
  const addFault = mock.fault
  mock.fault = (spec) => {
    const { mustFire, ...rest } = spec
    const handle = addFault(rest)
    const owner = cases.find((c) => String(rest.path).includes(c.sessionId) || rest.query?.directory === c.directory)
    injected.push({ spec: rest, handle, mustFire: mustFire ?? (Number.isFinite(rest.times) ? rest.times : 1), case: owner })
    return handle
  }
  const disturbances = [] // {case, label, fired}
  const classFailures = []

  // One auditor for every runtime: the case (found by the session's directory) decides. Not
  // async on purpose: a case auditor may throw synchronously.
  const auditor = (request) => {
    const c = caseByDirectory(request?.directory)
    if (c) c.auditCalls += 1
    return (c?.auditor ?? defaultAuditor)(request, c)
  }

  const h = {
    name,
    mock,
    runtimes,
    dataDir,
    cases,
    notifications,
    notes,
    logLines,
    windowOverwrites,
    auditor,

    /** Creates a goal runtime wired like a host; `filter(payload, directory)` drops events. */
    newRuntime({ options = {}, raw = false, forward = true, filter, label = 'runtime', baseUrl = mock.url } = {}) {
      const factory = raw ? native.createSessionGoalRuntime : pkg.createSessionGoalRuntime
      // The tunables nested, as the raw binding takes them: a class's own are merged in.
      const tunables = { idleQuietMs: QUIET_MS, kickoffQuietMs: 100, resumeKickoffMs: 50, auditTimeoutMs: 3000, ...runtimeOptions.tunables, ...options.tunables }
      // The connection and the small model nested, as the raw binding takes them.
      const { fetchTimeoutMs = 1000, ...rest } = { ...runtimeOptions, ...options }
      const runtime = factory({
        openCode: { baseUrl, fetchTimeoutMs },
        settings: { dataDir },
        emitGoalNotification: (event) => notifications.push(event),
        smallModel: { generate: auditor },
        logger: (level, line) => { logLines.push(level + ' ' + line); if (process.env.FAULTS_LOG) console.error(Date.now() % 100000, label, level, line) },
        ...rest,
        tunables,
      })
      const entry = { runtime, native: raw, label, live: true, stream: null, connected: false }
      if (forward) {
        // The follower only reads (deliver: false): the harness forwards each payload to this
        // runtime, so that a class can drop some (`filter`) or stop them (`dropRuntime`).
        entry.stream = pkg.createEventFollower({
          openCode: { baseUrl: mock.url },
          deliver: false,
          firstRetryMs: STREAM_FIRST_RETRY_MS,
          onStatus: ({ state }) => {
            entry.connected = state === 'connected'
          },
          onPayload: (payload, directory) => {
            if (!entry.live) return
            if (filter && !filter(payload, directory)) return
            runtime.processPayload(payload, directory)
          },
        })
      }
      runtimes.push(entry)
      return runtime
    },

    /** The host forgets a runtime: its events stop; with `stop`, it is also stopped. */
    async dropRuntime(runtime, { stop = false } = {}) {
      const entry = runtimes.find((r) => r.runtime === runtime)
      if (!entry) return
      entry.live = false
      entry.stream?.close()
      if (stop) await runtime.stop()
    },

    /** Waits until every live runtime's event stream is connected. */
    async waitForStreams() {
      await mock.waitFor(() => runtimes.every((r) => !r.live || !r.stream || r.connected), { timeoutMs: STREAM_BACK_MS })
    },

    /** Waits until this runtime's event stream is connected. */
    async waitForConnected(runtime) {
      await mock.waitFor(() => runtimes.find((r) => r.runtime === runtime)?.connected !== false, { timeoutMs: STREAM_BACK_MS })
    },

    /**
     * Adds a session with a goal, one exchange and a reply script. Options:
     *  label, goal (fields over the defaults), metadata (replaces the whole metadata),
     *  objective, id, directory, exchange=true, replies, foreign=true, auditor(request, case),
     *  expect(result) → bool, settled(result) → bool, start=true.
     */
    addCase(spec = {}) {
      counter += 1
      const label = spec.label ?? 'case ' + counter
      const directory = spec.directory ?? `/tmp/faults/${name}/${counter}`
      const objective = spec.objective ?? `Case ${counter} (${label}): make the parser handle nested lists`
      const goal = freshGoal({
        id: 'goal-' + counter + '-' + Math.random().toString(36).slice(2, 8),
        objective,
        createdAt: Date.now() - 60_000,
        updatedAt: Date.now() - 60_000,
        ...spec.goal,
      })
      const foreign = spec.foreign === false ? {} : { ui: { pinned: true, label }, other: { token: 'keep-' + counter } }
      const assist = spec.foreign === false ? {} : { assist: { recap: 'recap ' + counter, forMessageID: 'msg_x' } }
      const metadata = 'metadata' in spec ? spec.metadata : { ...foreign, openchamber: { ...assist, goal } }
      const session = mock.createSession({ id: spec.id, directory, metadata, created: Date.now() - 120_000 })
      if (spec.exchange !== false) {
        mock.addUserMessage(session.id, 'Please make the parser handle nested lists', { created: Date.now() - 90_000 })
        mock.addAssistantMessage(session.id, { text: STARTED_TEXT, tokens: { input: 1000, output: 100 }, ...spec.reply })
      }
      mock.scriptReplies(session.id, spec.replies ?? [{ text: FINISHED_TEXT, tokens: { input: 2000, output: 150 } }])
      const c = {
        label,
        index: counter,
        sessionId: session.id,
        directory,
        objective,
        seedForeign: structuredClone(foreignPart(metadata)),
        seedMetadata: structuredClone(metadata),
        auditor: spec.auditor,
        expect: spec.expect ?? expectComplete(1),
        settled: spec.settled,
        stops: [],
        auditCalls: 0,
        checkForeign: spec.checkForeign !== false,
        foreignWriter: null,
        repostsBecause: spec.repostsBecause,
        data: {},
      }
      cases.push(c)
      if (spec.start !== false) h.start(c)
      return c
    },

    /**
     * Runs `fn({before, after, body})` inside every PATCH of the session, after it is applied
     * and before it is answered: what it changes lands between a write and the next request.
     */
    onPatch(c, fn) {
      patchHooks.push({ sessionId: c.sessionId, fn })
    },

    /**
     * A disturbance the case arranges other than a fault (an outage, a user's turn, a runtime
     * replaced): returns `fire()`, to be called when it happens. A case whose disturbance never
     * happened fails, naming it.
     */
    disturbance(c, label) {
      const d = { case: c, label, fired: false }
      disturbances.push(d)
      return () => {
        d.fired = true
      }
    },

    /** Runs `fn` once, inside the PATCH that reserves a turn (the goal gains continuationFor). */
    onReservation(c, fn) {
      let done = false
      const fired = h.disturbance(c, 'the hook inside the reservation write')
      h.onPatch(c, (change) => {
        const goal = change.after?.openchamber?.goal
        if (done || !goal?.continuationFor || goal.status !== 'active') return
        done = true
        fired()
        fn(change)
      })
    },

    /** The session goes idle (the event a host would forward). */
    start(c) {
      mock.setStatus(c.sessionId, 'idle')
    },

    /**
     * Records a user stop. A continuation admitted after it (message index) and matching
     * `stale(continuation)` counts as "sent after stop".
     */
    recordStop(c, kind, stale = () => true) {
      c.stops.push({ kind, index: mock.messages(c.sessionId).length, at: Date.now(), stale })
    },

    note(text) {
      notes.push(text)
    },

    /** A failure of the class as a whole (not of one case): the row fails with this text. */
    fail(text) {
      classFailures.push(text)
    },

    /** Snapshot of every runtime still alive (stopped ones report no sessions). */
    trackedSessions() {
      const tracked = new Set()
      for (const { runtime } of runtimes) {
        try {
          for (const s of runtime.snapshot().sessions) tracked.add(s.sessionId)
        } catch {
          // a runtime object that cannot answer is not tracking anything
        }
      }
      return tracked
    },

    result(c) {
      return resultOf(h, c)
    },

    /**
     * Waits until every case is settled (its goal no longer active, or its expectation met, or
     * its own `settled`), then two quiet windows more, so late double sends and stranded goals
     * show.
     */
    async settle({ timeoutMs = 15_000 } = {}) {
      const deadline = Date.now() + timeoutMs
      const settledNow = () =>
        cases.every((c) => {
          const r = resultOf(h, c)
          if (c.settled) return c.settled(r)
          return !r.active || safeExpect(c, r)
        })
      while (Date.now() < deadline && !settledNow()) await sleep(25)
      const inFlight = () => runtimes.some(({ runtime }) => {
        try {
          return runtime.snapshot().inFlight > 0
        } catch {
          return false
        }
      })
      while (Date.now() < deadline && inFlight()) await sleep(25)
      await sleep(2 * QUIET_MS + 100)
      while (Date.now() < deadline + 3000 && inFlight()) await sleep(25)
    },

    /** Measures every case and returns the row. */
    evaluate() {
      const tracked = h.trackedSessions()
      const row = { name, total: cases.length, ended: 0, twice: 0, reposted: 0, postedTwice: 0, afterStop: 0, foreignLost: 0, panics: 0, stuck: 0, failures: [] }
      const unfired = (c) => [
        ...injected.filter((f) => f.case === c && f.handle.fired < f.mustFire)
          .map((f) => `fault ${describeFault(f.spec, c)} fired ${f.handle.fired} of ${f.mustFire} time(s)`),
        ...disturbances.filter((d) => d.case === c && !d.fired).map((d) => `disturbance never happened: ${d.label}`),
        // A case's own small model is its disturbance (or what arranges one): it must have been asked.
        ...(c.auditor && c.auditCalls === 0 ? ['disturbance never happened: the case\'s small model was never asked'] : []),
      ]
      row.failures.push(...classFailures)
      const reposting = []
      for (const f of injected.filter((x) => !x.case && x.handle.fired < x.mustFire)) {
        row.failures.push(`fault ${describeFault(f.spec)} fired ${f.handle.fired} of ${f.mustFire} time(s)`)
      }
      for (const c of cases) {
        const r = resultOf(h, c)
        const missed = unfired(c)
        const ok = safeExpect(c, r) && missed.length === 0
        if (ok) row.ended += 1
        const problems = [...missed]
        if (!safeExpect(c, r)) problems.push('ended as ' + describe(r))
        if (r.twice > 0) problems.push(`${r.twice} continuation(s) sent twice`)
        if (r.wire.postedTwice > 0) problems.push(`${r.wire.postedTwice} unexpected re-post(s) on the wire: ${r.wire.unexpected.join('; ')}`)
        if (r.copies > 0) problems.push(`${r.copies} copied part(s): a re-post appended to its stored message`)
        if (r.afterStop > 0) problems.push(`${r.afterStop} continuation(s) after a stop`)
        if (r.foreignLost > 0) problems.push(`${r.foreignLost} foreign key(s) lost: ${r.foreignLostKeys.join(', ')}`)
        const stuck = r.active && mock.status(c.sessionId).type === 'idle' && !tracked.has(c.sessionId)
        if (stuck) problems.push('stuck (active, idle, no timer)')
        row.twice += r.twice
        row.reposted += r.wire.reposted
        if (r.wire.reposted) reposting.push(`${c.label} (${r.wire.reposted}${c.repostsBecause ? ', ' + c.repostsBecause : ''})`)
        row.postedTwice += r.wire.postedTwice
        row.afterStop += r.afterStop
        row.foreignLost += r.foreignLost
        row.stuck += stuck ? 1 : 0
        if (problems.length) {
          row.failures.push(`${c.label}: ${problems.join('; ')}`)
          if (process.env.FAULTS_DEBUG) traceCase(h, c, r)
        }
      }
      // Panics reported by runtimes outside this process (the two-hosts measurement).
      row.panics += h.extraPanics ?? 0
      for (const { runtime, label } of runtimes) {
        try {
          row.panics += runtime.snapshot().panics
        } catch (e) {
          row.failures.push(`${label}: snapshot() threw ${e?.message ?? e}`)
          row.panics += 1
        }
      }
      const secrets = cases.flatMap((c) => [c.objective.slice(0, 40)]).concat([FINISHED_TEXT.slice(0, 30), STARTED_TEXT.slice(0, 30)])
      const leaks = logLines.filter((line) => secrets.some((s) => s.trim().length > 8 && line.includes(s)))
      if (leaks.length) row.failures.push(`${leaks.length} log line(s) carry conversation text`)
      row.logLeaks = leaks.length
      row.windowOverwrites = windowOverwrites.count
      if (reposting.length) notes.push(`${name}: same-id re-posts (one message with one part on the server each time): ${reposting.join('; ')}`)
      row.notes = notes
      if (mock.errors.length) row.failures.push(`mock errors: ${mock.errors.map((e) => String(e?.message ?? e)).slice(0, 3).join(' | ')}`)
      return row
    },

    async close() {
      for (const c of cases) c.foreignWriter?.stop()
      for (const entry of runtimes) {
        entry.live = false
        entry.stream?.close()
      }
      await Promise.all(runtimes.map(({ runtime }) => Promise.resolve(runtime.stop()).catch(() => {})))
      await mock.close()
      fs.rmSync(dataDir, { recursive: true, force: true })
    },
  }
  return h
}

/** FAULTS_DEBUG=1: what happened to a failing case, on stderr. */
function traceCase(h, c, r) {
  const short = (id) => String(id ?? '').slice(-6)
  const lines = [`--- ${h.name} / ${c.label} (${c.sessionId.slice(0, 40)})`]
  for (const m of r.messages) {
    const text = m.parts.filter((p) => p.type === 'text').map((p) => p.text).join(' ').slice(0, 50)
    lines.push(`  ${m.info.role.padEnd(9)} ${short(m.info.id)} created=${m.info.time.created % 100000} completed=${(m.info.time.completed ?? 0) % 100000} ${m.info.error?.name ?? ''} ${JSON.stringify(text)}`)
  }
  for (const q of r.requests) lines.push(`  ${String(q.at % 100000).padStart(5)} ${q.method} ${q.path.replace(c.sessionId, 'S').slice(0, 60)}`)
  lines.push('  goal: ' + JSON.stringify(r.goalRaw)?.slice(0, 600))
  for (const entry of h.runtimes) {
    try {
      const snap = entry.runtime.snapshot()
      lines.push(`  runtime ${entry.label} live=${entry.live} connected=${entry.connected} stopped=${snap.stopped} ticks=${snap.ticks} inFlight=${snap.inFlight} panics=${snap.panics} session=${JSON.stringify(snap.sessions.find((x) => x.sessionId === c.sessionId) ?? null)}`)
    } catch (e) {
      lines.push(`  runtime ${entry.label}: snapshot threw ${e}`)
    }
  }
  console.error(lines.join('\n'))
}

function safeExpect(c, r) {
  try {
    return Boolean(c.expect(r))
  } catch {
    return false
  }
}

function describe(r) {
  if (!r.goalRaw) return `no goal (${r.continuations.length} continuation(s))`
  const g = r.goalRaw
  return `${JSON.stringify(g.status)} ${JSON.stringify(g.statusReason ?? '')} turns=${JSON.stringify(g.turnsUsed)}, ${r.continuations.length} continuation(s)`
}

/**
 * Continuations in a session: user messages carrying the continuation prompt. The tail each one
 * answers is the one its reservation named (the goal's `continuationFor` when the request reached
 * the server: every continuation is reserved for a tail before it is posted); without one, the
 * newest assistant reply that had finished when the request arrived. A request held up on the way
 * is judged by when it was sent, not when it landed.
 */
function continuationsOf(messages, prompts, patches) {
  const out = []
  messages.forEach((m, index) => {
    if (m.info.role !== 'user') return
    const text = m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('\n')
    if (!text.startsWith(CONTINUATION_MARK)) return
    const sentAt = prompts.find((p) => p.messageID === m.info.id)?.receivedAt ?? m.info.time.created
    const tail = tailAt(messages.slice(0, index), patches, sentAt)
    out.push({ id: m.info.id, index, created: m.info.time.created, sentAt, text, tail })
  })
  return out
}

/**
 * The tail a request sent at `at` answers: the `continuationFor` of the newest reservation
 * written by then; without one, the newest assistant reply among `messages` finished by then.
 */
function tailAt(messages, patches, at) {
  let tail
  for (const p of patches) {
    if (p.at > at) break
    tail = p.body?.metadata?.openchamber?.goal?.continuationFor
  }
  if (typeof tail === 'string' && tail) return tail
  for (let i = messages.length - 1; i >= 0; i--) {
    const a = messages[i].info
    if (a.role === 'assistant' && a.time?.completed && a.time.completed <= at) return a.id
  }
  return null
}

function resultOf(h, c) {
  const session = h.mock.getSession(c.sessionId)
  const metadata = session?.metadata
  const goalRaw = isObj(metadata) && isObj(metadata.openchamber) && isObj(metadata.openchamber.goal) ? metadata.openchamber.goal : null
  const valid = validGoal(metadata)
  const messages = h.mock.messages(c.sessionId)
  const prompts = h.mock.prompts.filter((p) => p.sessionId === c.sessionId)
  const patches = h.mock.patches.filter((p) => p.sessionId === c.sessionId)
  const continuations = continuationsOf(messages, prompts, patches)
  const byTail = new Map()
  for (const k of continuations) byTail.set(k.tail, (byTail.get(k.tail) ?? 0) + 1)
  let twice = 0
  for (const n of byTail.values()) twice += Math.max(0, n - 1)
  let afterStop = 0
  for (const k of continuations) {
    if (c.stops.some((stop) => k.index >= stop.index && stop.stale(k))) afterStop += 1
  }
  let foreignLost = 0
  const foreignLostKeys = []
  if (c.checkForeign && session) {
    // Every leaf another writer put there at the start must still be there, unchanged.
    const now = leaves(foreignPart(metadata))
    for (const [key, value] of leaves(c.seedForeign)) {
      if (!now.has(key) || now.get(key) !== value) {
        foreignLost += 1
        foreignLostKeys.push(key)
      }
    }
    if (c.foreignWriter) {
      foreignLost += c.foreignWriter.mergeLosses
      foreignLostKeys.push(...c.foreignWriter.mergeLossKeys)
    }
  }
  // A same-id re-post must leave the stored message as it was: one text part, never a copy.
  const postedIds = new Set(h.mock.sends(c.sessionId).map((send) => send.body?.messageID).filter(Boolean))
  let copies = 0
  for (const m of messages) {
    if (m.info.role === 'user' && postedIds.has(m.info.id)) copies += Math.max(0, m.parts.filter((p) => p.type === 'text').length - 1)
  }
  const wire = wireReport({
    sends: h.mock.sends(c.sessionId),
    admitted: h.mock.prompts.filter((p) => p.sessionId === c.sessionId),
    tailAt: (at) => tailAt(messages, patches, at),
    allowedBecause: c.repostsBecause,
  })
  return {
    wire,
    session,
    metadata,
    goalRaw,
    goal: valid,
    active: Boolean(valid && valid.status === 'active'),
    status: goalRaw?.status,
    reason: goalRaw?.statusReason,
    messages,
    continuations,
    twice,
    copies,
    afterStop,
    foreignLost,
    foreignLostKeys,
    prompts,
    patches,
    requests: h.mock.requests.filter((r) => r.path.includes(c.sessionId) || r.query?.directory === c.directory),
  }
}

// ---- expectations ----------------------------------------------------------------------------

/** Settled complete ("verified by audit") after exactly `n` continuations. */
export const expectComplete = (n = 1) => (r) =>
  r.goalRaw?.status === 'complete' && r.goalRaw.statusReason === 'verified by audit' && r.continuations.length === n

/** Settled with this status and reason after exactly `n` continuations. */
export const expectSettled = (status, reason, n) => (r) =>
  r.goalRaw?.status === status && (reason === undefined || r.goalRaw.statusReason === reason) && (n === undefined || r.continuations.length === n)

/** Nothing happened: no continuation, no write, metadata as seeded. */
export const expectUntouched = (c) => (r) =>
  r.continuations.length === 0 && r.patches.length === 0 && deepEqual(r.metadata, c.seedMetadata)

/**
 * A writer of other metadata keys that never coordinates with the runtime: every few ms it adds a
 * key (atomically inside the mock, as a server-side writer would). Each of our PATCHes is checked
 * against the history of foreign key sets: a PATCH built from a version we read may drop keys
 * added after that read (the read→write window OpenCode's whole-object PATCH leaves; counted as
 * window overwrites), but a PATCH whose foreign keys match no version ever stored dropped keys
 * it had read (a merge bug; counted as lost).
 */
export function startForeignWriter(h, c, { minMs = 4, maxMs = 14 } = {}) {
  const mock = h.mock
  const history = [foreignKeys(mock.getSession(c.sessionId)?.metadata).join('|')]
  let n = 0
  let timer = null
  let stopped = false
  h.onPatch(c, ({ before, body }) => writer.onPatch(before, body))
  const wrote = h.disturbance(c, 'a write by the other writer while the goal ran')
  const writer = {
    writes: 0,
    mergeLosses: 0,
    mergeLossKeys: [],
    stop() {
      stopped = true
      clearTimeout(timer)
    },
    onPatch(before, body) {
      const written = foreignKeys(body.metadata).join('|')
      const dropped = foreignKeys(before).filter((k) => !foreignKeys(body.metadata).includes(k))
      if (dropped.length) {
        if (history.includes(written)) h.windowOverwrites.count += dropped.length
        else {
          writer.mergeLosses += dropped.length
          writer.mergeLossKeys.push(...dropped)
        }
      }
      history.push(foreignKeys(mock.getSession(c.sessionId)?.metadata).join('|'))
    },
  }
  const tick = () => {
    if (stopped) return
    const session = mock.getSession(c.sessionId)
    if (session) {
      n += 1
      const metadata = isObj(session.metadata) ? session.metadata : {}
      const next = n % 2
        ? { ...metadata, ui: { ...(isObj(metadata.ui) ? metadata.ui : {}), ['k' + n]: n } }
        : { ...metadata, openchamber: { ...metadata.openchamber, assist: { ...(metadata.openchamber?.assist ?? {}), ['k' + n]: n } } }
      mock.setMetadata(c.sessionId, next)
      writer.writes += 1
      if (validGoal(next)?.status === 'active') wrote()
      history.push(foreignKeys(next).join('|'))
    }
    timer = setTimeout(tick, minMs + Math.random() * (maxMs - minMs))
  }
  timer = setTimeout(tick, minMs)
  c.foreignWriter = writer
  // Keys added by this writer are checked through the history, not against the seed.
  return writer
}
