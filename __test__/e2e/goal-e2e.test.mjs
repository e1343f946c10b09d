// End to end against a real OpenCode server (opencode-ai 1.18.33, offline) whose provider `mock`
// is the scripted model server. Real sessions, real messages, real token numbers; the runtime gets
// OpenCode's /global/event stream the way a host forwards it, and audits through the built-in
// small model (OpenCode's `small_model` = mock/mock-small), so both halves are exercised.
import { beforeAll, describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { tempDataDir, waitFor, sleep } from '../helpers.mjs'
import {
  AGENT_MODEL,
  SMALL_MODEL,
  TEST_API_KEY,
  createGoalSession,
  readGoal,
  resumeGoal,
} from './opencode-server.mjs'
import { startForwardingHost, useOpenCode } from './forwarding-host.mjs'

const require = createRequire(import.meta.url)
const pkg = require('../../runtime.js')

let model
let oc
let host

const env = useOpenCode()
// Bound once the servers are up (hooks run in the order they are registered).
beforeAll(() => ({ model, oc } = env))

/** A host wired like OpenChamber's: OpenCode's global event stream forwarded into the runtime. */
const startHost = (options = {}) => startForwardingHost(oc, { resumeKickoffMs: 100, ...options })

const goalOf = (sessionId) => readGoal(oc.api, sessionId)

async function settled(sessionId, status, timeoutMs = 45_000) {
  return waitFor(
    async () => {
      const goal = await goalOf(sessionId)
      return goal?.status === status ? goal : null
    },
    timeoutMs,
    100,
  )
}

const messagesOf = (sessionId) => oc.api('GET', `/session/${sessionId}/message`)
const assistants = async (sessionId) => (await messagesOf(sessionId)).filter((m) => m.info.role === 'assistant')
const userTexts = async (sessionId) =>
  (await messagesOf(sessionId))
    .filter((m) => m.info.role === 'user')
    .map((m) => m.parts.filter((p) => p.type === 'text' && !p.synthetic).map((p) => p.text).join('\n'))

const usage = (prompt, completion) => ({ prompt_tokens: prompt, completion_tokens: completion })

describe('goal loop on a real OpenCode server', () => {
  it('completes after several turns when the auditor verifies it', async () => {
    const tag = model.scenario('complete', {
      turns: [
        { text: 'Done: parser skeleton. Verified: builds. Remaining: nesting, tests.', usage: usage(1200, 100) },
        { text: 'Done: nesting. Verified: manual check. Remaining: tests.', usage: usage(2400, 150) },
        { text: 'Done: tests added. Verified: all 12 tests pass. Remaining: nothing.', usage: usage(3600, 200) },
      ],
      audits: [
        { verdict: 'continue', note: 'nesting and tests left' },
        { verdict: 'continue', note: 'tests left' },
        { verdict: 'complete', note: 'nesting works, 12 tests pass' },
      ],
    })
    host = await startHost()
    const { sessionId } = await createGoalSession(oc.api, { objective: `Make the parser handle nested lists ${tag}` })

    const goal = await settled(sessionId, 'complete')
    expect(goal).toMatchObject({ statusReason: 'verified by audit', note: 'nesting works, 12 tests pass', turnsUsed: 2 })
    expect(goal).toMatchObject({ evaluationProviderID: SMALL_MODEL.providerID, evaluationModelID: SMALL_MODEL.modelID })

    // Real messages with the scripted usage as their tokens; the goal is charged the last
    // turn's snapshot (no pre-goal history, so no baseline).
    const replies = await assistants(sessionId)
    expect(replies).toHaveLength(3)
    expect(replies.map((m) => [m.info.tokens.input, m.info.tokens.output])).toEqual([[1200, 100], [2400, 150], [3600, 200]])
    expect(goal.tokensUsed).toBe(3800)

    // Two continuations, sent with the session's own model and agent, numbered.
    const users = await userTexts(sessionId)
    expect(users).toHaveLength(3)
    expect(users[1]).toContain('<objective>')
    expect(users[1]).toContain('Auto-continuations used: 1 of 20.')
    expect(users[2]).toContain('Auto-continuations used: 2 of 20.')
    expect(replies.every((m) => m.info.providerID === AGENT_MODEL.providerID && m.info.modelID === AGENT_MODEL.modelID)).toBe(true)

    // From a finished turn to the next continuation: never inside the quiet window (400 ms).
    const messages = await messagesOf(sessionId)
    const gaps = replies.slice(0, 2).map((reply) => {
      const next = messages.find((m) => m.info.role === 'user' && m.info.time.created > reply.info.time.completed)
      return next.info.time.created - reply.info.time.completed
    })
    console.log(`turn finished → continuation created: ${gaps.join(' ms, ')} ms (quiet window 400 ms)`)
    expect(gaps.every((gap) => gap >= 400 && gap < 10_000)).toBe(true)

    // The audits went through the built-in small model to OpenCode's small_model.
    const audits = model.requestsOf('complete', 'audit')
    expect(audits).toHaveLength(3)
    expect(audits.every((a) => a.model === SMALL_MODEL.modelID && !a.stream && a.auth.bearer === TEST_API_KEY)).toBe(true)
    expect(audits[2].prompt).toContain('all 12 tests pass')

    await waitFor(() => host.notifications.length === 1)
    expect(host.notifications[0]).toMatchObject({ sessionId, status: 'complete', directory: oc.directory, title: 'Goal complete' })
  })

  it('settles blocked after three blocked verdicts in a row', async () => {
    const tag = model.scenario('blocked', {
      // Each turn tries something else (identical no-change turns would trip the no-progress
      // breaker first, which the evidence suite shows).
      turns: [
        { text: 'Blocked: the deploy needs a token I do not have. Remaining: deploy.', usage: usage(1500, 80) },
        { text: 'Tried the staging credentials from the wiki; they are expired. Still need a deploy token.', usage: usage(1600, 80) },
        { text: 'Checked the CI secrets: no deploy token is configured there either. Waiting for one.', usage: usage(1700, 80) },
      ],
      audits: [{ verdict: 'blocked', note: 'deploy token missing' }],
    })
    host = await startHost()
    const { sessionId } = await createGoalSession(oc.api, { objective: `Deploy the service ${tag}` })

    const goal = await settled(sessionId, 'blocked')
    expect(goal.statusReason).toBe('deploy token missing')
    expect(goal.turnsUsed).toBe(2)
    expect(goal.blockedStreak).toBe(0)
    expect(model.requestsOf('blocked', 'audit')).toHaveLength(3)
    expect(await assistants(sessionId)).toHaveLength(3)
  })

  it('settles budgetLimited once the scripted usage reaches the budget', async () => {
    const tag = model.scenario('budget', {
      turns: [
        { text: 'Done: first half. Remaining: second half.', usage: usage(3000, 500) },
        { text: 'Done: most of the second half. Remaining: polish.', usage: usage(4800, 600) },
      ],
      audits: [{ verdict: 'continue', note: 'second half left' }],
    })
    host = await startHost()
    // Stopping cold at the budget (wrapUp off: the wrap-up before it is wrap-up-e2e.test.mjs).
    const { sessionId } = await createGoalSession(oc.api, { objective: `Port the module ${tag}`, tokenBudget: 5000, goalFields: { wrapUp: false } })

    const goal = await settled(sessionId, 'budgetLimited')
    expect(goal.statusReason).toBe('token budget reached')
    expect(goal.tokensUsed).toBe(5400)
    expect(goal.turnsUsed).toBe(1)
    // The budget check comes before the audit: one audit only.
    expect(model.requestsOf('budget', 'audit')).toHaveLength(1)
    const users = await userTexts(sessionId)
    expect(users[1]).toContain('- Tokens used: 3500')
    expect(users[1]).toContain('- Token budget: 5000')
  })

  it('pauses on an abort mid-turn and continues after a resume', async () => {
    const tag = model.scenario('abort', {
      turns: [
        { text: 'Done: step one. Remaining: step two.', usage: usage(1000, 100) },
        { text: 'Working on step two', stall: true },
        { text: 'Done: step two. Verified: tests pass. Remaining: nothing.', usage: usage(2600, 120) },
      ],
      audits: [{ verdict: 'continue', note: 'step two left' }, { verdict: 'complete', note: 'both steps done' }],
    })
    host = await startHost()
    const { sessionId } = await createGoalSession(oc.api, { objective: `Do both steps ${tag}` })

    // The continuation's turn stalls in the model; the user aborts it.
    await model.waitForStall('abort', { timeoutMs: 30_000 })
    expect(await oc.api('POST', `/session/${sessionId}/abort`)).toBe(true)
    const paused = await settled(sessionId, 'paused', 15_000)
    expect(paused.statusReason).toBe('paused after abort')
    expect(paused.turnsUsed).toBe(1)
    const aborted = (await assistants(sessionId)).at(-1)
    expect(aborted.info.error?.name).toBe('MessageAbortedError')

    // Nothing continues a paused goal.
    await sleep(1500)
    expect(model.requestsOf('abort', 'agent')).toHaveLength(2)
    expect((await goalOf(sessionId)).status).toBe('paused')

    // Resume (fresh-read merge of statusReason 'resumed' + active): straight to a continuation,
    // no audit over the aborted tail, then the audit verifies the next turn.
    await resumeGoal(oc.api, sessionId)
    const goal = await settled(sessionId, 'complete')
    expect(goal.note).toBe('both steps done')
    expect(goal.turnsUsed).toBe(2)
    expect(model.requestsOf('abort', 'audit')).toHaveLength(2)
    expect(model.requestsOf('abort', 'agent')).toHaveLength(3)
  })

  it("a person's stop typed through the UI's route pauses the goal within one audit, quoting them", async () => {
    const words = "stop here, I'll finish the rest myself"
    // The auditor reads the person's words as a model would: a message of theirs is a pause.
    const read = ({ body }) =>
      JSON.stringify(body).includes('<person_message>')
        ? { verdict: 'pause', note: 'the person asked to stop' }
        : { verdict: 'continue', note: 'steps left' }
    const tag = model.scenario('person-stop', {
      turns: [
        { text: 'Done: step 1. Remaining: steps 2 and 3.', usage: usage(1200, 80) },
        // The continuation's turn runs long enough for the person to type into it.
        { text: 'Done: step 2. Remaining: step 3.', usage: usage(1500, 80), delayMs: 2500 },
        { text: 'Understood: I stop here and leave step 3 to you.', usage: usage(1700, 60) },
      ],
      audits: [read],
    })
    host = await startHost()
    const { sessionId } = await createGoalSession(oc.api, { objective: `Do steps 1 to 3 ${tag}` })
    await waitFor(async () => (await userTexts(sessionId)).some((t) => t.includes('Auto-continuations used: 1 of 20.')), 30_000, 100)
    // What a UI sends when a person types into the session: a prompt, its text, the session's model.
    await oc.api('POST', `/session/${sessionId}/prompt_async`, { model: AGENT_MODEL, agent: 'build', parts: [{ type: 'text', text: words }] })

    const goal = await settled(sessionId, 'paused', 30_000)
    expect(goal.cause).toMatchObject({ code: 'userAskedToPause', detail: words })
    expect(goal.statusReason).toBe('paused: the person asked to stop')
    expect(goal.note).toContain(words)
    // Within one audit: the first audit that read the person's words is the last audit.
    const audits = model.requestsOf('person-stop', 'audit')
    const reading = audits.filter((a) => JSON.stringify(a.body).includes(words))
    expect(reading).toHaveLength(1)
    expect(audits.at(-1)).toBe(reading[0])
    expect(JSON.stringify(reading[0].body)).toContain(`<person_message>\\n${words}\\n</person_message>`)
    await sleep(1500)
    // Nothing after the person's words but the agent's answer to them: no continuation.
    const users = await userTexts(sessionId)
    expect(users.at(-1)).toBe(words)
    expect(users.filter((t) => t.includes('Auto-continuations used:'))).toHaveLength(1)
    expect(model.requestsOf('person-stop', 'audit')).toHaveLength(audits.length)
    await waitFor(() => host.notifications.length === 1)
    expect(host.notifications[0]).toMatchObject({ sessionId, status: 'paused', title: 'Goal paused' })
  })

  it('blocks at the configured turn cap', async () => {
    const tag = model.scenario('cap', {
      turns: [{ text: 'Done: a bit more. Remaining: lots.', usage: usage(900, 90) }],
      audits: [{ verdict: 'continue', note: 'lots left' }],
    })
    host = await startHost({ maxAutoTurns: 2 })
    const { sessionId } = await createGoalSession(oc.api, { objective: `Rewrite everything ${tag}` })

    const goal = await settled(sessionId, 'blocked')
    expect(goal.statusReason).toBe('auto-continuation limit reached')
    expect(goal.turnsUsed).toBe(2)
    expect(model.requestsOf('cap', 'audit')).toHaveLength(2)
    const users = await userTexts(sessionId)
    expect(users).toHaveLength(3)
    expect(users[1]).toContain('Auto-continuations used: 1 of 2.')
    expect(users[2]).toContain('Auto-continuations used: 2 of 2.')
  })

  it('blocks when the auditor is unavailable twice in a row', async () => {
    const tag = model.scenario('audit-down', {
      turns: [{ text: 'Done: part one. Remaining: part two.', usage: usage(1100, 90) }],
      audits: [{ status: 503 }, { status: 401 }],
    })
    host = await startHost()
    const { sessionId } = await createGoalSession(oc.api, { objective: `Finish both parts ${tag}` })

    const goal = await settled(sessionId, 'blocked')
    expect(goal.statusReason).toBe('progress audit unavailable')
    // One unaudited continuation after the first failure; the second failure stops the loop.
    expect(goal.turnsUsed).toBe(1)
    expect(model.requestsOf('audit-down', 'audit')).toHaveLength(2)
    expect(await assistants(sessionId)).toHaveLength(2)
    expect(host.logs.join('\n')).not.toContain(TEST_API_KEY)
  })

  it('examples/attach.js keeps a goal on a running server going and prints its transitions', async () => {
    const tag = model.scenario('attach', {
      turns: [
        { text: 'Done: half. Remaining: the other half.', usage: usage(1000, 100) },
        { text: 'Done: all of it. Verified: tests pass. Remaining: nothing.', usage: usage(2000, 100) },
      ],
      audits: [{ verdict: 'continue', note: 'other half left' }, { verdict: 'complete', note: 'all done, tests pass' }],
    })
    const script = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples', 'attach.js')
    // A data directory of its own: without one, attach.js keeps its files in the user's.
    const dataDir = tempDataDir()
    const child = spawn(process.execPath, [script, '--url', oc.url, '--quiet-ms', '400', '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
    try {
      await waitFor(() => output.includes('watching goals'), 15_000, 50)
      const { sessionId } = await createGoalSession(oc.api, { objective: `Finish the port ${tag}` })
      await waitFor(() => output.includes('goal COMPLETE'), 45_000, 50)
      // The notification is delivered asynchronously, after the status line.
      await waitFor(() => output.includes('notification: Goal complete'), 5_000, 50)
      const lines = output.split('\n').filter((line) => line.includes(sessionId))
      expect(lines.some((line) => line.includes('goal active'))).toBe(true)
      expect(lines.some((line) => line.includes('continuation 1/20 sent — auditor: "other half left"'))).toBe(true)
      expect(lines.some((line) => line.includes('goal COMPLETE: verified by audit — auditor: "all done, tests pass"'))).toBe(true)
      expect(lines.some((line) => line.includes('notification: Goal complete'))).toBe(true)
      expect((await goalOf(sessionId)).status).toBe('complete')
    } finally {
      child.kill('SIGINT')
    }
    expect(await exited).toBe(0)
    expect(output).toMatch(/detached \(\d+ ticks, 1 continuations, 1 settled\)/)
    expect(output).not.toContain(TEST_API_KEY)
  })
})

describe('idempotent prompts on a real OpenCode server (what the runtime\'s re-posts rely on)', () => {
  /** The id a continuation of `tailId` gets: the tail's 12-hex part plus one, then 14 characters. */
  const nextId = (tailId) => 'msg_' + (parseInt(tailId.slice(4, 16), 16) + 1).toString(16).padStart(12, '0') + 'RepeatE2eTest0'
  const idle = async (sessionId) => {
    const statuses = await oc.api('GET', '/session/status')
    return !statuses?.[sessionId] || statuses[sessionId].type === 'idle'
  }

  it('one continuation id posted twice at once and again after the turn: one user message with one text part, one reply, one model call', async () => {
    const tag = model.scenario('repeat-id', {
      turns: [{ text: 'Started: parser skeleton. Remaining: nesting.', usage: usage(500, 20) }, { text: 'Done: nesting.', usage: usage(900, 30) }],
    })
    const session = await oc.api('POST', '/session', { title: 'repeated id' })
    await oc.api('POST', `/session/${session.id}/prompt_async`, { parts: [{ type: 'text', text: `Make the parser handle nested lists ${tag}` }], model: AGENT_MODEL })
    const tail = await waitFor(async () => (await assistants(session.id)).find((m) => m.info.time.completed), 30_000, 100)
    await waitFor(() => idle(session.id), 10_000, 100)
    const callsBefore = model.requestsOf('repeat-id', 'agent').length
    expect(callsBefore).toBe(1)

    const id = nextId(tail.info.id)
    // The part id the runtime derives from the message id (crates/goal-core/src/record/part_id.rs):
    // without it, each repeated post appends its text to the stored message.
    const part = { id: 'prt_' + id.slice(4), type: 'text', text: `Keep working toward the session goal ${tag}` }
    const body = { messageID: id, parts: [part], model: AGENT_MODEL }
    const post = () => oc.api('POST', `/session/${session.id}/prompt_async`, body)
    // Two posts of the one id at the same instant (two hosts, or a retry racing its original).
    await Promise.all([post(), post()])
    const reply = await waitFor(async () => (await assistants(session.id)).find((m) => m.info.parentID === id && m.info.time.completed), 30_000, 100)
    await waitFor(() => idle(session.id), 10_000, 100)
    // And once more after the turn is over (a retry whose first answer was lost).
    await post()
    // Longer than the first turn took, so a second turn would have shown.
    await sleep(Math.max(1500, reply.info.time.completed - reply.info.time.created + 1000))
    await waitFor(() => idle(session.id), 10_000, 100)

    const messages = await messagesOf(session.id)
    expect(messages.filter((m) => m.info.id === id)).toHaveLength(1)
    // One text part: the re-posts replaced it instead of appending copies of the text.
    const stored = messages.find((m) => m.info.id === id)
    expect(stored.parts.filter((p) => p.type === 'text').map((p) => p.id)).toEqual([part.id])
    expect(messages.filter((m) => m.info.role === 'user')).toHaveLength(2)
    expect(messages.filter((m) => m.info.role === 'assistant' && m.info.parentID === id)).toHaveLength(1)
    expect(messages.filter((m) => m.info.role === 'assistant')).toHaveLength(2)
    // Counted at the scripted model server: the continuation cost one model call.
    expect(model.requestsOf('repeat-id', 'agent')).toHaveLength(callsBefore + 1)
  })
})

describe('session assist on a real OpenCode server', () => {
  it('writes a recap and a suggestion beside the goal, for the final reply, keeping the goal intact', async () => {
    const tag = model.scenario('assist', {
      turns: [
        { text: 'Done: CSV export. Verified: 4 tests pass. Remaining: XLSX export.', usage: usage(900, 80) },
        { text: 'Done: XLSX export. Verified: all 9 tests pass. Remaining: nothing.', usage: usage(1500, 120) },
      ],
      audits: [{ verdict: 'continue', note: 'XLSX left' }, { verdict: 'complete', note: 'both exports work' }],
      assists: [{ recap: 'CSV and XLSX exports work; all 9 tests pass.', suggestion: 'Add a streaming mode for very large exports.' }],
    })
    host = await startHost()
    const assist = pkg.createSessionAssistRuntime({ openCode: { baseUrl: oc.url }, settings: { dataDir: tempDataDir() }, quietMs: 600 })
    const stream = pkg.createEventFollower({ openCode: { baseUrl: oc.url }, deliver: false, onPayload: (payload, directory) => assist.processPayload(payload, directory) })
    try {
      const { sessionId } = await createGoalSession(oc.api, { objective: `Add CSV and XLSX export ${tag}` })
      await settled(sessionId, 'complete')
      const lastReply = (await assistants(sessionId)).at(-1).info.id
      const session = await waitFor(async () => {
        const current = await oc.api('GET', `/session/${sessionId}`)
        return current?.metadata?.openchamber?.assist?.forMessageID === lastReply ? current : null
      }, 20_000, 100)
      expect(session.metadata.openchamber.assist).toMatchObject({
        recap: 'CSV and XLSX exports work; all 9 tests pass.',
        suggestion: 'Add a streaming mode for very large exports.',
        forMessageID: lastReply,
      })
      expect(session.metadata.openchamber.goal).toMatchObject({ status: 'complete', statusReason: 'verified by audit' })
      // The assist call went to the session's own provider, with only the last exchange.
      const calls = model.requestsOf('assist', 'assist')
      expect(calls.length).toBeGreaterThanOrEqual(1)
      expect(calls.at(-1).prompt).toContain('Done: XLSX export.')
      expect(calls.at(-1).prompt).not.toContain('Done: CSV export.')
    } finally {
      stream.close()
      await assist.stop()
    }
  })
})

