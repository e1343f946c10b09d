// The reviewer reads only, on a real OpenCode server (opencode-ai, offline) whose project
// configures a local MCP server (fixtures/scribe-mcp.mjs) with one tool that writes a file. OpenCode
// offers that tool as `scribe_scribble`: no fixed list of tool names can switch it off, only the
// wildcard of the reviewer's `tools` map (`"*": false` first, then the reading tools). The agent's
// own turn uses the tool (so it is live); the scripted reviewer tries it too, and nothing is
// written. See docs/security.md and docs/review.md.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { tempDir, waitFor } from '../helpers.mjs'
import { createGoalSession, readGoal } from './opencode-server.mjs'
import { startForwardingHost, useOpenCode } from './forwarding-host.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const scratch = tempDir('goal-e2e-scribe-')
/** One JSON line per call the MCP server ran. */
const callLog = path.join(scratch, 'calls.jsonl')

let model
let oc

const env = useOpenCode({
  config: {
    mcp: {
      scribe: {
        type: 'local',
        command: [process.execPath, path.join(here, 'fixtures', 'scribe-mcp.mjs')],
        environment: { SCRIBE_LOG: callLog },
        enabled: true,
      },
    },
  },
})
beforeAll(() => ({ model, oc } = env))

/** The reading tools OpenCode 1.18.33 has (it has no `list`); nothing else may be offered. */
const READING = ['glob', 'grep', 'list', 'read']
const offered = (request) => (request.body.tools ?? []).map((t) => t.function?.name ?? t.name).sort()
const calls = () => (fs.existsSync(callLog) ? fs.readFileSync(callLog, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [])
const answer = (object) => ({ text: `Checked.\n${JSON.stringify(object)}` })

describe('a reviewer beside a writing MCP tool on a real OpenCode server', () => {
  it('is offered only the reading tools, cannot run the MCP tool, and approves: reviewApproved, no file written', async () => {
    const agentFile = path.join(oc.directory, 'agent-note.txt')
    const reviewerFile = path.join(oc.directory, 'reviewer-was-here.txt')
    model.scenario('review-mcp', {
      turns: [
        { text: '', toolCalls: [{ name: 'scribe_scribble', arguments: { path: agentFile, text: 'written by the agent\n' } }] },
        { text: 'Wrote agent-note.txt with the scribe tool.' },
      ],
      audits: [{ verdict: 'complete', note: 'note written', criteria: [{ id: 'c1', state: 'met', evidence: ['e1'] }] }],
      reviews: [
        { text: '', toolCalls: [{ name: 'scribe_scribble', arguments: { path: reviewerFile, text: 'written by the reviewer\n' } }] },
        { text: '', toolCalls: [{ name: 'read', arguments: { filePath: agentFile } }] },
        answer({ verdict: 'approve', note: 'the note exists', criteria: [{ id: 'c1', state: 'met', evidence: ['agent-note.txt:1', 'e1'] }], findings: [] }),
      ],
    })
    await startForwardingHost(oc, { tunables: { reviewTimeoutMs: 60_000 } })
    const { sessionId } = await createGoalSession(oc.api, {
      objective: 'Write agent-note.txt with the scribe tool. [scenario:review-mcp]',
      criteria: [{ id: 'c1', text: 'agent-note.txt exists', source: 'user', state: 'unmet' }],
      goalFields: { review: true },
    })
    const goal = await waitFor(
      async () => {
        const stored = await readGoal(oc.api, sessionId)
        return stored && stored.status !== 'active' ? stored : null
      },
      120_000,
      250,
    )
    expect(goal.status).toBe('complete')
    expect(goal.cause.code).toBe('reviewApproved')

    // The MCP tool is live: the agent was offered it, called it, and its file was written.
    expect(offered(model.requestsOf('review-mcp', 'agent')[0])).toContain('scribe_scribble')
    expect(fs.readFileSync(agentFile, 'utf8')).toBe('written by the agent\n')

    // Every model request of the reviewer's child session offered reading tools and nothing else.
    const reviews = model.requestsOf('review-mcp', 'review')
    expect(reviews.length).toBe(3)
    for (const request of reviews) {
      const tools = offered(request)
      expect(tools).toContain('read')
      expect(tools.filter((tool) => !READING.includes(tool)), `offered ${tools.join(', ')}`).toEqual([])
    }

    // The reviewer asked for the MCP tool; OpenCode refused it as unavailable (a tool part in
    // error) and did not run it: no file, one call at the MCP server (the agent's).
    const [child] = await oc.api('GET', `/session/${sessionId}/children`)
    expect(child.id).toBe(goal.cause.detail)
    const messages = await oc.api('GET', `/session/${child.id}/message`)
    const toolParts = messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool')
    const attempts = toolParts.filter((p) => p.tool === 'scribe_scribble')
    expect(attempts.map((p) => p.state.status)).toEqual(['error'])
    expect(attempts[0].state.input.path).toBe(reviewerFile)
    expect(attempts[0].state.error).toMatch(/unavailable tool/)
    expect(fs.existsSync(reviewerFile)).toBe(false)
    expect(calls()).toEqual([{ tool: 'scribble', path: agentFile }])
  }, 150_000)
})
