// The cost budget against the mock OpenCode: `costUsed` sums the `info.cost` of the session's
// assistant messages since the goal began (compaction summaries included), reaching `costBudget`
// settles `budgetLimited` / `costBudget`, a provider that reports no cost never reaches it, and
// hosts set, edit and clear the budget through the control API and the CLI.
import { afterEach, describe, expect, it } from 'vitest'
import { pkg, setup, scriptedAuditor, goalMetadata, goalOf, waitFor, sleep } from './helpers.mjs'
import { runCli } from './control-helpers.mjs'

const { createSessionGoalControl, SessionGoalError } = pkg

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const continueVerdict = { verdict: 'continue', note: 'more to do' }
const completeVerdict = { verdict: 'complete', note: 'done' }
const COST_FIX = 'Resume with a larger cost budget in US dollars'

const controlFor = ({ mock, dataDir }) => createSessionGoalControl({ openCode: { baseUrl: mock.url }, dataDir })

/**
 * A session whose goal began a minute ago, with a priced reply from before the goal (not its
 * cost), then a reply, a compaction summary and a reply after it (`costs`, US dollars each).
 */
function pricedSession(mock, goal, costs) {
  const began = Date.now() - 60_000
  const session = mock.createSession({ directory: '/tmp/project', metadata: goalMetadata({ createdAt: began, ...goal }) })
  mock.addUserMessage(session.id, 'Earlier work', { created: began - 60_000 })
  mock.addAssistantMessage(session.id, { text: 'Earlier answer.', cost: 5, created: began - 59_000, completed: began - 58_000, tokens: { input: 800, output: 80 } })
  mock.addUserMessage(session.id, 'Please make the parser handle nested lists', { created: began + 1000 })
  mock.addAssistantMessage(session.id, { text: 'Started.', cost: costs[0], created: began + 2000, completed: began + 3000, tokens: { input: 1000, output: 100 } })
  mock.addAssistantMessage(session.id, { text: 'Summary of the work so far.', summary: true, cost: costs[1], created: began + 4000, completed: began + 5000, tokens: { input: 1200, output: 60 } })
  mock.addAssistantMessage(session.id, { text: 'Skeleton in place. Remaining: nesting.', cost: costs[2], created: began + 6000, completed: began + 7000, tokens: { input: 300, output: 90 } })
  return session
}

describe('the cost budget', () => {
  it('sums info.cost since the goal began, summaries included, and settles budgetLimited / costBudget when it is reached', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    // The budget as it stops cold (wrapUp off): the wrap-up before it is __test__/wrap-up.test.mjs.
    env = await setup({ auditor, runtimeOptions: { wrapUp: false } })
    const { mock } = env
    // Before the continuation: 0.3 + 0.25 (the summary) + 0.2 = 0.75 of 1.00; the reply from
    // before the goal (5.00) is not the goal's. The continuation's reply costs 0.30: 1.05.
    const session = pricedSession(mock, { costBudget: 1 }, [0.3, 0.25, 0.2])
    mock.scriptReplies(session.id, [{ text: 'Nesting works.', cost: 0.3, tokens: { input: 1500, output: 200 } }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status === 'budgetLimited', 8000)
    const goal = goalOf(mock, session.id)
    expect(goal).toMatchObject({ statusReason: 'cost budget reached', costBudget: 1, turnsUsed: 1, cause: { code: 'costBudget' } })
    expect(goal.costUsed).toBeCloseTo(1.05, 9)
    expect(goal.cause.fix).toContain(`${COST_FIX}: \`session-goal resume ${session.id} --goal-cost-budget 5\``)
    // One continuation at the wire: without the summary's cost (0.80 after it) a second would go.
    expect(mock.sends(session.id)).toHaveLength(1)
    expect(auditor.calls).toHaveLength(1)
    await waitFor(() => env.notifications.length === 1)
    const [note] = env.notifications
    expect(note.title).toBe('Goal reached its cost budget')
    expect(note.body.endsWith(goal.cause.fix)).toBe(true)
    // explain and the status table show it.
    const report = await env.runtime.explain(session.id)
    expect(report.cost.budget).toBe(1)
    expect(report.cost.used).toBeCloseTo(1.05, 9)
    expect(report.fixAction).toBe('resumeWithCostBudget')
    const listed = await controlFor(env).listGoals('/tmp/project')
    expect(listed.find((g) => g.sessionId === session.id).goal).toMatchObject({ costBudget: 1 })
  })

  it('a provider that reports no cost never reaches it, and explain says so', async () => {
    const auditor = scriptedAuditor([continueVerdict, completeVerdict])
    env = await setup({ auditor })
    const { mock } = env
    const session = pricedSession(mock, { costBudget: 0.01 }, [0, 0, 0])
    mock.scriptReplies(session.id, [{ text: 'Nesting works.', tokens: { input: 1500, output: 200 } }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 8000)
    const goal = goalOf(mock, session.id)
    expect(goal.costUsed).toBeUndefined()
    expect(goal.tokensUsed).toBeGreaterThan(0)
    expect(mock.sends(session.id)).toHaveLength(1)
    const report = await env.runtime.explain(session.id)
    expect(report.cost).toEqual({ budget: 0.01, used: 0 })
    expect(report.findings.map((f) => f.code)).toContain('providerReportsNoCost')
    expect(report.findings.find((f) => f.code === 'providerReportsNoCost').message).toContain('reports no cost')
  })

  it('editGoal raises the budget (the goal goes on) and clears it; bad budgets are refused with nothing written', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, runtimeOptions: { wrapUp: false } })
    const { mock } = env
    const session = pricedSession(mock, { costBudget: 0.5 }, [0.3, 0.25, 0.2])
    mock.scriptReplies(session.id, [{ text: 'More done.', cost: 0.4, tokens: { input: 1500, output: 200 } }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status === 'budgetLimited', 8000)
    expect(goalOf(mock, session.id).costUsed).toBeCloseTo(0.75, 9)
    expect(mock.sends(session.id)).toHaveLength(0)
    const control = controlFor(env)
    const patches = mock.patches.length
    for (const [request, message] of [
      [{ costBudget: 0 }, 'costBudget: must be'],
      [{ costBudget: -3 }, 'costBudget: must be'],
      [{ costBudget: 2, clearCostBudget: true }, 'pass either costBudget or clearCostBudget'],
    ]) {
      const error = await control.editGoal({ sessionId: session.id, ...request }).catch((e) => e)
      expect(error, JSON.stringify(request)).toBeInstanceOf(SessionGoalError)
      expect(error.statusCode).toBe(400)
      expect(error.message).toContain(message)
    }
    expect(mock.patches.length).toBe(patches)
    // A larger budget resumes the goal: one more turn (0.40) reaches 1.15 of 1.10.
    const edited = await control.editGoal({ sessionId: session.id, costBudget: 1.1 })
    expect(edited).toMatchObject({ changed: true, previousStatus: 'budgetLimited' })
    await waitFor(() => mock.sends(session.id).length === 1, 5000)
    await waitFor(() => goalOf(mock, session.id)?.status === 'budgetLimited', 8000)
    expect(goalOf(mock, session.id).costUsed).toBeCloseTo(1.15, 9)
    // Cleared: no budget left, and the goal goes on.
    await control.editGoal({ sessionId: session.id, clearCostBudget: true })
    expect(goalOf(mock, session.id).costBudget).toBeUndefined()
    await waitFor(() => mock.sends(session.id).length === 2, 5000)
    await sleep(300)
    expect(goalOf(mock, session.id).status).toBe('active')
  })

  it('goal.costBudget on create, send and fork; the flat route name needs goal, out-of-range values refused', async () => {
    env = await setup({ forward: false })
    const { mock } = env
    const control = controlFor(env)
    const created = await control.createSession({ directory: '/tmp/project', prompt: 'Ship it', goal: { costBudget: 2.5 } })
    expect(goalOf(mock, created.sessionId)).toMatchObject({ costBudget: 2.5, status: 'active' })
    expect(created.goal.goal).toMatchObject({ costBudget: 2.5, costUsed: 0 })
    const sent = await control.sendPrompt({ sessionId: created.sessionId, prompt: 'Now the docs', goal: { costBudget: 0.75 } })
    expect(goalOf(mock, sent.sessionId).costBudget).toBe(0.75)
    const forked = await control.forkSession({ sessionId: created.sessionId, prompt: 'Another route', goal: { costBudget: 4 } })
    expect(goalOf(mock, forked.sessionId).costBudget).toBe(4)
    const sessions = mock.sessions().length
    for (const [request, message] of [
      [{ prompt: 'x', goalCostBudget: 1 }, 'goalCostBudget requires goal'],
      [{ prompt: 'x', goal: { costBudget: 0.001 } }, 'costBudget: must be'],
      [{ prompt: 'x', goal: { costBudget: Number.POSITIVE_INFINITY } }, 'costBudget: must be'],
    ]) {
      const error = await control.createSession({ directory: '/tmp/project', ...request }).catch((e) => e)
      expect(error, JSON.stringify(request)).toBeInstanceOf(SessionGoalError)
      expect(error.message).toContain(message)
    }
    expect(mock.sessions().length).toBe(sessions)
  })

  it('the CLI sets it with --goal-cost-budget, shows it in status and doctor, and refuses a bad value (exit 2)', async () => {
    env = await setup({ forward: false })
    const { mock, dataDir } = env
    const common = ['--url', mock.url, '--directory', '/tmp/project', '--data-dir', dataDir]
    const created = await runCli(['create', ...common, '--prompt', 'Ship it', '--goal', '--goal-cost-budget', '2.50', '--json'])
    expect(created.code).toBe(0)
    const sessionId = JSON.parse(created.stdout).sessionId
    expect(goalOf(mock, sessionId).costBudget).toBe(2.5)
    const status = await runCli(['status', ...common])
    expect(status.stdout.split('\n')[0]).toContain('COST')
    expect(status.stdout).toContain('$0.00/$2.50')
    const doctor = await runCli(['doctor', sessionId, ...common])
    expect(doctor.stdout).toContain('cost: $0.00 of $2.50')
    for (const bad of ['0', '-1', 'five', '0.001']) {
      const refused = await runCli(['create', ...common, '--prompt', 'x', '--goal', '--goal-cost-budget', bad])
      expect(refused.code, bad).toBe(2)
      expect(refused.stderr).toContain('--goal-cost-budget: must be a number of US dollars between 0.01 and 1000000')
    }
    const withoutGoal = await runCli(['create', ...common, '--prompt', 'x', '--goal-cost-budget', '1'])
    expect(withoutGoal.code).toBe(2)
    expect(withoutGoal.stderr).toContain('--goal-cost-budget requires --goal')
    const help = await runCli(['--help'])
    expect(help.stdout).toContain('--goal-cost-budget <usd>')
  })
})
