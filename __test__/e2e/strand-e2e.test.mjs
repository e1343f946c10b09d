// A stranded continuation on a real OpenCode server (opencode-ai 1.18.33, offline): OpenCode
// stored the continuation, but its turn never began (a server killed between the two). The
// stranding is made the way FACTS say it looks: the continuation posted with `noReply: true`
// under its message and part ids, the goal record holding that reservation. The runtime finds it
// as the newest message, unanswered, on an idle session, and posts it again under its own ids:
// OpenCode runs that message's turn (the model is called once, the reply answers it) and the
// message keeps its one text part.
import { beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../helpers.mjs'
import { AGENT_MODEL, createGoalSession, readGoal, writeGoalMetadata } from './opencode-server.mjs'
import { startForwardingHost, useOpenCode } from './forwarding-host.mjs'

let model
let oc

const env = useOpenCode()
beforeAll(() => ({ model, oc } = env))

const usage = (prompt, completion) => ({ prompt_tokens: prompt, completion_tokens: completion })
const messagesOf = (sessionId) => oc.api('GET', `/session/${sessionId}/message`)

/** An id made from the tail reply's id as the runtime makes its continuation's (counter + 1). */
function nextId(tailId, suffix) {
  const counter = (BigInt(`0x${tailId.slice(4, 16)}`) + 1n).toString(16).padStart(12, '0')
  return `msg_${counter}${suffix}`
}

describe('a stranded continuation on a real OpenCode', () => {
  it('is posted again under its own ids: the turn runs once and the message keeps one text part', async () => {
    const tag = model.scenario('strand', {
      turns: [
        { text: 'Done: parser skeleton. Remaining: nesting.', usage: usage(1200, 100) },
        { text: 'Done: nesting works. Verified: 12 tests pass. Remaining: nothing.', usage: usage(2400, 150) },
      ],
      audits: [{ verdict: 'complete', note: 'nesting works, 12 tests pass' }],
    })
    // The goal starts paused, so no runtime acts while the first turn runs and the stranding is
    // made.
    const { sessionId } = await createGoalSession(oc.api, { objective: `Make the parser handle nested lists ${tag}`, goalFields: { status: 'paused' } })
    const tail = await waitFor(async () => (await messagesOf(sessionId)).find((m) => m.info.role === 'assistant' && m.info.time.completed), 30_000, 100)
    expect(model.requestsOf('strand', 'agent')).toHaveLength(1)

    // The continuation, stored with no turn: its id after the tail's, a part id from the same
    // characters (as the runtime's own continuation has).
    const messageID = nextId(tail.info.id, 'StrandedE2eXyz')
    const partID = `prt_${messageID.slice(4)}`
    const text = 'Continue working toward the objective. Auto-continuations used: 1 of 20.'
    await oc.api('POST', `/session/${sessionId}/prompt_async`, {
      messageID,
      noReply: true,
      model: AGENT_MODEL,
      agent: 'build',
      parts: [{ id: partID, type: 'text', text }],
    })
    await waitFor(async () => (await messagesOf(sessionId)).some((m) => m.info.id === messageID), 10_000, 100)
    // The runtime's reservation of that turn, as it was written before the post; then a resume
    // wakes a runtime.
    await writeGoalMetadata(oc.api, sessionId, (goal) => ({
      ...goal,
      status: 'active',
      statusReason: 'resumed',
      turnsUsed: 1,
      continuationFor: tail.info.id,
      continuationId: messageID,
    }))
    const stranded = await messagesOf(sessionId)
    expect(stranded.at(-1).info.id).toBe(messageID)
    expect(stranded.filter((m) => m.info.role === 'assistant')).toHaveLength(1)

    const host = await startForwardingHost(oc, { resumeKickoffMs: 100 })
    // A resume seen by the host: the session's update event (the runtime acts on the record).
    await writeGoalMetadata(oc.api, sessionId, (goal) => ({ ...goal }))
    const goal = await waitFor(async () => {
      const g = await readGoal(oc.api, sessionId)
      return g?.status !== 'active' ? g : null
    }, 45_000, 100)
    expect(goal).toMatchObject({ status: 'complete', turnsUsed: 1, reposted: { messageId: messageID, posts: 1 } })

    const messages = await messagesOf(sessionId)
    const continuation = messages.filter((m) => m.info.id === messageID)
    expect(continuation).toHaveLength(1)
    // One text part: the re-post carried the part's own id, which replaced it.
    expect(continuation[0].parts.map((p) => [p.id, p.type, p.text])).toEqual([[partID, 'text', text]])
    // Its turn ran once: one reply answers it, and the model was called once more.
    const answers = messages.filter((m) => m.info.role === 'assistant' && m.info.parentID === messageID)
    expect(answers).toHaveLength(1)
    expect(answers[0].info.time.completed).toBeGreaterThan(0)
    expect(model.requestsOf('strand', 'agent')).toHaveLength(2)
    // No new continuation over that tail: the two user messages are the prompt and the stranded one.
    expect(messages.filter((m) => m.info.role === 'user').map((m) => m.info.id).at(-1)).toBe(messageID)
    expect(messages.filter((m) => m.info.role === 'user')).toHaveLength(2)
    expect(host.logs.some((line) => line.includes('posted again under its own ids'))).toBe(true)
  })
})
