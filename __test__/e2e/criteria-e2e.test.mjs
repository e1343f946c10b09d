// Graded completion on a real OpenCode server (opencode-ai, offline) with the scripted model as
// both the agent and the auditor: a goal with two user criteria; the first audit grades one met,
// citing the write tool call of that turn; the goal continues and the next turn's prompt names
// the other criterion as data; the second audit grades it met and the goal completes with
// `2/2 criteria met`. One audit per audited turn, counted at the model's wire.
import { beforeAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { waitFor } from '../helpers.mjs'
import { createGoalSession, readGoal } from './opencode-server.mjs'
import { startForwardingHost, useOpenCode } from './forwarding-host.mjs'

let model
let oc

const env = useOpenCode()
beforeAll(() => ({ model, oc } = env))

const criterion = (id, text) => ({ id, text, source: 'user', state: 'unmet' })

describe('graded completion on a real OpenCode server', () => {
  it('two user criteria: one met, the next prompt names the other, then 2/2 criteria met', async () => {
    model.scenario('criteria', {
      turns: [
        { text: '', toolCalls: [{ name: 'write', arguments: { filePath: 'PARSER.md', content: 'parser notes\n' } }] },
        { text: 'Wrote PARSER.md.' },
        { text: '', toolCalls: [{ name: 'write', arguments: { filePath: 'TESTS.md', content: 'test notes\n' } }] },
        { text: 'Wrote TESTS.md.' },
      ],
      audits: [
        { verdict: 'complete', note: 'parser notes written', criteria: [{ id: 'c1', state: 'met', evidence: ['e1'] }] },
        { verdict: 'complete', note: 'test notes written', criteria: [{ id: 'c2', state: 'met', evidence: ['e1'] }] },
      ],
    })
    const host = await startForwardingHost(oc)
    try {
      const { sessionId } = await createGoalSession(oc.api, {
        objective: 'Write PARSER.md and TESTS.md. [scenario:criteria]',
        criteria: [criterion('c1', 'PARSER.md exists'), criterion('c2', 'TESTS.md exists')],
      })
      const goal = await waitFor(
        async () => {
          const g = await readGoal(oc.api, sessionId)
          return g?.status === 'complete' ? g : null
        },
        90_000,
        200,
      )
      expect(goal.note).toBe('2/2 criteria met — test notes written')
      expect(goal.criteria.map((c) => [c.id, c.state, c.evidence])).toEqual([
        ['c1', 'met', ['e1']],
        ['c2', 'met', ['e1']],
      ])
      expect(goal.turnsUsed).toBe(1)
      expect(fs.existsSync(path.join(oc.directory, 'TESTS.md'))).toBe(true)

      // The first audit saw both criteria and the turn's write as [e1].
      const audits = model.requestsOf('criteria', 'audit')
      expect(audits).toHaveLength(2)
      expect(audits[0].prompt).toContain('[c1] PARSER.md exists\n[c2] TESTS.md exists')
      expect(audits[0].prompt).toMatch(/\[e1\] \{[^\n]*"tool":"write"/)
      // The continuation (the second turn's prompt) names the open criterion, and only it.
      const continuation = model.requestsOf('criteria', 'agent').map((r) => r.prompt).find((p) => p.includes('<open-criteria>'))
      expect(continuation).toContain('<open-criteria>\n[c2] TESTS.md exists\n</open-criteria>')
      expect(continuation).not.toContain('[c1] PARSER.md exists')
      // One audit per audited turn.
      const audited = (await host.runtime.history(sessionId)).filter((r) => r.verdict)
      expect(audited).toHaveLength(audits.length)
      await waitFor(() => host.notifications.length === 1, 5000)
      expect(host.notifications[0].body).toContain('all 2 criteria met')
    } finally {
      await host.stop()
    }
  }, 150_000)
})
