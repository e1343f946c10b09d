// A stranded message is posted again under its own ids (the built addon against the mock
// OpenCode over real HTTP). OpenCode can store a user message and be killed before its turn
// starts; the mock models it with `strandPrompts` (the message stored, no turn), and a re-post of
// the stored, unanswered id starts its turn, as the real server does. The loop then finds the
// message as the newest one, unanswered, on an idle session past the quiet window, and posts it
// again with the same message id and parts (part ids included), at most 3 times, then settles
// `blocked` (`dispatchFailed`). It never posts a new continuation over that tail.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, goalMetadata, goalOf, waitFor, sessionWithReply } from './helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const keepGoing = { verdict: 'continue', note: 'more to do' }
const complete = { verdict: 'complete', note: 'done' }

/** The prompt_async posts at the wire for the session, with their message id and parts. */
const posts = (mock, sessionId) => mock.sends(sessionId).map((r) => ({ messageID: r.body.messageID, parts: r.body.parts }))

describe('a stranded message', () => {
  it('the loop\'s own continuation, stored without its turn, is posted again under its ids; the turn runs and the goal completes', async () => {
    const auditor = scriptedAuditor([keepGoing, complete])
    env = await setup({ auditor })
    const { mock } = env
    const session = sessionWithReply(mock, {})
    mock.scriptReplies(session.id, [{ text: 'Nesting works now.' }])
    // The server stores the continuation and is killed before its turn begins.
    mock.strandPrompts(session.id, { times: 1 })
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status !== 'active', 8000).catch(() => {})
    const goal = goalOf(mock, session.id)
    expect(goal.status).toBe('complete')
    const sent = posts(mock, session.id)
    expect(sent).toHaveLength(2)
    const [first, again] = sent
    expect(mock.strandedPrompts.map((p) => p.messageID)).toEqual([first.messageID])
    // The same message id and the same parts, part ids included.
    expect(again.messageID).toBe(first.messageID)
    expect(again.parts.map((p) => [p.id, p.type, p.text])).toEqual(first.parts.map((p) => [p.id, p.type, p.text]))
    expect(first.parts[0].id).toMatch(/^prt_/)
    // Its turn ran: the reply answers that message, which kept one part.
    const messages = mock.messages(session.id)
    const continuation = messages.find((m) => m.info.id === first.messageID)
    expect(continuation.parts).toHaveLength(1)
    expect(messages.filter((m) => m.info.role === 'assistant' && m.info.parentID === first.messageID)).toHaveLength(1)
    expect(goal).toMatchObject({ turnsUsed: 1, reposted: { messageId: first.messageID, posts: 1 } })
    expect(auditor.calls).toHaveLength(2)
  })

  // The continuation's own message event names a time after the look-again timer was armed (here
  // the server's clock runs ahead; on a fast machine the same millisecond does it). Taken for the
  // user's activity, it cancelled that timer and the goal waited, active, for an idle event that a
  // stranded message never brings.
  it('the continuation\'s own message event does not cancel the look for a turn that never started', async () => {
    const auditor = scriptedAuditor([keepGoing, complete])
    env = await setup({ auditor, mockOptions: { now: () => Date.now() + 60_000 } })
    const { mock } = env
    const session = sessionWithReply(mock, {})
    mock.scriptReplies(session.id, [{ text: 'Nesting works now.' }])
    mock.strandPrompts(session.id, { times: 1 })
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status !== 'active', 8000).catch(() => {})
    expect(goalOf(mock, session.id).status).toBe('complete')
    const sent = posts(mock, session.id)
    expect(sent).toHaveLength(2)
    expect(sent[1].messageID).toBe(sent[0].messageID)
    expect(mock.strandedPrompts).toHaveLength(1)
  })

  it('the user\'s first prompt, stored without its turn, is posted again under its ids; its turn runs and the goal completes', async () => {
    const auditor = scriptedAuditor([complete])
    env = await setup({ auditor })
    const { mock } = env
    const session = mock.createSession({ directory: '/tmp/project', metadata: goalMetadata({}) })
    mock.scriptReplies(session.id, [{ text: 'Done: nested lists parse.' }])
    // The user's first prompt, as a client posts it (its own message and part ids), stranded.
    mock.strandPrompts(session.id, { times: 1 })
    const messageID = 'msg_0000000000a1FirstPromptXyz'
    const part = { id: 'prt_0000000000a1FirstPromptXyz', type: 'text', text: 'Make the parser handle nested lists' }
    const answer = await fetch(`${mock.url}/session/${session.id}/prompt_async?directory=/tmp/project`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messageID, parts: [part], agent: 'build', model: { providerID: 'mock', modelID: 'mock-model' } }),
    })
    expect(answer.status).toBe(204)
    expect(mock.strandedPrompts.map((p) => p.messageID)).toEqual([messageID])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status !== 'active', 8000).catch(() => {})
    expect(goalOf(mock, session.id).status).toBe('complete')
    // The client's post, then the loop's one re-post of the same id and part; no continuation.
    const sent = posts(mock, session.id)
    expect(sent).toHaveLength(2)
    expect(sent[1]).toEqual({ messageID, parts: [part] })
    expect(mock.sends(session.id)[1].body).toMatchObject({ agent: 'build', model: { providerID: 'mock', modelID: 'mock-model' } })
    const messages = mock.messages(session.id)
    expect(messages.find((m) => m.info.id === messageID).parts).toHaveLength(1)
    expect(messages.filter((m) => m.info.role === 'assistant' && m.info.parentID === messageID)).toHaveLength(1)
    expect(goalOf(mock, session.id).turnsUsed).toBe(0)
  })

  it('a session that never answers: exactly 3 re-posts, then blocked dispatchFailed with a fix; no new continuation', async () => {
    const auditor = scriptedAuditor([keepGoing])
    env = await setup({ auditor })
    const { mock } = env
    const session = sessionWithReply(mock, {})
    mock.scriptReplies(session.id, [{ text: 'never' }])
    mock.strandPrompts(session.id, { times: Infinity })
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status !== 'active', 10_000).catch(() => {})
    const goal = goalOf(mock, session.id)
    expect(goal.status).toBe('blocked')
    expect(goal.statusReason).toBe('message never answered')
    const sent = posts(mock, session.id)
    // The continuation, then exactly 3 posts of it again, all under its id and part id.
    expect(sent).toHaveLength(4)
    expect(new Set(sent.map((p) => p.messageID)).size).toBe(1)
    expect(new Set(sent.map((p) => p.parts[0].id)).size).toBe(1)
    expect(goal.cause).toMatchObject({ code: 'dispatchFailed', detail: `message ${sent[0].messageID} unanswered after 3 posts` })
    expect(goal.cause.fix).toContain(`session-goal resume ${session.id}`)
    expect(goal.turnsUsed).toBe(1)
    expect(auditor.calls).toHaveLength(1)
    // Nothing more goes out.
    await new Promise((r) => setTimeout(r, 600))
    expect(mock.sends(session.id)).toHaveLength(4)
    await waitFor(() => env.notifications.length === 1)
    expect(env.notifications[0].cause.code).toBe('dispatchFailed')
  })
})
