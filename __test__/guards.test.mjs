// Guards that cannot be read never let a goal past them (the built addon against the mock
// OpenCode over real HTTP). For each guard field this package added (checks, criteria,
// costBudget, timeBudgetMs, activeHours), a stored value the runtime cannot read stops the goal
// before anything is audited or sent: `blocked`, cause `invalidGoal`, the detail naming the field
// and the fix giving its call, the stored value left as it was by every write (the mock's PATCH
// replaces the whole metadata). Shapes that can be read safely (a number written as text, an
// over-long criterion) are obeyed as read and written back unchanged.
import { afterEach, describe, expect, it } from 'vitest'
import { pkg, setup, scriptedAuditor, goalOf, waitFor, sessionWithReply } from './helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const complete = { verdict: 'complete', note: 'done' }
const keepGoing = { verdict: 'continue', note: 'more to do' }

/** JSON with object keys sorted: the record's writer keeps values, not the order of keys. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/** Every PATCH of the session's goal at the wire, and the value of `field` in each. */
const patchedValues = (mock, sessionId, field) =>
  mock.patches.filter((p) => p.sessionId === sessionId && p.body?.metadata?.openchamber?.goal).map((p) => p.body.metadata.openchamber.goal[field])

const criterion = (fields) => JSON.parse(JSON.stringify({ id: 'c1', text: 'Nested lists parse', source: 'user', state: 'unmet', ...fields }))
const hours = (fields) => ({ start: '09:00', end: '17:00', timeZone: 'Europe/Berlin', ...fields })

// Field × bad shape. `verdict` is what the auditor would say: past a missing checks or criteria
// guard the goal completes on its word; past a missing budget or working hours it continues.
const UNREADABLE = [
  { field: 'checks', value: [{ command: 7 }], verdict: complete, fix: 'checks: [{command' },
  { field: 'checks', value: [{ command: 'npm test', timeoutMs: 'soon' }], verdict: complete, fix: 'clearChecks: true' },
  { field: 'checks', value: 'npm test', verdict: complete, fix: 'clearChecks: true' },
  { field: 'criteria', value: [criterion({ text: undefined })], verdict: complete, fix: "criteria: ['tests pass']" },
  { field: 'criteria', value: [criterion(), 'Docs updated'], verdict: complete, fix: 'clearCriteria: true' },
  { field: 'criteria', value: [criterion(), criterion({ text: 'Docs updated' })], verdict: complete, fix: 'clearCriteria: true' },
  { field: 'costBudget', value: 'five dollars', verdict: keepGoing, fix: '--goal-cost-budget 5' },
  { field: 'costBudget', value: -1, verdict: keepGoing, fix: 'clearCostBudget: true' },
  { field: 'costBudget', value: { usd: 5 }, verdict: keepGoing, fix: '--goal-cost-budget 5' },
  { field: 'timeBudgetMs', value: 'two hours', verdict: keepGoing, fix: '--goal-time-budget 2h' },
  { field: 'timeBudgetMs', value: 0.5, verdict: keepGoing, fix: 'clearTimeBudget: true' },
  { field: 'activeHours', value: '09:00-17:00@Europe/Berlin', verdict: keepGoing, fix: "activeHours: {start: '09:00'" },
  { field: 'activeHours', value: hours({ start: '25:00' }), verdict: keepGoing, fix: 'clearActiveHours: true' },
  { field: 'activeHours', value: hours({ timeZone: 'Mars/Olympus' }), verdict: keepGoing, fix: 'clearActiveHours: true' },
]

describe('a guard that cannot be read', () => {
  it.each(UNREADABLE.map((c) => [c.field, canonical(c.value), c]))('%s = %s stops the goal before anything runs past it', async (field, _shown, { value, verdict, fix }) => {
    const auditor = scriptedAuditor([verdict])
    env = await setup({ auditor })
    const { mock } = env
    const session = sessionWithReply(mock, { goal: { [field]: value } })
    mock.scriptReplies(session.id, [{ text: 'More work done.' }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status !== 'active', 5000).catch(() => {})
    const goal = goalOf(mock, session.id)
    expect(goal.status).toBe('blocked')
    expect(goal.statusReason).toBe('goal field unreadable')
    expect(goal.cause.code).toBe('invalidGoal')
    expect(goal.cause.detail.startsWith(`${field}: `)).toBe(true)
    expect(goal.cause.fix).toContain(session.id)
    expect(goal.cause.fix).toContain(fix)
    // Nothing past the guard: no audit, no continuation, no check run.
    expect(auditor.calls).toHaveLength(0)
    expect(mock.sends(session.id)).toHaveLength(0)
    expect(mock.shells).toHaveLength(0)
    // The stored value, at the mock, after every whole-metadata write.
    const writes = patchedValues(mock, session.id, field)
    expect(writes.length).toBeGreaterThan(0)
    for (const written of writes) expect(canonical(written)).toBe(canonical(value))
    expect(canonical(goalOf(mock, session.id)[field])).toBe(canonical(value))
    // explain and the notification show the same cause.
    const report = await env.runtime.explain(session.id)
    expect(report.cause).toMatchObject({ code: 'invalidGoal', detail: goal.cause.detail, fix: goal.cause.fix })
    await waitFor(() => env.notifications.length === 1)
    expect(env.notifications[0].cause.code).toBe('invalidGoal')
  })

  it('an edit that corrects the field resumes the goal, which then runs', async () => {
    const auditor = scriptedAuditor([complete])
    env = await setup({ auditor })
    const { mock } = env
    const session = sessionWithReply(mock, { goal: { costBudget: 'five dollars' } })
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.cause?.code === 'invalidGoal')
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, dataDir: env.dataDir })
    await control.editGoal({ sessionId: session.id, costBudget: 5 })
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'active', costBudget: 5 })
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete')
    expect(auditor.calls).toHaveLength(1)
  })
})

describe('a guard that reads safely is obeyed as read and kept as written', () => {
  it('costBudget "0.5": the spent budget stops the goal; the text stays', async () => {
    env = await setup({ auditor: scriptedAuditor([keepGoing]) })
    const { mock } = env
    const session = sessionWithReply(mock, { goal: { costBudget: '0.5' }, reply: { cost: 0.6 } })
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status !== 'active', 5000).catch(() => {})
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'budgetLimited', cause: { code: 'costBudget' }, costBudget: '0.5' })
    expect(mock.sends(session.id)).toHaveLength(0)
    for (const written of patchedValues(mock, session.id, 'costBudget')) expect(written).toBe('0.5')
  })

  it('timeBudgetMs "1000": the spent time budget stops the goal; the text stays', async () => {
    env = await setup({ auditor: scriptedAuditor([keepGoing]) })
    const { mock } = env
    const session = sessionWithReply(mock, { goal: { timeBudgetMs: '1000', createdAt: Date.now() - 60_000 } })
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status !== 'active', 5000).catch(() => {})
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'budgetLimited', cause: { code: 'timeBudget' }, timeBudgetMs: '1000' })
    expect(mock.sends(session.id)).toHaveLength(0)
    for (const written of patchedValues(mock, session.id, 'timeBudgetMs')) expect(written).toBe('1000')
  })

  it('a check whose timeoutMs is text runs before complete, and its failure keeps the goal going; the list stays', async () => {
    env = await setup({ auditor: scriptedAuditor([complete]) })
    const { mock } = env
    const checks = [{ command: 'false', timeoutMs: '60000' }]
    const session = sessionWithReply(mock, { goal: { checks } })
    mock.scriptReplies(session.id, [{ text: 'Fixed the failing test.' }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => mock.sends(session.id).length >= 1 || goalOf(mock, session.id)?.status !== 'active', 8000).catch(() => {})
    expect(mock.shells.map((s) => s.body.command).some((c) => c.includes('false'))).toBe(true)
    expect(goalOf(mock, session.id).status).not.toBe('complete')
    expect(mock.sends(session.id).length).toBeGreaterThanOrEqual(1)
    for (const written of patchedValues(mock, session.id, 'checks')) expect(canonical(written)).toBe(canonical(checks))
  })

  it('a criterion over 300 characters is graded, cut to the limit, as data; the stored text stays whole', async () => {
    const auditor = scriptedAuditor([complete])
    env = await setup({ auditor })
    const { mock } = env
    const long = `${'Nested lists parse at every depth. '.repeat(9)}TAIL-BEYOND-THE-LIMIT`
    expect(long.length).toBeGreaterThan(300)
    const criteria = [criterion({ text: long })]
    const session = sessionWithReply(mock, { goal: { criteria } })
    mock.scriptReplies(session.id, [{ text: 'More work done.' }])
    mock.setStatus(session.id, 'idle')
    await waitFor(() => mock.sends(session.id).length >= 1 || goalOf(mock, session.id)?.status !== 'active', 8000).catch(() => {})
    // A complete verdict that grades no criterion is not complete: the criterion is unmet.
    expect(goalOf(mock, session.id).status).toBe('active')
    expect(mock.sends(session.id)).toHaveLength(1)
    const prompt = auditor.calls[0].prompt
    expect(prompt).toContain(`[c1] ${long.slice(0, 300).trim()}`)
    expect(prompt).not.toContain('TAIL-BEYOND-THE-LIMIT')
    const written = patchedValues(mock, session.id, 'criteria')
    expect(written.length).toBeGreaterThan(0)
    for (const list of written) expect(list[0].text).toBe(long)
  })
})
