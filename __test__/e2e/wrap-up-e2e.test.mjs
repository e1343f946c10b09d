// The wrap-up turn on a real OpenCode server (opencode-ai, offline, in a git project so OpenCode
// records the session's file changes; docs/verdicts.md, "The wrap-up turn"). A goal with a token
// budget of 30,000 spends its first turn on a real write (src/parser.js) and a reply whose context
// snapshot is 10,000 tokens: the forecast of the next turn is that growth plus 25%, 12,500, and the
// 20,000 left are room for one turn but not for two. So after the audit's `continue` the runtime
// posts the wrap-up instead of a continuation, the scripted model answers it (it tells the wrap-up
// by its lead) with a handoff, and that reply, unaudited, settles the goal `budgetLimited` with the
// handoff's start as the note and the whole of it in the history. The runtime
// reaches OpenCode through the counting proxy of scripts/chaos-real/proxy.mjs (its events come
// straight from OpenCode), so its posts are counted at the wire.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../helpers.mjs'
import { startProxy } from '../../scripts/chaos-real/proxy.mjs'
import { createGoalSession, readGoal } from './opencode-server.mjs'
import { startForwardingHost, useOpenCode } from './forwarding-host.mjs'

let model
let oc
let proxy

const env = useOpenCode({ git: true })
beforeAll(async () => {
  ;({ model, oc } = env)
  proxy = await startProxy(oc.url)
})
afterAll(async () => {
  await proxy?.close()
})

const usage = (prompt, completion) => ({ prompt_tokens: prompt, completion_tokens: completion })

/** The first line of the wrap-up prompt for a token budget (crates/goal-core/src/text/prompts.rs). */
const WRAP_UP_FIRST_LINE = 'Wrap up the session goal that is currently active: this is its last turn, because its token budget is about to be reached.'
const HANDOFF = [
  '## Done',
  '- Parser handles nested lists through parseList (src/parser.js); the write went through.',
  '## Verified',
  '- Read src/parser.js back after the write.',
  '## Remaining',
  '- Empty lists and a test for them.',
  '## Next step',
  '- Add test/parser.test.js with an empty-list case.',
].join('\n')
const BUDGET = 30_000

/** The text of an OpenAI chat message's content. */
const textOf = (content) => (typeof content === 'string' ? content : Array.isArray(content) ? content.map((part) => part?.text ?? '').join('\n') : '')

/**
 * The agent's side, told by what it was asked: the wrap-up (its lead in the newest user message)
 * gets the handoff; any other turn writes src/parser.js, then (after the tool's result) reports,
 * its context growing by 10,000 tokens a turn.
 */
function agent() {
  let reports = 0
  return ({ body }) => {
    const messages = body.messages ?? []
    const asked = textOf(messages.filter((m) => m.role === 'user').at(-1)?.content)
    if (asked.includes(WRAP_UP_FIRST_LINE)) return { text: HANDOFF, usage: usage(13_000, 400) }
    if (messages.at(-1)?.role !== 'tool') {
      const content = `export function parseList(text) {\n  // turn ${reports + 1}\n  return text.split('\\n')\n}\n`
      return { text: '', toolCalls: [{ name: 'write', arguments: { filePath: 'src/parser.js', content } }], usage: usage(9_000 * (reports + 1), 100) }
    }
    reports++
    return { text: `Done: parseList in src/parser.js (turn ${reports}). Remaining: nested lists, empty lists, tests.`, usage: usage(10_000 * reports - 500, 500) }
  }
}

/** The whole context a reply's tokens count (input, output, reasoning, cache). */
const snapshotOf = (m) => {
  const t = m.info.tokens
  return t.input + t.output + (t.reasoning ?? 0) + (t.cache?.read ?? 0) + (t.cache?.write ?? 0)
}

describe('the wrap-up turn on a real OpenCode server', () => {
  it('a token budget two forecast turns cannot fit: one wrap-up prompt, then budgetLimited with the handoff in the note and the history', async () => {
    const tag = model.scenario('wrap-up', {
      turns: [agent()],
      audits: [{ verdict: 'continue', note: 'nested lists and tests left' }],
    })
    const host = await startForwardingHost(oc, { openCode: { baseUrl: proxy.url } })
    const startedAt = Date.now()
    const { sessionId } = await createGoalSession(oc.api, { objective: `Make the parser handle nested lists ${tag}`, tokenBudget: BUDGET })

    const goal = await waitFor(
      async () => {
        const current = await readGoal(oc.api, sessionId)
        return current?.status !== 'active' ? current : null
      },
      60_000,
      100,
    )
    const messages = await oc.api('GET', `/session/${sessionId}/message`)
    const users = messages.filter((m) => m.info.role === 'user')
    const replies = messages.filter((m) => m.info.role === 'assistant')
    console.log(
      `settled ${goal.status} after ${Date.now() - startedAt} ms; reply snapshots ${replies.map(snapshotOf).join(', ')} tokens; ` +
        `tokensUsed ${goal.tokensUsed} of ${BUDGET}; note: ${goal.note}`,
    )

    // One post by the runtime after the goal's first turn, at the wire and in the transcript: the
    // wrap-up, for the token budget, with where the goal stands.
    const sends = proxy.sends.filter((s) => s.sessionId === sessionId)
    expect(sends).toHaveLength(1)
    expect(sends[0].status >= 200 && sends[0].status < 300).toBe(true)
    expect(users).toHaveLength(2)
    expect(users[1].info.id).toBe(sends[0].messageID)
    const wrapUp = users[1].parts.filter((p) => p.type === 'text' && !p.synthetic).map((p) => p.text).join('\n')
    expect(wrapUp.split('\n')[0]).toBe(WRAP_UP_FIRST_LINE)
    expect(wrapUp).toContain('Start no new work.')
    expect(wrapUp).toContain(`Tokens used: 10000 of the budget of ${BUDGET}.`)
    // The first turn was a real write and a report; the wrap-up's turn the handoff alone.
    expect(model.requestsOf('wrap-up', 'agent')).toHaveLength(3)
    expect(replies.at(-1).info.parentID).toBe(users[1].info.id)
    expect(replies.at(-1).parts.filter((p) => p.type === 'text').map((p) => p.text).join('')).toBe(HANDOFF)

    // The handoff's reply settled the goal, unaudited, at the token budget.
    expect(goal).toMatchObject({ status: 'budgetLimited', statusReason: 'token budget reached', cause: { code: 'tokenBudget' }, turnsUsed: 1 })
    expect(goal.wrappedUp).toMatchObject({ messageId: users[1].info.id, cause: 'tokenBudget' })
    // The handoff on one line, its markdown marks dropped (it is short of the note's 280 characters).
    expect(goal.note).toBe(
      'Handoff: Done Parser handles nested lists through parseList (src/parser.js); the write went through. Verified Read ' +
        'src/parser.js back after the write. Remaining Empty lists and a test for them. Next step Add test/parser.test.js with an empty-list case.',
    )
    expect(goal.note.length).toBeLessThanOrEqual(280)
    expect(goal.tokensUsed).toBe(snapshotOf(replies.at(-1)))
    expect(goal.tokensUsed).toBeLessThanOrEqual(BUDGET)
    expect(model.requestsOf('wrap-up', 'audit')).toHaveLength(1)

    // The trail keeps the whole handoff, and the files the goal's turns changed. OpenCode 1.18.33
    // keeps a turn's changes on its user message (`summary.diffs`, what `/diff?messageID=`
    // answers) and answers the session-wide `/diff` with an empty list: the record's list is the
    // union over the goal's prompts, so the first turn's real write is in it.
    const history = await host.runtime.history(sessionId)
    const settle = history.filter((r) => r.action === 'budgetLimited').at(-1)
    expect(settle).toMatchObject({ reason: 'token budget reached', wrapUp: 'tokenBudget', handoff: HANDOFF })
    expect(users[0].info.summary.diffs.map((d) => d.file)).toEqual(['src/parser.js'])
    const sessionDiff = await oc.api('GET', `/session/${sessionId}/diff`)
    console.log(`changedFiles in the record: ${JSON.stringify(settle.changedFiles)}; the session's /diff: ${JSON.stringify(sessionDiff.map((d) => d.file))}`)
    expect(settle.changedFiles).toEqual(['src/parser.js'])
    await waitFor(() => host.notifications.length === 1, 10_000)
    expect(host.notifications[0]).toMatchObject({ sessionId, status: 'budgetLimited', title: 'Goal reached its token budget' })
    expect(host.notifications[0].body).toContain('Handoff: Done Parser handles nested lists')

    // Nothing more is posted after the settle.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    expect(proxy.sends.filter((s) => s.sessionId === sessionId)).toHaveLength(1)
    expect(model.requestsOf('wrap-up', 'agent')).toHaveLength(3)
  })
})
