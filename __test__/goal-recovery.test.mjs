// Restart recovery, several hosts on one server, and waiting for the user.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep, pkg, tempDataDir, startSecondHost } from './helpers.mjs'

let env
const extra = []
afterEach(async () => {
  for (const fn of extra.splice(0)) await fn()
  await env?.cleanup()
  env = undefined
})

const continueVerdict = { verdict: 'continue', note: 'keep going' }

describe('restart recovery', () => {
  it('a new runtime finds an active goal on an idle session and continues it, with no event at all', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), forward: false })
    const session = sessionWithReply(env.mock)
    const auditor = scriptedAuditor([continueVerdict])
    const restarted = pkg.createSessionGoalRuntime({
      openCode: { baseUrl: env.mock.url },
      settings: { dataDir: tempDataDir() },
      kickoffQuietMs: 50,
      idleQuietMs: 100,
      directories: ['/tmp/project'],
      generateSmallModelText: auditor.service.generateSmallModelText,
    })
    extra.push(() => restarted.stop())
    await waitFor(() => env.mock.prompts.length === 1, 5000)
    expect(goalOf(env.mock, session.id).turnsUsed).toBe(1)
  })

  it('a continuation admitted before the restart (now the trailing user message) gets no new continuation from the restarted runtime', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), forward: false })
    const session = sessionWithReply(env.mock)
    const tail = env.mock.messages(session.id).at(-1).info.id
    const goal = goalOf(env.mock, session.id)
    // The previous process reserved and sent; the prompt landed (a user message after the tail).
    env.mock.setMetadata(session.id, { openchamber: { goal: { ...goal, turnsUsed: 1, continuationFor: tail } } })
    env.mock.addUserMessage(session.id, 'Continue working toward the active session goal.')
    const idleQuietMs = 150
    const restarted = pkg.createSessionGoalRuntime({
      openCode: { baseUrl: env.mock.url },
      settings: { dataDir: tempDataDir() },
      kickoffQuietMs: 50,
      idleQuietMs,
      directories: ['/tmp/project'],
      generateSmallModelText: scriptedAuditor([continueVerdict]).service.generateSmallModelText,
    })
    extra.push(() => restarted.stop())
    // The restarted runtime has looked at the conversation (its recovery tick ran) and finished;
    // then longer than a quiet window more, so a re-armed tick would have acted too.
    const reads = () => env.mock.requests.filter((r) => r.method === 'GET' && r.path === '/session/' + session.id + '/message').length
    await waitFor(() => reads() >= 1, 5000)
    await waitFor(() => restarted.snapshot().inFlight === 0, 5000)
    await sleep(2 * idleQuietMs + 200)
    // Counted at the wire: no new continuation. Its turn never came (the session is idle and
    // nothing answers it), so it is a stranded message: any post is that message again, under
    // its own id (goal/decide/strand_rules.rs), and no turn is reserved for it.
    const stranded = env.mock.messages(session.id).at(-1).info.id
    expect(env.mock.sends(session.id).every((r) => r.body.messageID === stranded)).toBe(true)
    expect(env.mock.prompts).toHaveLength(0)
    expect(goalOf(env.mock, session.id).turnsUsed).toBe(1)
  })

  it('the first connection finds what was made between the scan at start and it; a reconnection finds every active goal again', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), forward: false, runtimeOptions: { kickoffQuietMs: 50 } })
    const censuses = () => env.mock.requests.filter((r) => r.path === '/experimental/session')
    expect(censuses()).toHaveLength(1)
    // Made after the scan at start listed the server, before the stream was up: no event of it
    // reaches this host, in a directory no event named.
    await sleep(5)
    const early = sessionWithReply(env.mock, { directory: '/tmp/unheard' })
    env.runtime.processPayload({ type: 'server.connected', properties: {} }, '')
    await waitFor(() => env.mock.prompts.length === 1, 5000)
    expect(env.mock.prompts[0].sessionId).toBe(early.id)
    // That census reached back only to the newest update the scan at start saw: one page.
    expect(censuses()).toHaveLength(2)
    expect(Number(censuses()[1].query.cursor ?? 0)).toBe(0)
    // A reconnection later: a whole census again.
    const late = sessionWithReply(env.mock, { directory: '/tmp/unheard-too' })
    await sleep(100)
    expect(env.mock.prompts).toHaveLength(1)
    env.runtime.processPayload({ type: 'server.connected', properties: {} }, '')
    await waitFor(() => env.mock.prompts.length === 2, 5000)
    expect(env.mock.prompts[1].sessionId).toBe(late.id)
    expect(censuses()).toHaveLength(3)
  })

})

describe('several hosts on one OpenCode server', () => {
  it('two runtimes (different hosts) never both continue the same turn', async () => {
    const auditorA = scriptedAuditor([continueVerdict, continueVerdict, { verdict: 'complete', note: 'done' }])
    env = await setup({ auditor: auditorA, runtimeOptions: { idleQuietMs: 80 } })
    const auditorB = scriptedAuditor([continueVerdict, continueVerdict, { verdict: 'complete', note: 'done' }])
    // Another host: same server, reached by another name (its own process-level identity).
    const other = await startSecondHost(env, { idleQuietMs: 80, auditor: auditorB })
    extra.push(other.stop)
    const session = sessionWithReply(env.mock)
    env.mock.scriptReplies(session.id, [{ text: 'progress', tokens: { input: 100 } }], { replyDelayMs: 30 })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'complete', 10_000)
    // Each continuation answered a different tail: no turn was continued twice.
    const messages = env.mock.messages(session.id)
    const userAfterReply = messages.filter((m, i) => m.info.role === 'user' && i > 0 && messages[i - 1].info.role === 'user')
    expect(userAfterReply).toHaveLength(0)
    expect(env.mock.prompts.length).toBeGreaterThanOrEqual(1)
    expect(env.mock.prompts.length).toBeLessThanOrEqual(3)
    expect(goalOf(env.mock, session.id).turnsUsed).toBe(env.mock.prompts.length)
    // At the wire, before the server's de-duplication: for each tail (the newest finished reply
    // when the post arrived) the two hosts posted one id at most.
    const replies = env.mock.messages(session.id).filter((m) => m.info.role === 'assistant')
    const idsPerTail = new Map()
    for (const post of env.mock.sends(session.id)) {
      const tail = replies.filter((m) => m.info.time.completed <= post.at).at(-1)?.info.id
      idsPerTail.set(tail, new Set([...(idsPerTail.get(tail) ?? []), post.body?.messageID]))
    }
    expect([...idsPerTail.values()].every((ids) => ids.size === 1)).toBe(true)
    expect(env.mock.sends(session.id).length).toBe(env.mock.prompts.length + env.mock.repeatedPrompts.length)
  })
})

describe('waiting for the user', () => {
  it('a pending permission holds the loop (no audit, no prompt, statusReason says why) until it is answered', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock)
    env.mock.setPending(session.id, 'permission', 'per_1')
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).statusReason === 'waiting for user input', 3000)
    await sleep(300)
    expect(auditor.calls).toHaveLength(0)
    expect(env.mock.prompts).toHaveLength(0)
    env.mock.clearPending(session.id, 'permission', 'per_1')
    await waitFor(() => env.mock.prompts.length === 1, 5000)
    expect(goalOf(env.mock, session.id).statusReason).toBe('')
  })

  it('a question pending in a child session holds the parent', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock)
    const child = env.mock.createSession({ parentID: session.id })
    env.mock.setPending(child.id, 'question', 'que_1')
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).statusReason === 'waiting for user input', 3000)
    expect(auditor.calls).toHaveLength(0)
  })
})
