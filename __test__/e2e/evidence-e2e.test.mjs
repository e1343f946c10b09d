// The evidence audit on a real OpenCode server (opencode-ai 1.18.33, offline, in a git project so
// OpenCode records file changes): the scripted model makes real tool calls, OpenCode runs them,
// and the audit request carries the real exit codes and the real diff. A goal whose turns change
// nothing is stopped by the no-progress breaker.
import { beforeAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { waitFor } from '../helpers.mjs'
import { createGoalSession, readGoal } from './opencode-server.mjs'
import { startForwardingHost, useOpenCode } from './forwarding-host.mjs'

let model
let oc
let host

const env = useOpenCode({ git: true })
// Bound once the servers are up (hooks run in the order they are registered).
beforeAll(() => ({ model, oc } = env))

const startHost = (options = {}) => startForwardingHost(oc, options)

async function settled(sessionId, status, timeoutMs = 60_000) {
  return waitFor(
    async () => {
      const goal = await readGoal(oc.api, sessionId)
      return goal?.status === status ? goal : null
    },
    timeoutMs,
    100,
  )
}

const evidenceOf = (request) => JSON.parse(request.prompt.split('<evidence>\n')[1].split('\n</evidence>')[0])
const bash = (command) => ({ name: 'bash', arguments: { command, description: 'check' } })

describe('evidence audit on a real OpenCode server', () => {
  it('a failing check, an edit, the check passing: real exit codes and the real diff reach the auditor', async () => {
    const check = 'test -s DONE.txt'
    const tag = model.scenario('evidence', {
      turns: [
        // Turn 1: the check fails (exit 1), yet the reply claims success.
        { text: '', toolCalls: [bash(check)] },
        { text: 'All done: DONE.txt is in place.' },
        // Turn 2 (after the continuation): write the file, the check passes.
        { text: '', toolCalls: [{ name: 'write', arguments: { filePath: 'DONE.txt', content: 'done\nand verified\n' } }] },
        { text: '', toolCalls: [bash(check)] },
        { text: 'Created DONE.txt; `test -s DONE.txt` passes now.' },
      ],
      // The auditor believes the claims both times: the evidence overrides the first.
      audits: [{ verdict: 'complete', note: 'file is there' }, { verdict: 'complete', note: 'file exists and the check passes' }],
    })
    host = await startHost()
    const { sessionId } = await createGoalSession(oc.api, { objective: `Create DONE.txt with some text ${tag}` })

    const goal = await settled(sessionId, 'complete')
    expect(goal.turnsUsed).toBe(1)
    expect(goal.evidenceOverrides).toHaveLength(1)
    const audits = model.requestsOf('evidence', 'audit')
    expect(audits).toHaveLength(2)

    const first = evidenceOf(audits[0])
    expect(first.failingCommands).toEqual([{ command: check, exitCode: 1 }])
    // OpenCode reports a silent failing command's output as "(no output)".
    expect(first.toolCalls).toEqual([{ tool: 'bash', status: 'completed', command: check, exitCode: 1, outputTail: '(no output)' }])
    expect(first.filesChanged).toEqual([])

    const second = evidenceOf(audits[1])
    expect(second.failingCommands).toBeUndefined()
    expect(second.toolCalls).toEqual([
      { tool: 'write', status: 'completed' },
      { tool: 'bash', status: 'completed', command: check, exitCode: 0 },
    ])
    expect(second.filesChanged).toEqual([{ path: 'DONE.txt', additions: 2, deletions: 0, status: 'added' }])
    expect(fs.readFileSync(path.join(oc.directory, 'DONE.txt'), 'utf8')).toBe('done\nand verified\n')

    const history = await host.runtime.history(sessionId)
    expect(history.map((r) => r.action)).toEqual(['continue (complete overridden)', 'complete'])
    expect(history[0].note).toContain('exit code 1')
    // The built-in small model reports the audit's usage (scripted: 100 + 10 tokens).
    expect(history.every((r) => r.auditTokens === 110)).toBe(true)
    expect(history[1].digest).toMatchObject({ successfulToolCalls: 2, filesChanged: 1, additions: 2, deletions: 0 })
  })

  it('a goal whose turns change nothing is stopped by the breaker', async () => {
    const tag = model.scenario('stuck', {
      turns: [{ text: 'I am waiting for the database to come up before I can continue.' }],
      audits: [{ verdict: 'continue', note: 'keep trying' }],
    })
    host = await startHost()
    const { sessionId } = await createGoalSession(oc.api, { objective: `Migrate the database ${tag}` })
    const goal = await settled(sessionId, 'blocked')
    expect(goal.statusReason).toBe('no progress')
    expect(goal.note).toMatch(/^No progress in 3 turns/)
    expect(goal.turnsUsed).toBe(2)
    expect(model.requestsOf('stuck', 'audit')).toHaveLength(2)
    await waitFor(() => host.notifications.length === 1)
    expect(host.notifications[0]).toMatchObject({ status: 'blocked', sessionId })
  })
})
