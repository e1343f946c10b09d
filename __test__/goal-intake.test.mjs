// Event intake rules, races with user actions, and the never-stuck / never-twice guarantees.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, goalMetadata, waitFor, sleep, pkg } from './helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const continueVerdict = { verdict: 'continue', note: 'keep going' }
const status = (session, type) => ({ type: 'session.status', properties: { sessionID: session.id, status: { type } } })

/** An auditor that waits until released, to hold a tick in flight. */
function gatedAuditor(verdict = continueVerdict) {
  let release
  const gate = new Promise((resolve) => (release = resolve))
  const calls = []
  return {
    calls,
    release: () => release(),
    service: {
      generateSmallModelText: async (request) => {
        calls.push(request)
        await gate
        return { text: JSON.stringify(verdict), providerID: 'small', modelID: 'nano' }
      },
    },
  }
}

describe('event intake', () => {
  it('idle arms the quiet window; busy before it fires clears it', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, forward: false, runtimeOptions: { idleQuietMs: 300 } })
    const session = sessionWithReply(env.mock)
    env.runtime.processPayload(status(session, 'idle'), '/tmp/project')
    expect(env.runtime.snapshot().armedTimers).toBeLessThanOrEqual(1)
    await waitFor(() => env.runtime.snapshot().armedTimers === 1)
    env.runtime.processPayload(status(session, 'busy'), '/tmp/project')
    await sleep(500)
    expect(auditor.calls).toHaveLength(0)
    expect(env.runtime.snapshot().armedTimers).toBe(0)
    // A later idle arms again and the loop runs.
    env.runtime.processPayload(status(session, 'idle'), '/tmp/project')
    await waitFor(() => env.mock.prompts.length === 1, 3000)
  })

  it('a deleted session is forgotten: its goal no longer counts and its wake-up is dropped', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, runtimeOptions: { idleQuietMs: 400 } })
    const session = sessionWithReply(env.mock)
    env.mock.setMetadata(session.id, goalMetadata())
    await waitFor(() => env.runtime.snapshot().activeGoals === 1)
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.runtime.snapshot().armedTimers === 1)
    env.mock.deleteSession(session.id)
    await waitFor(() => env.runtime.snapshot().activeGoals === 0 && env.runtime.snapshot().armedTimers === 0)
    await sleep(600)
    expect(auditor.calls).toHaveLength(0)
    expect(env.mock.prompts).toHaveLength(0)
  })

  it('a fresh goal set on an idle session kicks off from session.updated alone', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = env.mock.createSession({})
    env.mock.addUserMessage(session.id, 'hello')
    env.mock.addAssistantMessage(session.id, { text: 'hi', tokens: { input: 100 } })
    env.mock.setMetadata(session.id, { other: { keep: true }, ...goalMetadata() })
    await waitFor(() => env.mock.prompts.length === 1, 3000)
    expect(env.mock.getSession(session.id).metadata.other).toEqual({ keep: true })
  })

  it('a resume kickoff replaces a pending longer timer and skips the audit over an aborted tail', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, runtimeOptions: { idleQuietMs: 5000, resumeKickoffMs: 50 } })
    const session = sessionWithReply(env.mock, { goal: { status: 'paused', statusReason: 'paused after abort', turnsUsed: 4 }, reply: { error: { name: 'MessageAbortedError', data: {} } } })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.runtime.snapshot().armedTimers === 1)
    const started = Date.now()
    const goal = goalOf(env.mock, session.id)
    env.mock.setMetadata(session.id, { openchamber: { goal: { ...goal, status: 'active', statusReason: 'resumed', turnsUsed: 0, updatedAt: Date.now() } } })
    await waitFor(() => env.mock.prompts.length === 1, 3000)
    expect(Date.now() - started).toBeLessThan(2000)
    expect(auditor.calls).toHaveLength(0)
    expect(goalOf(env.mock, session.id)).toMatchObject({ status: 'active', statusReason: '', turnsUsed: 1 })
  })

  it('an abort event pauses the goal at once (event path)', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = sessionWithReply(env.mock)
    env.mock.addUserMessage(session.id, 'next')
    env.mock.addAssistantMessage(session.id, { text: 'partial', error: { name: 'MessageAbortedError', data: { message: 'Aborted' } } })
    await waitFor(() => goalOf(env.mock, session.id).status === 'paused', 3000)
    expect(goalOf(env.mock, session.id).statusReason).toBe('paused after abort')
  })

  it('abort while a tick is in flight: the continuation is not sent and the goal is paused', async () => {
    const auditor = gatedAuditor()
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock)
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => auditor.calls.length === 1, 3000)
    expect(env.runtime.snapshot().inFlight).toBe(1)
    env.runtime.processPayload({ type: 'message.updated', properties: { sessionID: session.id, info: { id: 'msg_x', role: 'assistant', sessionID: session.id, time: { created: Date.now() }, error: { name: 'MessageAbortedError' } } } }, '/tmp/project')
    await waitFor(() => goalOf(env.mock, session.id).status === 'paused')
    auditor.release()
    await waitFor(() => env.runtime.snapshot().inFlight === 0)
    await sleep(200)
    expect(env.mock.prompts).toHaveLength(0)
    expect(goalOf(env.mock, session.id).status).toBe('paused')
  })

  it('pause from the UI during the audit: nothing is sent', async () => {
    const auditor = gatedAuditor()
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock)
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => auditor.calls.length === 1, 3000)
    const goal = goalOf(env.mock, session.id)
    env.mock.setMetadata(session.id, { openchamber: { goal: { ...goal, status: 'paused' } } })
    await sleep(50)
    auditor.release()
    await waitFor(() => env.runtime.snapshot().inFlight === 0)
    await sleep(200)
    expect(env.mock.prompts).toHaveLength(0)
    expect(goalOf(env.mock, session.id)).toMatchObject({ status: 'paused', turnsUsed: 0 })
  })

  it('a user message during the audit: the continuation is dropped', async () => {
    const auditor = gatedAuditor()
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock)
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => auditor.calls.length === 1, 3000)
    env.mock.addUserMessage(session.id, 'actually, do something else')
    await sleep(50)
    auditor.release()
    await waitFor(() => env.runtime.snapshot().inFlight === 0)
    await sleep(200)
    expect(env.mock.prompts).toHaveLength(0)
  })

  it('goal edited while the tick audits: the stale continuation is not sent, the edited goal goes on', async () => {
    // (An edit inside the reservation's own read→write window: goal-faults.test.mjs, lost update.)
    let sessionId
    const auditor = scriptedAuditor([
      () => {
        const reserved = goalOf(env.mock, sessionId)
        env.mock.setMetadata(sessionId, { openchamber: { goal: { ...reserved, objective: 'A different objective', statusReason: 'resumed', updatedAt: Date.now() } } })
        return { text: JSON.stringify(continueVerdict), providerID: 'small', modelID: 'nano' }
      },
    ])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock)
    sessionId = session.id
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.mock.prompts.length === 1, 3000)
    await sleep(300)
    // The stale tick sent nothing; the edit's own kickoff continues with the new objective.
    expect(env.mock.prompts.filter((p) => p.body.parts[0].text.includes('Make the parser handle nested lists'))).toHaveLength(0)
    expect(env.mock.prompts[0].body.parts[0].text).toContain('A different objective')
  })

  it('a foreign metadata key survives every write (reserve, settle, pause)', async () => {
    const auditor = scriptedAuditor([continueVerdict, { verdict: 'complete', note: 'done' }])
    env = await setup({ auditor })
    const session = env.mock.createSession({ metadata: { ...goalMetadata(), other: { a: 1 } } })
    env.mock.setMetadata(session.id, { ...env.mock.getSession(session.id).metadata, openchamber: { ...env.mock.getSession(session.id).metadata.openchamber, assist: { recap: 'r' } } })
    env.mock.addUserMessage(session.id, 'go')
    env.mock.addAssistantMessage(session.id, { text: 'step one', tokens: { input: 100 } })
    env.mock.scriptReplies(session.id, [{ text: 'step two', tokens: { input: 200 } }])
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'complete', 6000)
    expect(env.mock.patches.length).toBeGreaterThanOrEqual(2)
    for (const patch of env.mock.patches) {
      expect(patch.body.metadata.other).toEqual({ a: 1 })
      expect(patch.body.metadata.openchamber.assist).toEqual({ recap: 'r' })
    }
  })

  it('an idle arriving during a tick schedules exactly one follow-up', async () => {
    const auditor = gatedAuditor()
    env = await setup({ auditor, forward: false })
    const session = sessionWithReply(env.mock)
    env.runtime.processPayload(status(session, 'idle'), '/tmp/project')
    await waitFor(() => auditor.calls.length === 1, 3000)
    for (let i = 0; i < 5; i++) env.runtime.processPayload(status(session, 'idle'), '/tmp/project')
    await sleep(30)
    const during = env.runtime.snapshot().sessions.find((s) => s.sessionId === session.id)
    expect(during).toMatchObject({ ticking: true, followUp: true })
    expect(env.runtime.snapshot().ticks).toBe(1)
    auditor.release()
    await waitFor(() => env.runtime.snapshot().ticks === 2, 3000)
    // Five wake-ups during the tick became one follow-up.
    expect(env.runtime.snapshot().followUps).toBe(1)
    expect(env.mock.prompts).toHaveLength(1)
  })

  it('isGoalActive follows session.updated; bad payloads never throw', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]) })
    const session = env.mock.createSession({ metadata: goalMetadata({ status: 'paused' }) })
    await waitFor(() => env.runtime.snapshot().activeGoals === 0)
    expect(env.runtime.isGoalActive(session.id)).toBe(false)
    env.mock.setMetadata(session.id, goalMetadata())
    await waitFor(() => env.runtime.isGoalActive(session.id))
    const hostile = { get type() { throw new Error('getter') } }
    const cyclic = { type: 'session.updated', properties: { info: { id: 'ses_c', metadata: { openchamber: {} } } } }
    cyclic.properties.info.metadata.openchamber.goal = cyclic
    const inputs = [undefined, null, 0, 'text', [], {}, { type: 7 }, hostile, cyclic,
      { type: 'session.updated', properties: { get info() { throw new Error('x') } } },
      { type: 'session.status', properties: { sessionID: 5, status: 'idle' } },
      { type: 'message.updated', properties: { info: { role: 'assistant', error: 'str' } } },
      { type: 'session.updated', properties: { info: { id: 'ses_big', metadata: { openchamber: { goal: { id: 1, status: {}, objective: [] } } } } } }]
    for (const input of inputs) {
      expect(() => env.runtime.processPayload(input, 42)).not.toThrow()
      expect(() => env.runtime[Symbol.for('session-goal-runtime.native')].processPayload(input, 'x')).not.toThrow()
    }
    expect(env.runtime.snapshot().panics).toBe(0)
  })

  it('a goal with a throwing getter or a lone surrogate in one field still reads as its other fields say', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), forward: false })
    const withGetter = { ...goalMetadata({ turnsUsed: 2 }).openchamber.goal }
    Object.defineProperty(withGetter, 'note', { enumerable: true, get() { throw new Error('getter') } })
    const withSurrogate = { ...goalMetadata({ turnsUsed: 2 }).openchamber.goal, note: 'half a pair: \ud800' }
    const updated = (id, goal) => ({ type: 'session.updated', properties: { info: { id, directory: '/tmp/project', metadata: { openchamber: { goal } } } } })
    env.runtime.processPayload(updated('ses_getter', withGetter), '/tmp/project')
    env.runtime.processPayload(updated('ses_surrogate', withSurrogate), '/tmp/project')
    await waitFor(() => env.runtime.isGoalActive('ses_getter') && env.runtime.isGoalActive('ses_surrogate'), 3000)
    env.runtime.processPayload(updated('ses_getter', { ...withSurrogate, status: 'paused' }), '/tmp/project')
    await waitFor(() => !env.runtime.isGoalActive('ses_getter'), 3000)
    expect(env.runtime.snapshot().panics).toBe(0)
  })

  it('stop() is idempotent, clears timers and ignores later payloads', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { idleQuietMs: 200 } })
    const session = sessionWithReply(env.mock)
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.runtime.snapshot().armedTimers === 1)
    await env.runtime.stop()
    await env.runtime.stop()
    expect(env.runtime.snapshot()).toMatchObject({ stopped: true, armedTimers: 0 })
    env.mock.setStatus(session.id, 'idle')
    await sleep(400)
    expect(env.mock.prompts).toHaveLength(0)
  })

  it('bad options give a clear error', () => {
    expect(() => pkg.createSessionGoalRuntime({})).toThrow(/openCode|buildOpenCodeUrl/)
  })
})

describe('file-backed objective edits', () => {
  it('an edit of a file-backed objective during the audit invalidates the tick (no stale continuation)', async () => {
    const auditor = gatedAuditor()
    env = await setup({ auditor })
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: env.mock.url }, dataDir: env.dataDir })
    const session = sessionWithReply(env.mock, { goal: { objective: '', objectiveFile: true } })
    await pkg.writeObjective(session.id, 'Old objective text', { dataDir: env.dataDir })
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => auditor.calls.length === 1, 3000)
    await control.editGoal({ sessionId: session.id, objective: 'New objective text' })
    await sleep(100)
    auditor.release()
    await waitFor(() => env.mock.prompts.length >= 1, 5000)
    expect(env.mock.prompts.every((p) => !p.body.parts[0].text.includes('Old objective text'))).toBe(true)
    expect(goalOf(env.mock, session.id).objectiveRevision).toBe(1)
  })
})
