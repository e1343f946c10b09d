// Acceptance checks end to end against the mock OpenCode, whose POST /session/:id/shell really
// runs the command (bash, inside eval "<JSON>", in the session's directory): pass; fail then
// pass; a timeout; a restart mid-check; a user message cancelling the rest; and bad input.
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { forwardEvents, goalOf, pkg, scriptedAuditor, sessionWithReply, setup, sleep, tempDataDir, tempDir, waitFor } from './helpers.mjs'

let env
const extra = []
afterEach(async () => {
  for (const close of extra.splice(0)) await close()
  await env?.cleanup()
  env = undefined
})

const project = () => tempDir('goal-checks-')
const complete = () => scriptedAuditor([{ verdict: 'complete', note: 'the work is done' }])
const checkLines = (records) => records.filter((r) => r.action === 'check')

/** A session in `dir` with a goal carrying `checks`, one finished exchange, then idle. */
function goalWithChecks(mock, dir, checks, goal = {}) {
  const session = sessionWithReply(mock, { goal: { checks, ...goal }, directory: dir })
  mock.setStatus(session.id, 'idle')
  return session
}

describe('acceptance checks', () => {
  it('all checks pass: settles complete with cause checksPassed, runs recorded in the transcript and the trail', async () => {
    const dir = project()
    fs.writeFileSync(path.join(dir, 'README.md'), '# ok\n')
    env = await setup({ auditor: complete() })
    const { mock, runtime } = env
    const session = goalWithChecks(mock, dir, [{ command: 'test -f README.md' }, 'grep -q ok README.md && echo "found it"'])

    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10000)
    const goal = goalOf(mock, session.id)
    expect(goal.statusReason).toBe('checks passed')
    expect(goal.cause).toMatchObject({ code: 'checksPassed', detail: '2 of 2 checks passed' })
    expect(mock.shells).toHaveLength(2)
    expect(mock.prompts).toHaveLength(0)
    // Each run carries an id derived from the tail, distinct per check.
    const ids = mock.shells.map((s) => s.body.messageID)
    expect(new Set(ids).size).toBe(2)
    for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{12}zCHK[0-9A-Za-z]{10}$/)
    expect(mock.shells[0].body.agent).toBe('build')
    expect(mock.shells[0].body.model).toEqual({ providerID: 'mock', modelID: 'mock-model' })
    // The tool parts are in the transcript, like any other tool call.
    const tools = mock.messages(session.id).flatMap((m) => m.parts).filter((p) => p.type === 'tool')
    expect(tools).toHaveLength(2)
    expect(tools[1].state.output).toContain('found it')
    await waitFor(() => env.notifications.length === 1)
    expect(env.notifications[0].cause).toMatchObject({ code: 'checksPassed', detail: '2 of 2 checks passed' })
    const runs = checkLines(await runtime.history(session.id))
    expect(runs.map((r) => [r.check.index, r.check.result, r.check.exitStatus])).toEqual([[0, 'passed', 0], [1, 'passed', 0]])
    expect(runs[1].check.outputTail).toBe('found it')
    const report = await runtime.explain(session.id)
    expect(report.lastChecks.map((r) => r.result)).toEqual(['passed', 'passed'])
    expect(report.cause.code).toBe('checksPassed')
  })

  it('a goal read whole by the recovery scan is the same goal in its events: one round, each run recorded once', async () => {
    const dir = project()
    fs.writeFileSync(path.join(dir, 'README.md'), '# ok\n')
    const auditor = complete()
    env = await setup({ auditor, forward: false })
    const { mock, runtime } = env
    const forwarded = []
    const forward = async () => {
      const stream = pkg.createEventFollower({
        openCode: { baseUrl: mock.url },
        deliver: false,
        onPayload: (payload, d) => {
          runtime.processPayload(payload, d)
          forwarded.push(payload)
        },
      })
      extra.push(async () => stream.close())
      await mock.waitFor(() => mock.eventStreams === 1, { timeoutMs: 3000 })
      return stream
    }
    // The runtime learns the directory from a session without a goal, then loses its events.
    const first = await forward()
    const plain = mock.createSession({ directory: dir })
    await waitFor(() => forwarded.some((p) => p.type === 'session.created' && p.properties?.info?.id === plain.id))
    first.close()
    await mock.waitFor(() => mock.eventStreams === 0, { timeoutMs: 3000 })
    // The first check ends only on the test's word, so the round's own goal write (the lease) is
    // echoed to the runtime while the check still runs.
    const session = goalWithChecks(mock, dir, [{ command: 'until [ -f release ]; do sleep 0.02; done' }, 'test -f README.md'])
    // Reconnected: the runtime reads the goal whole first (the recovery scan), then sees it in
    // events, which once showed it without its checks: an edit, to the scheduler, that cut the
    // round short, and the next round recorded check 1 a second time.
    await forward()
    await waitFor(() => mock.shells.length === 1, 10000)
    const echoed = (p) => p.type === 'session.updated' && p.properties?.info?.metadata?.openchamber?.goal?.lease
    await waitFor(() => forwarded.some(echoed))
    fs.writeFileSync(path.join(dir, 'release'), '')

    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10000)
    expect(goalOf(mock, session.id).cause.code).toBe('checksPassed')
    expect(auditor.calls).toHaveLength(1)
    expect(mock.shells).toHaveLength(2)
    const runs = checkLines(await runtime.history(session.id))
    expect(runs.map((r) => [r.check.index, r.check.result, r.check.reused ?? false])).toEqual([
      [0, 'passed', false],
      [1, 'passed', false],
    ])
  })

  it('a failing check continues with the failure quoted; the fix turn makes it pass, then complete', async () => {
    const dir = project()
    env = await setup({ auditor: complete() })
    const { mock } = env
    const session = goalWithChecks(mock, dir, [{ command: 'test -f done.txt || { echo "done.txt is missing"; exit 4; }' }])
    mock.scriptReplies(session.id, [
      () => {
        fs.writeFileSync(path.join(dir, 'done.txt'), 'x')
        return { text: 'Created done.txt.', tokens: { input: 2000, output: 50 } }
      },
    ])

    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 12000)
    expect(mock.shells).toHaveLength(2)
    expect(mock.prompts).toHaveLength(1)
    const text = mock.prompts[0].body.parts[0].text
    expect(text).toContain('Acceptance check 1 of 1 failed with exit status 4.')
    expect(text).toContain('"test -f done.txt || { echo \\"done.txt is missing\\"; exit 4; }"')
    expect(text).toContain('<check-output>\ndone.txt is missing\n</check-output>')
    const goal = goalOf(mock, session.id)
    expect(goal.turnsUsed).toBe(1)
    expect(goal.cause.code).toBe('checksPassed')
    const runs = checkLines(await env.runtime.history(session.id))
    expect(runs.map((r) => r.check.result)).toEqual(['failed', 'passed'])
    expect(runs[0].check.exitStatus).toBe(4)
  })

  it('a check past its timeout is aborted and counts as failed; the turn cap still applies', async () => {
    const dir = project()
    env = await setup({ auditor: complete(), runtimeOptions: { maxAutoTurns: 1 } })
    const { mock } = env
    const session = goalWithChecks(mock, dir, [{ command: 'sleep 30', timeoutMs: 400 }])
    mock.scriptReplies(session.id, [{ text: 'Tried again.', tokens: { input: 2000, output: 50 } }])

    await waitFor(() => mock.prompts.length === 1, 10000)
    expect(mock.aborts).toContain(session.id)
    expect(mock.prompts[0].body.parts[0].text).toContain('Acceptance check 1 of 1 timed out and was stopped.')
    // The runtime's own abort of a check is no user abort: the goal is not paused.
    await waitFor(() => goalOf(mock, session.id)?.status === 'blocked', 10000)
    const goal = goalOf(mock, session.id)
    expect(goal.cause.code).toBe('turnCap')
    expect(goal.cause.fix).toContain(`session-goal resume ${session.id}`)
    const runs = checkLines(await env.runtime.history(session.id))
    expect(runs[0].check.result).toBe('timedOut')
    expect(runs[0].check.durationMs).toBeLessThan(10000)
    expect(mock.shells).toHaveLength(1)
  })

  it('a restart mid-check does not run the check again: the run is found by its id', async () => {
    const dir = project()
    const dataDir = tempDataDir()
    env = await setup({ auditor: complete(), runtimeOptions: { dataDir } })
    const { mock } = env
    const session = goalWithChecks(mock, dir, [{ command: 'sleep 3; echo run >> runs.txt' }])
    await waitFor(() => mock.shells.length === 1, 10000)
    await env.runtime.stop()
    // Stopped while the check still runs on the server.
    expect(fs.existsSync(path.join(dir, 'runs.txt'))).toBe(false)
    expect(mock.status(session.id).type).toBe('busy')

    const auditor = complete()
    const second = pkg.createSessionGoalRuntime({
      openCode: { baseUrl: mock.url },
      settings: { dataDir },
      idleQuietMs: 150,
      kickoffQuietMs: 100,
      generateSmallModelText: auditor.service.generateSmallModelText,
    })
    const stream = forwardEvents(mock.url, second)
    extra.push(async () => {
      stream.close()
      await second.stop()
    })
    await mock.waitFor(() => mock.eventStreams > 1, { timeoutMs: 3000 })
    // The check's end (the session going idle) brings the new runtime to the session.
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 12000)
    expect(mock.shells).toHaveLength(1)
    expect(fs.readFileSync(path.join(dir, 'runs.txt'), 'utf8')).toBe('run\n')
    const runs = checkLines(await second.history(session.id))
    expect(runs.at(-1).check).toMatchObject({ result: 'passed', reused: true })
    expect(goalOf(mock, session.id).cause.code).toBe('checksPassed')
  })

  it('a check cut by a server restart (its reply never finishes, the session idle) runs again under its id; the goal completes', async () => {
    const dir = project()
    env = await setup({ auditor: complete() })
    const { mock } = env
    const session = goalWithChecks(mock, dir, [{ command: 'sleep 1; echo run >> runs.txt' }])
    await waitFor(() => mock.shells.length === 1, 10000)
    await sleep(200)
    // The server dies while the check runs: no end, no idle event, the shell call reset.
    expect(mock.cutShells()).toEqual([session.id])
    expect(fs.existsSync(path.join(dir, 'runs.txt'))).toBe(false)
    await waitFor(() => goalOf(mock, session.id)?.status !== 'active', 15000).catch(() => {})
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'complete', cause: { code: 'checksPassed' } })
    // Run again under the same id: one user message, two replies, the command ran once in all.
    expect(mock.shells.map((s) => s.body.messageID)).toEqual([mock.shells[0].body.messageID, mock.shells[0].body.messageID])
    const id = mock.shells[0].body.messageID
    expect(mock.messages(session.id).filter((m) => m.info.id === id)).toHaveLength(1)
    expect(mock.messages(session.id).filter((m) => m.info.parentID === id)).toHaveLength(2)
    expect(fs.readFileSync(path.join(dir, 'runs.txt'), 'utf8')).toBe('run\n')
    expect(mock.prompts).toHaveLength(0)
  })

  it('a user message while checks run cancels the checks not yet started', async () => {
    const dir = project()
    env = await setup({ auditor: complete() })
    const { mock } = env
    const session = goalWithChecks(mock, dir, [{ command: 'sleep 0.8; true' }, { command: 'touch second-ran' }])
    await waitFor(() => mock.shells.length === 1, 10000)
    const user = mock.addUserMessage(session.id, 'Actually, also rename the module.')
    // Longer than the first check and a quiet window: the second never starts.
    await sleep(2000)
    expect(mock.shells).toHaveLength(1)
    expect(fs.existsSync(path.join(dir, 'second-ran'))).toBe(false)
    expect(goalOf(mock, session.id).status).not.toBe('complete')
    // No continuation: the mock gives the user's message no turn, so it is a stranded message,
    // only ever posted again under its own id (goal/decide/planning.rs, goal/decide/strand_rules.rs).
    expect(mock.prompts).toHaveLength(0)
    const posts = mock.sends(session.id).filter((r) => r.path.endsWith('/prompt_async'))
    expect(posts.every((r) => r.body.messageID === user.info.id)).toBe(true)
  })

  it('a check removed while it runs decides nothing; the goal goes on without it', async () => {
    const dir = project()
    env = await setup({ auditor: complete() })
    const { mock } = env
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, dataDir: env.dataDir })
    const session = goalWithChecks(mock, dir, [{ command: 'sleep 0.8; false' }])
    await waitFor(() => mock.shells.length === 1, 10000)
    const edited = await control.editGoal({ sessionId: session.id, directory: dir, clearChecks: true })
    expect(edited.goal.checks).toBeUndefined()
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 12000)
    const goal = goalOf(mock, session.id)
    expect(goal.cause.code).toBe('verified')
    expect(goal.checks).toBeUndefined()
    expect(mock.shells).toHaveLength(1)
    expect(mock.prompts).toHaveLength(0)
  })
})

describe('acceptance checks: bad input', () => {
  for (const status of [404, 403]) {
    it(`a shell endpoint answering ${status} blocks the goal with a clear cause (never complete unproven)`, async () => {
      const dir = project()
      env = await setup({ auditor: complete() })
      const { mock } = env
      mock.fault({ method: 'POST', path: /\/shell$/, status, body: { name: 'NotFoundError', data: { message: 'no' } } })
      const session = goalWithChecks(mock, dir, [{ command: 'true' }])
      await waitFor(() => goalOf(mock, session.id)?.status === 'blocked', 10000)
      expect(mock.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/shell'))).toHaveLength(1)
      expect(mock.shells).toHaveLength(0)
      const goal = goalOf(mock, session.id)
      expect(goal.statusReason).toBe('acceptance checks unavailable')
      expect(goal.cause).toMatchObject({ code: 'dispatchFailed', detail: `shell endpoint HTTP ${status}` })
    })
  }

  for (const [status, what] of [[409, 'a 409 (a user turn started) ends the round without a verdict'], [503, 'a 503 is retried']]) {
    it(`${what}: never a refusal; the check runs on a later look`, async () => {
      const dir = project()
      env = await setup({ auditor: complete() })
      const { mock } = env
      const fault = mock.fault({ method: 'POST', path: /\/shell$/, status, times: 1, body: { name: 'BusyError', data: { message: 'busy' } } })
      const session = goalWithChecks(mock, dir, [{ command: 'true' }])
      await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10000)
      expect(fault.remaining).toBe(0)
      expect(mock.requests.filter((r) => r.method === 'POST' && r.path === `/session/${session.id}/shell`)).toHaveLength(2)
      expect(mock.shells).toHaveLength(1)
      expect(goalOf(mock, session.id).cause.code).toBe('checksPassed')
      // The refused post left no run in the trail: it decided nothing.
      expect(checkLines(await env.runtime.history(session.id)).map((r) => r.check.result)).toEqual(['passed'])
    })
  }

  it('a checks field of the wrong shape from another client stops the goal (invalidGoal) before any audit, kept as written, and explain says so', async () => {
    const dir = project()
    const auditor = complete()
    env = await setup({ auditor })
    const { mock } = env
    const session = goalWithChecks(mock, dir, 'npm test')
    await waitFor(() => goalOf(mock, session.id)?.status === 'blocked', 10000)
    const goal = goalOf(mock, session.id)
    expect(goal.cause).toMatchObject({ code: 'invalidGoal', detail: 'checks: checks must be an array' })
    expect(goal.checks).toBe('npm test')
    expect(mock.shells).toHaveLength(0)
    expect(auditor.calls).toHaveLength(0)
    const report = await env.runtime.explain(session.id)
    expect(report.findings.map((f) => f.code)).toContain('checksUnreadable')
  })

  it('huge and binary output stays bounded in the trail and the continuation', async () => {
    const dir = project()
    env = await setup({ auditor: complete(), runtimeOptions: { maxAutoTurns: 1 } })
    const { mock } = env
    const session = goalWithChecks(mock, dir, [{ command: 'seq 1 300000; head -c 50000 /dev/urandom; exit 1' }])
    mock.scriptReplies(session.id, [{ text: 'Looked at it.', tokens: { input: 2000, output: 50 } }])
    await waitFor(() => mock.prompts.length === 1, 15000)
    const text = mock.prompts[0].body.parts[0].text
    expect(text).toContain('failed with exit status 1')
    expect(text.length).toBeLessThan(12000)
    const tool = mock.messages(session.id).flatMap((m) => m.parts).find((p) => p.type === 'tool')
    expect(tool.state.output.length).toBeLessThanOrEqual(16 * 1024 + 100)
    const run = checkLines(await env.runtime.history(session.id))[0].check
    expect(run.outputTail.length).toBeLessThanOrEqual(2001)
  })

  it('empty, multi-line, 100 KB and too many commands are refused with a clear error', async () => {
    env = await setup({ auditor: complete() })
    const { mock } = env
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, dataDir: env.dataDir })
    const session = mock.createSession({ directory: '/tmp/project' })
    const attempt = (goalChecks) =>
      control.createSessionGoal({ sessionId: session.id, objective: 'x', checks: goalChecks }).then(
        () => null,
        (error) => error,
      )
    for (const [checks, message] of [
      [[{ command: '' }], 'command is empty'],
      [[{ command: 'npm test\nrm -rf /' }], 'one line'],
      [[{ command: 'x'.repeat(100_000) }], 'longer than 2000'],
      [Array(9).fill('true'), 'at most 8'],
      [[{ command: 'true', timeoutMs: -5 }], 'timeoutMs'],
      ['npm test', 'must be an array'],
    ]) {
      const error = await attempt(checks)
      expect(error?.statusCode, JSON.stringify(checks).slice(0, 60)).toBe(400)
      expect(error.message).toContain(message)
    }
    expect(mock.getSession(session.id).metadata?.openchamber?.goal).toBeUndefined()
    const ok = await control.createSessionGoal({ sessionId: session.id, objective: 'x', checks: [{ command: 'npm test', timeoutMs: 60000 }] })
    expect(ok.goal.checks).toEqual([{ command: 'npm test', timeoutMs: 60000 }])
  })
})
