// The reviewer on a real OpenCode server (opencode-ai, offline) with the scripted model as the
// agent, the auditor and the reviewer: a goal with `review` completes only once a child session of
// the goal's session, whose model request offers no writing tool, has read the file it cites and
// approved; a second goal is rejected once, continues with the findings quoted, and is then
// approved. See docs/review.md.
import fs from 'node:fs'
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../helpers.mjs'
import { createGoalSession, readGoal } from './opencode-server.mjs'
import { startForwardingHost, useOpenCode } from './forwarding-host.mjs'

let model
let oc

const env = useOpenCode()
beforeAll(() => ({ model, oc } = env))

const criterion = (id, text) => ({ id, text, source: 'user', state: 'unmet' })
const WRITING_TOOLS = ['edit', 'write', 'patch', 'bash', 'task', 'todowrite', 'webfetch', 'question']
const offered = (request) => (request.body.tools ?? []).map((t) => t.function?.name ?? t.name).sort()
const answer = (object) => ({ text: `Checked.\n${JSON.stringify(object)}` })

/** Waits for the goal of `sessionId` to settle (any status but active). */
const settled = (sessionId) =>
  waitFor(
    async () => {
      const goal = await readGoal(oc.api, sessionId)
      return goal && goal.status !== 'active' ? goal : null
    },
    120_000,
    250,
  )

describe('a reviewer on a real OpenCode server', () => {
  it('a child session of the goal, offered no writing tool, reads the file it cites and approves: reviewApproved', async () => {
    const file = path.join(oc.directory, 'parser-review.js')
    model.scenario('review-ok', {
      turns: [
        { text: '', toolCalls: [{ name: 'write', arguments: { filePath: file, content: 'export const parse = (s) => s\n' } }] },
        { text: 'Wrote parser-review.js.' },
      ],
      audits: [{ verdict: 'complete', note: 'parser written', criteria: [{ id: 'c1', state: 'met', evidence: ['e1'] }] }],
      reviews: [
        { text: '', toolCalls: [{ name: 'read', arguments: { filePath: file } }] },
        answer({ verdict: 'approve', note: 'the parser exists', criteria: [{ id: 'c1', state: 'met', evidence: ['parser-review.js:1', 'e1'] }], findings: [] }),
      ],
    })
    const host = await startForwardingHost(oc, { tunables: { reviewTimeoutMs: 60_000 } })
    const { sessionId } = await createGoalSession(oc.api, {
      objective: 'Write parser-review.js exporting parse. [scenario:review-ok]',
      criteria: [criterion('c1', 'parser-review.js exports parse')],
      goalFields: { review: true },
    })
    const goal = await settled(sessionId)
    expect(goal.status).toBe('complete')
    expect(goal.cause.code).toBe('reviewApproved')
    expect(goal.note).toBe('1/1 criteria met · review: approved')

    // The reviewer is a child session of the goal's session, as OpenCode lists it.
    const children = await oc.api('GET', `/session/${sessionId}/children`)
    expect(children.map((c) => c.id)).toEqual([goal.cause.detail])
    expect(children[0].parentID).toBe(sessionId)

    // Its model requests offered the reading tools only.
    const reviews = model.requestsOf('review-ok', 'review')
    expect(reviews.length).toBe(2)
    for (const request of reviews) {
      const tools = offered(request)
      expect(tools).toContain('read')
      for (const tool of WRITING_TOOLS) expect(tools, tool).not.toContain(tool)
    }
    // The agent's own turns were offered the writing tools (the map is per prompt).
    expect(offered(model.requestsOf('review-ok', 'agent')[0])).toContain('write')

    // The reviewer really read the file: a completed `read` tool part in its session.
    const messages = await oc.api('GET', `/session/${children[0].id}/message`)
    const reads = messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool' && p.tool === 'read')
    expect(reads.map((p) => p.state.status)).toEqual(['completed'])
    expect(reads[0].state.output).toContain('export const parse')

    const report = await host.runtime.explain(sessionId)
    expect(report.lastReview).toMatchObject({ sessionId: children[0].id, verdict: 'approved', cited: [{ path: 'parser-review.js', exists: true }] })
  }, 150_000)

  it('a rejection continues the goal with the findings quoted; the next review approves', async () => {
    const source = path.join(oc.directory, 'lists-review.js')
    const test = path.join(oc.directory, 'lists-review.test.js')
    model.scenario('review-again', {
      turns: [
        { text: '', toolCalls: [{ name: 'write', arguments: { filePath: source, content: 'export const flat = (l) => l.flat()\n' } }] },
        { text: 'Wrote lists-review.js.' },
        { text: '', toolCalls: [{ name: 'write', arguments: { filePath: test, content: 'flat([[1]])\n' } }] },
        { text: 'Added lists-review.test.js.' },
      ],
      audits: [{ verdict: 'complete', note: 'done', criteria: [{ id: 'c1', state: 'met', evidence: ['e1'] }] }],
      reviews: [
        answer({ verdict: 'reject', note: 'untested', criteria: [{ id: 'c1', state: 'unclear', evidence: [] }], findings: ['No test file covers flat'] }),
        answer({ verdict: 'approve', note: 'tested', criteria: [{ id: 'c1', state: 'met', evidence: ['lists-review.test.js:1'] }], findings: [] }),
      ],
    })
    const host = await startForwardingHost(oc, { tunables: { reviewTimeoutMs: 60_000 } })
    const { sessionId } = await createGoalSession(oc.api, {
      objective: 'Write lists-review.js with a test. [scenario:review-again]',
      criteria: [criterion('c1', 'flat is tested')],
      goalFields: { review: true },
    })
    const goal = await settled(sessionId)
    expect(goal.status).toBe('complete')
    expect(goal.cause.code).toBe('reviewApproved')
    expect(goal.turnsUsed).toBe(1)
    expect(fs.existsSync(test)).toBe(true)

    const children = await oc.api('GET', `/session/${sessionId}/children`)
    expect(children).toHaveLength(2)
    // The continuation that followed the rejection quoted its finding as data.
    const continuation = model.requestsOf('review-again', 'agent').map((r) => r.prompt).find((p) => p.includes('<review-findings>'))
    expect(continuation).toContain('<review-findings>\n- No test file covers flat\n</review-findings>')
    const verdicts = (await host.runtime.history(sessionId)).filter((r) => r.action === 'review').map((r) => r.reason)
    expect(verdicts).toEqual(['rejected', 'approved'])
  }, 150_000)
})
