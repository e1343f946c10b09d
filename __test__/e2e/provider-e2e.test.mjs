// Provider limits, forks and restarts on a real `opencode serve` with the scripted model: a
// model that answers 429 with retry-after until OpenCode gives up (the goal parks and resumes by
// itself), a real fork of a goal session (adopted paused while the source completes), and
// OpenCode restarted in the middle of a turn (the goal goes on after the reconnect).
import { beforeAll, describe, expect, it } from 'vitest'
import { waitFor, sleep } from '../helpers.mjs'
import { createGoalSession, readGoal } from './opencode-server.mjs'
import { startForwardingHost, useOpenCode } from './forwarding-host.mjs'

let model
let oc
let host

const env = useOpenCode()
// Bound once the servers are up (hooks run in the order they are registered).
beforeAll(() => ({ model, oc } = env))

/** A host: the runtime fed from OpenCode's event stream, recover() after every reconnect. */
const startHost = (options = {}) =>
  startForwardingHost(oc, { directories: [oc.directory], resumeKickoffMs: 100, ...options })

const goalOf = (sessionId) => readGoal(oc.api, sessionId)
const messagesOf = (sessionId) => oc.api('GET', `/session/${sessionId}/message`)
const usage = (prompt, completion) => ({ prompt_tokens: prompt, completion_tokens: completion })

async function goalWhere(sessionId, test, timeoutMs = 60_000) {
  return waitFor(
    async () => {
      const goal = await goalOf(sessionId)
      return goal && test(goal) ? goal : null
    },
    timeoutMs,
    100,
  )
}

describe('provider limits, forks and restarts on a real OpenCode server', () => {
  it('a model answering 429 until OpenCode gives up: the goal parks, resumes by itself and completes, one continuation per tail', async () => {
    let parked = false
    const limited = { status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'Rate limit reached', type: 'rate_limit_exceeded' } } }
    const tag = model.scenario('limit', {
      turns: [
        { text: 'Done: parser skeleton. Remaining: nesting.', usage: usage(1000, 80) },
        () => (parked ? { text: 'Done: nesting works and is tested.', usage: usage(2000, 120) } : limited),
      ],
      audits: [{ verdict: 'continue', note: 'nesting left' }, { verdict: 'complete', note: 'nesting works' }],
    })
    host = await startHost()
    const { sessionId } = await createGoalSession(oc.api, { objective: `Make the parser handle nested lists ${tag}` })
    const park = await goalWhere(sessionId, (g) => g.statusReason === 'waiting for provider limit')
    parked = true
    expect(park.status).toBe('active')
    expect(park.cause).toMatchObject({ code: 'waitingForProviderLimit' })
    const failed = (await messagesOf(sessionId)).filter((m) => m.info.role === 'assistant').at(-1)
    expect(failed.info.error).toMatchObject({ name: 'APIError', data: { statusCode: 429 } })
    expect(failed.info.finish).toBeUndefined()
    // retry-after: 1 from the reply's completion, plus 2 s and at most 10 %.
    expect(park.cause.until - failed.info.time.completed).toBeGreaterThanOrEqual(3000)
    expect(park.cause.until - failed.info.time.completed).toBeLessThanOrEqual(3300)
    const done = await goalWhere(sessionId, (g) => g.status === 'complete')
    expect(done.statusReason).toBe('verified by audit')
    // One continuation per tail: the first reply's, then the failed reply's.
    const messages = await messagesOf(sessionId)
    const users = messages.filter((m) => m.info.role === 'user')
    expect(users).toHaveLength(3)
    const resumedAt = users[2].info.time.created
    expect(resumedAt).toBeGreaterThanOrEqual(park.cause.until - 50)
    const agentCalls = model.requestsOf('limit', 'agent')
    expect(agentCalls.length).toBeGreaterThanOrEqual(3) // OpenCode retried the 429 itself first
    expect(model.requestsOf('limit', 'audit')).toHaveLength(2) // the failed reply was not audited
    // The failed turn was given back: the resumed continuation is the second of two sent.
    expect(done.turnsUsed).toBe(1)
  }, 120_000)

  it('a real fork of a goal session is adopted paused, and the source completes', async () => {
    let forked = false
    const tag = model.scenario('fork', {
      turns: [
        { text: 'Done: step one. Remaining: step two.', usage: usage(800, 50) },
        () => (forked ? { text: 'Done: step two, verified.', usage: usage(900, 60) } : { text: 'Working on step two.', usage: usage(850, 55), delayMs: 300 }),
      ],
      audits: [{ verdict: 'continue', note: 'step two left' }, { verdict: 'continue', note: 'still step two' }, { verdict: 'complete', note: 'both steps done' }],
    })
    host = await startHost()
    const { sessionId } = await createGoalSession(oc.api, { objective: `Do both steps ${tag}` })
    await goalWhere(sessionId, (g) => g.sessionId === sessionId && g.turnsUsed >= 1)
    const fork = await oc.api('POST', `/session/${sessionId}/fork`, {})
    forked = true
    expect(fork.parentID).toBeUndefined()
    expect(fork.metadata?.openchamber?.goal?.status).toBe('active')
    const copy = await goalWhere(fork.id, (g) => g.status === 'paused', 30_000)
    expect(copy).toMatchObject({ statusReason: 'copied from another session', sessionId: fork.id })
    expect(copy.cause).toMatchObject({ code: 'inherited', detail: sessionId })
    await goalWhere(sessionId, (g) => g.status === 'complete')
    await sleep(1000)
    const forkUsers = (await messagesOf(fork.id)).filter((m) => m.info.role === 'user')
    const sourceUsers = (await messagesOf(sessionId)).filter((m) => m.info.role === 'user')
    // The fork holds copies of the source's messages up to the fork, and nothing after.
    expect(forkUsers.length).toBeLessThan(sourceUsers.length)
    expect((await goalOf(fork.id)).status).toBe('paused')
    expect(host.notifications.map((n) => n.sessionId)).toEqual([sessionId])
  }, 120_000)

  it('OpenCode restarted mid-turn: the goal continues after the reconnect and completes', async () => {
    // The continuation's turn stalls; the next one (after the restart) finishes. Counted here,
    // not keyed to oc.restart() returning: its health probe can land in the moment OpenCode
    // accepts requests it never answers while it starts (docs/opencode.md), and the runtime may
    // reach the model again before that probe times out.
    let agentTurns = 0
    const tag = model.scenario('restart', {
      turns: [
        { text: 'Done: first half. Remaining: second half.', usage: usage(700, 40) },
        () => (agentTurns++ === 0 ? { text: 'Starting the second half', stall: true } : { text: 'Done: second half, verified.', usage: usage(900, 70) }),
      ],
      audits: [{ verdict: 'continue', note: 'second half left' }, { verdict: 'complete', note: 'all done' }],
    })
    host = await startHost()
    const { sessionId } = await createGoalSession(oc.api, { objective: `Finish both halves ${tag}` })
    // The continuation's turn streams, then stalls: cut it by restarting OpenCode.
    await model.waitForStall('restart', { timeoutMs: 60_000 })
    await sleep(500)
    await oc.restart()
    const cut = (await messagesOf(sessionId)).filter((m) => m.info.role === 'assistant').at(-1)
    expect(cut.info.time.completed).toBeUndefined()
    expect(cut.info.error).toBeUndefined()
    const done = await goalWhere(sessionId, (g) => g.status === 'complete', 90_000)
    expect(done.statusReason).toBe('verified by audit')
    const users = (await messagesOf(sessionId)).filter((m) => m.info.role === 'user')
    // The first prompt, the continuation that was cut, and one continuation for the cut reply.
    expect(users).toHaveLength(3)
  }, 180_000)
})
