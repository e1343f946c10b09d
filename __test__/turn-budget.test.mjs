// A budget added by the recipe in docs/api.md alone (a scratch setting, reverted after): set,
// returned, edited, cleared and refused by name through the API; reached by the loop, which
// settles budgetLimited / turnBudget with its fix; and taken by the CLI, whose doctor --fix
// resumes with a new one.
import { afterEach, describe, expect, it } from 'vitest'
import { goalMetadata, goalOf, pkg, scriptedAuditor, sessionWithReply, setup, tempDataDir, waitFor } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'
import { runCli } from './control-helpers.mjs'

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

describe('turnBudget (a budget added by the recipe)', () => {
  it('is set, returned, edited, cleared and refused by name', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
    cleanups.push(() => mock.close())
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, dataDir: tempDataDir() })
    const session = mock.createSession({ directory: '/tmp/project' })
    const stored = () => mock.getSession(session.id).metadata.openchamber.goal
    const created = await control.createSessionGoal({ sessionId: session.id, directory: '/tmp/project', objective: 'Ship it', turnBudget: 3 })
    expect(created.goal.turnBudget).toBe(3)
    expect(stored().turnBudget).toBe(3)
    expect((await control.editGoal({ sessionId: session.id, turnBudget: 5 })).goal.turnBudget).toBe(5)
    const refused = await control.editGoal({ sessionId: session.id, turnBudget: 0 }).catch((e) => e)
    expect([refused.code, refused.field, refused.message]).toEqual(['invalidInput', 'turnBudget', 'turnBudget: must be a whole number of turns from 1 to 1000'])
    const nested = await control.sendPrompt({ sessionId: session.id, prompt: 'x', goal: { turnBudget: 2.5 } }).catch((e) => e)
    expect([nested.code, nested.field]).toEqual(['invalidInput', 'goal.turnBudget'])
    expect((await control.editGoal({ sessionId: session.id, clearTurnBudget: true })).goal.turnBudget).toBeUndefined()
    expect(stored().turnBudget).toBeUndefined()
    expect(pkg.inputRules.turnBudget(1001).problem).toBe('must be a whole number of turns from 1 to 1000')
  })

  it('a spent turn budget settles budgetLimited / turnBudget, and doctor --fix resumes with a new one', async () => {
    const env = await setup({ auditor: scriptedAuditor([{ verdict: 'continue', note: 'more' }]) })
    cleanups.push(env.cleanup)
    const { mock } = env
    const spent = sessionWithReply(mock, { goal: { turnBudget: 2, turnsUsed: 2 } })
    mock.setStatus(spent.id, 'idle')
    await waitFor(() => goalOf(mock, spent.id)?.status === 'budgetLimited', 8000)
    expect(goalOf(mock, spent.id)).toMatchObject({ statusReason: 'turn budget reached', cause: { code: 'turnBudget' } })
    expect(goalOf(mock, spent.id).cause.fix).toBe(`Resume with a larger turn budget: \`session-goal resume ${spent.id} --goal-turn-budget N\`.`)
    expect((await env.runtime.explain(spent.id)).fixAction).toBe('resumeWithTurnBudget')

    const cli = (...args) => runCli([...args, '--url', mock.url, '--directory', '/tmp/project', '--data-dir', env.dataDir])
    const needs = await cli('doctor', spent.id, '--fix')
    expect([needs.code, needs.stderr.trim()]).toEqual([2, 'session-goal: --fix for turnBudget needs --goal-turn-budget N'])
    const fixed = await cli('doctor', spent.id, '--fix', '--goal-turn-budget', '4')
    expect(fixed.code).toBe(0)
    expect(fixed.stdout).toContain(`applying fix: resume ${spent.id} with turn budget 4`)
    expect(goalOf(mock, spent.id)).toMatchObject({ status: 'active', turnBudget: 4 })
    const refused = await cli('create', '--prompt', 'x', '--goal', '--goal-turn-budget', '0')
    expect([refused.code, refused.stderr.trim()]).toEqual([2, 'session-goal: --goal-turn-budget: must be a whole number of turns from 1 to 1000'])
  })
})
