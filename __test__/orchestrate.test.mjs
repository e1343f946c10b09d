// Create / send / fork with a goal: the order objective file → goal metadata → dispatch, the
// metadata merge, slash-command objectives, input validation and partial failures, against the
// built addon and the mock OpenCode over HTTP.
import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import { pkg, scriptedAuditor, setup, tempDataDir, goalOf, waitFor } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'
import { goalFiles, objectivePath, startRecordingProxy } from './control-helpers.mjs'

const { createSessionGoalControl, SessionGoalError } = pkg

const COMMANDS = [
  { name: 'review', description: 'review changes', template: 'Review the current changes: $ARGUMENTS', agent: 'plan' },
  { name: 'fix', description: 'fix one thing', template: 'Fix $1 in $2 and verify it' },
  { name: 'polish', description: 'no placeholders', template: 'Polish the release notes.' },
]

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

async function world(mockOptions = {}) {
  const mock = await startMockOpenCode({ heartbeatMs: 60_000, replyDelayMs: 10, commands: COMMANDS, ...mockOptions })
  cleanups.push(() => mock.close())
  const dataDir = tempDataDir()
  const proxy = await startRecordingProxy(mock, dataDir)
  cleanups.push(proxy.close)
  const control = createSessionGoalControl({ openCode: { baseUrl: proxy.url }, dataDir, landingTimeoutMs: 2000 })
  return { mock, dataDir, proxy, control }
}

/** The logged requests for one session that change something, in arrival order. */
const writesOf = (proxy, sessionId) =>
  proxy.log.filter((entry) => entry.method !== 'GET' && entry.sessionId === sessionId).map((entry) => ({ ...entry, headers: undefined }))

function expectFileThenMetadataThenDispatch(proxy, sessionId, dispatchPath) {
  const writes = writesOf(proxy, sessionId)
  const patchAt = writes.findIndex((w) => w.method === 'PATCH')
  const dispatchAt = writes.findIndex((w) => w.method === 'POST' && w.path.endsWith(dispatchPath))
  expect(patchAt).toBeGreaterThanOrEqual(0)
  expect(dispatchAt).toBeGreaterThan(patchAt)
  // At the PATCH the objective file existed; at the dispatch the goal was in the metadata.
  expect(writes[patchAt]).toMatchObject({ fileExists: true, goalInMetadata: false })
  expect(writes[dispatchAt]).toMatchObject({ fileExists: true, goalInMetadata: true })
  return writes
}

function sessionWithHistory(mock, metadata) {
  const session = mock.createSession({ directory: '/tmp/project', metadata })
  mock.addUserMessage(session.id, 'Start the parser', { agent: 'plan', model: { providerID: 'mock', modelID: 'mock-model' }, variant: 'high' })
  mock.addAssistantMessage(session.id, { text: 'Parser skeleton done.', agent: 'plan' })
  return session
}

describe('create with a goal', () => {
  it('creates the session, writes the file, merges the goal, then prompts with the goal intro', async () => {
    const { mock, dataDir, proxy, control } = await world()
    const result = await control.createSession({
      directory: '/tmp/project',
      title: 'CSV importer',
      prompt: 'Make the importer read CSV files',
      goal: { tokenBudget: 50_000 },
      model: 'mock/mock-model',
      agent: 'build',
    })
    expect(result).toMatchObject({
      action: 'create',
      directory: '/tmp/project',
      title: 'CSV importer',
      promptDispatched: true,
      promptLanded: true,
      dispatchedAsCommand: false,
      goalEnabled: true,
      goalTokenBudget: 50_000,
      model: 'mock/mock-model',
      agent: 'build',
    })
    const id = result.sessionId
    expect(proxy.indexOf('POST', '/session')).toBe(proxy.log.findIndex((e) => e.method === 'POST'))
    expectFileThenMetadataThenDispatch(proxy, id, '/prompt_async')
    expect(fs.readFileSync(objectivePath(dataDir, id), 'utf8')).toBe('Make the importer read CSV files')
    expect(goalOf(mock, id)).toMatchObject({ id: result.goal.goal.id, status: 'active', objectiveFile: true, tokenBudget: 50_000 })

    const [prompt] = mock.prompts
    expect(prompt.body.model).toEqual({ providerID: 'mock', modelID: 'mock-model' })
    expect(prompt.body.agent).toBe('build')
    expect(prompt.body.parts).toHaveLength(2)
    expect(prompt.body.parts[0]).toEqual({ type: 'text', text: 'Make the importer read CSV files' })
    expect(prompt.body.parts[1].synthetic).toBe(true)
    expect(prompt.body.parts[1].text).toMatch(/^<system-reminder>[\s\S]*Goal mode is on[\s\S]*50000 tokens[\s\S]*<\/system-reminder>$/)
  })

  it('creates without a prompt: no goal, no dispatch', async () => {
    const { mock, proxy, control } = await world()
    const result = await control.createSession({ directory: '/tmp/project' })
    expect(result).toMatchObject({ promptDispatched: false, goalEnabled: false })
    expect(mock.getSession(result.sessionId)).toBeTruthy()
    expect(proxy.log.filter((e) => e.method !== 'GET').map((e) => e.path)).toEqual(['/session'])
  })

  it('hands the goal to a running goal runtime, which drives it to complete', async () => {
    const auditor = scriptedAuditor([
      { verdict: 'continue', note: 'XLSX still missing' },
      { verdict: 'complete', note: 'CSV and XLSX import verified' },
    ])
    const env = await setup({ auditor, mockOptions: { replies: [{ text: 'Done: importer. Verified: tests pass.', tokens: { input: 2000, output: 100 } }] } })
    cleanups.push(env.cleanup)
    const control = createSessionGoalControl({ openCode: { baseUrl: env.mock.url }, dataDir: env.dataDir })
    const result = await control.createSession({ directory: '/tmp/project', prompt: 'Import CSV and XLSX', goal: true })
    await waitFor(() => goalOf(env.mock, result.sessionId)?.status === 'complete', 10_000)
    const goal = goalOf(env.mock, result.sessionId)
    expect(goal).toMatchObject({ statusReason: 'verified by audit', turnsUsed: 1, note: 'CSV and XLSX import verified' })
    // Our prompt, then exactly one continuation from the runtime.
    expect(env.mock.prompts).toHaveLength(2)
    expect(env.mock.prompts[1].body.parts[0].text).toContain('Import CSV and XLSX')
    // The auditor judged against the objective file's text.
    expect(auditor.calls[0].prompt).toContain('Import CSV and XLSX')
  })
})

describe('send and fork with a goal', () => {
  it('send: merges a fresh goal into the existing metadata, inherits the last selection, then prompts', async () => {
    const { mock, proxy, control } = await world()
    const foreign = { pinned: true, openchamber: { assist: { recap: 'r', suggestion: 's' } } }
    const session = sessionWithHistory(mock, foreign)
    const result = await control.sendPrompt({ sessionId: session.id, prompt: 'Now add nested lists', goal: true })
    expect(result).toMatchObject({ action: 'send', sessionId: session.id, agent: 'plan', model: 'mock/mock-model', variant: 'high', goalEnabled: true })
    expect(result.baselineAssistantMessageId).toBe(mock.messages(session.id)[1].info.id)
    expectFileThenMetadataThenDispatch(proxy, session.id, '/prompt_async')
    const metadata = mock.getSession(session.id).metadata
    expect(metadata.pinned).toBe(true)
    expect(metadata.openchamber.assist).toEqual({ recap: 'r', suggestion: 's' })
    expect(metadata.openchamber.goal.status).toBe('active')
    expect(mock.prompts[0].body).toMatchObject({ agent: 'plan', variant: 'high', model: { providerID: 'mock', modelID: 'mock-model' } })
  })

  it('fork: forks at the message, installs the goal on the fork only, then prompts the fork', async () => {
    const { mock, dataDir, proxy, control } = await world()
    const source = sessionWithHistory(mock, { keep: 'source' })
    mock.addUserMessage(source.id, 'Second request')
    mock.addAssistantMessage(source.id, { text: 'Second answer' })
    const forkAt = mock.messages(source.id)[2].info.id
    const result = await control.forkSession({ sessionId: source.id, messageId: forkAt, prompt: 'Take another route', goal: { tokenBudget: 1000 } })
    expect(result.action).toBe('fork')
    expect(result.sourceSessionId).toBe(source.id)
    expect(result.sessionId).not.toBe(source.id)
    const forkId = result.sessionId
    const forkPost = proxy.indexOf('POST', `/session/${source.id}/fork`)
    expect(forkPost).toBeGreaterThanOrEqual(0)
    expect(proxy.log.findIndex((e) => e.sessionId === forkId && e.method === 'PATCH')).toBeGreaterThan(forkPost)
    expectFileThenMetadataThenDispatch(proxy, forkId, '/prompt_async')
    // Messages before the fork point were copied; then our prompt.
    const texts = mock.messages(forkId).map((m) => m.parts.find((p) => p.type === 'text')?.text)
    expect(texts.slice(0, 3)).toEqual(['Start the parser', 'Parser skeleton done.', 'Take another route'])
    expect(goalOf(mock, forkId)).toMatchObject({ status: 'active', tokenBudget: 1000 })
    expect(mock.getSession(source.id).metadata).toEqual({ keep: 'source' })
    expect(goalFiles(dataDir)).toEqual([`${forkId}.md`])
  })
})

describe('slash commands as goals', () => {
  const cases = [
    ['$ARGUMENTS takes the raw argument text', '/review src/parser.rs "and the tests"', 'review', 'Review the current changes: src/parser.rs "and the tests"'],
    ['positional placeholders split quote-aware, the last swallows the rest', '/fix "the nested list bug" src/parser.rs and its tests', 'fix', 'Fix the nested list bug in src/parser.rs and its tests and verify it'],
    ['a template without placeholders gets the arguments appended', '/polish mention the CSV importer', 'polish', 'Polish the release notes.\n\nmention the CSV importer'],
  ]
  for (const [name, prompt, command, objective] of cases) {
    it(name, async () => {
      const { mock, dataDir, proxy, control } = await world()
      const session = sessionWithHistory(mock)
      const result = await control.sendPrompt({ sessionId: session.id, prompt, goal: true })
      expect(result).toMatchObject({ dispatchedAsCommand: true, command, promptDispatched: true })
      expect(result.goal.objective).toBe(objective)
      expect(fs.readFileSync(objectivePath(dataDir, session.id), 'utf8')).toBe(objective)
      expect(mock.prompts).toHaveLength(0)
      expect(mock.commands).toHaveLength(1)
      expect(mock.commands[0].body).toMatchObject({ command, arguments: prompt.slice(command.length + 2) })
      expectFileThenMetadataThenDispatch(proxy, session.id, '/command')
    })
  }

  it('a long command turn: returns once the command has landed, while OpenCode still runs it', async () => {
    const { mock, control } = await world()
    const session = sessionWithHistory(mock)
    mock.scriptReplies(session.id, [{ text: 'reviewed' }], { replyDelayMs: 2500 })
    const started = Date.now()
    const result = await control.sendPrompt({ sessionId: session.id, prompt: '/review everything', goal: true })
    const elapsed = Date.now() - started
    expect(result).toMatchObject({ dispatchedAsCommand: true, promptDispatched: true, promptLanded: true })
    expect(elapsed).toBeLessThan(1500)
    expect(mock.status(session.id).type).toBe('busy')
    await waitFor(() => mock.status(session.id).type === 'idle', 8000)
    expect(mock.commands).toHaveLength(1)
  })

  it('an unreadable command list: the prompt goes out as text, with a warning', async () => {
    const { mock, control } = await world()
    const session = sessionWithHistory(mock)
    mock.fault({ method: 'GET', path: '/command', status: 500 })
    const result = await control.sendPrompt({ sessionId: session.id, prompt: '/review all', goal: true })
    expect(result.dispatchedAsCommand).toBe(false)
    expect(result.warnings.some((w) => w.code === 'commandListUnavailable' && w.message.includes('command list unavailable'))).toBe(true)
    expect(result.goal.objective).toBe('/review all')
    expect(mock.prompts[0].body.parts[0].text).toBe('/review all')
  })

  it('an unknown command is an ordinary prompt (text as written, goal intro attached)', async () => {
    const { mock, control } = await world()
    const session = sessionWithHistory(mock)
    const result = await control.sendPrompt({ sessionId: session.id, prompt: '/tmp/notes.md has the plan: follow it', goal: true })
    expect(result.dispatchedAsCommand).toBe(false)
    expect(result.goal.objective).toBe('/tmp/notes.md has the plan: follow it')
    expect(mock.commands).toHaveLength(0)
    expect(mock.prompts[0].body.parts.map((p) => p.synthetic === true)).toEqual([false, true])
  })
})

describe("the orchestration route's flat goal fields", () => {
  it('goal: true with goalTokenBudget, goalCostBudget and goalCriteria installs the same goal as goal: {…}', async () => {
    const { mock, control } = await world()
    const created = await control.createSession({
      directory: '/tmp/project',
      prompt: 'Port the parser',
      goal: true,
      goalTokenBudget: 5000,
      goalCostBudget: 1.5,
      goalCriteria: ['nested lists parse'],
    })
    const goal = goalOf(mock, created.sessionId)
    expect(goal).toMatchObject({ status: 'active', tokenBudget: 5000, costBudget: 1.5 })
    expect(goal.criteria.map((c) => [c.text, c.source])).toEqual([['nested lists parse', 'user']])
  })
})

describe('validation: refused with nothing written', () => {
  const refusals = [
    ['the route goalTokenBudget without goal', { prompt: 'x', goalTokenBudget: 5000 }, 400, 'goalTokenBudget requires goal'],
    ['a setting given flat and nested', { prompt: 'x', goal: { costBudget: 2 }, goalCostBudget: 3 }, 400, 'pass goalCostBudget or goal.costBudget, not both'],
    ['goal without a prompt', { goal: true }, 400, 'goal requires a prompt'],
    ['budget below 1,000', { prompt: 'x', goal: { tokenBudget: 999 } }, 400],
    ['budget above 100,000,000', { prompt: 'x', goal: { tokenBudget: 100_000_001 } }, 400],
    ['fractional budget', { prompt: 'x', goal: { tokenBudget: 1500.5 } }, 400],
    ['budget as text', { prompt: 'x', goal: { tokenBudget: '5000' } }, 400],
    ['prompt over 1 MB', { prompt: 'p'.repeat(1_000_001), goal: true }, 413],
    ['malformed model', { prompt: 'x', model: 'just-a-model' }, 400],
    ['unknown model', { prompt: 'x', model: 'mock/no-such-model' }, 400, 'unknown model mock/no-such-model'],
    ['sub-agent', { prompt: 'x', agent: 'general' }, 400],
    ['unknown agent', { prompt: 'x', agent: 'ghost' }, 400],
    ['no directory', { directory: '  ', prompt: 'x' }, 400],
  ]
  for (const [name, request, status, message] of refusals) {
    it(`create: ${name}`, async () => {
      const { mock, dataDir, proxy, control } = await world()
      const before = mock.sessions().length
      const error = await control.createSession({ directory: '/tmp/project', ...request }).catch((e) => e)
      expect(error).toBeInstanceOf(SessionGoalError)
      expect(error.statusCode).toBe(status)
      if (message) expect(error.message).toBe(message)
      expect(error.partial).toBe(false)
      expect(mock.sessions()).toHaveLength(before)
      expect(proxy.log.filter((e) => e.method !== 'GET')).toEqual([])
      expect(goalFiles(dataDir)).toEqual([])
    })
  }

  it('send and fork: hostile ids, unknown sessions, missing prompts', async () => {
    const { mock, dataDir, proxy, control } = await world()
    const session = sessionWithHistory(mock, { keep: 1 })
    const attempts = [
      [() => control.sendPrompt({ sessionId: '../../etc/passwd', prompt: 'x', goal: true }), 400],
      [() => control.sendPrompt({ sessionId: 'ses_unknown99', prompt: 'x', goal: true }), 404],
      [() => control.sendPrompt({ sessionId: session.id, prompt: '  ', goal: true }), 400],
      [() => control.sendPrompt({ sessionId: session.id, prompt: 'x', goal: { tokenBudget: 0 } }), 400],
      [() => control.forkSession({ sessionId: session.id, messageId: '../x', prompt: 'x', goal: true }), 400],
      [() => control.forkSession({ sessionId: session.id, prompt: 'x', goalTokenBudget: 2000 }), 400],
      [() => control.sendPrompt(null), 400],
    ]
    for (const [attempt, status] of attempts) {
      const error = await attempt().catch((e) => e)
      expect(error).toBeInstanceOf(SessionGoalError)
      expect(error.statusCode).toBe(status)
    }
    expect(proxy.log.filter((e) => e.method !== 'GET')).toEqual([])
    expect(goalFiles(dataDir)).toEqual([])
    expect(mock.getSession(session.id).metadata).toEqual({ keep: 1 })
  })
})

describe('failures after a step took effect say which step', () => {
  it('create: prompt refused after the goal → goal-configured (the goal stays)', async () => {
    const { mock, control } = await world()
    mock.fault({ method: 'POST', path: /\/prompt_async$/, status: 400, body: { name: 'BadRequest', data: {} } })
    const error = await control.createSession({ directory: '/tmp/project', prompt: 'x', goal: true }).catch((e) => e)
    expect(error).toMatchObject({ statusCode: 400, partial: true, partialAction: 'goal-configured', directory: '/tmp/project' })
    expect(goalOf(mock, error.sessionId).status).toBe('active')
    expect(error.toJSON()).toEqual({ error: error.message, code: 'openCode', partial: true, partialAction: 'goal-configured', sessionId: error.sessionId, directory: '/tmp/project' })
  })

  it('create: goal write fails → session-created, and nothing is dispatched', async () => {
    const { mock, control } = await world()
    mock.fault({ method: 'PATCH', path: /^\/session\/[^/]+$/, status: 500 })
    const error = await control.createSession({ directory: '/tmp/project', prompt: 'x', goal: true }).catch((e) => e)
    expect(error).toMatchObject({ statusCode: 502, partialAction: 'session-created' })
    expect(mock.getSession(error.sessionId)).toBeTruthy()
    expect(mock.prompts).toHaveLength(0)
  })

  it('create without a goal: prompt refused → session-created', async () => {
    const { mock, control } = await world()
    mock.fault({ method: 'POST', path: /\/prompt_async$/, status: 404 })
    const error = await control.createSession({ directory: '/tmp/project', prompt: 'x' }).catch((e) => e)
    expect(error).toMatchObject({ statusCode: 404, partialAction: 'session-created' })
  })

  it('fork: goal step fails → fork-created; prompt fails after the goal → goal-configured', async () => {
    const { mock, control } = await world()
    const source = sessionWithHistory(mock)
    const patchFault = mock.fault({ method: 'PATCH', path: /^\/session\/[^/]+$/, status: 500 })
    const goalFailed = await control.forkSession({ sessionId: source.id, prompt: 'x', goal: true }).catch((e) => e)
    expect(goalFailed).toMatchObject({ partial: true, partialAction: 'fork-created' })
    expect(goalFailed.sessionId).not.toBe(source.id)
    expect(mock.getSession(goalFailed.sessionId).parentID).toBeUndefined()
    expect(mock.prompts).toHaveLength(0)
    patchFault.remove()

    mock.fault({ method: 'POST', path: /\/prompt_async$/, status: 422 })
    const promptFailed = await control.forkSession({ sessionId: source.id, prompt: 'x', goal: true }).catch((e) => e)
    expect(promptFailed).toMatchObject({ statusCode: 422, partialAction: 'goal-configured' })
    expect(goalOf(mock, promptFailed.sessionId).status).toBe('active')
  })

  it('send: an ambiguous 5xx whose prompt did land is a success, never a second POST', async () => {
    const { mock, control } = await world()
    const session = sessionWithHistory(mock)
    mock.fault({ method: 'POST', path: /\/prompt_async$/, status: 502, apply: true, times: 1 })
    const result = await control.sendPrompt({ sessionId: session.id, prompt: 'Carry on', goal: true })
    expect(result).toMatchObject({ promptDispatched: true, promptLanded: true })
    expect(mock.prompts).toHaveLength(1)
    expect(mock.requests.filter((r) => r.path.endsWith('/prompt_async'))).toHaveLength(1)
  })

  it('send: an ambiguous failure that never landed is an error tagged goal-configured', async () => {
    const { mock, control } = await world()
    const session = sessionWithHistory(mock)
    mock.fault({ method: 'POST', path: /\/prompt_async$/, destroy: true })
    const error = await control.sendPrompt({ sessionId: session.id, prompt: 'Carry on', goal: true }).catch((e) => e)
    expect(error).toMatchObject({ statusCode: 502, partialAction: 'goal-configured', sessionId: session.id })
    expect(mock.requests.filter((r) => r.path.endsWith('/prompt_async'))).toHaveLength(1)
  })

  it('send: a refused command after the goal → goal-configured', async () => {
    const { mock, control } = await world()
    const session = sessionWithHistory(mock)
    mock.fault({ method: 'POST', path: /\/command$/, status: 400 })
    const error = await control.sendPrompt({ sessionId: session.id, prompt: '/review all', goal: true }).catch((e) => e)
    expect(error).toMatchObject({ statusCode: 400, partialAction: 'goal-configured' })
  })
})
