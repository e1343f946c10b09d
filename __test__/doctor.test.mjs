// Causes and doctor: the typed cause the runtime and the user actions write, `explain` on the
// runtime and the control object, and `session-goal doctor` (read only; --fix applies only the
// cause's action) against the mock OpenCode over HTTP.
import fs from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { goalMetadata, goalOf, pkg, scriptedAuditor, sessionWithReply, setup, tempDataDir, waitFor } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'
import { runCli } from './control-helpers.mjs'

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

async function world() {
  const mock = await startMockOpenCode({ heartbeatMs: 60_000, replyDelayMs: 10 })
  cleanups.push(() => mock.close())
  const dataDir = tempDataDir()
  const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, dataDir })
  const cli = (...args) => runCli([...args, '--url', mock.url, '--directory', '/tmp/project', '--data-dir', dataDir])
  return { mock, dataDir, control, cli }
}

// Every code of the closed list, with the action doctor --fix applies for it.
const CODES = {
  verified: 'none',
  checksPassed: 'none',
  userComplete: 'none',
  auditorBlocked: 'resume',
  noProgress: 'resume',
  auditUnavailable: 'resume',
  dispatchFailed: 'resume',
  messagesUnavailable: 'resume',
  tokenBudget: 'resumeWithTokenBudget',
  timeBudget: 'resumeWithTimeBudget',
  turnCap: 'resume',
  userPaused: 'resume',
  userAborted: 'resume',
  userAskedToPause: 'resume',
  waitingForUser: 'none',
  waitingForHours: 'none',
  waitingForProviderLimit: 'none',
  waitingForLease: 'none',
  waitingForOpenCode: 'none',
  providerAuth: 'resume',
  providerQuota: 'resume',
  contextOverflow: 'resume',
  contentFilter: 'resume',
  turnInterrupted: 'resume',
  inherited: 'resume',
  costBudget: 'resumeWithCostBudget',
  turnFailed: 'none',
  invalidGoal: 'none',
  reviewApproved: 'none',
  reviewUnavailable: 'resume',
}
const statusOf = (code) =>
  ['verified', 'checksPassed', 'userComplete', 'reviewApproved'].includes(code)
    ? 'complete'
    : code.startsWith('waitingFor')
      ? 'active'
      : code === 'userPaused' || code === 'userAborted' || code === 'userAskedToPause'
        ? 'paused'
        : code === 'tokenBudget' || code === 'timeBudget' || code === 'costBudget'
          ? 'budgetLimited'
          : 'blocked'

describe('the causes the runtime and the user actions write', () => {
  it('pause, resume and complete write userPaused, no cause, userComplete', async () => {
    const { mock, control } = await world()
    const session = mock.createSession({ directory: '/tmp/project', metadata: goalMetadata() })
    await control.pauseGoal({ sessionId: session.id })
    expect(goalOf(mock, session.id).cause).toMatchObject({ code: 'userPaused', fix: `Resume when ready: \`session-goal resume ${session.id}\`.` })
    await control.resumeGoal({ sessionId: session.id })
    expect(goalOf(mock, session.id).cause).toBeUndefined()
    await control.completeGoal({ sessionId: session.id })
    expect(goalOf(mock, session.id).cause.code).toBe('userComplete')
  })

  it('the loop writes tokenBudget and userAborted, and a notification carries the cause and its fix', async () => {
    const env = await setup({ auditor: scriptedAuditor([{ verdict: 'continue', note: 'more' }]) })
    cleanups.push(env.cleanup)
    const { mock } = env
    const spent = sessionWithReply(mock, { goal: { tokenBudget: 1000 } })
    mock.setStatus(spent.id, 'idle')
    await waitFor(() => goalOf(mock, spent.id)?.status === 'budgetLimited', 8000)
    expect(goalOf(mock, spent.id).cause).toMatchObject({ code: 'tokenBudget' })
    await waitFor(() => env.notifications.length === 1)
    expect(env.notifications[0].cause.code).toBe('tokenBudget')
    expect(env.notifications[0].cause.fix).toContain('--goal-token-budget N')

    const aborted = sessionWithReply(mock, { reply: { error: { name: 'MessageAbortedError', data: { message: 'Aborted' } } } })
    mock.setStatus(aborted.id, 'idle')
    await waitFor(() => goalOf(mock, aborted.id)?.status === 'paused', 8000)
    expect(goalOf(mock, aborted.id).cause.code).toBe('userAborted')
  })

  it('a goal waiting on a permission request carries waitingForUser; explain lists the request', async () => {
    const env = await setup({ auditor: scriptedAuditor([{ verdict: 'continue', note: 'more' }]) })
    cleanups.push(env.cleanup)
    const { mock } = env
    const session = sessionWithReply(mock)
    mock.setPending(session.id, 'permission', 'per_1', { permission: 'bash' })
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.cause?.code === 'waitingForUser', 8000)
    const report = await env.runtime.explain(session.id)
    expect(report.pending).toEqual([{ kind: 'permission', id: 'per_1', permission: 'bash' }])
    expect(report.cause.code).toBe('waitingForUser')
    expect(report.fixAction).toBe('none')
  })
})

describe('explain and doctor', () => {
  it('explain reports every cause of the closed list with its fix and action, and changes nothing', async () => {
    const { mock, control } = await world()
    for (const [code, action] of Object.entries(CODES)) {
      const fix = action === 'none' && statusOf(code) === 'complete' ? undefined : `a fix for ${code}`
      const goal = { status: statusOf(code), statusReason: code, cause: { code, since: 1000, detail: 'd', ...(fix ? { fix } : {}) } }
      const session = mock.createSession({ directory: '/tmp/project', metadata: goalMetadata(goal) })
      const patches = mock.patches.length
      const report = await control.explain(session.id)
      expect(report, code).toMatchObject({ sessionId: session.id, status: statusOf(code), statusReason: code, fixAction: action })
      expect(report.cause).toEqual({ code, since: 1000, detail: 'd', ...(fix ? { fix } : {}) })
      for (const key of ['nextWakeAt', 'lease', 'pending', 'lastAudit', 'lastChecks', 'findings']) expect(report, key).toHaveProperty(key)
      expect(mock.patches.length).toBe(patches)
    }
  })

  it('the closed list is the same in the TypeScript types and in docs/causes.md, whose table is current', async () => {
    const root = new URL('..', import.meta.url)
    const types = fs.readFileSync(new URL('index.d.ts', root), 'utf8')
    const union = types.match(/export interface GoalCause \{[\s\S]*?code: ([^\n]+)\n/)[1]
    expect(union.split('|').map((c) => c.trim().replace(/'/g, '')).sort()).toEqual(Object.keys(CODES).sort())
    const { causeTable, withTable } = await import('../scripts/cause-table.mjs')
    const docs = fs.readFileSync(new URL('docs/causes.md', root), 'utf8')
    expect(withTable(docs, causeTable()), 'run node scripts/cause-table.mjs --write').toBe(docs)
    const rows = [...causeTable().matchAll(/^\| `([a-zA-Z]+)` \|.*\| `([a-zA-Z]+)` \|$/gm)]
    expect(Object.fromEntries(rows.map((m) => [m[1], m[2]]))).toEqual(CODES)
  })

  it('findings: a missing session, a missing objective file, a copied goal, unreadable checks', async () => {
    const { mock, control } = await world()
    expect((await control.explain('ses_doesnotexist')).findings).toEqual([
      { code: 'sessionMissing', message: 'session ses_doesnotexist does not exist on this OpenCode server' },
    ])
    const odd = mock.createSession({
      directory: '/tmp/project',
      metadata: goalMetadata({ objectiveFile: true, objective: '', sessionId: 'ses_parent', checks: [{ run: 'npm test' }] }),
    })
    const codes = (await control.explain(odd.id)).findings.map((f) => f.code)
    expect(codes).toEqual(['objectiveFileMissing', 'inherited', 'checksUnreadable'])
  })

  it('doctor prints the cause and fix; --json prints the explain object; nothing is written', async () => {
    const { mock, cli } = await world()
    const goal = { status: 'budgetLimited', statusReason: 'token budget reached', tokenBudget: 5000, tokensUsed: 5200,
      cause: { code: 'tokenBudget', since: 1000, fix: 'Resume with a larger token budget: `session-goal resume X --goal-token-budget N`.' } }
    const session = mock.createSession({ directory: '/tmp/project', metadata: goalMetadata(goal) })
    const human = await cli('doctor', session.id)
    expect(human.code).toBe(0)
    expect(human.stdout).toContain(`session ${session.id}: goal budgetLimited (token budget reached)`)
    expect(human.stdout).toContain('cause: tokenBudget')
    expect(human.stdout).toContain('fix: Resume with a larger token budget')
    const json = await cli('doctor', session.id, '--json')
    expect(JSON.parse(json.stdout)).toMatchObject({ sessionId: session.id, status: 'budgetLimited', cause: { code: 'tokenBudget' }, fixAction: 'resumeWithTokenBudget' })
    expect(mock.patches).toHaveLength(0)
  })

  it('doctor --fix applies only the cause action, after printing it', async () => {
    const { mock, cli } = await world()
    const paused = mock.createSession({
      directory: '/tmp/project',
      metadata: goalMetadata({ status: 'paused', cause: { code: 'userPaused', since: 1 } }),
    })
    const fixed = await cli('doctor', paused.id, '--fix')
    expect(fixed.code).toBe(0)
    expect(fixed.stdout).toContain(`applying fix: resume ${paused.id}`)
    expect(goalOf(mock, paused.id).status).toBe('active')
    expect(goalOf(mock, paused.id).cause).toBeUndefined()

    const spent = mock.createSession({
      directory: '/tmp/project',
      metadata: goalMetadata({ status: 'budgetLimited', tokenBudget: 5000, cause: { code: 'tokenBudget', since: 1 } }),
    })
    const refused = await cli('doctor', spent.id, '--fix')
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('needs --goal-token-budget N')
    expect(goalOf(mock, spent.id).status).toBe('budgetLimited')
    const raised = await cli('doctor', spent.id, '--fix', '--goal-token-budget', '50000')
    expect(raised.code).toBe(0)
    expect(goalOf(mock, spent.id)).toMatchObject({ status: 'active', tokenBudget: 50000 })

    const done = mock.createSession({
      directory: '/tmp/project',
      metadata: goalMetadata({ status: 'complete', cause: { code: 'verified', since: 1 } }),
    })
    const patches = mock.patches.length
    const nothing = await cli('doctor', done.id, '--fix')
    expect(nothing.stdout).toContain('nothing to apply')
    expect(mock.patches.length).toBe(patches)
  })

  it('resume --goal-token-budget resumes with the new budget', async () => {
    const { mock, cli } = await world()
    const spent = mock.createSession({
      directory: '/tmp/project',
      metadata: goalMetadata({ status: 'budgetLimited', tokenBudget: 5000, cause: { code: 'tokenBudget', since: 1 } }),
    })
    const result = await cli('resume', spent.id, '--goal-token-budget', '80000')
    expect(result.code).toBe(0)
    expect(goalOf(mock, spent.id)).toMatchObject({ status: 'active', tokenBudget: 80000, statusReason: 'resumed' })
  })
})
