// Goal actions for hosts (edit, pause, resume, complete, clear), views, and the scheduled-task
// stamp, against the built addon and the mock OpenCode; the pause/resume cases also run a goal
// runtime fed from the mock's event stream, as a host would.
import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import { pkg, goalMetadata, scriptedAuditor, sessionWithReply, setup, tempDataDir, goalOf, waitFor, sleep } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'
import { objectivePath, startRecordingProxy } from './control-helpers.mjs'

const { createSessionGoalControl, writeObjective, SessionGoalError } = pkg

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

async function world() {
  const mock = await startMockOpenCode({ heartbeatMs: 60_000, replyDelayMs: 10, commands: [{ name: 'ship', template: 'Ship release $1 with notes' }] })
  cleanups.push(() => mock.close())
  const dataDir = tempDataDir()
  const proxy = await startRecordingProxy(mock, dataDir)
  cleanups.push(proxy.close)
  const control = createSessionGoalControl({ openCode: { baseUrl: proxy.url }, dataDir })
  return { mock, dataDir, proxy, control }
}

const FOREIGN = { pinned: true, openchamber: { assist: { recap: 'r', suggestion: 's' } } }

function withGoal(mock, fields = {}) {
  const metadata = goalMetadata(fields)
  metadata.pinned = true
  metadata.openchamber.assist = FOREIGN.openchamber.assist
  return mock.createSession({ directory: '/tmp/project', metadata })
}

function expectForeignKept(mock, id) {
  const metadata = mock.getSession(id).metadata
  expect(metadata.pinned).toBe(true)
  expect(metadata.openchamber.assist).toEqual(FOREIGN.openchamber.assist)
}

describe('edit', () => {
  it('keeps id and counters; active, resumed, blocked streak 0; new objective file first', async () => {
    const { mock, dataDir, proxy, control } = await world()
    const session = withGoal(mock, { status: 'blocked', statusReason: 'blocked per audit', turnsUsed: 7, tokensUsed: 12_345, blockedStreak: 2, objectiveFile: true, objective: '' })
    const before = goalOf(mock, session.id)
    const result = await control.editGoal({ sessionId: session.id, objective: 'Also support XLSX', tokenBudget: 90_000 })
    expect(result).toMatchObject({ changed: true, previousStatus: 'blocked', objectiveFit: 'verbatim' })
    const after = goalOf(mock, session.id)
    expect(after).toMatchObject({
      id: before.id,
      status: 'active',
      statusReason: 'resumed',
      blockedStreak: 0,
      turnsUsed: 7,
      tokensUsed: 12_345,
      tokenBudget: 90_000,
      objectiveFile: true,
      objective: '',
      createdAt: before.createdAt,
    })
    expect(fs.readFileSync(objectivePath(dataDir, session.id), 'utf8')).toBe('Also support XLSX')
    const patch = proxy.log.find((e) => e.method === 'PATCH')
    expect(patch.fileExists).toBe(true)
    expectForeignKept(mock, session.id)

    await control.editGoal({ sessionId: session.id, clearTokenBudget: true })
    expect(goalOf(mock, session.id).tokenBudget).toBeNull()
  })

  it('refuses: nothing to edit, a complete goal, a stale goal id, a bad budget — writing nothing', async () => {
    const { mock, dataDir, proxy, control } = await world()
    const done = withGoal(mock, { status: 'complete' })
    const open = withGoal(mock, { status: 'paused' })
    const attempts = [
      [{ sessionId: open.id }, 400],
      [{ sessionId: done.id, objective: 'more' }, 409],
      [{ sessionId: open.id, goalId: 'someone-else', objective: 'more' }, 409],
      [{ sessionId: open.id, tokenBudget: 500 }, 400],
      [{ sessionId: open.id, tokenBudget: 5000, clearTokenBudget: true }, 400],
    ]
    for (const [request, status] of attempts) {
      const error = await control.editGoal(request).catch((e) => e)
      expect(error, JSON.stringify(request)).toBeInstanceOf(SessionGoalError)
      expect(error.statusCode, JSON.stringify(request)).toBe(status)
    }
    expect(proxy.log.filter((e) => e.method !== 'GET')).toEqual([])
    expect(fs.existsSync(objectivePath(dataDir, open.id))).toBe(false)
  })
})

describe('pause, resume, complete, clear', () => {
  it('pause writes paused (reason cleared, streak 0) and then aborts the running turn', async () => {
    const { mock, proxy, control } = await world()
    const session = withGoal(mock, { blockedStreak: 1, statusReason: 'resumed' })
    const result = await control.pauseGoal({ sessionId: session.id })
    expect(result).toMatchObject({ changed: true, previousStatus: 'active', aborted: true })
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'paused', statusReason: '', blockedStreak: 0 })
    const patchAt = proxy.indexOf('PATCH', `/session/${session.id}`)
    const abortAt = proxy.indexOf('POST', `/session/${session.id}/abort`)
    expect(abortAt).toBeGreaterThan(patchAt)
    expectForeignKept(mock, session.id)

    // Pausing again changes nothing and aborts nothing.
    const again = await control.pauseGoal({ sessionId: session.id })
    expect(again).toMatchObject({ changed: false })
    expect(again.aborted).toBeUndefined()
    expect(mock.aborts).toHaveLength(1)
    // Only an active goal can be paused.
    const blocked = withGoal(mock, { status: 'blocked' })
    expect((await control.pauseGoal({ sessionId: blocked.id }).catch((e) => e)).statusCode).toBe(409)
  })

  it('resume gives a fresh allowance; complete is marked by user; goal id guards apply', async () => {
    const { mock, control } = await world()
    const session = withGoal(mock, { status: 'blocked', statusReason: 'auto-continuation limit reached', turnsUsed: 20, blockedStreak: 2, auditFailStreak: 1 })
    const goalId = goalOf(mock, session.id).id
    expect((await control.resumeGoal({ sessionId: session.id, goalId: 'stale-id' }).catch((e) => e)).statusCode).toBe(409)
    const resumed = await control.resumeGoal({ sessionId: session.id, goalId })
    expect(resumed).toMatchObject({ changed: true, previousStatus: 'blocked' })
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'active', statusReason: 'resumed', turnsUsed: 0, blockedStreak: 0, auditFailStreak: 1 })
    expect((await control.resumeGoal({ sessionId: session.id })).changed).toBe(false)

    const completed = await control.completeGoal({ sessionId: session.id })
    expect(completed).toMatchObject({ changed: true, previousStatus: 'active' })
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'complete', statusReason: 'marked by user' })
    expect(mock.aborts).toEqual([])
    expectForeignKept(mock, session.id)
  })

  it('clear removes only the goal key, deletes the file, and aborts only an active goal', async () => {
    const { mock, dataDir, control } = await world()
    const active = withGoal(mock, { objectiveFile: true, objective: '' })
    await writeObjective(active.id, 'file-backed objective', { dataDir })
    const result = await control.clearGoal({ sessionId: active.id })
    expect(result).toMatchObject({ changed: true, previousStatus: 'active', objectiveDeleted: true, aborted: true })
    expect(result.goal).toBeUndefined()
    expect(goalOf(mock, active.id)).toBeUndefined()
    expectForeignKept(mock, active.id)
    expect(fs.existsSync(objectivePath(dataDir, active.id))).toBe(false)
    expect(mock.aborts).toEqual([active.id])

    const paused = withGoal(mock, { status: 'paused' })
    expect(await control.clearGoal({ sessionId: paused.id })).toMatchObject({ previousStatus: 'paused', objectiveDeleted: false })
    expect(mock.aborts).toEqual([active.id])

    expect((await control.clearGoal({ sessionId: paused.id }).catch((e) => e)).statusCode).toBe(404)
    expect((await control.pauseGoal({ sessionId: 'ses_missing_1' }).catch((e) => e)).statusCode).toBe(404)
    expect((await control.completeGoal({ sessionId: '../../x' }).catch((e) => e)).statusCode).toBe(400)
  })
})

describe('with a goal runtime listening', () => {
  it('pausing a busy goal stops the turn; the abort does not overwrite the pause', async () => {
    const auditor = scriptedAuditor([{ verdict: 'continue', note: 'going' }])
    const env = await setup({ auditor })
    cleanups.push(env.cleanup)
    const control = createSessionGoalControl({ openCode: { baseUrl: env.mock.url }, dataDir: env.dataDir })
    const session = sessionWithReply(env.mock)
    env.mock.scriptReplies(session.id, [{ text: 'working', completed: false }])
    env.mock.setStatus(session.id, 'idle')
    // The loop continues; the scripted turn stays busy.
    await waitFor(() => env.mock.status(session.id).type === 'busy', 8000)
    const result = await control.pauseGoal({ sessionId: session.id })
    expect(result.aborted).toBe(true)
    await waitFor(() => env.mock.messages(session.id).some((m) => m.info.error?.name === 'MessageAbortedError'))
    await sleep(400)
    expect(goalOf(env.mock, session.id)).toMatchObject({ status: 'paused', statusReason: '' })
    expect(env.mock.status(session.id).type).toBe('idle')
    expect(env.mock.prompts).toHaveLength(1)
  })

  it('resume is picked up from session.updated within the 250 ms resume kickoff', async () => {
    const auditor = scriptedAuditor([{ verdict: 'continue', note: 'next step' }])
    const env = await setup({ auditor, runtimeOptions: { resumeKickoffMs: 250 } })
    cleanups.push(env.cleanup)
    const control = createSessionGoalControl({ openCode: { baseUrl: env.mock.url }, dataDir: env.dataDir })
    const session = sessionWithReply(env.mock, { goal: { status: 'paused', statusReason: 'paused after abort', turnsUsed: 20 } })
    await sleep(300)
    expect(env.mock.prompts).toHaveLength(0)
    const resumedAt = Date.now()
    await control.resumeGoal({ sessionId: session.id })
    await waitFor(() => env.mock.prompts.length === 1, 3000)
    const latency = env.mock.prompts[0].at - resumedAt
    // 250 ms kickoff + one tick (reads, audit, reservation write, dispatch) on loopback.
    expect(latency).toBeGreaterThanOrEqual(240)
    expect(latency).toBeLessThan(1000)
    console.log(`resume → continuation: ${latency} ms`)
    expect(goalOf(env.mock, session.id)).toMatchObject({ status: 'active', turnsUsed: 1, statusReason: '' })
  })
})

describe('views and the scheduled-task stamp', () => {
  it('getGoal resolves the effective objective (file, inline, missing); listGoals lists a directory', async () => {
    const { mock, dataDir, control } = await world()
    const fileBacked = withGoal(mock, { objectiveFile: true, objective: 'inline fallback' })
    await writeObjective(fileBacked.id, 'from the file', { dataDir })
    const inline = withGoal(mock, { objective: 'inline only' })
    const missing = withGoal(mock, { objectiveFile: true, objective: '' })
    const bare = mock.createSession({ directory: '/tmp/project' })
    mock.createSession({ directory: '/tmp/project', parentID: bare.id, metadata: goalMetadata() })

    expect(await control.getGoal(fileBacked.id)).toMatchObject({ objective: 'from the file', objectiveSource: 'file', directory: '/tmp/project' })
    expect(await control.getGoal(inline.id, '/tmp/project')).toMatchObject({ objective: 'inline only', objectiveSource: 'inline' })
    expect(await control.getGoal(missing.id)).toMatchObject({ objective: '', objectiveSource: 'missing' })
    const none = await control.getGoal(bare.id)
    expect(none.goal).toBeUndefined()

    const list = await control.listGoals('/tmp/project')
    expect(list.map((row) => row.sessionId).sort()).toEqual([fileBacked.id, inline.id, missing.id].sort())
    expect((await control.listGoals('').catch((e) => e)).statusCode).toBe(400)
  })

  it('stampScheduledGoal installs the goal from the expanded command and returns the intro part', async () => {
    const { mock, dataDir, proxy, control } = await world()
    const session = mock.createSession({ directory: '/tmp/project', title: 'Nightly release' })
    const command = await control.stampScheduledGoal({ sessionId: session.id, directory: '/tmp/project', prompt: '/ship 2.4.0', tokenBudget: 30_000, providerID: 'mock', modelID: 'mock-model' })
    expect(command).toMatchObject({ command: 'ship', commandArguments: '2.4.0' })
    expect(command.goal.objective).toBe('Ship release 2.4.0 with notes')
    expect(command.introPart).toMatchObject({ type: 'text', synthetic: true })
    expect(command.introPart.text).toContain('30000 tokens')
    expect(fs.readFileSync(objectivePath(dataDir, session.id), 'utf8')).toBe('Ship release 2.4.0 with notes')
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'active', tokenBudget: 30_000 })
    // Stamping never dispatches: the task runner does, after the metadata exists.
    expect(proxy.log.filter((e) => e.method === 'POST')).toEqual([])

    const plain = mock.createSession({ directory: '/tmp/project' })
    const prompt = await control.stampScheduledGoal({ sessionId: plain.id, directory: '/tmp/project', prompt: 'Rotate the logs' })
    expect(prompt.command).toBeUndefined()
    expect(prompt.goal.objective).toBe('Rotate the logs')
    expect((await control.stampScheduledGoal({ sessionId: plain.id, prompt: 'x', tokenBudget: 12 }).catch((e) => e)).statusCode).toBe(400)
  })
})
