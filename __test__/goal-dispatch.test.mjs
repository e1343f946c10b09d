// Classified dispatch: never twice, never stranded.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep } from './helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const continueVerdict = { verdict: 'continue', note: 'keep going' }
const promptPath = (id) => '/session/' + id + '/prompt_async'
const posts = (mock, id) => mock.requests.filter((r) => r.method === 'POST' && r.path === promptPath(id))

describe('continuation dispatch', () => {
  it('every post carries the id derived from the tail; a repeated id makes no second message or turn', async () => {
    // No event stream: only the idempotent id keeps the retry from sending twice.
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), forward: false })
    const session = sessionWithReply(env.mock)
    const tail = env.mock.messages(session.id).at(-1).info.id
    env.mock.fault({ method: 'POST', path: promptPath(session.id), times: 1, status: 502, apply: true })
    env.runtime.processPayload({ type: 'session.status', properties: { sessionID: session.id, status: { type: 'idle' } } }, '/tmp/project')
    await waitFor(() => posts(env.mock, session.id).length === 2, 5000)
    const ids = posts(env.mock, session.id).map((r) => r.body.messageID)
    expect(ids[1]).toBe(ids[0])
    expect(ids[0]).toMatch(/^msg_[0-9a-f]{12}[0-9A-Za-z]{14}$/)
    expect(ids[0].slice(4, 16)).toBe((Number.parseInt(tail.slice(4, 16), 16) + 1).toString(16).padStart(12, '0'))
    expect(env.mock.prompts).toHaveLength(1)
    expect(env.mock.repeatedPrompts).toHaveLength(1)
    expect(env.mock.messages(session.id).filter((m) => m.info.id === ids[0])).toHaveLength(1)
    await waitFor(() => env.runtime.snapshot().inFlight === 0, 3000)
    expect(goalOf(env.mock, session.id)).toMatchObject({ status: 'active', turnsUsed: 1, continuationFor: tail, continuationId: ids[0] })
  })

  it('5xx after the prompt was admitted: reconciled as sent, never re-posted', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionWithReply(env.mock)
    // The admitted prompt starts its turn, which is still running: a message stored with no turn
    // would be a stranded one, posted again under its id after the quiet window (stranded.test.mjs).
    env.mock.scriptReplies(session.id, [{ text: 'working on it', completed: false }])
    env.mock.fault({ method: 'POST', path: promptPath(session.id), times: 1, status: 502, apply: true })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1)
    await sleep(800)
    expect(posts(env.mock, session.id)).toHaveLength(1)
    expect(goalOf(env.mock, session.id)).toMatchObject({ status: 'active', turnsUsed: 1 })
  })

  it('a timeout with nothing admitted: re-posted once the session is idle with the same tail', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { fetchTimeoutMs: 300 } })
    const session = sessionWithReply(env.mock)
    env.mock.fault({ method: 'POST', path: promptPath(session.id), times: 1, hang: true })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1, 5000)
    expect(posts(env.mock, session.id)).toHaveLength(2)
    expect(goalOf(env.mock, session.id).turnsUsed).toBe(1)
  })

  it('an HTML 200 from a proxy is not success: reconciled, then delivered once', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionWithReply(env.mock)
    env.mock.fault({ method: 'POST', path: promptPath(session.id), times: 1, html: true })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1, 5000)
    expect(posts(env.mock, session.id)).toHaveLength(2)
  })

  it('4xx is proven non-admission: retried, and after 3 attempts blocked "continuation dispatch failed" with the turn rolled back', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionWithReply(env.mock)
    env.mock.fault({ method: 'POST', path: promptPath(session.id), status: 400 })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked', 5000)
    const goal = goalOf(env.mock, session.id)
    expect(goal.statusReason).toBe('continuation dispatch failed')
    expect(posts(env.mock, session.id)).toHaveLength(3)
    expect(env.mock.prompts).toHaveLength(0)
    expect(goal.turnsUsed).toBe(0)
    await waitFor(() => env.notifications.length === 1)
  })

  it('connection reset with nothing landed: a later tick posts the same id again; one continuation, charged once', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { maxDispatchAttempts: 1 } })
    const session = sessionWithReply(env.mock)
    // Reservation lands, then the tick's only dispatch attempt fails at the socket: its fate is
    // unknown, so the goal is not settled; the retry reuses the reservation and the id.
    env.mock.fault({ method: 'POST', path: promptPath(session.id), times: 1, destroy: true })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1, 5000)
    const ids = posts(env.mock, session.id).map((r) => r.body.messageID)
    expect(ids).toHaveLength(2)
    expect(ids[1]).toBe(ids[0])
    expect(goalOf(env.mock, session.id)).toMatchObject({ status: 'active', turnsUsed: 1 })
  })

  it('an ambiguous failure on every tick: blocked once the retries are spent, and a resume continues', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { maxDispatchAttempts: 1, maxRetryAttempts: 2 } })
    const session = sessionWithReply(env.mock)
    const reset = env.mock.fault({ method: 'POST', path: promptPath(session.id), destroy: true })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked', 5000)
    expect(goalOf(env.mock, session.id).statusReason).toBe('continuation dispatch failed')
    expect(env.mock.prompts).toHaveLength(0)
    reset.remove()
    const goal = goalOf(env.mock, session.id)
    // A turn whose post may have landed stays charged (only a provable refusal is given back).
    expect(goal.turnsUsed).toBe(1)
    env.mock.setMetadata(session.id, { openchamber: { goal: { ...goal, status: 'active', statusReason: 'resumed' } } })
    await waitFor(() => env.mock.prompts.length === 1, 5000)
    expect(goalOf(env.mock, session.id).turnsUsed).toBe(2)
  })

  it('a reservation left for the same tail (crash after reserve) is reused: not charged twice', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionWithReply(env.mock)
    const tail = env.mock.messages(session.id).at(-1).info.id
    const goal = goalOf(env.mock, session.id)
    env.mock.setMetadata(session.id, { openchamber: { goal: { ...goal, turnsUsed: 3, continuationFor: tail } } })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1, 5000)
    expect(goalOf(env.mock, session.id).turnsUsed).toBe(3)
    expect(env.mock.prompts[0].body.parts[0].text).toContain('Auto-continuations used: 3 of 20.')
  })
})
