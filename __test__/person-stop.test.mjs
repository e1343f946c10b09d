// A person's words steer the goal (docs/verdicts.md): what a person types into a goal's session
// reaches the auditor marked as theirs, and a `pause` verdict over it pauses the goal, quoting
// them, with one notification and no continuation after. The person's messages go through the
// route a UI uses (POST /session/:id/prompt_async), against the mock over real HTTP.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep, pkg } from './helpers.mjs'

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

/** The messages a person typed, as an audit request carries them. */
const personWords = (request) => [...request.prompt.matchAll(/<person_message>\n([\s\S]*?)\n<\/person_message>/g)].map((m) => m[1])

/**
 * An auditor that reads the person's words: `pause` when one of them is in `stops` (a model's
 * reading, scripted), `continue` otherwise. Every request is kept.
 */
const readingAuditor = (stops) =>
  scriptedAuditor([
    (request) => {
      const asked = personWords(request).some((words) => stops.includes(words))
      const answer = asked ? { verdict: 'pause', note: 'the person asked to stop' } : { verdict: 'continue', note: 'more to do' }
      return { text: JSON.stringify(answer), providerID: 'small', modelID: 'nano' }
    },
  ])

/** Types `text` into the session the way a UI does: a prompt with one text part, no id. */
async function type(mock, sessionId, text) {
  const response = await fetch(`${mock.url}/session/${sessionId}/prompt_async?directory=${encodeURIComponent('/tmp/project')}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: { providerID: 'mock', modelID: 'mock-model' }, parts: [{ type: 'text', text }] }),
  })
  expect(response.status).toBe(204)
  return Date.now()
}

/** A goal's session whose agent has replied once, and whose turns answer `reply`. */
async function goalSession(auditor, reply = 'Understood.') {
  const env = await setup({ auditor })
  cleanups.push(env.cleanup)
  const session = sessionWithReply(env.mock)
  env.mock.scriptReplies(session.id, [{ text: reply, tokens: { input: 1200, output: 40 } }])
  return { env, session }
}

/** The continuations posted to the session after `since` (every send on the wire, none de-duplicated). */
const continuationsAfter = (mock, sessionId, since) => mock.sends(sessionId).filter((send) => send.at > since && send.body?.messageID)

/** Waits until the goal is paused, then long enough for several quiet windows to pass. */
async function pausedAndQuiet(mock, sessionId) {
  await waitFor(() => goalOf(mock, sessionId)?.status === 'paused', 8000)
  await sleep(800)
}

describe("a person's words reach the auditor, and their stop pauses the goal", () => {
  it('an English stop: paused, quoted in the cause, one notification, no continuation after', async () => {
    const words = "stop here, I'll finish it myself"
    const auditor = readingAuditor([words])
    const { env, session } = await goalSession(auditor)
    const typedAt = await type(env.mock, session.id, words)
    await pausedAndQuiet(env.mock, session.id)

    const goal = goalOf(env.mock, session.id)
    expect(goal.cause).toMatchObject({ code: 'userAskedToPause', detail: words })
    expect(goal.cause.fix).toContain(`session-goal resume ${session.id}`)
    expect(goal.statusReason).toBe('paused: the person asked to stop')
    expect(goal.note).toContain(words)
    const asked = auditor.calls.find((request) => personWords(request).includes(words))
    expect(asked.system).toContain('"pause"')
    expect(asked.prompt).toContain('verbatim and in their own words')
    expect(env.notifications.filter((n) => n.sessionId === session.id)).toHaveLength(1)
    expect(env.notifications[0]).toMatchObject({ status: 'paused', title: 'Goal paused', cause: { code: 'userAskedToPause' } })
    expect(env.notifications[0].body).toContain(words)
    expect(continuationsAfter(env.mock, session.id, typedAt)).toEqual([])
    const history = await env.runtime.history(session.id)
    expect(history.at(-1)).toMatchObject({ verdict: 'pause', action: 'paused' })
  })

  it('a stop in another language is passed verbatim and quoted in its own words', async () => {
    const words = '请先停下来，剩下的部分我自己来完成。谢谢！'
    const auditor = readingAuditor([words])
    const { env, session } = await goalSession(auditor, '好的，我停下来。')
    const typedAt = await type(env.mock, session.id, words)
    await pausedAndQuiet(env.mock, session.id)
    expect(goalOf(env.mock, session.id).cause).toMatchObject({ code: 'userAskedToPause', detail: words })
    expect(auditor.calls.some((request) => personWords(request).includes(words))).toBe(true)
    expect(continuationsAfter(env.mock, session.id, typedAt)).toEqual([])
  })

  it('a message that asks for more changes nothing: the auditor reads it and the goal goes on', async () => {
    const words = 'also handle empty input'
    const auditor = readingAuditor(["stop here, I'll finish it myself"])
    const { env, session } = await goalSession(auditor)
    const typedAt = await type(env.mock, session.id, words)
    await waitFor(() => continuationsAfter(env.mock, session.id, typedAt).length >= 1, 8000)
    expect(auditor.calls.some((request) => personWords(request).includes(words))).toBe(true)
    expect(goalOf(env.mock, session.id)).toMatchObject({ status: 'active' })
    expect(goalOf(env.mock, session.id).cause).toBeUndefined()
  })

  it("a pause with no person's message is not obeyed: it counts as continue, and the trail says why", async () => {
    const auditor = scriptedAuditor([{ verdict: 'pause', note: 'pausing' }])
    const { env, session } = await goalSession(auditor)
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length >= 1, 8000)
    expect(goalOf(env.mock, session.id)).toMatchObject({ status: 'active', turnsUsed: 1 })
    expect(auditor.calls[0].prompt).toContain('The person typed nothing in the session since the last continuation.')
    const history = await env.runtime.history(session.id)
    expect(history[0]).toMatchObject({ verdict: 'pause', action: "continue (pause verdict without a person's message)" })
    expect(env.notifications).toEqual([])
  })

  it('resumeGoal goes on after a userAskedToPause: the words before the resume are answered', async () => {
    const words = 'Please stop now.'
    const auditor = readingAuditor([words])
    const { env, session } = await goalSession(auditor)
    const typedAt = await type(env.mock, session.id, words)
    await pausedAndQuiet(env.mock, session.id)
    expect(continuationsAfter(env.mock, session.id, typedAt)).toEqual([])

    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: env.mock.url }, dataDir: env.dataDir })
    const resumedAt = Date.now()
    await control.resumeGoal({ sessionId: session.id })
    await waitFor(() => continuationsAfter(env.mock, session.id, resumedAt).length === 1, 8000)
    const goal = goalOf(env.mock, session.id)
    expect(goal.status).toBe('active')
    expect(goal.cause).toBeUndefined()
    const afterResume = auditor.calls.at(-1)
    expect(personWords(afterResume)).toEqual([])
  })
})
