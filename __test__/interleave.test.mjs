// Two hosts reserving one tail's continuation, under every order of their decisive steps, decided
// by the mock's gates (never by sleeps). Each host's reservation write (PATCH) and post
// (prompt_async) is held in a manual gate and let go in the order the interleaving names; its
// reads, the read-back and the events (the echo) follow on their own between those steps. A
// user's pause (a third writer) is placed at every position too. See docs/multi-host.md.
//
// Each interleaving runs on a mock server, a data directory and two hosts of its own, and the
// gates decide its order: the interleavings of one test run a few at a time (LANES), and the
// tests of every interleaving run at the same time. The tests whose bound is a length of time
// (`T<ms>` steps) run alone, one after another.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { goalOf, scriptedAuditor, sessionWithReply, setup, waitFor } from './helpers.mjs'
import { startWorkerHost } from './worker-host.mjs'

const continueVerdict = { verdict: 'continue', note: 'keep going' }
const completeVerdict = { verdict: 'complete', note: 'the work is done' }
const QUIET_MS = 150
/** A quiet window of 1 s: the echo is then awaited up to its full bound (crates/goal-core/src/goal/act/echo.rs). */
const ECHO_QUIET_MS = 1000
/** The stop interleavings' quiet window (their echo bound). */
const STOP_QUIET_MS = 500
/** Interleavings of one test run at the same time. */
const LANES = 3

/** Every order of the given per-host step lists that keeps each list's own order. */
export function interleavings(lists) {
  const out = []
  const walk = (positions, prefix) => {
    if (positions.every((p, i) => p === lists[i].length)) return out.push(prefix)
    positions.forEach((p, i) => {
      if (p < lists[i].length) walk(positions.map((q, j) => (j === i ? q + 1 : q)), [...prefix, lists[i][p]])
    })
  }
  walk(lists.map(() => 0), [])
  return out
}

/** `run` over every order, LANES at a time; the results in the orders' order. */
async function inLanes(orders, run) {
  const results = new Array(orders.length)
  let next = 0
  const lane = async () => {
    while (next < orders.length) {
      const index = next++
      results[index] = await run(orders[index])
    }
  }
  await Promise.all(Array.from({ length: Math.min(LANES, orders.length) }, lane))
  return results
}


/**
 * Runs one interleaving. `order` lists steps `A.W`, `B.W` (a host's goal write), `A.P`, `B.P`
 * (its continuation post), `A.C`, `B.C` (its check claim), `A.H`, `B.H` (its shell post), and `S`
 * (the user pauses the goal), `A.R`, `B.R` (its creation of a reviewer session), and `T<ms>` (that much time passes: only where the bound under test is
 * a length of time). After each step the host goes on by itself to its next held request
 * (or the end of its tick) before the next step: its reads, read-back and echo happen there.
 * `checks`: the goal's acceptance checks (the auditor then says complete). `review`: the goal asks
 * for review (the auditor says complete; every reviewer approves). Returns what the wire and the
 * transcript show. Both hosts and the server are stopped before it returns, whatever happened.
 */
async function runOrder(order, options = {}) {
  const verdict = options.checks || options.review ? completeVerdict : continueVerdict
  const env = await setup({ auditor: scriptedAuditor([verdict]), runtimeOptions: { idleQuietMs: options.quietMs ?? QUIET_MS } })
  let other
  try {
    // The second host runs in a worker thread: runtimes of one environment share their write slots
    // and dispatch claims, so only another environment (or process) races like another host.
    other = await startWorkerHost({ url: env.mock.url.replace('127.0.0.1', 'localhost'), dataDir: env.dataDir, idleQuietMs: options.quietMs ?? QUIET_MS, verdicts: [verdict] })
    return await race(env, other, order, options)
  } finally {
    await other?.stop()
    await env.cleanup()
  }
}

/** The body of runOrder: the race of `env`'s host (A) and `other` (B) in `order`. */
async function race(env, other, order, { checks, review, goalSettles }) {
  const { mock } = env
  const dir = checks ? fs.mkdtempSync(path.join(os.tmpdir(), 'goal-interleave-')) : '/tmp/project'
  const session = sessionWithReply(mock, { goal: { ...(checks ? { checks } : {}), ...(review ? { review: true } : {}) }, directory: dir })
  const sid = session.id
  if (review) mock.scriptChildren([{ text: JSON.stringify({ verdict: 'approve', note: 'done', findings: [] }) }])
  const kindOf = (r) => {
    if (r.method === 'POST' && r.path === '/session' && r.body?.parentID === sid) return 'R'
    if (r.method === 'PATCH' && r.path === `/session/${sid}`) return 'W'
    if (r.method === 'POST' && r.path === `/session/${sid}/prompt_async`) return r.body?.noReply ? 'C' : 'P'
    if (r.method === 'POST' && r.path === `/session/${sid}/shell`) return 'H'
    return null
  }
  const gateOf = (host) => mock.gate({ host, match: (r) => kindOf(r) !== null, times: Infinity, until: 'manual' })
  const hosts = {
    A: { ticking: async () => env.runtime.snapshot().sessions.some((x) => x.sessionId === sid && x.ticking), gate: gateOf('127.0.0.1') },
    B: { ticking: () => other.ticking(sid), gate: gateOf('localhost') },
  }
  const settle = (host) => waitFor(async () => host.gate.held > 0 || !(await host.ticking()), 10_000, 2)
  mock.setStatus(sid, 'idle')
  // Both hosts have read the goal and hold their first write: the race is on.
  await Promise.all([hosts.A.gate.arrived(1), hosts.B.gate.arrived(1)])
  let stoppedAt = null
  const skipped = []
  const lagging = {}
  for (const step of order) {
    // `T<ms>`: time passes. Only the bound tests use it: the bound they test is a length of time.
    if (/^T\d+$/.test(step)) {
      await new Promise((resolve) => setTimeout(resolve, Number(step.slice(1))))
      continue
    }
    // `B.E-` / `B.E+`: that host's event stream stops delivering (events are held) / catches up.
    if (/^[AB]\.E[-+]$/.test(step)) {
      const name = step[0]
      if (step.endsWith('-')) lagging[name] = mock.holdEvents(name === 'A' ? '127.0.0.1' : 'localhost')
      else lagging[name]?.release()
      continue
    }
    if (step === 'S') {
      const goal = goalOf(mock, sid)
      mock.setMetadata(sid, { openchamber: { goal: { ...goal, status: 'paused', statusReason: 'paused by user', updatedAt: Date.now() } } })
      stoppedAt = mock.requests.length
      continue
    }
    const host = hosts[step[0]]
    await settle(host)
    const entry = host.gate.releaseNext((e) => kindOf(e) === step[2])
    if (!entry) skipped.push(step)
    else await waitFor(() => entry.answered !== undefined, 10_000, 2)
    // `!`: the next step follows at once, while this host is still on its way (inside a wait).
    if (!step.endsWith('!')) await settle(host)
  }
  for (const hold of Object.values(lagging)) hold.release()
  hosts.A.gate.release()
  hosts.B.gate.release()
  // A check round settles once a host finds the run (the run's end is an idle event, which makes
  // both hosts look again): give it the time to, then judge.
  if ((checks || review) && stoppedAt === null) await waitFor(() => goalOf(mock, sid)?.status === 'complete', 10_000).catch(() => {})
  // A write that follows the hosts' ticks (a late echo's write-back) is given the time to land.
  if (goalSettles) await waitFor(() => goalSettles(goalOf(mock, sid)), 10_000).catch(() => {})
  await waitFor(async () => !(await hosts.A.ticking()) && !(await hosts.B.ticking()), 10_000, 5)
  const hostOf = (r) => (r.headers.host.startsWith('localhost') ? 'B' : 'A')
  const posts = mock.sends(sid).filter((r) => r.path.endsWith('/prompt_async')).map((r) => ({ index: mock.requests.indexOf(r), host: hostOf(r), id: r.body?.messageID }))
  // The read each post rests on: the host's last read of the session before it posted.
  const readBefore = (post) =>
    mock.requests
      .slice(0, post.index)
      .filter((r) => r.method === 'GET' && r.path === `/session/${sid}` && hostOf(r) === post.host)
      .map((r) => mock.requests.indexOf(r))
      .at(-1)
  const messages = mock.messages(sid)
  const shells = mock.sends(sid).filter((r) => r.path.endsWith('/shell')).map((r) => ({ index: mock.requests.indexOf(r), host: hostOf(r), id: r.body?.messageID }))
  // The goal writes that settled it complete, by their place in the request log.
  const completions = mock.requests
    .filter((r) => kindOf(r) === 'W' && r.body?.metadata?.openchamber?.goal?.status === 'complete')
    .map((r) => mock.requests.indexOf(r))
  const runsFile = path.join(dir, 'runs.txt')
  const runs = checks && fs.existsSync(runsFile) ? fs.readFileSync(runsFile, 'utf8').split('\n').filter(Boolean).length : 0
  if (checks) fs.rmSync(dir, { recursive: true, force: true })
  return {
    posts,
    shells,
    reviewers: mock.requests.filter((r) => kindOf(r) === 'R').map((r) => hostOf(r)),
    runs,
    skipped,
    continuations: messages.filter((m) => m.info.role === 'user' && !/zCHK/.test(m.info.id)).slice(1),
    goal: goalOf(mock, sid),
    repeated: mock.repeatedPrompts.filter((p) => p.sessionId === sid && !p.body.noReply),
    afterStop: stoppedAt === null ? [] : [...posts, ...shells].filter((p) => readBefore(p) >= stoppedAt),
    completedAfterStop: stoppedAt !== null && completions.some((index) => index > stoppedAt),
  }
}

const hostSteps = [
  ['A.W', 'A.P'],
  ['B.W', 'B.P'],
]
const continuationOrders = interleavings(hostSteps)
const stopOrders = interleavings([...hostSteps, ['S']])

describe('two hosts reserving one tail: every interleaving of write and post', () => {
  // The later writer hears the other's reservation in its echo and waits one dispatch delay
  // (250 ms) before its read-back: a first post made within that delay shows as a moved tail.
  // Both sides of the bound run with a 1 s quiet window, so the echo's own bound is the 1 s a real
  // host has (with 150 ms, a loaded machine sometimes missed the echo: the next assumption).
  it('within the bound: the first host posts while the later writer waits; one message, and a re-post (if any) only by the later writer', async () => {
    // A's post lands 100 ms after B's write was answered: well inside B's 250 ms wait, and well
    // after B, without the wait, would have read back (a few ms after its echo).
    const r = await runOrder(['A.W', 'B.W!', 'T100', 'A.P'], { quietMs: ECHO_QUIET_MS })
    expect(r.continuations).toHaveLength(1)
    expect(r.continuations[0].parts.filter((p) => p.type === 'text')).toHaveLength(1)
    expect(r.posts[0].host).toBe('A')
    // The later writer's wait let the first post show as a moved tail: no re-post at all.
    // (Without the echo wait in crates/goal-core/src/goal/decide/delivery.rs, the later writer
    // re-posts.)
    expect(r.posts.map((p) => p.host)).toEqual(['A'])
    expect(r.repeated).toHaveLength(0)
  })

  it('past the bound: the later writer read back before the first post, so one same-id re-post by it, still one message', async () => {
    const r = await runOrder(['A.W', 'B.W', 'A.P', 'B.P'], { quietMs: ECHO_QUIET_MS })
    expect(r.continuations).toHaveLength(1)
    expect(r.continuations[0].parts.filter((p) => p.type === 'text')).toHaveLength(1)
    expect(r.posts.map((p) => p.host)).toEqual(['A', 'B'])
    expect(new Set(r.posts.map((p) => p.id)).size).toBe(1)
    expect(r.repeated).toHaveLength(1)
  })

  // The echo's own bound (crates/goal-core/src/goal/act/echo.rs: 1 s, or the quiet window when
  // shorter; 500 ms here), both sides: B's event stream lags while the user pauses and B's write
  // lands over the pause, then catches up 200 ms (inside) or 800 ms (past the bound) later.
  it('a lagging event stream, inside the echo bound: the overwritten pause is heard and written back, nothing posted after it', async () => {
    const r = await runOrder(['A.W', 'B.E-', 'S', 'B.W!', 'T200', 'B.E+', 'A.P', 'B.P'], { quietMs: STOP_QUIET_MS })
    expect(r.afterStop).toEqual([])
    expect(r.goal.status).toBe('paused')
    expect(r.continuations.length).toBeLessThanOrEqual(1)
  })

  it('a lagging event stream, past the echo bound: the documented failure, one post on a read after the pause; the pause is written back when the echo comes', async () => {
    const r = await runOrder(['A.W', 'B.E-', 'S', 'B.W!', 'T800', 'B.E+', 'A.P', 'B.P'], {
      quietMs: STOP_QUIET_MS,
      goalSettles: (goal) => goal?.status === 'paused',
    })
    // docs/multi-host.md, "The echo is heard within its bound": B posts the turn A also posts
    // (one id, so still one message); its echo, heard after the post, still restores the pause.
    expect(r.afterStop.map((p) => p.host)).toEqual(['B'])
    expect(r.continuations).toHaveLength(1)
    expect(r.goal.status).toBe('paused')
  })

  // The interleavings of write and post, and of a stop, run at the same time (after the bound
  // tests above, which run alone).
  it.concurrent(`one continuation message per tail, one text part, at most one same-id re-post by the other host (${continuationOrders.length} interleavings)`, async ({ expect }) => {
    let reposts = 0
    const results = await inLanes(continuationOrders, (order) => runOrder(order))
    for (const [index, order] of continuationOrders.entries()) {
      const r = results[index]
      const label = order.join(' ')
      expect(r.continuations, label).toHaveLength(1)
      expect(r.continuations[0].parts.filter((p) => p.type === 'text'), label).toHaveLength(1)
      expect(new Set(r.posts.map((p) => p.id)).size, label).toBe(1)
      expect(r.posts.length, label).toBeLessThanOrEqual(2)
      // A second post is a same-id re-post, and only by the host that did not post first.
      if (r.posts.length === 2) {
        reposts += 1
        expect(r.posts[1].host, label).not.toBe(r.posts[0].host)
        expect(r.repeated, label).toHaveLength(1)
      }
      expect(r.goal.turnsUsed, label).toBe(1)
    }
    console.log(`continuation: ${continuationOrders.length} interleavings covered, ${reposts} with a same-id re-post`)
  }, 120_000)

  it.concurrent(`a stop at every position: at most one continuation, nothing posted on a read after the stop, the pause stands (${stopOrders.length} interleavings)`, async ({ expect }) => {
    let sent = 0
    const pauseLost = []
    const sentAfterStop = []
    // A 500 ms quiet window: the echo is awaited up to 500 ms (with 150 ms, a loaded machine
    // sometimes missed it: the assumption docs/multi-host.md names, not this guard).
    const results = await inLanes(stopOrders, (order) => runOrder(order, { quietMs: STOP_QUIET_MS }))
    for (const [index, order] of stopOrders.entries()) {
      const r = results[index]
      const label = order.join(' ')
      expect(r.continuations.length, label).toBeLessThanOrEqual(1)
      // Nothing is posted on a read made after the stop (a post whose read-back came before the
      // stop was decided before it), and the pause stands at the end: a reservation written over
      // it hears it in its echo and writes it back (crates/goal-core/src/goal/act/echo.rs).
      if (r.afterStop.length) sentAfterStop.push(label)
      if (r.goal.status !== 'paused') pauseLost.push(label)
      sent += r.continuations.length
    }
    console.log(`stop: ${stopOrders.length} interleavings covered, ${sent} with a continuation posted before the stop`)
    expect(sentAfterStop, 'posted on a read made after the stop').toEqual([])
    expect(pauseLost, 'pause overwritten and not written back').toEqual([])
  }, 300_000)
})

const CHECK = { command: 'echo ran >> runs.txt' }
const checkOrders = interleavings([
  ['A.W', 'A.C', 'A.H'],
  ['B.W', 'B.C', 'B.H'],
])

describe.concurrent('two hosts running the check round of one tail: every interleaving of write, claim and shell', () => {
  it(`each check runs at most once per tail, counted at the wire and on disk (${checkOrders.length} interleavings)`, async ({ expect }) => {
    const ran = { A: 0, B: 0 }
    const results = await inLanes(checkOrders, (order) => runOrder(order, { checks: [CHECK] }))
    for (const [index, order] of checkOrders.entries()) {
      const r = results[index]
      const label = order.join(' ')
      expect(r.shells.length, label).toBeLessThanOrEqual(1)
      expect(r.runs, label).toBe(r.shells.length)
      expect(r.goal.status, label).toBe('complete')
      for (const s of r.shells) ran[s.host] += 1
    }
    console.log(`check round: ${checkOrders.length} interleavings covered, check run by A ${ran.A} and by B ${ran.B} times`)
  }, 300_000)
})

const reviewOrders = interleavings([
  ['A.W', 'A.C', 'A.R'],
  ['B.W', 'B.C', 'B.R'],
])

describe.concurrent('two hosts reviewing one tail: every interleaving of write, claim and reviewer creation', () => {
  it(`one reviewer session per tail, created at the wire once, and the goal settles reviewApproved (${reviewOrders.length} interleavings)`, async ({ expect }) => {
    const by = { A: 0, B: 0 }
    const results = await inLanes(reviewOrders, (order) => runOrder(order, { review: true }))
    for (const [index, order] of reviewOrders.entries()) {
      const r = results[index]
      const label = order.join(' ')
      expect(r.reviewers, label).toHaveLength(1)
      expect(r.goal.status, label).toBe('complete')
      expect(r.goal.cause.code, label).toBe('reviewApproved')
      expect(r.posts, label).toHaveLength(0)
      by[r.reviewers[0]] += 1
    }
    console.log(`review: ${reviewOrders.length} interleavings covered, reviewer created by A ${by.A} and by B ${by.B} times`)
  }, 300_000)
})

// A user's stop at every position of one check round (the order where both hosts claim before
// either runs the check): nothing, continuation or check, is posted on a read made after the stop,
// and the goal is not settled over the pause.
const checkRoundSteps = ['A.W', 'B.W', 'A.C', 'B.C', 'A.H', 'B.H']
const checkStopOrders = checkRoundSteps.map((_, at) => [...checkRoundSteps.slice(0, at), 'S', ...checkRoundSteps.slice(at)]).concat([[...checkRoundSteps, 'S']])

describe.concurrent('a stop during a check round', () => {
  it(`at every position: at most one run, nothing posted on a read after the stop, the pause stands (${checkStopOrders.length} interleavings)`, async ({ expect }) => {
    const results = await inLanes(checkStopOrders, (order) => runOrder(order, { checks: [CHECK], quietMs: STOP_QUIET_MS }))
    for (const [index, order] of checkStopOrders.entries()) {
      const r = results[index]
      const label = order.join(' ')
      expect(r.shells.length, label).toBeLessThanOrEqual(1)
      expect(r.runs, label).toBe(r.shells.length)
      expect(r.afterStop, label).toEqual([])
      expect(r.completedAfterStop, label).toBe(false)
      // Paused, unless a host had settled it complete before the stop.
      if (r.goal.status !== 'paused') expect([label, r.goal.status]).toEqual([label, 'complete'])
    }
    console.log(`check round with a stop: ${checkStopOrders.length} interleavings covered`)
  }, 120_000)
})
