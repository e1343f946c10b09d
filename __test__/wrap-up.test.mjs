// The wrap-up turn against the mock OpenCode (docs/verdicts.md, "The wrap-up turn"): a goal
// whose own recent turns say the next one would cross its token, cost or time budget gets one
// handoff turn in its place (for the turn cap, the last allowed turn is the handoff); its reply
// settles the goal with today's status and cause, the handoff's start as the note and in the
// notification, the whole of it and the changed files in the history. Never after a pause, an
// abort, `complete` or `blocked`, never twice, never while the provider is parked; a restart
// between the wrap-up and its reply neither repeats nor loses it; `wrapUp: false` turns it off.
// Every count of posts is taken at the wire (`mock.sends`).
import { afterEach, describe, expect, it } from 'vitest'
import { pkg, setup, scriptedAuditor, goalMetadata, goalOf, waitFor, sleep, tempDataDir, startScanRead } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'
import { startHostProcess } from './host-process.mjs'
import { runCli } from './control-helpers.mjs'

const { createSessionGoalControl } = pkg

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const continueVerdict = { verdict: 'continue', note: 'more to do' }
const WRAP_UP_LEAD = 'Wrap up the session goal that is currently active'
const HANDOFF = [
  '## Done',
  '- The parser handles nested lists (src/parser.js; `npm test` passed, 14 tests).',
  '## Verified',
  '- Ran `npm test`.',
  '## Remaining',
  '- Empty lists.',
  '## Next step',
  '- Add a test for empty lists.',
].join('\n')
const handoffReply = (extra = {}) => ({ text: HANDOFF, tokens: { input: 4000, output: 300 }, ...extra })

/** The text of every prompt the session was sent (accepted ones), in order. */
const promptTexts = (mock, sessionId) =>
  mock.prompts.filter((p) => p.sessionId === sessionId).map((p) => (p.body.parts ?? []).map((part) => part.text ?? '').join(''))
const wrapUps = (mock, sessionId) => promptTexts(mock, sessionId).filter((text) => text.startsWith(WRAP_UP_LEAD))

/**
 * A session whose goal (`goal`) began a minute ago, with its first prompt and one finished reply
 * of `context` tokens costing `cost` dollars, idle.
 */
function sessionAfterOneTurn(mock, goal, { context = 10_000, cost = 0 } = {}) {
  const began = Date.now() - 60_000
  const session = mock.createSession({ directory: '/tmp/project', metadata: goalMetadata({ createdAt: began, ...goal }) })
  mock.addUserMessage(session.id, 'Please make the parser handle nested lists', { created: began + 1000 })
  mock.addAssistantMessage(session.id, {
    text: 'Skeleton in place. Remaining: nesting.',
    cost,
    created: began + 2000,
    completed: began + 3000,
    tokens: { input: context - 500, output: 500 },
  })
  mock.setDiff(session.id, [
    { file: 'src/parser.js', patch: '@@', additions: 40, deletions: 2, status: 'modified' },
    { file: 'test/parser.test.js', patch: '@@', additions: 20, deletions: 0, status: 'added' },
  ])
  return session
}

/**
 * Waits for the goal to leave `active` and returns it with the history record of its settle (the
 * audit's own record of the same tick is appended beside it, in either order).
 */
async function settled(env, sessionId, timeoutMs = 8000) {
  await waitFor(() => goalOf(env.mock, sessionId)?.status !== 'active', timeoutMs)
  const goal = goalOf(env.mock, sessionId)
  const history = await env.runtime.history(sessionId)
  return { goal, last: history.filter((record) => record.action === goal.status).at(-1), history }
}

/** The checks every limit's handoff passes: one wrap-up at the wire, the handoff everywhere. */
async function expectHandoff(env, sessionId, { status, reason, code, title }) {
  const { goal, last } = await settled(env, sessionId)
  expect(goal).toMatchObject({ status, statusReason: reason, cause: { code } })
  expect(env.mock.sends(sessionId)).toHaveLength(1)
  expect(wrapUps(env.mock, sessionId)).toHaveLength(1)
  expect(goal.note.startsWith('Handoff: Done The parser handles nested lists (src/parser.js;')).toBe(true)
  expect(goal.note.length).toBeLessThanOrEqual(280)
  expect(goal.wrappedUp).toMatchObject({ cause: code })
  expect(last).toMatchObject({ action: status, reason, wrapUp: code, handoff: HANDOFF, changedFiles: ['src/parser.js', 'test/parser.test.js'] })
  await waitFor(() => env.notifications.length === 1)
  expect(env.notifications[0].title).toBe(title)
  expect(env.notifications[0].body).toContain('Handoff: Done The parser handles nested lists')
  return goal
}

describe('one wrap-up turn in place of the turn that would cross a limit', () => {
  it('tokens: a turn of 10,000 with 20,000 left (12,500 forecast, two do not fit) is the wrap-up; its reply settles budgetLimited with the handoff', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const session = sessionAfterOneTurn(env.mock, { tokenBudget: 30_000 })
    env.mock.scriptReplies(session.id, [handoffReply()])
    env.mock.setStatus(session.id, 'idle')
    const goal = await expectHandoff(env, session.id, { status: 'budgetLimited', reason: 'token budget reached', code: 'tokenBudget', title: 'Goal reached its token budget' })
    const [prompt] = wrapUps(env.mock, session.id)
    expect(prompt).toContain('Start no new work.')
    expect(prompt).toContain('Tokens used: 10000 of the budget of 30000.')
    expect(goal.tokensUsed).toBeLessThanOrEqual(30_000)
    expect(goal.turnsUsed).toBe(1)
    // The wrap-up's reply is not audited: the one audit judged the turn before it.
    expect(auditor.calls).toHaveLength(1)
  })

  it('cost: $0.30 a turn with $0.70 left is the wrap-up; it settles budgetLimited / costBudget', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionAfterOneTurn(env.mock, { costBudget: 1 }, { cost: 0.3 })
    env.mock.scriptReplies(session.id, [handoffReply({ cost: 0.25 })])
    env.mock.setStatus(session.id, 'idle')
    const goal = await expectHandoff(env, session.id, { status: 'budgetLimited', reason: 'cost budget reached', code: 'costBudget', title: 'Goal reached its cost budget' })
    expect(goal.costUsed).toBeCloseTo(0.55, 9)
    expect(wrapUps(env.mock, session.id)[0]).toContain('Cost so far: $0.30 of the budget of $1.00.')
  })

  it('time: a turn of about a minute with two minutes left is the wrap-up; it settles budgetLimited / timeBudget', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionAfterOneTurn(env.mock, { timeBudgetMs: 180_000 })
    env.mock.scriptReplies(session.id, [handoffReply()])
    env.mock.setStatus(session.id, 'idle')
    await expectHandoff(env, session.id, { status: 'budgetLimited', reason: 'time budget reached', code: 'timeBudget', title: 'Goal reached its time budget' })
    expect(wrapUps(env.mock, session.id)[0]).toContain('of the budget of 3 min.')
  })

  it('turn cap: the last allowed turn is the wrap-up; it settles blocked / turnCap as the cap does', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { maxAutoTurns: 2 } })
    const session = sessionAfterOneTurn(env.mock, { turnsUsed: 1 })
    env.mock.scriptReplies(session.id, [handoffReply()])
    env.mock.setStatus(session.id, 'idle')
    const goal = await expectHandoff(env, session.id, { status: 'blocked', reason: 'auto-continuation limit reached', code: 'turnCap', title: 'Goal blocked' })
    expect(goal.turnsUsed).toBe(2)
    expect(wrapUps(env.mock, session.id)[0]).toContain('Auto-continuations used: 2 of 2.')
  })

  it('no room even for the wrap-up: the goal stops before the limit, nothing posted, and the note and history say why', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const session = sessionAfterOneTurn(env.mock, { tokenBudget: 20_000 })
    env.mock.setStatus(session.id, 'idle')
    const { goal, last } = await settled(env, session.id)
    expect(goal).toMatchObject({ status: 'budgetLimited', statusReason: 'token budget reached', cause: { code: 'tokenBudget' } })
    expect(goal.note).toBe('Stopped before the token budget: 10,000 tokens left, and a turn takes about 12,500.')
    expect(last.noRoomForWrapUp).toBe('10,000 tokens left, and a turn takes about 12,500')
    await sleep(300)
    expect(env.mock.sends(session.id)).toHaveLength(0)
    expect(goal.tokensUsed).toBeLessThanOrEqual(20_000)
  })

  it('a reply with no text and an error still settles; the note says how the wrap-up ended', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionAfterOneTurn(env.mock, { tokenBudget: 30_000 })
    env.mock.scriptReplies(session.id, [{ text: '', error: { name: 'UnknownError', data: { message: 'boom' } } }])
    env.mock.setStatus(session.id, 'idle')
    const { goal, last } = await settled(env, session.id)
    expect(goal).toMatchObject({ status: 'budgetLimited', note: 'Handoff: the wrap-up turn ended with UnknownError and no handoff.' })
    expect(last).toMatchObject({ wrapUp: 'tokenBudget', handoff: '' })
    await sleep(300)
    expect(env.mock.sends(session.id)).toHaveLength(1)
  })
})

/** A goal near its token budget whose wrap-up was posted and runs (its reply never finishes). */
async function wrapUpRunning(env) {
  const session = sessionAfterOneTurn(env.mock, { tokenBudget: 30_000 })
  env.mock.scriptReplies(session.id, [handoffReply({ completed: false })])
  env.mock.setStatus(session.id, 'idle')
  await waitFor(() => wrapUps(env.mock, session.id).length === 1, 8000)
  await waitFor(() => env.mock.status(session.id).type === 'busy')
  return session
}

describe('never where it does not belong', () => {
  it('a pause while the wrap-up runs aborts it: the goal stays paused, nothing more is posted', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = await wrapUpRunning(env)
    const control = createSessionGoalControl({ openCode: { baseUrl: env.mock.url }, dataDir: env.dataDir })
    await control.pauseGoal({ sessionId: session.id })
    expect(env.mock.aborts).toContain(session.id)
    await sleep(1000)
    expect(goalOf(env.mock, session.id).status).toBe('paused')
    expect(env.mock.sends(session.id)).toHaveLength(1)
    expect(env.notifications).toHaveLength(0)
  })

  it("a user's abort of the wrap-up pauses the goal, as any abort does; no second wrap-up", async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = await wrapUpRunning(env)
    // The person presses stop in OpenCode's own UI: the abort does not come from the runtime.
    await fetch(`${env.mock.url}/session/${session.id}/abort?directory=/tmp/project`, { method: 'POST' })
    await waitFor(() => goalOf(env.mock, session.id)?.status === 'paused', 8000)
    await sleep(800)
    expect(goalOf(env.mock, session.id).status).toBe('paused')
    expect(env.mock.sends(session.id)).toHaveLength(1)
  })

  it('a paused goal near its limit gets no wrap-up', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionAfterOneTurn(env.mock, { tokenBudget: 30_000, status: 'paused', statusReason: 'paused by user' })
    env.mock.setStatus(session.id, 'idle')
    await sleep(1200)
    expect(env.mock.sends(session.id)).toHaveLength(0)
    expect(goalOf(env.mock, session.id).status).toBe('paused')
  })

  it('complete and blocked verdicts near a limit settle as they say, with no wrap-up', async () => {
    for (const [verdict, status] of [
      [{ verdict: 'complete', note: 'all done: tests pass' }, 'complete'],
      [{ verdict: 'blocked', note: 'needs the API key' }, 'blocked'],
    ]) {
      env = await setup({ auditor: scriptedAuditor([verdict]) })
      // Two blocked verdicts before: this third one in a row settles the goal blocked.
      const session = sessionAfterOneTurn(env.mock, { tokenBudget: 30_000, blockedStreak: 2 })
      env.mock.scriptReplies(session.id, [handoffReply()])
      env.mock.setStatus(session.id, 'idle')
      const { goal } = await settled(env, session.id)
      expect(goal.status, status).toBe(status)
      await sleep(300)
      expect(env.mock.sends(session.id), status).toHaveLength(0)
      expect(goal.wrappedUp, status).toBeUndefined()
      await env.cleanup()
      env = undefined
    }
  })

  it('a parked provider gets no wrap-up while parked', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const began = Date.now() - 60_000
    const session = env.mock.createSession({ directory: '/tmp/project', metadata: goalMetadata({ createdAt: began, tokenBudget: 30_000 }) })
    env.mock.addUserMessage(session.id, 'Please make the parser handle nested lists', { created: began + 1000 })
    env.mock.addAssistantMessage(session.id, { text: 'Skeleton in place.', created: began + 2000, completed: began + 3000, tokens: { input: 9500, output: 500 } })
    env.mock.addUserMessage(session.id, 'Continue', { created: began + 4000 })
    const resetSeconds = 600
    env.mock.addAssistantMessage(session.id, {
      created: began + 5000,
      completed: began + 6000,
      tokens: { input: 0, output: 0 },
      stepParts: false,
      error: { name: 'APIError', data: { message: 'Provider answered 429', statusCode: 429, isRetryable: true, responseHeaders: { 'retry-after': String(resetSeconds) }, responseBody: '{"error":{"type":"rate_limit_exceeded"}}' } },
    })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id)?.cause?.code === 'waitingForProviderLimit', 8000)
    await sleep(800)
    expect(env.mock.sends(session.id)).toHaveLength(0)
    expect(goalOf(env.mock, session.id).wrappedUp).toBeUndefined()
    expect(goalOf(env.mock, session.id).status).toBe('active')
  })

  it('a resume with a raised budget goes on normally, and the later limit gets its own wrap-up', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionAfterOneTurn(env.mock, { tokenBudget: 30_000 })
    // Each reply adds 10,000 to the context: the wrap-up at 20,000, then after the raise (to
    // 80,000) normal turns to 30,000, 40,000, 50,000 and 60,000 (each leaving at least two turns
    // of 12,500), and the second wrap-up at 60,000 used (20,000 left).
    let context = 10_000
    const reply = ({ body }) => {
      context += 10_000
      const wrapUp = (body.parts ?? []).some((part) => part.text?.startsWith(WRAP_UP_LEAD))
      // A normal turn says something new each time (the no-progress breaker reads the replies).
      const text = wrapUp ? HANDOFF : `Step ${context / 10_000}: another part of the parser now handles nesting.`
      return { text, tokens: { input: context - 300, output: 300 } }
    }
    env.mock.scriptReplies(session.id, [reply])
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id)?.status === 'budgetLimited', 8000)
    expect(wrapUps(env.mock, session.id)).toHaveLength(1)
    const control = createSessionGoalControl({ openCode: { baseUrl: env.mock.url }, dataDir: env.dataDir })
    await control.editGoal({ sessionId: session.id, tokenBudget: 80_000 })
    await waitFor(() => env.mock.sends(session.id).length > 1, 5000)
    await waitFor(() => goalOf(env.mock, session.id)?.status === 'budgetLimited', 15_000)
    const goal = goalOf(env.mock, session.id)
    const texts = promptTexts(env.mock, session.id)
    expect(texts.map((t) => t.startsWith(WRAP_UP_LEAD))).toEqual([true, false, false, false, false, true])
    expect(goal.tokensUsed).toBe(70_000)
    expect(goal.note.startsWith('Handoff:')).toBe(true)
    const history = await env.runtime.history(session.id)
    expect(history.filter((record) => record.wrapUp)).toHaveLength(2)
  })

  it('wrapUp off: as a runtime option the goal stops cold at the limit; a goal setting wins over the host either way', async () => {
    // Host off, goal unset: the normal turn crosses the budget and settles as before.
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { wrapUp: false } })
    const cold = sessionAfterOneTurn(env.mock, { tokenBudget: 30_000 })
    const own = sessionAfterOneTurn(env.mock, { tokenBudget: 30_000, wrapUp: true })
    for (const session of [cold, own]) {
      env.mock.scriptReplies(session.id, [handoffReply({ tokens: { input: 30_000, output: 500 } })])
      env.mock.setStatus(session.id, 'idle')
    }
    await waitFor(() => goalOf(env.mock, cold.id)?.status === 'budgetLimited' && goalOf(env.mock, own.id)?.status === 'budgetLimited', 10_000)
    expect(wrapUps(env.mock, cold.id)).toHaveLength(0)
    expect(env.mock.sends(cold.id)).toHaveLength(1)
    expect(goalOf(env.mock, cold.id).note.startsWith('Handoff:')).toBe(false)
    expect(wrapUps(env.mock, own.id)).toHaveLength(1)
    await env.cleanup()
    // Host on (the default), the goal's own wrapUp: false.
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const off = sessionAfterOneTurn(env.mock, { tokenBudget: 30_000 })
    const control = createSessionGoalControl({ openCode: { baseUrl: env.mock.url }, dataDir: env.dataDir })
    await control.editGoal({ sessionId: off.id, wrapUp: false })
    expect(goalOf(env.mock, off.id).wrapUp).toBe(false)
    env.mock.scriptReplies(off.id, [handoffReply({ tokens: { input: 30_000, output: 500 } })])
    env.mock.setStatus(off.id, 'idle')
    await waitFor(() => goalOf(env.mock, off.id)?.status === 'budgetLimited', 10_000)
    expect(wrapUps(env.mock, off.id)).toHaveLength(0)
    await control.editGoal({ sessionId: off.id, clearWrapUp: true })
    expect(goalOf(env.mock, off.id).wrapUp).toBeUndefined()
  })
})

describe('the setting', () => {
  it('the CLI: --goal-no-wrap-up needs --goal and writes wrapUp: false; without it the goal has none (the host decides)', async () => {
    env = await setup({ forward: false })
    const common = ['--url', env.mock.url, '--directory', '/tmp/project', '--data-dir', tempDataDir()]
    const usage = await runCli(['create', ...common, '--prompt', 'x', '--goal-no-wrap-up'])
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('--goal-no-wrap-up requires --goal.')
    const off = await runCli(['create', ...common, '--prompt', 'Port the parser', '--goal', '--goal-no-wrap-up', '--json'])
    expect(off.code, off.stderr).toBe(0)
    const plain = await runCli(['create', ...common, '--prompt', 'Port the lexer', '--goal', '--json'])
    expect(plain.code, plain.stderr).toBe(0)
    const [offId, plainId] = [off, plain].map((run) => JSON.parse(run.stdout).sessionId)
    expect(goalOf(env.mock, offId).wrapUp).toBe(false)
    expect(goalOf(env.mock, plainId)).not.toHaveProperty('wrapUp')
  })
})

describe('a host restart between the wrap-up and its reply', () => {
  it('the successor, a new process at OpenChamber settings, settles after the reply: one wrap-up at the wire', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 10_000 })
    const hosts = []
    env = {
      mock,
      cleanup: async () => {
        mock.releaseGates()
        for (const host of hosts) await host.stop()
        await mock.close()
      },
    }
    const dataDir = tempDataDir()
    // The first turn ended 16 s ago: past the 15 s quiet window, so the host audits at once.
    const began = Date.now() - 76_000
    const session = mock.createSession({ directory: '/tmp/project', metadata: goalMetadata({ createdAt: began, tokenBudget: 30_000 }) })
    mock.addUserMessage(session.id, 'Please make the parser handle nested lists', { created: began + 1000 })
    mock.addAssistantMessage(session.id, { text: 'Skeleton in place. Remaining: nesting.', created: began + 2000, completed: began + 60_000, tokens: { input: 9500, output: 500 } })
    mock.setDiff(session.id, [{ file: 'src/parser.js', patch: '@@', additions: 40, deletions: 2, status: 'modified' }])
    mock.scriptReplies(session.id, [handoffReply()], { replyDelayMs: 3000 })
    hosts.push(await startHostProcess({ url: mock.url, dataDir }))
    await waitFor(() => wrapUps(mock, session.id).length === 1, 30_000, 20)
    hosts[0].kill()
    await hosts[0].kill()
    expect(goalOf(mock, session.id).wrappedUp).toBeDefined()
    hosts.push(await startHostProcess({ url: mock.url, dataDir }))
    await waitFor(() => goalOf(mock, session.id)?.status !== 'active', 60_000, 50)
    const goal = goalOf(mock, session.id)
    expect(goal).toMatchObject({ status: 'budgetLimited', statusReason: 'token budget reached' })
    expect(goal.note.startsWith('Handoff: Done The parser handles nested lists')).toBe(true)
    await sleep(1000)
    expect(mock.sends(session.id)).toHaveLength(1)
  }, 120_000)

  it('a wrap-up decided and not delivered (the post lost with its host) is posted as decided by the successor', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 10_000 })
    const runtimes = []
    const dataDir = tempDataDir()
    const auditor = scriptedAuditor([continueVerdict])
    const start = async () => {
      const before = mock.requests.filter((r) => r.path === '/experimental/session' && r.answered).length
      const runtime = pkg.createSessionGoalRuntime({
        openCode: { baseUrl: mock.url },
        settings: { dataDir },
        idleQuietMs: 150,
        kickoffQuietMs: 100,
        generateSmallModelText: auditor.service.generateSmallModelText,
      })
      runtimes.push(runtime)
      await startScanRead(mock, before)
      return runtime
    }
    env = {
      mock,
      cleanup: async () => {
        mock.releaseGates()
        mock.clearFaults()
        for (const runtime of runtimes) await runtime.stop()
        await mock.close()
      },
    }
    const session = sessionAfterOneTurn(mock, { tokenBudget: 30_000 })
    mock.scriptReplies(session.id, [handoffReply()])
    // The first post of the wrap-up never arrives: the request hangs and its host goes away.
    const lost = mock.fault({ method: 'POST', path: `/session/${session.id}/prompt_async`, hang: true, times: 1 })
    await start()
    await waitFor(() => mock.sends(session.id).length === 1, 8000)
    expect(lost.remaining).toBe(0)
    expect(goalOf(mock, session.id).wrappedUp).toBeDefined()
    await runtimes[0].stop()
    mock.releaseGates()
    await start()
    await waitFor(() => goalOf(mock, session.id)?.status === 'budgetLimited', 15_000)
    // Two requests at the wire (the first hung, never applied), one prompt accepted, both the
    // same wrap-up message.
    const sends = mock.sends(session.id)
    expect(sends).toHaveLength(2)
    expect(new Set(sends.map((s) => s.body.messageID)).size).toBe(1)
    expect(wrapUps(mock, session.id)).toHaveLength(1)
    expect(goalOf(mock, session.id).note.startsWith('Handoff:')).toBe(true)
  })
})
