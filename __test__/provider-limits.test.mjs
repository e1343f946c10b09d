// Provider limits against the mock OpenCode: a resetting limit parks the goal and one
// continuation goes out at the reset; failures that do not reset settle `blocked` with a typed
// cause; turns cut by a server restart are continued once. Counts are taken at the wire (every
// POST the mock received), not after the mock de-duplicated a repeated message id.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep, pkg, startSecondHost } from './helpers.mjs'

let env
const extra = []
afterEach(async () => {
  while (extra.length) await extra.pop()()
  await env?.cleanup()
  env = undefined
})

const continueVerdict = { verdict: 'continue', note: 'more to do' }
const completeVerdict = { verdict: 'complete', note: 'done' }

/** A reply OpenCode gave up on: no parts, no finish, an APIError with the provider's headers. */
export function providerError(statusCode, { headers = {}, isRetryable = true, body = '{"error":{"type":"rate_limit_exceeded"}}', name = 'APIError', data } = {}) {
  const error =
    name === 'APIError'
      ? { name, data: { message: `Provider answered ${statusCode}`, statusCode, isRetryable, responseHeaders: headers, responseBody: body, metadata: { url: 'https://provider.example/v1/chat/completions' } } }
      : { name, data: data ?? { message: 'refused' } }
  return { error, tokens: { input: 0, output: 0 }, stepParts: false }
}

const promptPosts = (mock, sessionId) =>
  mock.requests.filter((r) => r.method === 'POST' && r.path === `/session/${sessionId}/prompt_async`)
const lastAssistant = (mock, sessionId) => mock.messages(sessionId).filter((m) => m.info.role === 'assistant').at(-1)

describe('a limit that resets parks the goal', () => {
  it('parks with the reset time, audits and sends nothing while parked or retrying, and resumes once at the reset', async () => {
    const auditor = scriptedAuditor([continueVerdict, completeVerdict])
    env = await setup({ auditor })
    const { mock } = env
    const session = sessionWithReply(mock, { goal: { sessionId: undefined } })
    mock.scriptReplies(session.id, [
      { ...providerError(429, { headers: { 'retry-after': '1', 'x-ratelimit-reset-requests': '400ms' } }), retry: { forMs: 400 } },
      { text: 'Done: nesting works.', tokens: { input: 2000, output: 300 } },
    ])
    mock.setStatus(session.id, 'idle')
    // OpenCode retries the provider itself (status retry): nothing is sent or audited meanwhile.
    await waitFor(() => mock.retries.length === 1, 5000)
    const auditsAtRetry = auditor.calls.length
    await waitFor(() => goalOf(mock, session.id)?.statusReason === 'waiting for provider limit', 5000)
    expect(auditor.calls.length).toBe(auditsAtRetry)
    const failed = lastAssistant(mock, session.id)
    expect(failed.info.error.data.statusCode).toBe(429)
    const parked = goalOf(mock, session.id)
    expect(parked.status).toBe('active')
    expect(parked.sessionId).toBe(session.id)
    expect(parked.turnsUsed).toBe(0) // the failed turn was given back
    expect(parked.inactiveSince).toBeGreaterThan(0) // parked time is not active time
    expect(parked.cause).toMatchObject({ code: 'waitingForProviderLimit' })
    // retry-after wins (the latest reset), measured from the failed reply, plus 2 s and ≤ 10 %.
    const completed = failed.info.time.completed
    expect(parked.cause.until).toBeGreaterThanOrEqual(completed + 3000)
    expect(parked.cause.until).toBeLessThanOrEqual(completed + 3300)
    // Nothing goes out before the reset.
    await sleep(Math.max(0, parked.cause.until - Date.now() - 300))
    expect(promptPosts(mock, session.id)).toHaveLength(1)
    expect(auditor.calls.length).toBe(1)
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10_000)
    const posts = promptPosts(mock, session.id)
    expect(posts).toHaveLength(2)
    expect(posts[1].at).toBeGreaterThanOrEqual(parked.cause.until - 5)
    // One continuation answered the failed reply, with an id every host derives from it.
    expect(posts[1].body.messageID).toMatch(/^msg_[0-9a-f]{12}[0-9A-Za-z]{14}$/)
    expect(mock.repeatedPrompts).toHaveLength(0)
    // The failed reply was never audited: one audit before it, one after the successful reply.
    expect(auditor.calls).toHaveLength(2)
    const done = goalOf(mock, session.id)
    expect(done.turnsUsed).toBe(1)
    expect(done.cause?.code).not.toBe('waitingForProviderLimit')
    // The trail records the park.
    const trail = await env.runtime.history(session.id)
    const park = trail.find((entry) => entry.action === 'park')
    expect(park).toMatchObject({ tail: failed.info.id })
    expect(park.until).toBe(parked.cause.until)
  })

  it('a user message during a park ends it at once', async () => {
    const auditor = scriptedAuditor([continueVerdict, completeVerdict])
    env = await setup({ auditor })
    const { mock } = env
    const session = sessionWithReply(mock)
    mock.scriptReplies(session.id, [providerError(429, { headers: { 'retry-after': '120' } }), { text: 'Did what you asked.', tokens: { input: 10, output: 40 } }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.statusReason === 'waiting for provider limit', 5000)
    expect(goalOf(mock, session.id).cause.until).toBeGreaterThan(Date.now() + 100_000)
    // The user types: OpenCode runs the turn; the goal goes on from its reply, long before the reset.
    const response = await fetch(`${mock.url}/session/${session.id}/prompt_async?directory=/tmp/project`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: { providerID: 'mock', modelID: 'mock-model' }, parts: [{ type: 'text', text: 'Try the other parser first' }] }),
    })
    expect(response.status).toBe(204)
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 8000)
    const goal = goalOf(mock, session.id)
    expect(goal.statusReason).toBe('verified by audit')
    expect(goal.providerWaitFor).toBeUndefined()
    // Our posts: the first continuation only; the user's prompt was the second.
    expect(promptPosts(mock, session.id)).toHaveLength(2)
  })

  it('resumeGoal ends a park at once', async () => {
    const auditor = scriptedAuditor([continueVerdict, completeVerdict])
    env = await setup({ auditor })
    const { mock } = env
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, settings: { dataDir: env.dataDir } })
    const session = sessionWithReply(mock)
    mock.scriptReplies(session.id, [providerError(429, { headers: { 'retry-after': '600' } }), { text: 'ok', tokens: { output: 5 } }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.statusReason === 'waiting for provider limit', 5000)
    const result = await control.resumeGoal({ sessionId: session.id, directory: '/tmp/project' })
    expect(result.changed).toBe(true)
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 8000)
    expect(promptPosts(mock, session.id)).toHaveLength(2)
  })

  it('pauseGoal and editGoal end a park at once', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const { mock } = env
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, settings: { dataDir: env.dataDir } })
    const paused = sessionWithReply(mock)
    const edited = sessionWithReply(mock)
    for (const s of [paused, edited]) {
      mock.scriptReplies(s.id, [providerError(429, { headers: { 'retry-after': '600' } }), { text: 'on it', tokens: { output: 7 } }])
      mock.setStatus(s.id, 'idle')
    }
    await waitFor(() => [paused, edited].every((s) => goalOf(mock, s.id)?.statusReason === 'waiting for provider limit'), 5000)
    await control.pauseGoal({ sessionId: paused.id, directory: '/tmp/project' })
    await control.editGoal({ sessionId: edited.id, directory: '/tmp/project', objective: 'Make the parser handle nested lists and tables' })
    const pausedGoal = goalOf(mock, paused.id)
    expect(pausedGoal.status).toBe('paused')
    expect(pausedGoal.providerWaitFor).toBeUndefined()
    expect(pausedGoal.cause?.code).not.toBe('waitingForProviderLimit')
    // The edited goal goes on now with its new objective, over the failed reply.
    await waitFor(() => promptPosts(mock, edited.id).length === 2, 5000)
    expect(promptPosts(mock, edited.id)[1].body.parts[0].text).toContain('tables')
    await sleep(300)
    expect(promptPosts(mock, paused.id)).toHaveLength(1)
  })

  it('working hours still apply when a park ends', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, runtimeOptions: { maxProviderWaitMs: 300 } })
    const { mock } = env
    // A window that is closed now (it opened and closed an hour ago, UTC).
    const hour = new Date(Date.now() - 3600_000).getUTCHours()
    const hh = (h) => String((h + 24) % 24).padStart(2, '0') + ':00'
    const session = sessionWithReply(mock, { goal: { activeHours: { start: hh(hour - 1), end: hh(hour), timeZone: 'UTC' } } })
    mock.scriptReplies(session.id, [{ text: 'ok', tokens: { output: 3 } }])
    // The goal's current tail is a limited reply: the park is short (capped), then the hours hold it.
    mock.addUserMessage(session.id, 'continue')
    mock.addAssistantMessage(session.id, providerError(429, { headers: { 'retry-after': '1' } }))
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.statusReason === 'waiting for working hours', 5000)
    expect(promptPosts(mock, session.id)).toHaveLength(0)
    expect(goalOf(mock, session.id).status).toBe('active')
  })

  it('six parks in a row block the goal with providerQuota', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, runtimeOptions: { maxProviderWaitMs: 250, idleQuietMs: 100 } })
    const { mock } = env
    const session = sessionWithReply(mock)
    mock.scriptReplies(session.id, [providerError(429, { headers: {} })])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status === 'blocked', 15_000)
    const goal = goalOf(mock, session.id)
    expect(goal.cause).toMatchObject({ code: 'providerQuota' })
    expect(goal.cause.fix).toBeTruthy()
    // The first continuation, then one per park: six parks, the seventh limit settles.
    expect(promptPosts(mock, session.id)).toHaveLength(7)
    expect(goal.providerWaits).toBe(6)
    expect(auditor.calls).toHaveLength(1)
    await sleep(600)
    expect(promptPosts(mock, session.id)).toHaveLength(7)
  })

  it('two hosts resume a park exactly once (counted at the wire)', async () => {
    const auditorA = scriptedAuditor([continueVerdict, completeVerdict])
    env = await setup({ auditor: auditorA })
    const auditorB = scriptedAuditor([continueVerdict, completeVerdict])
    const other = await startSecondHost(env, { idleQuietMs: 150, auditor: auditorB })
    extra.push(other.stop)
    const { mock } = env
    const session = sessionWithReply(mock)
    mock.scriptReplies(session.id, [providerError(429, { headers: { 'retry-after': '1' } }), { text: 'done', tokens: { output: 50 } }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.statusReason === 'waiting for provider limit', 5000)
    const failed = lastAssistant(mock, session.id).info.id
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10_000)
    const answers = mock.messages(session.id).filter((m) => m.info.role === 'user' && m.info.parentID === undefined)
    expect(answers.length).toBeGreaterThan(0)
    // Every POST at the wire, repeated ids included: one for the turn, one for the park's end.
    expect(promptPosts(mock, session.id)).toHaveLength(2)
    const afterFailed = mock.messages(session.id).findIndex((m) => m.info.id === failed)
    expect(mock.messages(session.id).slice(afterFailed + 1).filter((m) => m.info.role === 'user')).toHaveLength(1)
  })
})

describe('failures that do not reset', () => {
  const cases = [
    ['a spent quota (insufficient_quota)', providerError(429, { body: '{"error":{"code":"insufficient_quota"}}' }), 'providerQuota', 'mock'],
    ['a 402', providerError(402, { isRetryable: false }), 'providerQuota', 'mock'],
    ['a 429 marked not retryable', providerError(429, { isRetryable: false }), 'providerQuota', 'mock'],
    ['refused credentials (401)', providerError(401, { isRetryable: false }), 'providerAuth', 'mock'],
    ['ProviderAuthError', providerError(0, { name: 'ProviderAuthError', data: { providerID: 'anthropic', message: 'invalid x-api-key' } }), 'providerAuth', 'anthropic'],
    ['a context overflow', providerError(0, { name: 'ContextOverflowError', data: { message: 'prompt is too long' } }), 'contextOverflow', 'mock'],
    ['a content filter', providerError(0, { name: 'ContentFilterError', data: { message: 'filtered' } }), 'contentFilter', 'mock'],
  ]
  for (const [what, reply, code, provider] of cases) {
    it(`${what} settles blocked with cause ${code}, never audited or continued`, async () => {
      const auditor = scriptedAuditor([continueVerdict])
      env = await setup({ auditor })
      const { mock } = env
      const session = sessionWithReply(mock, { reply })
      mock.setStatus(session.id, 'idle')
      await waitFor(() => goalOf(mock, session.id)?.status === 'blocked', 5000)
      const goal = goalOf(mock, session.id)
      expect(goal.cause).toMatchObject({ code, detail: provider })
      expect(goal.cause.fix).toBeTruthy()
      if (code === 'providerAuth') expect(goal.cause.fix).toContain(provider)
      expect(auditor.calls).toHaveLength(0)
      expect(promptPosts(mock, session.id)).toHaveLength(0)
      await waitFor(() => env.notifications.length === 1)
      expect(env.notifications[0].goal.cause.code).toBe(code)
    })
  }

  it('a 429 with an HTML body and an unreadable reset is a limit: parked on the backoff, then continued', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, runtimeOptions: { maxProviderWaitMs: 300 } })
    const { mock } = env
    const html = sessionWithReply(mock, { reply: providerError(429, { body: '<html><body>Too Many Requests</body></html>', headers: { 'retry-after': 'soon' } }) })
    mock.scriptReplies(html.id, [{ text: 'back at it', tokens: { output: 9 } }])
    mock.setStatus(html.id, 'idle')
    // The backoff, capped here at 300 ms.
    await waitFor(() => promptPosts(mock, html.id).length === 1, 5000)
    expect(goalOf(mock, html.id).status).toBe('active')
  })
})

describe('an error the provider table does not name blocks at once with its name', () => {
  // Each reply ends with finish `length` as well: the error wins over it (no truncation recovery).
  const cases = [
    { label: 'APIError without a status', error: { name: 'APIError', data: { message: 'bad request', isRetryable: false } }, reason: 'APIError', detail: 'APIError: bad request' },
    { label: 'UnknownError', error: { name: 'UnknownError', data: { message: 'boom' } }, reason: 'UnknownError', detail: 'UnknownError: boom' },
    { label: 'StructuredOutputError', error: { name: 'StructuredOutputError', data: { message: 'schema mismatch', retries: 2 } }, reason: 'StructuredOutputError', detail: 'StructuredOutputError: schema mismatch' },
    { label: 'a non-retryable 500', error: providerError(500, { isRetryable: false, body: 'internal error' }).error, reason: 'APIError', detail: 'APIError: Provider answered 500' },
    { label: 'an unnamed {} error', error: {}, reason: 'assistant turn failed', detail: 'assistant turn failed' },
  ]

  it('settles blocked with cause turnFailed: no audit, no continuation, one notification each', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const { mock } = env
    const sessions = cases.map((c) => ({
      ...c,
      session: sessionWithReply(mock, { reply: { text: `${c.label}: half done.`, error: c.error, finish: 'length', tokens: { input: 1000, output: 40 } } }),
    }))
    // Proof the faults are in place: each tail carries its error and finish length.
    for (const { session, error } of sessions) {
      expect(lastAssistant(mock, session.id).info).toMatchObject({ error, finish: 'length' })
    }
    for (const { session } of sessions) mock.setStatus(session.id, 'idle')
    await waitFor(() => sessions.every(({ session }) => goalOf(mock, session.id)?.status === 'blocked'), 10_000)
    for (const { label, session, reason, detail } of sessions) {
      expect(goalOf(mock, session.id), label).toMatchObject({ status: 'blocked', statusReason: reason, turnsUsed: 0, cause: { code: 'turnFailed', detail } })
      expect(goalOf(mock, session.id).cause.fix, label).toContain('send the agent a message')
      expect(mock.sends(session.id), label).toHaveLength(0)
    }
    expect(auditor.calls).toHaveLength(0)
    await waitFor(() => env.notifications.length === cases.length, 5000)
    expect(env.notifications.map((n) => n.cause.code)).toEqual(cases.map(() => 'turnFailed'))
    // The provider table's own rows are unchanged: an auth failure still names its cause.
    const auth = sessionWithReply(mock, { reply: providerError(401, { isRetryable: false }) })
    mock.setStatus(auth.id, 'idle')
    await waitFor(() => goalOf(mock, auth.id)?.status === 'blocked', 5000)
    expect(goalOf(mock, auth.id).cause.code).toBe('providerAuth')
  })
})

describe('a turn cut by a server restart', () => {
  it('is continued once, not settled; a second cut in a row blocks with turnInterrupted', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, runtimeOptions: { idleQuietMs: 100 } })
    const { mock } = env
    const session = sessionWithReply(mock)
    mock.scriptReplies(session.id, [{ text: 'half', completed: false }], { replyDelayMs: 10_000 })
    mock.setStatus(session.id, 'idle')
    await waitFor(() => mock.status(session.id).type === 'busy' && promptPosts(mock, session.id).length === 1, 5000)
    await sleep(50)
    expect(mock.cutTurns()).toEqual([session.id])
    // No event says so: the host's recover() after its reconnect finds it.
    env.runtime.recover()
    await waitFor(() => promptPosts(mock, session.id).length === 2, 8000)
    expect(goalOf(mock, session.id).status).toBe('active')
    expect(goalOf(mock, session.id).cutTurns).toBe(1)
    await waitFor(() => mock.status(session.id).type === 'busy', 5000)
    await sleep(50)
    mock.cutTurns()
    env.runtime.recover()
    await waitFor(() => goalOf(mock, session.id)?.status === 'blocked', 8000)
    expect(goalOf(mock, session.id).cause).toMatchObject({ code: 'turnInterrupted' })
    expect(promptPosts(mock, session.id)).toHaveLength(2)
    expect(auditor.calls).toHaveLength(1)
  })

  it('the same cut seen again after its continuation was lost is still the first cut: continued, not blocked', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, runtimeOptions: { idleQuietMs: 100 } })
    const { mock } = env
    const session = sessionWithReply(mock)
    mock.scriptReplies(session.id, [{ text: 'half', completed: false }, { text: 'Done.' }], { replyDelayMs: 10_000 })
    mock.setStatus(session.id, 'idle')
    await waitFor(() => mock.status(session.id).type === 'busy' && promptPosts(mock, session.id).length === 1, 5000)
    await sleep(50)
    expect(mock.cutTurns()).toEqual([session.id])
    // Every post of the cut's continuation in the first tick is lost (the connection reset,
    // nothing stored): the reservation stays in the record, and a later tick sees the same cut.
    const lost = mock.fault({ method: 'POST', path: `/session/${session.id}/prompt_async`, times: 3, destroy: true })
    env.runtime.recover()
    await waitFor(() => lost.fired === 3, 8000)
    await waitFor(() => mock.prompts.length === 2 || goalOf(mock, session.id)?.status !== 'active', 15_000)
    const goal = goalOf(mock, session.id)
    expect(goal.status).toBe('active')
    expect(goal.cutTurns).toBe(1)
    // One continuation for the cut, under one id, counted once.
    const ids = promptPosts(mock, session.id).slice(1).map((r) => r.body.messageID)
    expect(new Set(ids).size).toBe(1)
    expect(goal.turnsUsed).toBe(2)
  })
})
