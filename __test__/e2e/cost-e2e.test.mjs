// The cost budget on a real OpenCode server (offline, scripted model): the agent model has a
// price in opencode.json (US dollars per million tokens), OpenCode prices every reply in
// `info.cost`, and a goal with a cost budget settles `budgetLimited` / `costBudget` once the
// replies since it began cost that much.
import { beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../helpers.mjs'
import { createGoalSession, readGoal } from './opencode-server.mjs'
import { startForwardingHost, useOpenCode } from './forwarding-host.mjs'

let model
let oc

// $3 per million input tokens, $15 per million output tokens: a reply of 50,000 input and
// 30,000 output tokens costs 0.15 + 0.45 = $0.60 (docs/opencode.md, "Cost"). The replies stay
// well inside the model's context, so OpenCode does not compact on its own.
const env = useOpenCode({ modelCost: { input: 3, output: 15 } })
beforeAll(() => ({ model, oc } = env))

const usage = (prompt, completion) => ({ prompt_tokens: prompt, completion_tokens: completion })

describe('cost budget on a real OpenCode server', () => {
  it("a priced model's goal reaches its cost budget: budgetLimited, cause costBudget, costUsed from info.cost", async () => {
    const tag = model.scenario('cost', {
      turns: [
        { text: 'Done: parser skeleton. Remaining: nesting.', usage: usage(50_000, 30_000) },
        { text: 'Done: nesting. Remaining: tests.', usage: usage(50_000, 30_000) },
        { text: 'Done: tests. Remaining: nothing.', usage: usage(50_000, 30_000) },
      ],
      audits: [{ verdict: 'continue', note: 'more to do' }],
    })
    const host = await startForwardingHost(oc)
    // A goal with a budget of $1.00, written before the first prompt (as goalCostBudget does),
    // that stops cold at it (wrapUp off: the wrap-up before a budget is wrap-up-e2e.test.mjs).
    const { sessionId } = await createGoalSession(oc.api, { objective: `Make the parser handle nested lists ${tag}`, goalFields: { costBudget: 1, wrapUp: false } })

    const goal = await waitFor(
      async () => {
        const current = await readGoal(oc.api, sessionId)
        return current?.status === 'budgetLimited' ? current : null
      },
      60_000,
      100,
    )
    const replies = (await oc.api('GET', `/session/${sessionId}/message`)).filter((m) => m.info.role === 'assistant')
    const costs = replies.map((m) => m.info.cost)
    console.log(`reply costs reported by OpenCode: ${costs.join(', ')} (US dollars); costUsed ${goal.costUsed}`)
    // OpenCode priced each reply from the configured price.
    expect(costs).toHaveLength(2)
    for (const cost of costs) expect(cost).toBeCloseTo(0.6, 6)
    // Two replies ($1.20) reach the $1.00 budget: one continuation, then budgetLimited.
    expect(goal).toMatchObject({ statusReason: 'cost budget reached', turnsUsed: 1, costBudget: 1, cause: { code: 'costBudget' } })
    expect(goal.costUsed).toBeCloseTo(costs[0] + costs[1], 9)
    await waitFor(() => host.notifications.length === 1, 10_000)
    expect(host.notifications[0]).toMatchObject({ sessionId, status: 'budgetLimited', title: 'Goal reached its cost budget' })
    expect(host.notifications[0].body.endsWith(goal.cause.fix)).toBe(true)
    const report = await host.runtime.explain(sessionId)
    expect(report.cost.budget).toBe(1)
    expect(report.findings.map((f) => f.code)).not.toContain('providerReportsNoCost')
  })
})
