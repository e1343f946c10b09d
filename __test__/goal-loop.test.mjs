import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep } from './helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

describe('goal loop against a mock OpenCode', () => {
  // OpenCode on another machine whose clock is a minute ahead (or this machine's clock set back):
  // every reply looks finished in the future. The quiet window is kept by the scheduler's own
  // timer; waiting for the wall clock to pass the reply's time would stall each turn a minute.
  it('a server clock a minute ahead of ours does not hold the goal back', async () => {
    const auditor = scriptedAuditor([{ verdict: 'continue', note: 'one more' }, { verdict: 'complete', note: 'done' }])
    env = await setup({ auditor, mockOptions: { now: () => Date.now() + 60_000 } })
    const { mock } = env
    const session = sessionWithReply(mock)
    mock.scriptReplies(session.id, [{ text: 'Done: nesting works.', tokens: { input: 3000, output: 200 } }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 8000)
    expect(mock.prompts).toHaveLength(1)
  })

  it('continues after an audit says continue, settles complete when the audit verifies', async () => {
    const auditor = scriptedAuditor([
      { verdict: 'continue', note: 'nesting still missing' },
      { verdict: 'complete', note: 'nested lists parse and tests pass' },
    ])
    env = await setup({ auditor })
    const { mock } = env
    const session = sessionWithReply(mock)
    mock.scriptReplies(session.id, [{ text: 'Done: nesting works. Verified: tests pass.', tokens: { input: 3000, output: 200 } }])
    mock.setStatus(session.id, 'idle')

    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 8000)
    const goal = goalOf(mock, session.id)
    expect(mock.prompts).toHaveLength(1)
    expect(goal.turnsUsed).toBe(1)
    expect(goal.statusReason).toBe('verified by audit')
    expect(goal.note).toBe('nested lists parse and tests pass')
    expect(goal.evaluationModelID).toBe('nano')
    // Every OpenCode call carries ?directory=.
    expect(mock.requests.filter((r) => r.path.startsWith('/session') && r.query.directory !== '/tmp/project')).toEqual([])
    const prompt = mock.prompts[0]
    expect(prompt.body.model).toEqual({ providerID: 'mock', modelID: 'mock-model' })
    expect(prompt.body.agent).toBe('build')
    expect(prompt.body.parts[0].text).toContain('<objective>')
    expect(prompt.body.parts[0].text).toContain('Auto-continuations used: 1 of 20.')
    expect(auditor.calls[0].restrictToPreferredProvider).toBe(true)
    expect(auditor.calls[0].preferredProviderID).toBe('mock')
    await waitFor(() => env.notifications.length === 1)
    expect(env.notifications[0]).toMatchObject({ sessionId: session.id, status: 'complete', title: 'Goal complete', tag: 'goal-' + session.id })
    expect(env.notifications[0].goal.objective).toBe('Make the parser handle nested lists')
  })
})
