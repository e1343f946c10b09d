// The session-goal CLI, run as a child process against the mock OpenCode over HTTP.
import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { DEAD_URL, goalMetadata, sessionWithReply, tempDataDir, goalOf, waitFor } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'
import { ROOT, objectivePath, runCli, startCli } from './control-helpers.mjs'

const AUDITOR = path.join(ROOT, '__test__', 'fixtures', 'auditor-complete.mjs')
const READING_AUDITOR = path.join(ROOT, '__test__', 'fixtures', 'auditor-reads-person.mjs')
// The project directory as the CLI resolves --directory on this host (path.resolve): /tmp/project
// on Linux and macOS, <drive>:\tmp\project on Windows.
const PROJECT = path.resolve('/tmp/project')

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

async function world(mockOptions = {}) {
  const mock = await startMockOpenCode({ heartbeatMs: 60_000, replyDelayMs: 10, ...mockOptions })
  cleanups.push(() => mock.close())
  const dataDir = tempDataDir()
  const common = ['--url', mock.url, '--directory', PROJECT, '--data-dir', dataDir]
  return { mock, dataDir, common }
}

describe('the goal flags are documented where the settings are', () => {
  it("every goal flag and the setting it fills is a row of docs/api.md's settings table", async () => {
    const { createRequire } = await import('node:module')
    const { GOAL_FLAGS } = createRequire(import.meta.url)('../bin/command-line.js')
    const api = fs.readFileSync(path.join(ROOT, 'docs', 'api.md'), 'utf8')
    const rows = api.split('\n').filter((line) => line.startsWith('| `'))
    expect(GOAL_FLAGS.length).toBeGreaterThanOrEqual(7)
    for (const { flag, field } of GOAL_FLAGS) {
      const row = rows.find((line) => line.startsWith(`| \`${field}\` |`))
      expect(row, field).toBeDefined()
      expect(row, field).toContain(`\`--${flag}`)
    }
  })
})

describe('usage errors: one line on stderr, exit code 2, nothing sent', () => {
  const cases = [
    [[], 'missing command'],
    [['launch'], 'unknown command "launch"'],
    [['create', '--goal'], '--goal requires --prompt.'],
    [['create', '--prompt', 'x', '--goal-token-budget', '5000'], '--goal-token-budget requires --goal.'],
    [['create', '--prompt', 'x', '--goal-time-budget', '2h'], '--goal-time-budget requires --goal.'],
    [['create', '--prompt', 'x', '--goal', '--goal-time-budget', '90'], '--goal-time-budget: invalid duration "90": use a number with a unit, e.g. 90m, 2h'],
    [['create', '--prompt', 'x', '--goal', '--goal-time-budget', '0m'], '--goal-time-budget: the time budget must be positive'],
    [['create', '--prompt', 'x', '--goal', '--goal-time-budget', '-5m'], '--goal-time-budget: invalid duration'],
    [['create', '--prompt', 'x', '--goal', '--goal-active-hours', '9-17'], 'must look like 09:00-17:00@Europe/Berlin'],
    [['create', '--prompt', 'x', '--goal', '--goal-active-hours', '09:00-17:00@Mars/Olympus'], '--goal-active-hours: time zone "Mars/Olympus" is not a known IANA time zone'],
    [['create', '--prompt', 'x', '--goal', '--goal-active-hours', '09:00-09:00@UTC'], '--goal-active-hours: start and end time must differ'],
    [['create', '--prompt', 'x', '--goal', ...Array.from({ length: 9 }, (_, i) => ['--goal-check', `true ${i}`]).flat()], '--goal-check: at most 8 checks'],
    [['create', '--prompt', 'x', '--goal', '--goal-check', 'a'.repeat(2001)], '--goal-check: check 1: command is longer than 2000 characters'],
    [['pause', '../../etc/passwd'], 'pause: "../../etc/passwd" is not a session id'],
    [['status', '--history', 'a b'], '--history: "a b" is not a session id'],
    [['create', '--prompt', 'x', '--goal', '--goal-token-budget', '999'], '--goal-token-budget: must be an integer between 1000 and 100000000'],
    [['create', '--prompt', 'x', '--goal', '--goal-token-budget', '100000001'], 'between 1000 and 100000000'],
    [['create', '--prompt', 'x', '--goal', '--goal-token-budget', '5e3'], 'between 1000 and 100000000'],
    [['create', '--prompt', 'x', '--model', 'no-slash'], '--model must look like provider/model'],
    [['create', '--prompt'], '--prompt needs a value'],
    [['create', '--message', 'msg_1'], 'unknown option --message for create (it is an option of fork)'],
    [['create', '--promt', 'x'], 'unknown option --promt for create (did you mean --prompt?)'],
    [['status', '--histroy', 'ses_abcd'], 'unknown option --histroy for status (did you mean --history?)'],
    [['status', '--verbose'], 'unknown option --verbose for status (run session-goal --help)'],
    [['status', '-x'], 'unknown option -x for status'],
    [['create', '--prompt', 'x', '--prompt', 'y'], '--prompt given twice'],
    [['create', '--prompt', '--goal'], '--prompt needs a value'],
    [['send', '--prompt', 'x'], 'send needs exactly one session id'],
    [['send', 'ses_abcd'], '--prompt is required.'],
    [['fork', 'ses_abcd', 'ses_efgh', '--prompt', 'x'], 'fork needs exactly one session id'],
    [['pause'], 'pause needs exactly one session id'],
    [['status', 'extra'], 'status takes no arguments'],
    [['watch', '--auditor', 'gpt'], '--auditor must be "builtin" or "none"'],
    [['watch', '--small-model', 'nomodel'], '--small-model must look like provider/model'],
    [['watch', '--idle-quiet-ms', 'soon'], '--idle-quiet-ms must be a whole number'],
    [['status', '--url', 'ftp://x'], '--url must be an http(s) URL'],
    [['status', '--json=yes'], '--json takes no value'],
  ]
  it.each(cases)('%j', async (args, message) => {
    const { mock } = await world()
    const urlArgs = args.includes('--url') ? [] : ['--url', mock.url]
    const { code, stdout, stderr } = await runCli([...args, ...(args.length ? urlArgs : [])])
    expect(code).toBe(2)
    expect(stdout).toBe('')
    const lines = stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(message)
    expect(mock.requests).toEqual([])
  })
})

describe('create, send, fork', () => {
  it('create --goal-time-budget --goal-active-hours sets both; an unknown zone is refused before anything is written', async () => {
    const { mock, common } = await world()
    const made = await runCli(['create', ...common, '--prompt', 'Port the parser', '--goal', '--goal-time-budget', '1h30m', '--goal-active-hours', '22:00-06:00@Europe/Berlin'])
    expect(made.stderr).toBe('')
    expect(made.code).toBe(0)
    expect(made.stdout).toContain('time budget: 1h 30m of active time')
    expect(made.stdout).toContain('working hours: 22:00-06:00 Europe/Berlin')
    const [session] = mock.sessions()
    expect(goalOf(mock, session.id)).toMatchObject({ timeBudgetMs: 5_400_000, activeHours: { start: '22:00', end: '06:00', timeZone: 'Europe/Berlin' } })
    const refused = await runCli(['create', ...common, '--prompt', 'x', '--goal', '--goal-active-hours', '09:00-17:00@Mars/Olympus'])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toBe('session-goal: --goal-active-hours: time zone "Mars/Olympus" is not a known IANA time zone\n')
    expect(mock.sessions()).toHaveLength(1)
  })

  it('status --history prints the audit trail of a goal', async () => {
    const { dataDir, common } = await world()
    const trail = [
      { time: Date.UTC(2026, 5, 1, 9, 0), turn: 0, tail: 'msg_1', action: 'continue (complete overridden)', verdict: 'complete', note: 'Not complete yet: the latest run failed for `npm test` (exit code 1).', activeMs: 600_000, timeBudgetMs: 7_200_000, digest: { toolCalls: 3, successfulToolCalls: 2, failingCommands: [{ command: 'npm test', exitCode: 1 }], filesChanged: 2, additions: 40, deletions: 3, todos: { total: 2, completed: 1 } }, evidence: ['npm test exit 1'], missing: [], auditTokens: 812 },
      { time: Date.UTC(2026, 5, 1, 9, 5), turn: 1, tail: 'msg_2', action: 'complete', reason: 'verified by audit', verdict: 'complete', note: 'tests pass', activeMs: 900_000, timeBudgetMs: 7_200_000, digest: { toolCalls: 1, successfulToolCalls: 1, filesChanged: 2, additions: 41, deletions: 3 } },
    ]
    fs.mkdirSync(`${dataDir}/goals`, { recursive: true })
    fs.writeFileSync(`${dataDir}/goals/ses_history1.history.jsonl`, trail.map((r) => JSON.stringify(r)).join('\n') + '\n')
    const { code, stdout } = await runCli(['status', ...common, '--history', 'ses_history1'])
    expect(code).toBe(0)
    expect(stdout).toContain('2026-06-01 09:00:00  turn 0  complete → continue (complete overridden)  time 10m/2h')
    expect(stdout).toContain('failing: npm test (exit 1)')
    expect(stdout).toContain('files 2 (+40/-3); todos 1/2; audit 812 tokens')
    expect(stdout).toContain('evidence: npm test exit 1')
    expect(stdout).toContain('complete → complete (verified by audit)  time 15m/2h')
    const json = await runCli(['status', ...common, '--history', 'ses_history1', '--json'])
    expect(JSON.parse(json.stdout)).toHaveLength(2)
    const none = await runCli(['status', ...common, '--history', 'ses_nothing1'])
    expect(none.stdout.trim()).toBe('no audit trail for ses_nothing1')
  })

  it('create --goal: session, objective file, goal, prompt; basic auth from OPENCODE_SERVER_PASSWORD', async () => {
    const { mock, dataDir, common } = await world()
    const { code, stdout, stderr } = await runCli(
      ['create', ...common, '--title', 'Importer', '--prompt', 'Make the importer read CSV', '--goal', '--goal-token-budget', '5000', '--model', 'mock/mock-model', '--agent', 'build'],
      { env: { OPENCODE_SERVER_PASSWORD: 's3cret' } },
    )
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const [session] = mock.sessions()
    expect(stdout).toContain(`session ${session.id} (${PROJECT})`)
    expect(stdout).toContain('prompt dispatched')
    expect(stdout).toContain('goal mode active (budget: 5000)')
    expect(session.title).toBe('Importer')
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'active', tokenBudget: 5000, objectiveFile: true })
    expect(fs.readFileSync(objectivePath(dataDir, session.id), 'utf8')).toBe('Make the importer read CSV')
    expect(mock.prompts[0].body.parts[1].synthetic).toBe(true)
    const expected = 'Basic ' + Buffer.from('opencode:s3cret').toString('base64')
    expect(mock.requests.length).toBeGreaterThan(0)
    expect(mock.requests.every((r) => r.headers.authorization === expected)).toBe(true)
  })

  it('send --goal and fork --message --json print the results', async () => {
    const { mock, common } = await world()
    const session = sessionWithReply(mock, { goal: { status: 'complete' } })
    mock.addUserMessage(session.id, 'Second question')
    mock.addAssistantMessage(session.id, { text: 'Second answer' })

    const sent = await runCli(['send', session.id, ...common, '--prompt', 'Now handle XLSX', '--goal'])
    expect(sent.code).toBe(0)
    expect(sent.stdout).toContain('goal mode active')
    expect(goalOf(mock, session.id).status).toBe('active')

    const forkAt = mock.messages(session.id)[2].info.id
    const forked = await runCli(['fork', session.id, ...common, '--message', forkAt, '--prompt', 'Try another way', '--goal', '--json'])
    expect(forked.code).toBe(0)
    const result = JSON.parse(forked.stdout)
    expect(result).toMatchObject({ action: 'fork', sourceSessionId: session.id, goalEnabled: true, promptDispatched: true })
    expect(mock.messages(result.sessionId)).toHaveLength(3)
    expect(goalOf(mock, result.sessionId).status).toBe('active')
  })

  it('an operation failure is one error line and exit code 1', async () => {
    const { mock, common } = await world()
    const { code, stdout, stderr } = await runCli(['send', 'ses_missing00', ...common, '--prompt', 'x'])
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr.trim()).toBe('session-goal: session lookup: session not found')
    mock.fault({ method: 'POST', path: /\/prompt_async$/, status: 400 })
    const partial = await runCli(['create', ...common, '--prompt', 'x', '--goal'])
    expect(partial.code).toBe(1)
    expect(partial.stderr).toMatch(/partial: goal-configured, session ses_/)
  })

  it('no server at the URL: exit 1, the URL tried and what to do, printed once (also with --json)', async () => {
    // Nothing listens there (helpers.mjs, DEAD_URL).
    const url = DEAD_URL
    const down = await runCli(['status', '--url', url, '--directory', PROJECT])
    expect(down.code).toBe(1)
    expect(down.stdout).toBe('')
    expect(down.stderr.trimEnd().split('\n')).toEqual([
      'session-goal: session list: network error: connect',
      `session-goal: no OpenCode server answered at ${url}: start one with \`opencode serve --port ${new URL(url).port}\`, or pass --url with the address it listens on`,
    ])
    const doctor = await runCli(['doctor', 'ses_abcd1234', '--json', '--url', url, '--directory', PROJECT])
    expect(doctor.code).toBe(1)
    expect(doctor.stderr).toBe('')
    expect(JSON.parse(doctor.stdout)).toEqual({
      error: 'explain: network error: connect',
      code: 'openCode',
      url,
      hint: expect.stringContaining('opencode serve'),
    })
  })

  it('watch against a dead URL gives the hint create gives, once, and goes on trying', async () => {
    const dataDir = tempDataDir()
    const cli = startCli(['watch', '--url', DEAD_URL, '--directory', '/tmp/project', '--data-dir', dataDir, '--auditor', 'none'])
    cleanups.push(() => cli.stop())
    const hint = `session-goal: no OpenCode server answered at ${DEAD_URL}: start one with \`opencode serve --port ${new URL(DEAD_URL).port}\`, or pass --url with the address it listens on`
    await waitFor(() => (cli.stderr.match(/reconnecting in \d+ ms/g) ?? []).length >= 2, 10_000)
    expect(cli.stderr.split('\n').filter((line) => line === hint)).toHaveLength(1)
  })

  it('watch says why it reconnects: the reason and the URL', async () => {
    const { mock, common } = await world()
    const cli = startCli(['watch', ...common, '--auditor', 'none'])
    cleanups.push(() => cli.stop())
    await waitFor(() => mock.eventStreams > 0, 5000)
    await mock.close()
    await waitFor(() => /event stream disconnected from http:\/\/127\.0\.0\.1:\d+: .*; reconnecting in \d+ ms/.test(cli.stderr), 5000)
    // The reason is the connection's, in the follower's words (crates/goal-core/src/io/
    // event_follower.rs): the server dropped it (cut mid-stream, reset or closed), then refuses anew.
    expect(cli.stderr).toMatch(/disconnected from \S+: (the server closed the stream|.*error reading a body from connection|.*Connection reset|.*Connection refused)/)
  })
})

describe('status and goal actions', () => {
  it('status prints a table of the directory\'s goals', async () => {
    const { mock, common } = await world()
    const a = mock.createSession({ directory: PROJECT, metadata: goalMetadata({ turnsUsed: 3, tokensUsed: 1200, tokenBudget: 5000, costBudget: 2, costUsed: 0.5, note: 'nesting still missing', createdAt: Date.now() - 1_800_000, inactiveMs: 600_000, timeBudgetMs: 7_200_000, checks: [{ command: 'npm test' }, { command: 'npm run lint' }] }) })
    const b = mock.createSession({ directory: PROJECT, metadata: goalMetadata({ status: 'blocked', statusReason: 'progress audit unavailable', tokensUsed: 800, createdAt: Date.now() - 90_000 }) })
    mock.createSession({ directory: PROJECT })
    mock.createSession({ directory: '/tmp/elsewhere', metadata: goalMetadata() })
    mock.setStatus(a.id, 'busy')
    const { code, stdout } = await runCli(['status', ...common])
    expect(code).toBe(0)
    const lines = stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(3)
    expect(lines[0].split(/\s{2,}/)).toEqual(['SESSION', 'STATUS', 'TURNS', 'TOKENS', 'COST', 'TIME', 'CHECKS', 'NOTE'])
    const row = (id) => lines.find((line) => line.startsWith(id)).split(/\s{2,}/)
    // TIME is active time (paused and waiting time excluded) against the time budget; COST is
    // US dollars against the cost budget.
    expect(row(a.id)).toEqual([a.id, 'active (busy)', '3', '1200/5000', '$0.50/$2.00', '20m/2h', '2', 'nesting still missing'])
    expect(row(b.id)).toEqual([b.id, 'blocked', '0', '800', '$0.00', '1m', '0', 'progress audit unavailable'])

    const empty = await runCli(['status', '--url', mock.url, '--directory', '/tmp/nothing-here'])
    expect(empty.stdout.trim()).toBe(`no goals in ${path.resolve('/tmp/nothing-here')}`)
  })

  it('pause, resume, complete, clear', async () => {
    const { mock, dataDir, common } = await world()
    const session = mock.createSession({ directory: PROJECT, metadata: { ...goalMetadata({ turnsUsed: 20, blockedStreak: 1 }), keep: 'me' } })
    fs.mkdirSync(path.join(dataDir, 'goals'), { recursive: true })
    fs.writeFileSync(objectivePath(dataDir, session.id), 'objective text')

    let run = await runCli(['pause', session.id, ...common])
    expect(run.stdout.trim()).toBe(`${session.id}: goal paused (was active); running turn aborted`)
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'paused', statusReason: '', blockedStreak: 0 })
    expect(mock.aborts).toEqual([session.id])

    run = await runCli(['pause', session.id, ...common])
    expect(run.stdout.trim()).toBe(`${session.id}: goal already paused`)

    run = await runCli(['resume', session.id, ...common])
    expect(run.stdout.trim()).toBe(`${session.id}: goal resumed (was paused)`)
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'active', statusReason: 'resumed', turnsUsed: 0 })

    run = await runCli(['complete', session.id, ...common, '--json'])
    expect(JSON.parse(run.stdout)).toMatchObject({ changed: true, previousStatus: 'active', goal: { status: 'complete', statusReason: 'marked by user' } })

    run = await runCli(['clear', session.id, ...common])
    expect(run.stdout.trim()).toBe(`${session.id}: goal cleared (was complete)`)
    expect(goalOf(mock, session.id)).toBeUndefined()
    expect(mock.getSession(session.id).metadata.keep).toBe('me')
    expect(fs.existsSync(objectivePath(dataDir, session.id))).toBe(false)

    run = await runCli(['clear', session.id, ...common])
    expect(run.code).toBe(1)
    expect(run.stderr.trim()).toBe('session-goal: session has no goal')
  })
})

/**
 * An idle session with a finished exchange, then a goal set on it (as a host sets one): the
 * goal's write comes after the exchange, so no user message of it reads as activity after the
 * goal's kickoff. (Written the other way round, the user message's time can fall after the
 * kickoff was armed, which cancels it, and nothing else wakes an idle session: the runtime's
 * event stream is read natively, so that happens whenever its events arrive within the
 * millisecond they were made.)
 */
function goalAfterExchange(mock) {
  const session = mock.createSession({ directory: PROJECT })
  mock.addUserMessage(session.id, 'Please make the parser handle nested lists')
  mock.addAssistantMessage(session.id, { text: 'Started: parser skeleton in place. Remaining: nesting.', tokens: { input: 1000, output: 100 } })
  mock.setMetadata(session.id, goalMetadata())
  return session
}

describe('watch', () => {
  it('runs the loop from /global/event, prints a goal reaching complete, and exits 0 on SIGTERM where there are POSIX signals', async () => {
    const { mock, common } = await world()
    const existing = mock.createSession({ directory: PROJECT, metadata: goalMetadata({ status: 'paused' }) })
    const watch = startCli(['watch', ...common, '--idle-quiet-ms', '100', '--kickoff-quiet-ms', '100'], { env: { SESSION_GOAL_TEST_AUDITOR: AUDITOR } })
    cleanups.push(() => watch.stop())
    await waitFor(() => watch.lines.some((line) => line.startsWith('watching ')), 10_000)
    expect(watch.lines.some((line) => line.includes(`${existing.id} goal paused`))).toBe(true)
    await waitFor(() => mock.eventStreams > 0, 5000)

    // A goal set on an idle session with a finished exchange: kickoff, audit, complete.
    const session = goalAfterExchange(mock)
    await waitFor(() => watch.lines.some((line) => line.includes(`${session.id} active → complete (verified by audit) — verified by the test auditor`)), 10_000)
    expect(goalOf(mock, session.id)).toMatchObject({ status: 'complete', evaluationModelID: 'auditor' })
    expect(watch.lines.some((line) => line.includes(`${session.id} goal active`))).toBe(true)
    expect(watch.stderr).not.toContain('no auditor')

    const { code, signal } = await watch.stop()
    // On SIGTERM the watch stops its runtime and exits 0. Windows has no POSIX signals: there
    // Node's kill() ends the process at once (TerminateProcess), so no exit of its own to check.
    if (process.platform !== 'win32') expect(signal ?? code).toBe(0)
  })

  it("a person's stop typed in the chat: watch prints the pause with its cause, status shows it", async () => {
    const { mock, common } = await world({ replies: [{ text: 'Progress: parser half done.', tokens: { input: 500, output: 50 } }] })
    const watch = startCli(['watch', ...common, '--idle-quiet-ms', '100', '--kickoff-quiet-ms', '100'], { env: { SESSION_GOAL_TEST_AUDITOR: READING_AUDITOR } })
    cleanups.push(() => watch.stop())
    await waitFor(() => watch.lines.some((line) => line.startsWith('watching ')), 10_000)
    await waitFor(() => mock.eventStreams > 0, 5000)
    const session = goalAfterExchange(mock)
    await waitFor(() => watch.lines.some((line) => line.includes(`${session.id} continuation 1`)), 10_000)
    // Typed the way a UI sends it: a prompt with one text part.
    const words = "stop here, I'll finish it myself"
    const typed = await fetch(`${mock.url}/session/${session.id}/prompt_async?directory=${encodeURIComponent(PROJECT)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ parts: [{ type: 'text', text: words }] }),
    })
    expect(typed.status).toBe(204)
    const paused = `${session.id} active → paused (paused: the person asked to stop)`
    await waitFor(() => watch.lines.some((line) => line.includes(paused)), 10_000)
    expect(watch.lines.find((line) => line.includes(paused))).toContain(`[cause userAskedToPause: ${words}]`)
    const status = await runCli(['status', ...common])
    const row = status.stdout.split('\n').find((line) => line.startsWith(session.id)).split(/\s{2,}/)
    expect(row[1]).toBe('paused (userAskedToPause)')
    expect(row.at(-1)).toMatch(/^Paused because the person asked in the chat/)
  })

  it('without an auditor: one unaudited continuation, then blocked, and says why up front', async () => {
    const { mock, common } = await world({ replies: [{ text: 'Progress: parser half done.', tokens: { input: 500, output: 50 } }] })
    const watch = startCli(['watch', ...common, '--idle-quiet-ms', '100', '--kickoff-quiet-ms', '100', '--auditor', 'none'])
    cleanups.push(() => watch.stop())
    await waitFor(() => watch.lines.some((line) => line.startsWith('watching ')), 10_000)
    expect(watch.stderr).toContain('audits are unavailable')
    await waitFor(() => mock.eventStreams > 0, 5000)
    const session = goalAfterExchange(mock)
    await waitFor(() => watch.lines.some((line) => line.includes(`${session.id} active → blocked (progress audit unavailable)`)), 10_000)
    expect(watch.lines.some((line) => line.includes(`${session.id} continuation 1`)), watch.lines.join("\n")).toBe(true)
    expect(mock.prompts).toHaveLength(1)
  })
})
