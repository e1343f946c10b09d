// The reviewer against the mock OpenCode over real HTTP with the built addon: a goal with
// `review` opens a read-only child session of its own session before it settles complete, judges
// the reviewer's JSON answer (its cited files looked up through GET /file), and settles
// `reviewApproved`, continues with the findings quoted, or settles `reviewUnavailable` after one
// retry. See docs/review.md.
import { afterEach, describe, expect, it } from 'vitest'
import { goalOf, scriptedAuditor, sessionWithReply, setup, sleep, waitFor } from './helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const DIR = '/tmp/review-project'
const WRITING_TOOLS = ['edit', 'write', 'patch', 'bash', 'task', 'todowrite', 'webfetch', 'question']
const READING_ONLY = { '*': false, read: true, grep: true, glob: true, list: true }
const bash = (command, exit) => ({
  type: 'tool',
  tool: 'bash',
  state: { status: 'completed', input: { command, description: 'run' }, output: '', title: command, metadata: { exit, output: '', description: 'run' }, time: { start: 1, end: 2 } },
})
const criterion = (id, text) => ({ id, text, source: 'user', state: 'unmet' })
const completeAudit = { verdict: 'complete', note: 'the work is done', criteria: [{ id: 'c1', state: 'met', evidence: ['e1'] }] }
const approve = (evidence = ['src/parse.js:12', 'e1']) => ({
  text: `I read the parser.\n${JSON.stringify({ verdict: 'approve', note: 'nesting handled', criteria: [{ id: 'c1', state: 'met', evidence }], findings: [] })}`,
})
const reject = (...findings) => ({
  text: JSON.stringify({ verdict: 'reject', note: 'not yet', criteria: [{ id: 'c1', state: 'met', evidence: ['src/parse.js:3'] }], findings }),
})

/** A runtime on the mock whose auditor always says complete (criterion c1 met by e1). */
async function start({ tunables = {}, auditor = scriptedAuditor([completeAudit]) } = {}) {
  env = await setup({ auditor, runtimeOptions: { tunables: { reviewTimeoutMs: 400, ...tunables } } })
  env.mock.setFiles(DIR, ['src/parse.js', 'test/parse.test.js', 'README.md'])
  return env
}

/** An idle session whose goal asks for review (unless `goal.review` says otherwise), one finished reply that ran the tests. */
function reviewedGoal(mock, goal = {}) {
  const session = sessionWithReply(mock, {
    directory: DIR,
    goal: { criteria: [criterion('c1', 'The parser handles nested lists')], criteriaIssued: 1, review: true, ...goal },
    reply: { parts: [bash('npm test', 0)] },
  })
  mock.setStatus(session.id, 'idle')
  return session
}

const childCreations = (mock, parentID) => mock.requests.filter((r) => r.method === 'POST' && r.path === '/session' && r.body?.parentID === parentID)
const childPrompts = (mock, childIds) => mock.prompts.filter((p) => childIds.includes(p.sessionId))
const childrenOf = (mock, parentID) => mock.sessions().filter((s) => s.parentID === parentID)
const textOf = (prompt) => prompt.body.parts.map((p) => p.text ?? '').join('\n')

describe('a reviewer signs off before complete', () => {
  it('approve: a read-only child session on the goal model cites an existing file; the goal settles reviewApproved and counts its cost', async () => {
    const { mock, runtime } = await start()
    mock.scriptChildren([{ ...approve(), cost: 0.25 }])
    const session = reviewedGoal(mock)

    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10000)
    const goal = goalOf(mock, session.id)
    const [child] = childrenOf(mock, session.id)
    expect(goal.cause).toMatchObject({ code: 'reviewApproved', detail: child.id })
    expect(goal.statusReason).toBe('approved by review')
    expect(goal.note).toBe('1/1 criteria met · review: approved')
    expect(goal.costUsed).toBeCloseTo(0.25)
    // At the wire: one child session of the goal's session, one prompt to it.
    expect(childCreations(mock, session.id)).toHaveLength(1)
    expect(child.title).toMatch(/^Goal review msg_/)
    const [prompt] = childPrompts(mock, [child.id])
    // Every tool closed by the wildcard, the reading ones opened again (key order: review-body.test.mjs).
    expect(prompt.body.tools).toEqual(READING_ONLY)
    for (const tool of WRITING_TOOLS) expect(prompt.body.tools[tool], tool).toBeUndefined()
    expect(prompt.body.model).toEqual({ providerID: 'mock', modelID: 'mock-model' })
    // The prompt holds the objective, the criterion and the evidence item as data.
    expect(textOf(prompt)).toContain('<criteria>\n[c1] The parser handles nested lists\n</criteria>')
    expect(textOf(prompt)).toMatch(/\[e1\] \{.*npm test/)
    // The cited file was looked up in its directory's listing; the goal's session got no continuation.
    expect(mock.requests.some((r) => r.path === '/file' && r.query.path === 'src')).toBe(true)
    expect(mock.prompts.filter((p) => p.sessionId === session.id)).toHaveLength(0)
    const report = await runtime.explain(session.id)
    expect(report.review).toBe(true)
    expect(report.lastReview).toMatchObject({ sessionId: child.id, verdict: 'approved', findings: [], cited: [{ path: 'src/parse.js', exists: true }] })
    const reviews = (await runtime.history(session.id)).filter((r) => r.action === 'review')
    expect(reviews.map((r) => r.reason)).toEqual(['approved'])
  })

  it('reject then approve: the continuation quotes the findings as data, the reviewer runs again at the next complete', async () => {
    const { mock, runtime } = await start()
    mock.scriptChildren([reject('No test covers an empty </review-findings> list', 'README not updated'), approve(['test/parse.test.js:4'])])
    const session = reviewedGoal(mock)
    mock.scriptReplies(session.id, [{ text: 'Added the test.', parts: [bash('npm test', 0)] }])

    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 15000)
    const [continuation] = mock.prompts.filter((p) => p.sessionId === session.id)
    const text = textOf(continuation)
    expect(text).toContain('<review-findings>\n- No test covers an empty &lt;/review-findings&gt; list\n- README not updated\n</review-findings>')
    expect(text.split('</review-findings>')).toHaveLength(2)
    expect(childCreations(mock, session.id)).toHaveLength(2)
    const goal = goalOf(mock, session.id)
    expect(goal.cause.code).toBe('reviewApproved')
    expect(goal.turnsUsed).toBe(1)
    const reviews = (await runtime.history(session.id)).filter((r) => r.action === 'review')
    expect(reviews.map((r) => r.reason)).toEqual(['rejected', 'approved'])
    expect(reviews[0].review.findings[0]).toBe('No test covers an empty </review-findings> list')
  })

  it('the note after a rejection names the first finding; the goal stays active', async () => {
    const { mock, runtime } = await start()
    mock.scriptChildren([reject('No test covers empty lists')])
    const session = reviewedGoal(mock)

    await waitFor(() => mock.prompts.some((p) => p.sessionId === session.id), 10000)
    await waitFor(() => goalOf(mock, session.id)?.turnsUsed === 1)
    const goal = goalOf(mock, session.id)
    expect(goal.status).toBe('active')
    expect(goal.note).toBe('1/1 criteria met · review: rejected — No test covers empty lists')
    const report = await runtime.explain(session.id)
    expect(report.lastReview).toMatchObject({ verdict: 'rejected', findings: ['No test covers empty lists'] })
  })

  it('a citation of a missing file makes its criterion unclear: no completion, the continuation says which citation failed', async () => {
    const { mock, runtime } = await start()
    mock.scriptChildren([approve(['src/ghost.js:3'])])
    const session = reviewedGoal(mock)

    await waitFor(() => mock.prompts.some((p) => p.sessionId === session.id), 10000)
    await waitFor(() => goalOf(mock, session.id)?.turnsUsed === 1)
    const goal = goalOf(mock, session.id)
    expect(goal.status).toBe('active')
    expect(goal.criteria[0].state).toBe('unclear')
    const text = textOf(mock.prompts.find((p) => p.sessionId === session.id))
    expect(text).toContain('[c1] cites src/ghost.js:3 which does not check out')
    expect(text).toContain('<open-criteria>\n[c1] The parser handles nested lists\n</open-criteria>')
    expect(mock.requests.some((r) => r.path === '/file' && r.query.path === 'src')).toBe(true)
    const report = await runtime.explain(session.id)
    expect(report.lastReview.cited).toEqual([{ path: 'src/ghost.js', exists: false }])
    // No reply to the continuation: the goal never completed.
    await sleep(300)
    expect(goalOf(mock, session.id).status).toBe('active')
  })

  it('a reviewer that never answers is aborted, asked once more, then the goal settles blocked with reviewUnavailable', async () => {
    const { mock, runtime } = await start({ tunables: { reviewTimeoutMs: 300 } })
    mock.scriptChildren([{ completed: false }])
    const session = reviewedGoal(mock)

    await waitFor(() => goalOf(mock, session.id)?.status === 'blocked', 10000)
    const goal = goalOf(mock, session.id)
    const children = childrenOf(mock, session.id).map((c) => c.id)
    expect(children).toHaveLength(1)
    expect(childPrompts(mock, children)).toHaveLength(2)
    expect(mock.aborts.filter((id) => id === children[0])).toHaveLength(2)
    expect(goal.cause).toMatchObject({ code: 'reviewUnavailable', detail: 'timed out' })
    expect(goal.cause.fix).toContain(`session-goal resume ${session.id}`)
    expect(goal.statusReason).toBe('review unavailable')
    expect((await runtime.explain(session.id)).lastReview.verdict).toBe('unavailable')
  })

  it('a reviewer that answers garbage is asked once more to answer in JSON, then the goal settles blocked with reviewUnavailable', async () => {
    const { mock } = await start()
    mock.scriptChildren([{ text: 'Looks good to me!' }])
    const session = reviewedGoal(mock)

    await waitFor(() => goalOf(mock, session.id)?.status === 'blocked', 10000)
    const children = childrenOf(mock, session.id).map((c) => c.id)
    const prompts = childPrompts(mock, children)
    expect(prompts).toHaveLength(2)
    expect(textOf(prompts[1])).toContain('could not be read')
    expect(prompts[1].body.tools).toEqual(READING_ONLY)
    expect(goalOf(mock, session.id).cause).toMatchObject({ code: 'reviewUnavailable', detail: 'reply not readable' })
  })

  it('a garbage answer then a readable one: the retry is used', async () => {
    const { mock } = await start()
    mock.scriptChildren([{ text: 'Looks good to me!' }, approve()])
    const session = reviewedGoal(mock)

    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10000)
    expect(goalOf(mock, session.id).cause.code).toBe('reviewApproved')
    expect(childCreations(mock, session.id)).toHaveLength(1)
  })

  it('review is off by default: no child session, no file listing, the goal completes on the audit', async () => {
    const { mock, runtime } = await start()
    mock.scriptChildren([approve()])
    const session = reviewedGoal(mock, { review: undefined })

    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10000)
    expect(goalOf(mock, session.id).cause.code).toBe('verified')
    expect(mock.requests.filter((r) => r.method === 'POST' && r.path === '/session')).toHaveLength(0)
    expect(mock.requests.filter((r) => r.path === '/file')).toHaveLength(0)
    const report = await runtime.explain(session.id)
    expect(report.review).toBeNull()
    expect(report.lastReview).toBeNull()
  })

  it('review: false is off too; an unreadable review value asks for a review (never completes unreviewed)', async () => {
    const { mock } = await start()
    mock.scriptChildren([approve()])
    const off = reviewedGoal(mock, { review: false })
    await waitFor(() => goalOf(mock, off.id)?.status === 'complete', 10000)
    expect(goalOf(mock, off.id).cause.code).toBe('verified')
    const odd = reviewedGoal(mock, { review: 'yes please' })
    await waitFor(() => goalOf(mock, odd.id)?.status === 'complete', 10000)
    expect(goalOf(mock, odd.id).cause.code).toBe('reviewApproved')
    expect(goalOf(mock, odd.id).review).toBe('yes please')
  })

  it('review.model and review.agent choose the reviewer', async () => {
    const { mock } = await start()
    mock.scriptChildren([approve()])
    const session = reviewedGoal(mock, { review: { agent: 'plan', model: 'mock/reviewer-model' } })

    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10000)
    const [prompt] = childPrompts(mock, childrenOf(mock, session.id).map((c) => c.id))
    expect(prompt.body.model).toEqual({ providerID: 'mock', modelID: 'reviewer-model' })
    expect(prompt.body.agent).toBe('plan')
  })

  it("the reviewer's cost reaches the cost budget: a rejection that spends it settles budgetLimited instead of continuing", async () => {
    const { mock } = await start()
    mock.scriptChildren([{ ...reject('Missing tests'), cost: 1.5 }])
    const session = reviewedGoal(mock, { costBudget: 1 })

    await waitFor(() => goalOf(mock, session.id)?.status === 'budgetLimited', 10000)
    const goal = goalOf(mock, session.id)
    expect(goal.cause.code).toBe('costBudget')
    expect(goal.costUsed).toBeCloseTo(1.5)
    expect(mock.prompts.filter((p) => p.sessionId === session.id)).toHaveLength(0)
  })
})

describe('the review setting', () => {
  it('createSessionGoal, editGoal and createSession take review; a bad value is refused naming the field; clearReview turns it off', async () => {
    const { mock } = await start()
    const { pkg } = await import('./helpers.mjs')
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, dataDir: env.dataDir })
    const session = mock.createSession({ directory: DIR })
    for (const review of ['yes', 1, { model: 'no-slash' }, { agent: 5 }, { reviewer: 'x' }]) {
      const error = await control.createSessionGoal({ sessionId: session.id, objective: 'x', review }).catch((e) => e)
      expect(error?.statusCode, JSON.stringify(review)).toBe(400)
      expect(error.message).toContain('review')
    }
    expect(goalOf(mock, session.id)).toBeUndefined()
    const made = await control.createSessionGoal({ sessionId: session.id, objective: 'x', review: true })
    expect(made.goal.review).toBe(true)
    expect(goalOf(mock, session.id).review).toBe(true)
    const edited = await control.editGoal({ sessionId: session.id, review: { agent: 'plan', model: 'mock/big' } })
    expect(edited.goal.review).toEqual({ agent: 'plan', model: 'mock/big' })
    const both = await control.editGoal({ sessionId: session.id, review: true, clearReview: true }).catch((e) => e)
    expect(both.statusCode).toBe(400)
    const cleared = await control.editGoal({ sessionId: session.id, clearReview: true })
    expect(cleared.goal.review).toBeUndefined()
    expect(goalOf(mock, session.id).review).toBeUndefined()
    const off = await control.editGoal({ sessionId: session.id, review: false })
    expect(off.goal.review).toBeUndefined()
    expect(goalOf(mock, session.id).review).toBe(false)
    const created = await control.createSession({ directory: DIR, prompt: 'Port the parser', goal: { review: true } })
    expect(goalOf(mock, created.sessionId).review).toBe(true)
  })

  it('the CLI: --goal-review needs --goal and writes review: true', async () => {
    const { runCli } = await import('./control-helpers.mjs')
    const { tempDataDir } = await import('./helpers.mjs')
    const { mock } = await start()
    const common = ['--url', mock.url, '--directory', DIR, '--data-dir', tempDataDir()]
    const usage = await runCli(['create', ...common, '--prompt', 'x', '--goal-review'])
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('--goal-review requires --goal.')
    const made = await runCli(['create', ...common, '--prompt', 'Port the parser', '--goal', '--goal-review'])
    expect(made.code, made.stderr).toBe(0)
    const created = mock.sessions().find((s) => s.metadata?.openchamber?.goal)
    expect(goalOf(mock, created.id).review).toBe(true)
  })
})
