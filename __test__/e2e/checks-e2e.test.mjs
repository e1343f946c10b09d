// Acceptance checks on a real OpenCode server (opencode-ai 1.18.33, offline): the check runs
// through POST /session/:id/shell, fails, the continuation quotes it, the scripted model fixes the
// file in the next turn, the check passes and the goal settles complete with cause checksPassed.
// The runs are bash tool parts in the transcript, like any other tool call.
import { beforeAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { waitFor } from '../helpers.mjs'
import { createGoalSession, readGoal } from './opencode-server.mjs'
import { startForwardingHost, useOpenCode } from './forwarding-host.mjs'

let model
let oc

const env = useOpenCode()
// Bound once the servers are up (hooks run in the order they are registered).
beforeAll(() => ({ model, oc } = env))

// Quotes, `$VAR`, `&&` and a pipe: the wrapper must survive OpenCode's quoted eval.
const CHECK = `test -f "$PWD/DONE.txt" && grep -q 'verified' DONE.txt | cat && grep -c "verified" DONE.txt`

describe('acceptance checks on a real OpenCode server', () => {
  it('a failing check, a fix turn, the check passing, the tool parts in the transcript', async () => {
    model.scenario('checks', {
      turns: [
        { text: 'All done: DONE.txt is in place.' },
        // After the continuation that quotes the failure: write the file.
        { text: '', toolCalls: [{ name: 'write', arguments: { filePath: 'DONE.txt', content: 'done and verified\n' } }] },
        { text: 'Created DONE.txt.' },
      ],
      audits: [{ verdict: 'complete', note: 'the file is there' }],
    })
    const host = await startForwardingHost(oc)
    const { runtime } = host
    try {
      const { sessionId } = await createGoalSession(oc.api, {
        objective: 'Create DONE.txt saying it is verified. [scenario:checks]',
        checks: [{ command: CHECK, timeoutMs: 60_000 }],
      })
      const goal = await waitFor(
        async () => {
          const g = await readGoal(oc.api, sessionId)
          return g?.status === 'complete' ? g : null
        },
        90_000,
        200,
      )
      expect(goal.statusReason).toBe('checks passed')
      expect(goal.cause).toMatchObject({ code: 'checksPassed', detail: '1 of 1 checks passed' })
      expect(goal.turnsUsed).toBe(1)
      expect(fs.readFileSync(path.join(oc.directory, 'DONE.txt'), 'utf8')).toBe('done and verified\n')

      const runs = (await runtime.history(sessionId)).filter((r) => r.action === 'check').map((r) => r.check)
      expect(runs.map((r) => [r.result, r.exitStatus])).toEqual([['failed', 1], ['passed', 0]])
      expect(runs[1].outputTail).toBe('1')

      // The continuation quoted the failure as data.
      const agentPrompts = model.requests.filter((r) => r.kind === 'agent').map((r) => r.prompt)
      expect(agentPrompts.some((p) => p.includes('Acceptance check 1 of 1 failed with exit status 1.'))).toBe(true)

      // Both runs are bash tool parts in the transcript, each under the runtime's own user message.
      const messages = await oc.api('GET', `/session/${sessionId}/message`)
      const checkReplies = messages.filter((m) => /zCHK/.test(m.info.parentID ?? ''))
      expect(checkReplies).toHaveLength(2)
      for (const reply of checkReplies) {
        const tool = reply.parts.find((p) => p.type === 'tool')
        expect(tool.tool).toBe('bash')
        expect(tool.state.status).toBe('completed')
        expect(tool.state.input.command).toContain(CHECK)
      }
      // Each run was claimed first (crates/goal-core/src/goal/act/runs.rs, `claim`): a noReply
      // message whose one part is ignored and synthetic, which OpenCode kept out of every model call.
      const claims = messages.filter((m) => m.info.role === 'user' && /zCHK/.test(m.info.id) && m.parts.some((p) => p.text?.startsWith('acceptance check claimed by ')))
      expect(claims).toHaveLength(2)
      for (const claim of claims) expect(claim.parts.map((p) => [p.ignored, p.synthetic])).toEqual([[true, true]])
      expect(model.requests.filter((r) => JSON.stringify(r.body).includes('acceptance check claimed by'))).toHaveLength(0)
      const explained = await runtime.explain(sessionId)
      expect(explained.lastChecks.map((r) => r.result)).toEqual(['passed'])
    } finally {
      await host.stop()
    }
  }, 150_000)
})
