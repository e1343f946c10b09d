// Regressions found by the fault-injection suite (scripts/fault-suite.mjs): one test per bug.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep, pkg, tempDataDir } from './helpers.mjs'

let env
const extra = []
afterEach(async () => {
  for (const fn of extra.splice(0)) await fn()
  await env?.cleanup()
  env = undefined
})

const continueThenComplete = () => scriptedAuditor([{ verdict: 'continue', note: 'keep going' }, { verdict: 'complete', note: 'verified' }])
const promptPath = (id) => '/session/' + id + '/prompt_async'
const finished = [{ text: 'FINISHED: nested lists parse.', tokens: { input: 2000 } }]

/** Continuations answering each tail: every value must be 1. */
function continuationsPerTail(mock, sessionId) {
  const counts = new Map()
  let tail = null
  for (const m of mock.messages(sessionId)) {
    if (m.info.role === 'assistant') tail = m.info.id
    else if (m.parts.some((p) => p.type === 'text' && p.text.startsWith('Keep working toward the session goal'))) counts.set(tail, (counts.get(tail) ?? 0) + 1)
  }
  return [...counts.values()]
}

/** The messageID of every POST on the wire that asked the session for a turn (repeats included). */
const postedIds = (mock, sessionId) => mock.sends(sessionId).map((r) => r.body?.messageID ?? null)

/** Tail (the newest finished assistant reply when the post arrived) → the ids posted for it. */
function idsPerTail(mock, sessionId) {
  const replies = mock.messages(sessionId).filter((m) => m.info.role === 'assistant')
  const out = new Map()
  for (const post of mock.sends(sessionId)) {
    const tail = replies.filter((m) => m.info.time.completed && m.info.time.completed <= post.at).at(-1)?.info.id
    if (!out.has(tail)) out.set(tail, new Set())
    out.get(tail).add(post.body?.messageID ?? null)
  }
  return out
}

describe('dispatch under ambiguous failures', () => {
  it('a continuation whose answer is unclear is posted again only under the same id: one message, one turn', async () => {
    // No event stream (a host whose SSE is down): only the session itself can tell.
    env = await setup({ auditor: continueThenComplete(), forward: false })
    const session = sessionWithReply(env.mock)
    env.mock.scriptReplies(session.id, finished)
    // Admitted but answered 502, and the reconcile that follows cannot read the messages.
    const promptFault = env.mock.fault({
      method: 'POST', path: promptPath(session.id), times: 1, status: 502, apply: true,
      action: () => env.mock.fault({ method: 'GET', path: '/session/' + session.id + '/message', times: 1, status: 503 }),
    })
    env.runtime.processPayload({ type: 'session.status', properties: { sessionID: session.id, status: { type: 'idle' } } }, '/tmp/project')
    await waitFor(() => env.mock.prompts.length === 1, 3000)
    await waitFor(() => env.runtime.snapshot().inFlight === 0, 5000)
    await sleep(300)
    expect(promptFault.fired).toBe(1)
    // Counted at the wire, before the server's de-duplication: the 502 was unclear, so the
    // runtime posted again, and every post carried the one id the server stores once.
    const ids = postedIds(env.mock, session.id)
    expect(ids.length).toBeGreaterThanOrEqual(2)
    expect(new Set(ids).size).toBe(1)
    expect(ids[0]).toMatch(/^msg_/)
    expect(env.mock.repeatedPrompts).toHaveLength(ids.length - 1)
    expect(env.mock.prompts).toHaveLength(1)
    expect(continuationsPerTail(env.mock, session.id)).toEqual([1])
    // One turn charged; the goal may already have completed on the second audit.
    expect(goalOf(env.mock, session.id).turnsUsed).toBe(1)
    expect(['active', 'complete']).toContain(goalOf(env.mock, session.id).status)
  })

  it('a tail id of an unknown format still gets an id (from the id and its creation time): a prompt whose fate stays unknown is posted again only under that id', async () => {
    env = await setup({ auditor: continueThenComplete(), forward: false })
    // The tail's id is not msg_ + 12 hex + 14 base-62 characters: the continuation id is derived
    // from the tail's id and time.created instead, so every retry (and every host) posts the same id.
    const session = sessionWithReply(env.mock, { reply: { id: 'msg_imported-tail' } })
    env.mock.scriptReplies(session.id, finished)
    let readFault
    const promptFault = env.mock.fault({
      method: 'POST', path: promptPath(session.id), times: 1, status: 502, apply: true,
      action: () => (readFault = env.mock.fault({ method: 'GET', path: '/session/' + session.id + '/message', times: 1, status: 503 })),
    })
    env.runtime.processPayload({ type: 'session.status', properties: { sessionID: session.id, status: { type: 'idle' } } }, '/tmp/project')
    await waitFor(() => env.mock.prompts.length === 1, 3000)
    await waitFor(() => env.runtime.snapshot().inFlight === 0, 5000)
    await sleep(300)
    expect(promptFault.fired).toBe(1)
    const ids = postedIds(env.mock, session.id)
    expect(ids.length).toBeGreaterThanOrEqual(1)
    expect(new Set(ids).size).toBe(1)
    expect(ids[0]).toMatch(/^msg_[0-9a-f]{12}[0-9A-Za-z]{14}$/)
    expect(continuationsPerTail(env.mock, session.id)).toEqual([1])
  })
})

/**
 * Makes `change(goal)` land inside the reservation window: after the read the reservation is
 * built on and just before its PATCH is applied (the first PATCH after the audit). OpenCode's
 * PATCH has no compare-and-set, so the reservation overwrites it; the runtime must see it in the
 * events and put it back.
 */
function inReservationWindow(mock, sessionId, change) {
  let fired = false
  return () => {
    if (fired) return
    fired = true
    mock.fault({
      method: 'PATCH', path: '/session/' + sessionId, times: 1, actionFirst: true,
      action: () => {
        const metadata = mock.getSession(sessionId).metadata
        const goal = change(metadata.openchamber.goal)
        const openchamber = { ...metadata.openchamber }
        if (goal === undefined) delete openchamber.goal
        else openchamber.goal = goal
        mock.setMetadata(sessionId, { ...metadata, openchamber, foreign: { by: 'another writer' } })
      },
    })
  }
}

/** An auditor that says continue and arms `window` (the next session write is the reservation). */
function continueAndArm(window) {
  return scriptedAuditor([
    () => {
      window()
      return { text: JSON.stringify({ verdict: 'continue', note: 'keep going' }), providerID: 'small', modelID: 'nano' }
    },
  ])
}

describe('another writer inside the reservation window (lost update)', () => {
  let sessionId

  async function run(change) {
    const window = { fire: () => {} }
    env = await setup({ auditor: continueAndArm(() => window.fire()) })
    const session = sessionWithReply(env.mock, { goal: { turnsUsed: 2, uiLayout: { pinned: true } } })
    sessionId = session.id
    window.fire = inReservationWindow(env.mock, session.id, change)
    env.mock.setStatus(session.id, 'idle')
    // The reservation was written over the other writer's change, then repaired.
    await waitFor(() => env.mock.patches.length >= 2, 3000)
    await waitFor(() => env.runtime.snapshot().inFlight === 0, 3000)
    await sleep(300)
    return session
  }

  it('a pause stays paused, the turn is given back, nothing is sent', async () => {
    const session = await run((goal) => ({ ...goal, status: 'paused', statusReason: 'paused by user', updatedAt: Date.now() }))
    // The user's goal as they wrote it, with the fields events do not carry.
    expect(goalOf(env.mock, session.id)).toMatchObject({ status: 'paused', statusReason: 'paused by user', turnsUsed: 2, uiLayout: { pinned: true } })
    expect(env.mock.prompts).toHaveLength(0)
    // The other writer's own key, written with the pause, is back too.
    await waitFor(() => env.mock.getSession(session.id).metadata.foreign?.by === 'another writer', 3000)
  })

  it('a clear stays cleared, nothing is sent', async () => {
    const session = await run(() => undefined)
    expect(goalOf(env.mock, session.id)).toBeUndefined()
    expect(env.mock.prompts).toHaveLength(0)
    await waitFor(() => env.mock.getSession(session.id).metadata.foreign?.by === 'another writer', 3000)
  })

  it('an edit is kept; no continuation with the old objective is sent', async () => {
    const session = await run((goal) => ({ ...goal, objective: 'Make the parser handle nested tables', updatedAt: Date.now() }))
    expect(goalOf(env.mock, session.id).objective).toBe('Make the parser handle nested tables')
    expect(env.mock.prompts.filter((p) => !p.body.parts[0].text.includes('nested tables'))).toHaveLength(0)
  })
})

describe('a stop the host never forwarded', () => {
  const idle = (session) => ({ type: 'session.status', properties: { sessionID: session.id, status: { type: 'idle' } } })

  it('a pause between two dispatch attempts: nothing is posted again', async () => {
    env = await setup({ auditor: continueThenComplete(), forward: false })
    const session = sessionWithReply(env.mock)
    env.mock.fault({
      method: 'POST', path: promptPath(session.id), times: 1, status: 503,
      action: () => {
        const metadata = env.mock.getSession(session.id).metadata
        env.mock.setMetadata(session.id, { ...metadata, openchamber: { ...metadata.openchamber, goal: { ...metadata.openchamber.goal, status: 'paused' } } })
      },
    })
    env.runtime.processPayload(idle(session), '/tmp/project')
    await waitFor(() => env.mock.requests.some((r) => r.path === promptPath(session.id)), 3000)
    await waitFor(() => env.runtime.snapshot().inFlight === 0, 3000)
    await sleep(300)
    expect(env.mock.requests.filter((r) => r.path === promptPath(session.id))).toHaveLength(1)
    expect(env.mock.prompts).toHaveLength(0)
    expect(goalOf(env.mock, session.id).status).toBe('paused')
  })
})

describe('edits', () => {
  it('editing an active goal that already continued keeps it going (the edit is not a stop)', async () => {
    env = await setup({ auditor: scriptedAuditor([{ verdict: 'continue', note: 'keep going' }]), runtimeOptions: { idleQuietMs: 400 } })
    const session = sessionWithReply(env.mock, { goal: { turnsUsed: 2 } })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.runtime.snapshot().armedTimers === 1, 3000)
    const goal = goalOf(env.mock, session.id)
    env.mock.setMetadata(session.id, { openchamber: { goal: { ...goal, objective: 'Make the parser handle nested tables' } } })
    await waitFor(() => env.mock.prompts.length === 1, 3000)
    expect(env.mock.prompts[0].body.parts[0].text).toContain('nested tables')
    expect(goalOf(env.mock, session.id).turnsUsed).toBe(3)
  })
})

describe('counters at the numeric edge', () => {
  it('streaks of 1e308 settle the goal instead of panicking the tick', async () => {
    const blocked = scriptedAuditor([{ verdict: 'blocked', note: 'needs the API key' }])
    env = await setup({ auditor: blocked })
    const session = sessionWithReply(env.mock, { goal: { blockedStreak: 1e308 } })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked', 3000)
    expect(goalOf(env.mock, session.id).statusReason).toBe('needs the API key')
    await env.cleanup()
    env = await setup({ auditor: scriptedAuditor([() => ({ error: { statusCode: 500 } })]) })
    const failing = sessionWithReply(env.mock, { goal: { auditFailStreak: 1e308 } })
    env.mock.setStatus(failing.id, 'idle')
    await waitFor(() => goalOf(env.mock, failing.id).status === 'blocked', 3000)
    expect(goalOf(env.mock, failing.id).statusReason).toBe('progress audit unavailable')
    expect(env.mock.prompts).toHaveLength(0)
    expect(env.runtime.snapshot().panics).toBe(0)
  })
})

describe('leases', () => {
  it('a lease no runtime could have taken (expiring in 1e308 ms) is ignored, not waited on', async () => {
    env = await setup({ auditor: continueThenComplete() })
    const session = sessionWithReply(env.mock, { goal: { lease: { holder: 'another-host', expiresAt: 1e308 } } })
    env.mock.scriptReplies(session.id, finished)
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'complete', 5000)
    expect(env.mock.prompts).toHaveLength(1)
    expect(env.runtime.snapshot().panics).toBe(0)
  })

  it('a live lease of another host still holds the goal off', async () => {
    env = await setup({ auditor: continueThenComplete() })
    const session = sessionWithReply(env.mock, { goal: { lease: { holder: 'another-host', expiresAt: Date.now() + 60_000 } } })
    env.mock.setStatus(session.id, 'idle')
    await sleep(600)
    expect(env.mock.prompts).toHaveLength(0)
    expect(env.runtime.snapshot().sessions.find((s) => s.sessionId === session.id)?.dueInMs).toBeGreaterThan(50_000)
  })
})

describe('text OpenCode can send', () => {
  it('a lone surrogate in the session (a JS slice through an emoji) does not make it unreadable', async () => {
    env = await setup({ auditor: continueThenComplete() })
    const session = sessionWithReply(env.mock, { goal: { objective: 'Fix the parser \ud83d', note: 'half an emoji \udc00' } })
    env.mock.scriptReplies(session.id, [{ text: 'FINISHED \ud83d', tokens: { input: 2000 } }])
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'complete', 5000)
    expect(env.mock.prompts).toHaveLength(1)
    expect(env.mock.prompts[0].body.parts[0].text).toContain('Fix the parser \ufffd')
  })
})

describe('hostile session ids', () => {
  it('"." and ".." are never put in a URL (they would resolve to another path)', async () => {
    env = await setup({ auditor: continueThenComplete(), forward: false })
    for (const id of ['.', '..', ' .. ']) {
      env.runtime.processPayload({ type: 'session.status', properties: { sessionID: id, status: { type: 'idle' } } }, '/tmp/project')
      env.runtime.processPayload({ type: 'session.updated', properties: { info: { id, metadata: { openchamber: { goal: { id: 'g', status: 'active', objective: 'x' } } } } } }, '/tmp/project')
    }
    await sleep(600)
    // Nothing but the census at start (no session in its path) and requests under /session/<id>.
    expect(env.mock.requests.filter((r) => r.path !== '/experimental/session' && !/^\/session\/[^/]+/.test(r.path))).toEqual([])
    expect(env.runtime.snapshot().sessions).toEqual([])
  })
})

describe('huge payloads', () => {
  it('a session.updated whose goal has 100,000 extra keys neither clears the goal nor costs much', async () => {
    env = await setup({ auditor: continueThenComplete(), forward: false, runtimeOptions: { idleQuietMs: 800 } })
    const session = sessionWithReply(env.mock, { goal: { turnsUsed: 2 } })
    const goal = goalOf(env.mock, session.id)
    const updated = (g) => ({ type: 'session.updated', properties: { info: { id: session.id, metadata: { openchamber: { goal: g } } } } })
    const wide = {}
    for (let i = 0; i < 100_000; i++) wide['k' + i] = { i }
    const huge = updated({ ...wide, ...goal })
    env.runtime.processPayload(updated(goal), '/tmp/project')
    env.runtime.processPayload({ type: 'session.status', properties: { sessionID: session.id, status: { type: 'idle' } } }, '/tmp/project')
    await waitFor(() => env.runtime.snapshot().armedTimers === 1, 2000)
    const started = performance.now()
    env.runtime.processPayload(huge, '/tmp/project')
    const elapsed = performance.now() - started
    await sleep(50)
    // Still armed: the cut-off copy used to read as "goal cleared" and cancel the wake-up.
    expect(env.runtime.snapshot().sessions.map((s) => s.sessionId)).toContain(session.id)
    expect(elapsed).toBeLessThan(100)
    await waitFor(() => env.mock.prompts.length === 1, 3000)
  })
})

describe('answers of the wrong shape', () => {
  it('a message list of non-messages is a failed read (retried), not a session without a reply', async () => {
    env = await setup({ auditor: continueThenComplete() })
    const session = sessionWithReply(env.mock)
    env.mock.fault({ method: 'GET', path: '/session/' + session.id + '/message', times: 1, status: 200, body: [null, 5, { info: 'x' }, { info: { role: 7 } }] })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1, 3000)
  })
})

describe('a host that replaces its runtime without stopping the old one', () => {
  it('two runtimes of one process never make two continuations of one tail: a second post carries the same id', async () => {
    const auditor = scriptedAuditor([{ verdict: 'continue', note: 'keep going' }])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock)
    // The old runtime's prompt is slow to reach OpenCode; meanwhile the host creates a new
    // runtime (the old one is dropped, not stopped, so it keeps receiving events and finishing
    // its tick), which recovers the goal at once.
    const slow = env.mock.fault({ method: 'POST', path: promptPath(session.id), times: 1, delayMs: 600 })
    let replacement
    env.mock.onPatch = (id, { after }) => {
      if (replacement || id !== session.id || !after?.openchamber?.goal?.continuationFor) return
      replacement = pkg.createSessionGoalRuntime({
        openCode: { baseUrl: env.mock.url },
        settings: { dataDir: tempDataDir() },
        kickoffQuietMs: 20,
        idleQuietMs: 150,
        directories: ['/tmp/project'],
        generateSmallModelText: auditor.service.generateSmallModelText,
      })
      extra.push(() => replacement.stop())
    }
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length >= 1, 3000)
    await sleep(700)
    expect(slow.fired).toBe(1)
    expect(replacement).toBeDefined()
    expect(continuationsPerTail(env.mock, session.id).every((n) => n === 1)).toBe(true)
    expect(goalOf(env.mock, session.id).turnsUsed).toBe(env.mock.prompts.length)
    // At the wire: whichever runtime posted for the first tail, every post carried one id, so
    // the server made one message of them (a second id would be a second continuation).
    for (const ids of idsPerTail(env.mock, session.id).values()) expect(ids.size).toBe(1)
    expect(env.mock.sends(session.id).length).toBe(env.mock.prompts.length + env.mock.repeatedPrompts.length)
  })
})

describe('the event follower', () => {
  it('a 10 MB session.updated reaches the subscriber in one linear pass', async () => {
    const { startMockOpenCode } = await import('./mock/opencode.mjs')
    const mock = await startMockOpenCode({ heartbeatMs: 60_000, syncEvents: false })
    const seen = []
    const stream = pkg.createEventFollower({ openCode: { baseUrl: mock.url }, onPayload: (payload) => seen.push([payload, performance.now()]) })
    extra.push(async () => {
      stream.close()
      await mock.close()
    })
    await mock.waitFor(() => mock.eventStreams === 1)
    const session = mock.createSession({})
    const started = performance.now()
    mock.setMetadata(session.id, { blob: 'x'.repeat(10 * 1024 * 1024) })
    await waitFor(() => seen.some(([p]) => p.type === 'session.updated' && p.properties.info.metadata?.blob), 10_000)
    const [, at] = seen.find(([p]) => p.properties?.info?.metadata?.blob)
    // A linear pass takes ~100 ms here; re-scanning the buffered text per chunk (quadratic)
    // takes many seconds at 10 MB. 4 s keeps that margin on a loaded 2-core machine, where a
    // 1 s bound was once missed by a linear pass.
    expect(at - started).toBeLessThan(4000)
  })

  it('a stream request the server accepts and never answers is given up and made again', async () => {
    const { startMockOpenCode } = await import('./mock/opencode.mjs')
    const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
    // What OpenCode does to a stream request that reaches it while it is still starting.
    mock.fault({ method: 'GET', path: '/global/event', times: 1, hang: true })
    const statuses = []
    const stream = pkg.createEventFollower({
      openCode: { baseUrl: mock.url },
      answerTimeoutMs: 300,
      onStatus: ({ state, reason }) => statuses.push([state, reason]),
    })
    extra.push(async () => {
      stream.close()
      await mock.close()
    })
    await mock.waitFor(() => mock.eventStreams === 1, { timeoutMs: 5000 })
    await waitFor(() => statuses.some(([status]) => status === 'connected'), 5000)
    expect(statuses).toEqual([
      ['disconnected', 'no answer within 300 ms'],
      ['connected', undefined],
    ])
    expect(mock.requests.filter((r) => r.path === '/global/event')).toHaveLength(2)
  })
})

describe('terminal writes that fail', () => {
  it('a settle write that fails is retried, not dropped (the goal is not left active)', async () => {
    env = await setup({ auditor: continueThenComplete() })
    const session = sessionWithReply(env.mock)
    env.mock.scriptReplies(session.id, finished)
    // The write after the continuation is the settle: it fails once.
    env.mock.onPrompt = () => env.mock.fault({ method: 'PATCH', path: '/session/' + session.id, times: 1, status: 500 })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'complete', 5000)
    expect(env.mock.prompts).toHaveLength(1)
  })

  it('the blocked write after a reply that never came, when it fails, is retried (the goal is not left active)', async () => {
    env = await setup({ auditor: continueThenComplete(), runtimeOptions: { idleQuietMs: 60 } })
    const session = sessionWithReply(env.mock)
    env.mock.addUserMessage(session.id, 'one more thing')
    // The message is posted again under its id three times (nothing answers it); the write that
    // follows the third is the blocked one: it fails once.
    let patch = null
    const push = env.mock.repeatedPrompts.push.bind(env.mock.repeatedPrompts)
    env.mock.repeatedPrompts.push = (...records) => {
      const length = push(...records)
      if (length === 3) patch = env.mock.fault({ method: 'PATCH', path: '/session/' + session.id, times: 1, status: 500 })
      return length
    }
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked', 8000)
    expect(patch.fired).toBe(1)
    expect(goalOf(env.mock, session.id)).toMatchObject({ statusReason: 'message never answered' })
    expect(env.mock.sends(session.id)).toHaveLength(3)
    expect(env.mock.prompts).toHaveLength(0)
  })

  it('a pause write that fails is retried', async () => {
    env = await setup({ auditor: continueThenComplete(), forward: false })
    const session = sessionWithReply(env.mock, { reply: { error: { name: 'MessageAbortedError', data: { message: 'Aborted' } } } })
    env.mock.fault({ method: 'PATCH', path: '/session/' + session.id, times: 1, status: 503 })
    env.runtime.processPayload({ type: 'session.status', properties: { sessionID: session.id, status: { type: 'idle' } } }, '/tmp/project')
    await waitFor(() => goalOf(env.mock, session.id).status === 'paused', 5000)
  })
})
