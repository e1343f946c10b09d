// One test (or more) per tick branch, in the reference order.
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, goalMetadata, waitFor, sleep, tempDataDir } from './helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const continueVerdict = { verdict: 'continue', note: 'keep going' }
const idle = (session, directory = '/tmp/project') => ({ type: 'session.status', properties: { sessionID: session.id, status: { type: 'idle' } } })

describe('tick branches', () => {
  it('settings gate: sessionGoalEnabled false means no tick work at fire time', async () => {
    const dataDir = tempDataDir({ sessionGoalEnabled: false })
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { dataDir } })
    const session = sessionWithReply(env.mock)
    env.mock.setStatus(session.id, 'idle')
    await sleep(600)
    expect(env.mock.prompts).toHaveLength(0)
    expect(env.mock.patches).toHaveLength(0)
    // Flipping the setting on is picked up at the next fire, without a restart.
    fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ sessionGoalEnabled: true }))
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1)
  })

  it('sub-agent sessions never carry goals', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const parent = env.mock.createSession({})
    const child = env.mock.createSession({ parentID: parent.id, metadata: goalMetadata() })
    env.mock.addUserMessage(child.id, 'task')
    env.mock.addAssistantMessage(child.id, { text: 'done' })
    env.mock.setStatus(child.id, 'idle')
    await sleep(500)
    expect(env.mock.prompts).toHaveLength(0)
    expect(auditor.calls).toHaveLength(0)
  })

  it('only active goals tick', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    for (const status of ['paused', 'blocked', 'budgetLimited', 'complete']) {
      const session = sessionWithReply(env.mock, { goal: { status } })
      env.mock.setStatus(session.id, 'idle')
    }
    await sleep(500)
    expect(env.mock.prompts).toHaveLength(0)
    expect(env.mock.patches).toHaveLength(0)
  })

  it('file-backed objective is read fresh each tick and shown in the prompt and notification', async () => {
    const dataDir = tempDataDir()
    const auditor = scriptedAuditor([continueVerdict, { verdict: 'complete', note: 'done' }])
    env = await setup({ auditor, runtimeOptions: { dataDir } })
    const session = sessionWithReply(env.mock, { goal: { objective: '', objectiveFile: true } })
    fs.mkdirSync(path.join(dataDir, 'goals'), { recursive: true })
    fs.writeFileSync(path.join(dataDir, 'goals', session.id + '.md'), 'Objective from the file, version one')
    env.mock.scriptReplies(session.id, [{ text: 'progress', tokens: { input: 2000 } }])
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1)
    expect(env.mock.prompts[0].body.parts[0].text).toContain('Objective from the file, version one')
    fs.writeFileSync(path.join(dataDir, 'goals', session.id + '.md'), 'Objective from the file, version two')
    await waitFor(() => goalOf(env.mock, session.id).status === 'complete', 6000)
    expect(auditor.calls[1].prompt).toContain('version two')
    await waitFor(() => env.notifications.length === 1)
    expect(env.notifications[0].goal.objective).toBe('Objective from the file, version two')
    expect(env.notifications[0].body).toContain('version two')
  })

  it('falls back to the inline objective when the file is gone', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionWithReply(env.mock, { goal: { objective: 'Inline fallback objective', objectiveFile: true } })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1)
    expect(env.mock.prompts[0].body.parts[0].text).toContain('Inline fallback objective')
  })

  it('no objective at all: retried with backoff, then blocked "objective unavailable" (never stranded)', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { idleQuietMs: 80 } })
    const session = sessionWithReply(env.mock, { goal: { objective: '', objectiveFile: true } })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked', 8000)
    expect(goalOf(env.mock, session.id).statusReason).toBe('objective unavailable')
    expect(env.mock.prompts).toHaveLength(0)
    const sessionReads = env.mock.requests.filter((r) => r.method === 'GET' && r.path === '/session/' + session.id)
    expect(sessionReads.length).toBeGreaterThanOrEqual(4)
  })

  it('parent busy at fire time: no audit, no prompt', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, forward: false })
    const session = sessionWithReply(env.mock)
    env.mock.setStatus(session.id, 'busy')
    env.runtime.processPayload(idle(session), '/tmp/project')
    await sleep(500)
    expect(auditor.calls).toHaveLength(0)
    expect(env.mock.prompts).toHaveLength(0)
  })

  it('a busy child defers the parent and re-arms; once the child is idle the loop continues', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, forward: false })
    const session = sessionWithReply(env.mock)
    const child = env.mock.createSession({ parentID: session.id })
    env.mock.setStatus(child.id, 'busy')
    env.runtime.processPayload(idle(session), '/tmp/project')
    await sleep(450)
    expect(auditor.calls).toHaveLength(0)
    expect(env.runtime.snapshot().sessions.map((s) => s.sessionId)).toContain(session.id)
    env.mock.setStatus(child.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1, 3000)
  })

  it('status unreadable: the quiet window is retried', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionWithReply(env.mock)
    env.mock.fault({ method: 'GET', path: '/session/status', times: 2, status: 503 })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1, 5000)
    expect(env.mock.requests.filter((r) => r.path === '/session/status').length).toBeGreaterThanOrEqual(3)
  })

  it('messages unreadable for good: blocked "messages unavailable" after bounded retries', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { idleQuietMs: 60 } })
    const session = sessionWithReply(env.mock)
    env.mock.fault({ method: 'GET', path: '/session/' + session.id + '/message', truncatedJson: true })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked', 8000)
    expect(goalOf(env.mock, session.id).statusReason).toBe('messages unavailable')
    // The first read and four retries after quiet × 1, 2, 4 and 8 (maxRetryAttempts, config/mod.rs).
    const reads = env.mock.requests.filter((r) => r.method === 'GET' && r.path === '/session/' + session.id + '/message')
    expect(reads).toHaveLength(5)
    const gaps = reads.slice(1).map((r, i) => r.at - reads[i].at)
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(60 * 2 ** i - 5))
    await waitFor(() => env.notifications.length > 0)
    expect(env.notifications.at(-1)).toMatchObject({ status: 'blocked', title: 'Goal blocked' })
  })

  it('a server that keeps failing: when even the blocked status cannot be written, the retries keep doubling (never back to short), and the goal is driven once it answers', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { idleQuietMs: 40 } })
    const session = sessionWithReply(env.mock)
    const messages = env.mock.fault({ method: 'GET', path: '/session/' + session.id + '/message', status: 503 })
    const writes = env.mock.fault({ method: 'PATCH', path: '/session/' + session.id, status: 503 })
    env.mock.setStatus(session.id, 'idle')
    const reads = () => env.mock.requests.filter((r) => r.method === 'GET' && r.path === '/session/' + session.id + '/message')
    await waitFor(() => reads().length >= 7, 8000)
    expect(messages.fired).toBeGreaterThanOrEqual(7)
    expect(writes.fired).toBeGreaterThanOrEqual(1)
    const at = reads().map((r) => r.at)
    // q, 2q, 4q, 8q (the retries), then on past the last retry: 16q, 32q (capped at 10 s).
    expect(at[5] - at[4]).toBeGreaterThanOrEqual(16 * 40 - 5)
    expect(at[6] - at[5]).toBeGreaterThanOrEqual(32 * 40 - 5)
    expect(goalOf(env.mock, session.id).status).toBe('active')
    // The reads recover first (a tick past its retries that failed a read tries to settle, and
    // would settle `blocked` if the write recovered between its read and its write): once a read
    // of the messages has answered, the writes recover too.
    messages.remove()
    const fired = messages.fired
    const readsBefore = reads().length
    await waitFor(() => reads().length > readsBefore, 15_000)
    expect(messages.fired).toBe(fired)
    expect(env.mock.prompts).toHaveLength(0)
    writes.remove()
    // Driven within 15 s of the server answering again (the backoff is capped at 10 s).
    const recovered = Date.now()
    await waitFor(() => env.mock.prompts.length === 1, 15_000)
    expect(Date.now() - recovered).toBeLessThan(15_000)
  }, 30_000)

  it('quiescence: running reply or no reply yet → nothing; a trailing user message nothing answers is only ever posted again under its own id', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, runtimeOptions: { idleQuietMs: 1000 } })
    // Let the scan the runtime makes when its event stream connects finish first (it would arm
    // its own kickoff for goals it finds).
    await sleep(150)
    const trailingUser = sessionWithReply(env.mock)
    env.mock.addUserMessage(trailingUser.id, 'one more thing')
    const running = env.mock.createSession({ metadata: goalMetadata() })
    env.mock.addUserMessage(running.id, 'go')
    env.mock.addAssistantMessage(running.id, { text: 'partial', completed: false })
    const noReply = env.mock.createSession({ metadata: goalMetadata() })
    const sessions = [trailingUser, running, noReply]
    const messageReads = (s) => env.mock.requests.filter((r) => r.method === 'GET' && r.path === '/session/' + s.id + '/message').length
    // The reply is still running: OpenCode says busy (an unfinished reply on an idle session is a
    // turn cut by a restart, continued once; see provider-limits.test.mjs).
    env.mock.setStatus(running.id, 'busy')
    for (const s of [trailingUser, noReply]) env.mock.setStatus(s.id, 'idle')
    await sleep(600)
    // Inside the quiet window nobody has looked yet.
    expect(sessions.map(messageReads)).toEqual([0, 0, 0])
    // Past the window each tick reads the conversation, and still does nothing: not in the
    // tick itself (waited out), nor in a tick re-armed for one more window (waited out too).
    await waitFor(() => [trailingUser, noReply].every((s) => messageReads(s) >= 1), 5000)
    await waitFor(() => env.runtime.snapshot().inFlight === 0, 5000)
    await sleep(1000 + 300)
    expect(auditor.calls).toHaveLength(0)
    // The trailing user message is a stranded one (idle past the window, unanswered): posted
    // again under its own id, never a continuation (goal/decide/strand_rules.rs); nothing for the
    // others.
    const stranded = env.mock.messages(trailingUser.id).at(-1).info.id
    expect(env.mock.sends().length).toBeGreaterThanOrEqual(1)
    expect(env.mock.sends().every((r) => r.path === `/session/${trailingUser.id}/prompt_async` && r.body.messageID === stranded)).toBe(true)
    expect(env.mock.prompts).toHaveLength(0)
    for (const s of sessions) expect(goalOf(env.mock, s.id).status).toBe('active')
  })

  it('idle for good with a reply that never came: posted again under its id 3 times, then blocked (never left active); an unfinished reply on an idle session is a cut turn, continued once', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, runtimeOptions: { idleQuietMs: 60 } })
    const trailingUser = sessionWithReply(env.mock)
    env.mock.addUserMessage(trailingUser.id, 'one more thing')
    const running = env.mock.createSession({ metadata: goalMetadata() })
    env.mock.addUserMessage(running.id, 'go')
    env.mock.addAssistantMessage(running.id, { text: 'partial', completed: false })
    // The continuation of the cut turn starts its turn, which keeps running.
    env.mock.scriptReplies(running.id, [{ text: 'still going', completed: false }])
    const noReply = env.mock.createSession({ metadata: goalMetadata() })
    for (const s of [trailingUser, running, noReply]) env.mock.setStatus(s.id, 'idle')
    await waitFor(() => goalOf(env.mock, trailingUser.id).status === 'blocked' && env.mock.prompts.length === 1, 6000)
    expect(goalOf(env.mock, trailingUser.id)).toMatchObject({ statusReason: 'message never answered', cause: { code: 'dispatchFailed' } })
    const stranded = env.mock.messages(trailingUser.id).at(-1).info.id
    expect(env.mock.sends(trailingUser.id).map((r) => r.body.messageID)).toEqual([stranded, stranded, stranded])
    // The cut reply got one continuation (not an audit), and the goal is not settled.
    await sleep(300)
    expect(env.mock.prompts.map((p) => p.sessionId)).toEqual([running.id])
    expect(goalOf(env.mock, running.id)).toMatchObject({ status: 'active', cutTurns: 1, turnsUsed: 1 })
    // A goal that waits for the user's first exchange stays active.
    expect(goalOf(env.mock, noReply.id).status).toBe('active')
    expect(auditor.calls).toHaveLength(0)
  })
})

describe('terminal conditions', () => {
  it('aborted tail pauses (tick path), without notification', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), forward: false })
    const session = sessionWithReply(env.mock, { reply: { error: { name: 'MessageAbortedError', data: { message: 'Aborted' } } } })
    env.runtime.processPayload(idle(session), '/tmp/project')
    await waitFor(() => goalOf(env.mock, session.id).status === 'paused')
    expect(goalOf(env.mock, session.id).statusReason).toBe('paused after abort')
    await sleep(100)
    expect(env.notifications).toHaveLength(0)
  })

  it('an assistant error blocks with its name', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock, { reply: { error: { name: 'APIError', data: { message: 'boom' } } } })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked')
    expect(goalOf(env.mock, session.id)).toMatchObject({ statusReason: 'APIError', cause: { code: 'turnFailed', detail: 'APIError: boom' } })
    expect(auditor.calls).toHaveLength(0)
    expect(env.mock.prompts).toHaveLength(0)
  })

  it('budget reached → budgetLimited with the counted tokens (reasoning and cache writes included)', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionWithReply(env.mock, {
      goal: { tokenBudget: 1000, createdAt: Date.now() - 60_000 },
      reply: { tokens: { input: 600, output: 200, reasoning: 150, cache: { read: 40, write: 30 } } },
    })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'budgetLimited')
    const goal = goalOf(env.mock, session.id)
    expect(goal.tokensUsed).toBe(1020)
    expect(goal.statusReason).toBe('token budget reached')
    await waitFor(() => env.notifications.length === 1)
    expect(env.notifications[0].title).toBe('Goal reached its token budget')
  })

  it('a blocked or budgetLimited notification body ends with the cause\'s fix, within 240 characters; a complete one has none', async () => {
    const auditor = scriptedAuditor([{ verdict: 'complete', note: 'all tests pass' }])
    env = await setup({ auditor })
    const long = 'Make the parser handle nested lists, '.repeat(10)
    const budget = sessionWithReply(env.mock, { goal: { objective: long, tokenBudget: 1000, createdAt: Date.now() - 60_000 }, reply: { tokens: { input: 5000 } } })
    const failed = sessionWithReply(env.mock, { goal: { objective: 'Ship it' }, reply: { error: { name: 'UnknownError', data: { message: 'boom' } } } })
    const done = sessionWithReply(env.mock, { goal: { objective: 'Ship it' } })
    for (const s of [budget, failed, done]) env.mock.setStatus(s.id, 'idle')
    await waitFor(() => env.notifications.length === 3, 8000)
    const of = (s) => env.notifications.find((n) => n.sessionId === s.id)
    for (const s of [budget, failed]) {
      const { body, cause } = of(s)
      expect(cause.fix, s.id).toContain(`session-goal resume ${s.id}`)
      expect(body.endsWith(cause.fix), body).toBe(true)
      expect([...body].length).toBeLessThanOrEqual(240)
    }
    // The long objective gave way to the fix; the short one is kept whole.
    expect(of(budget).body.startsWith('Make the parser handle nested lists')).toBe(true)
    expect(of(failed).body).toBe(`Ship it — UnknownError — ${of(failed).cause.fix}`)
    expect(of(done).body).toBe('Ship it — all tests pass')
  })

  it('the configurable turn cap blocks, and the prompt prints the configured cap', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { maxAutoTurns: 2 } })
    const session = sessionWithReply(env.mock)
    env.mock.scriptReplies(session.id, [{ text: 'more progress', tokens: { input: 10 } }])
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked', 8000)
    expect(goalOf(env.mock, session.id).statusReason).toBe('auto-continuation limit reached')
    expect(env.mock.prompts).toHaveLength(2)
    expect(env.mock.prompts[0].body.parts[0].text).toContain('Auto-continuations used: 1 of 2.')
    expect(env.mock.prompts[1].body.parts[0].text).toContain('Auto-continuations used: 2 of 2.')
  })

  it('length truncation: one continuation without audit, a second consecutive one blocks', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock, { reply: { text: '', finish: 'length', parts: [{ type: 'reasoning', text: 'thinking…' }] } })
    env.mock.scriptReplies(session.id, [{ text: '', error: { name: 'MessageOutputLengthError', data: {} } }])
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked', 6000)
    expect(goalOf(env.mock, session.id).statusReason).toBe('repeated output truncation')
    expect(env.mock.prompts).toHaveLength(1)
    expect(auditor.calls).toHaveLength(0)
  })

  it('compaction summary: continue without audit, with the pre-summary model and variant', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock, { reply: { variant: 'high', agent: 'plan' } })
    env.mock.addAssistantMessage(session.id, { text: 'summary', summary: true, agent: 'compaction', modelID: 'summarizer' })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1)
    expect(auditor.calls).toHaveLength(0)
    expect(env.mock.prompts[0].body).toMatchObject({ model: { providerID: 'mock', modelID: 'mock-model' }, agent: 'plan', variant: 'high' })
  })
})

describe('audit outcomes', () => {
  it('three blocked verdicts in a row settle blocked with the note', async () => {
    const auditor = scriptedAuditor([{ verdict: 'blocked', note: 'needs the API key from the user' }])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock)
    env.mock.scriptReplies(session.id, [{ text: 'still blocked on the key' }])
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked', 8000)
    const goal = goalOf(env.mock, session.id)
    expect(goal.statusReason).toBe('needs the API key from the user')
    expect(env.mock.prompts).toHaveLength(2)
    expect(goal.blockedStreak).toBe(0)
  })

  it('auditor unavailable twice → blocked "progress audit unavailable" (one unaudited continuation)', async () => {
    const auditor = scriptedAuditor([() => ({ error: { statusCode: 500 } })])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock)
    env.mock.scriptReplies(session.id, [{ text: 'progress' }])
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked', 8000)
    expect(goalOf(env.mock, session.id).statusReason).toBe('progress audit unavailable')
    expect(env.mock.prompts).toHaveLength(1)
  })

  it('garbage, throwing and 404 auditors all count as unavailable; a fenced JSON answer parses', async () => {
    const throwing = scriptedAuditor([new Error('boom')])
    env = await setup({ auditor: throwing })
    const a = sessionWithReply(env.mock)
    env.mock.scriptReplies(a.id, [{ text: 'x' }])
    env.mock.setStatus(a.id, 'idle')
    await waitFor(() => goalOf(env.mock, a.id).status === 'blocked', 8000)
    await env.cleanup()
    const fenced = scriptedAuditor(['Here you go:\n```json\n{"verdict": "Complete", "note": "ok",}\n```', '```json\n{"verdict":"complete","note":"verified"}\n```'])
    env = await setup({ auditor: fenced })
    const b = sessionWithReply(env.mock)
    env.mock.scriptReplies(b.id, [{ text: 'x' }])
    env.mock.setStatus(b.id, 'idle')
    await waitFor(() => goalOf(env.mock, b.id).status === 'complete', 8000)
    // First answer had a trailing comma (unparseable → unaudited continuation), second parsed.
    expect(env.mock.prompts).toHaveLength(1)
    expect(goalOf(env.mock, b.id).note).toBe('verified')
  })

  it('a note in a script the conversation never used is dropped, the verdict kept', async () => {
    const auditor = scriptedAuditor([{ verdict: 'continue', note: '계속 진행 중입니다' }])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock, { goal: { objective: 'パーサーを完成させる', note: 'old note' } })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1)
    const goal = goalOf(env.mock, session.id)
    expect(goal.note).toBe('old note')
    expect(goal.turnsUsed).toBe(1)
  })
})
