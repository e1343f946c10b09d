// A goal belongs to one session: OpenCode's fork copies the whole metadata, an active goal
// included; the runtime adopts the copy paused and drives only the source, until a user resumes
// the copy. Against the mock OpenCode over real HTTP.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep, pkg } from './helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const continueVerdict = { verdict: 'continue', note: 'more to do' }
const completeVerdict = { verdict: 'complete', note: 'done' }
const promptPosts = (mock, sessionId) =>
  mock.requests.filter((r) => r.method === 'POST' && r.path === `/session/${sessionId}/prompt_async`)

async function forkOverHttp(mock, sessionId) {
  const response = await fetch(`${mock.url}/session/${sessionId}/fork?directory=/tmp/project`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  })
  expect(response.status).toBe(200)
  return response.json()
}

describe('forks', () => {
  it("a fork's copy is adopted paused and never continued while the source goes on", async () => {
    const auditor = scriptedAuditor([continueVerdict, continueVerdict, completeVerdict])
    env = await setup({ auditor })
    const { mock } = env
    const source = sessionWithReply(mock)
    mock.scriptReplies(source.id, [{ text: 'more progress', tokens: { input: 100, output: 20 } }], { replyDelayMs: 200 })
    mock.setStatus(source.id, 'idle')
    // The source runs (and marks its goal as its own); fork it mid-goal.
    await waitFor(() => goalOf(mock, source.id)?.sessionId === source.id && promptPosts(mock, source.id).length === 1, 5000)
    const fork = await forkOverHttp(mock, source.id)
    expect(fork.parentID).toBeUndefined()
    expect(fork.metadata.openchamber.goal.status).toBe('active')
    mock.setStatus(fork.id, 'idle')
    await waitFor(() => goalOf(mock, fork.id)?.status === 'paused', 5000)
    const copy = goalOf(mock, fork.id)
    expect(copy.statusReason).toBe('copied from another session')
    expect(copy.cause).toMatchObject({ code: 'inherited', detail: source.id })
    expect(copy.sessionId).toBe(fork.id)
    expect(copy.id).toBe(goalOf(mock, source.id).id)
    await waitFor(() => goalOf(mock, source.id)?.status === 'complete', 10_000)
    await sleep(300)
    expect(promptPosts(mock, fork.id)).toHaveLength(0)
    expect(goalOf(mock, fork.id).status).toBe('paused')
    // Only the source's audits and notification.
    expect(auditor.calls.every((call) => !JSON.stringify(call).includes(fork.id))).toBe(true)
    expect(env.notifications.map((n) => n.sessionId)).toEqual([source.id])
  })

  it('a goal written before sessionId existed is recognised on a newer session by its id', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor, runtimeOptions: { directories: ['/tmp/project'] } })
    const { mock } = env
    const source = sessionWithReply(mock, { goal: { status: 'paused' } })
    await sleep(5)
    const fork = mock.forkSession(source.id)
    // The copy is active (the source was paused after the fork): an id already on an older session.
    const legacy = { ...goalOf(mock, fork.id), status: 'active' }
    mock.setMetadata(fork.id, { openchamber: { goal: legacy } })
    mock.setStatus(fork.id, 'idle')
    await waitFor(() => goalOf(mock, fork.id)?.status === 'paused', 5000)
    expect(goalOf(mock, fork.id).cause).toMatchObject({ code: 'inherited', detail: source.id })
    expect(promptPosts(mock, fork.id)).toHaveLength(0)
    expect(auditor.calls).toHaveLength(0)
  })

  it('a fork made just after another goal listed the directory is still recognised (legacy goals)', async () => {
    const auditor = scriptedAuditor([continueVerdict, continueVerdict])
    env = await setup({ auditor })
    const { mock } = env
    // Another legacy goal's first tick lists the directory (an owner list).
    const other = sessionWithReply(mock)
    mock.setStatus(other.id, 'idle')
    await waitFor(() => promptPosts(mock, other.id).length === 1, 5000)
    // Owner lists ask for top-level sessions (roots=true); the directory's one scan, when an event
    // first named it after the stream connected, is a plain list and not counted here.
    const ownerLists = () => mock.requests.filter((r) => r.method === 'GET' && r.path === '/session' && r.query.roots === 'true').length
    expect(ownerLists()).toBe(1)
    // Then, well within the scan interval: a session gets a legacy goal (paused: never ticked) and
    // is forked; the copy, active, goes idle first. The last list could not show it.
    const source = sessionWithReply(mock, { goal: { status: 'paused' } })
    await sleep(5)
    const fork = mock.forkSession(source.id)
    mock.setMetadata(fork.id, { openchamber: { goal: { ...goalOf(mock, fork.id), status: 'active' } } })
    mock.setStatus(fork.id, 'idle')
    await waitFor(() => goalOf(mock, fork.id)?.status === 'paused', 5000)
    expect(goalOf(mock, fork.id).cause).toMatchObject({ code: 'inherited', detail: source.id })
    expect(promptPosts(mock, fork.id)).toHaveLength(0)
    expect(ownerLists()).toBe(2)
  })

  it('a resumed fork runs as its own goal (resumeGoal, and an OpenChamber-style resume)', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const { mock } = env
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, settings: { dataDir: env.dataDir } })
    const source = sessionWithReply(mock, { goal: { status: 'paused' } })
    const goalId = goalOf(mock, source.id).id
    for (const how of ['resumeGoal', 'openchamber']) {
      const fork = mock.forkSession(source.id)
      mock.setMetadata(fork.id, { openchamber: { goal: { ...goalOf(mock, fork.id), status: 'active', sessionId: source.id } } })
      mock.scriptReplies(fork.id, [{ text: 'working on the fork', tokens: { output: 30 } }], { replyDelayMs: 100 })
      mock.setStatus(fork.id, 'idle')
      await waitFor(() => goalOf(mock, fork.id)?.statusReason === 'copied from another session', 5000)
      if (how === 'resumeGoal') {
        const result = await control.resumeGoal({ sessionId: fork.id, directory: '/tmp/project' })
        expect(result.changed).toBe(true)
      } else {
        // OpenChamber's UI writes the normalized goal: known fields only, turnsUsed 0, 'resumed'.
        const { id, objective, objectiveFile, tokenBudget, tokensUsed, createdAt } = goalOf(mock, fork.id)
        mock.setMetadata(fork.id, { openchamber: { goal: { id, objective, objectiveFile, tokenBudget, tokensUsed, createdAt, status: 'active', statusReason: 'resumed', turnsUsed: 0, blockedStreak: 0, updatedAt: Date.now() } } })
      }
      await waitFor(() => promptPosts(mock, fork.id).length === 1, 5000)
      const own = goalOf(mock, fork.id)
      expect(own.status).toBe('active')
      expect(own.sessionId).toBe(fork.id)
      expect(own.id).toBe(goalId)
      expect(own.cause?.code).not.toBe('inherited')
    }
    expect(promptPosts(mock, source.id)).toHaveLength(0)
  })

  it('forkSession without goal pauses the copy before the prompt; with goal installs a fresh one', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { idleQuietMs: 60_000, kickoffQuietMs: 60_000 } })
    const { mock } = env
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, settings: { dataDir: env.dataDir } })
    const source = sessionWithReply(mock, { goal: { sessionId: undefined } })
    const plain = await control.forkSession({ sessionId: source.id, directory: '/tmp/project', prompt: 'Try another route' })
    const copy = goalOf(mock, plain.sessionId)
    expect(copy).toMatchObject({ status: 'paused', statusReason: 'copied from another session', sessionId: plain.sessionId })
    expect(copy.cause).toMatchObject({ code: 'inherited', detail: source.id })
    // The pause landed before the prompt went out.
    const patch = mock.requests.findIndex((r) => r.method === 'PATCH' && r.path === `/session/${plain.sessionId}`)
    const prompt = mock.requests.findIndex((r) => r.method === 'POST' && r.path === `/session/${plain.sessionId}/prompt_async`)
    expect(patch).toBeGreaterThanOrEqual(0)
    expect(prompt).toBeGreaterThan(patch)
    const withGoal = await control.forkSession({ sessionId: source.id, directory: '/tmp/project', prompt: 'Port it to Rust', goal: true })
    const fresh = goalOf(mock, withGoal.sessionId)
    expect(fresh.status).toBe('active')
    expect(fresh.id).not.toBe(goalOf(mock, source.id).id)
    expect(fresh.sessionId).toBe(withGoal.sessionId)
    expect(goalOf(mock, source.id).status).toBe('active')
  })

  it('bad input: forks of forks, two forks in one millisecond, a non-string sessionId, the source paused during adoption', async () => {
    // A slow auditor: the source's tick is still auditing when the user pauses it.
    const slow = async () => {
      await sleep(2000)
      return { text: JSON.stringify(continueVerdict), providerID: 'small', modelID: 'nano' }
    }
    const auditor = scriptedAuditor([slow])
    env = await setup({ auditor })
    const { mock } = env
    const source = sessionWithReply(mock)
    mock.setMetadata(source.id, { openchamber: { goal: { ...goalOf(mock, source.id), sessionId: source.id } } })
    const twins = [mock.forkSession(source.id), mock.forkSession(source.id)]
    const third = mock.forkSession(twins[0].id)
    const fourth = mock.forkSession(third.id)
    const odd = mock.forkSession(source.id)
    mock.setMetadata(odd.id, { openchamber: { goal: { ...goalOf(mock, odd.id), sessionId: { not: 'a string' } } } })
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, settings: { dataDir: env.dataDir } })
    const all = [...twins, third, fourth, odd]
    mock.setStatus(source.id, 'idle')
    for (const s of all) mock.setStatus(s.id, 'idle')
    await waitFor(() => auditor.calls.length === 1, 5000)
    await control.pauseGoal({ sessionId: source.id, directory: '/tmp/project' })
    await waitFor(() => all.every((s) => goalOf(mock, s.id)?.status === 'paused'), 8000)
    for (const s of all) {
      expect(goalOf(mock, s.id).sessionId).toBe(s.id)
      expect(goalOf(mock, s.id).cause).toMatchObject({ code: 'inherited', detail: source.id })
    }
    await sleep(2500)
    expect(goalOf(mock, source.id)).toMatchObject({ status: 'paused', statusReason: '', sessionId: source.id })
    expect(mock.prompts).toHaveLength(0)
    expect(auditor.calls).toHaveLength(1)
  })
})
