// What explain and history return is what index.d.ts says: the binding builds typed objects
// (GoalExplanation, GoalHistoryRecord), so every key of a real answer is a declared member and
// every required member is there. What the runtime hands to a host's callbacks is built as JSON
// (the small-model request, the notification), so a test holds those to their declared types
// key for key; the last one does the same for the event follower's statuses. Against the built
// addon and the mock OpenCode.
import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { goalMetadata, pkg, scriptedAuditor, sessionWithReply, setup, tempDataDir, waitFor } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

/** The members of an interface of index.d.ts: name → optional. */
function declared(name) {
  const file = ts.createSourceFile('index.d.ts', fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8'), ts.ScriptTarget.Latest)
  const node = file.statements.find((s) => ts.isInterfaceDeclaration(s) && s.name.text === name)
  if (!node) throw new Error(`index.d.ts declares no ${name}`)
  return new Map(node.members.map((m) => [m.name.text, Boolean(m.questionToken)]))
}

function expectShape(value, name) {
  const members = declared(name)
  for (const key of Object.keys(value)) expect(members.has(key), `${name}.${key} is not declared`).toBe(true)
  for (const [key, optional] of members) if (!optional) expect(value, `${name}.${key}`).toHaveProperty(key)
}

/** The interfaces of index.d.ts: name → (member → its type's text). */
function interfaces() {
  const file = ts.createSourceFile('index.d.ts', fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8'), ts.ScriptTarget.Latest)
  const out = new Map()
  for (const s of file.statements) {
    if (ts.isInterfaceDeclaration(s)) out.set(s.name.text, new Map(s.members.map((m) => [m.name.text, m.type.getText(file)])))
  }
  return out
}

/**
 * Checks `value` against interface `name` and, through every member typed `X`, `X | null`,
 * `Array<X>` or `Array<X> | null` where X is an interface, each nested part against X. Returns
 * the `Interface.member` paths it checked a value of, so a test can say which parts it saw.
 */
function expectTyped(value, name, all = interfaces(), seen = new Set()) {
  expectShape(value, name)
  for (const [member, type] of all.get(name)) {
    const nested = /^(Array<)?(\w+)>?( \| null)?$/.exec(type)
    const inner = value[member]
    if (!nested || !all.has(nested[2]) || inner === null || inner === undefined) continue
    for (const item of nested[1] ? inner : [inner]) {
      seen.add(`${name}.${member}`)
      expectTyped(item, nested[2], all, seen)
    }
  }
  return seen
}

describe('typed answers', () => {
  it('explain (runtime and control) and history give exactly the declared members', async () => {
    const auditor = scriptedAuditor([{ verdict: 'continue', note: 'not yet', evidence: [], missing: ['tests'] }])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock, { goal: { tokenBudget: 50000 } })
    env.mock.scriptReplies(session.id, [{ text: 'working on it', completed: false }])
    env.mock.setStatus(session.id, 'idle')
    await waitFor(async () => (await env.runtime.history(session.id)).length >= 1, 8000)

    const [record] = await env.runtime.history(session.id)
    expect(record).toMatchObject({ verdict: 'continue', action: 'continue', tail: expect.any(String) })
    expectTyped(record, 'GoalHistoryRecord')

    const explained = await env.runtime.explain(session.id, '/tmp/project')
    expect(explained).toMatchObject({ sessionId: session.id, status: 'active', lastAudit: expect.objectContaining({ verdict: 'continue' }) })
    expectTyped(explained, 'GoalExplanation')

    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: env.mock.url }, dataDir: env.dataDir })
    const viaControl = await control.explain(session.id, '/tmp/project')
    expectTyped(viaControl, 'GoalExplanation')
    expect(viaControl.goalId).toBe(explained.goalId)
    const trail = await control.history(session.id)
    expect(trail).toHaveLength((await env.runtime.history(session.id)).length)
    for (const line of trail) expectTyped(line, 'GoalHistoryRecord')
  })

  it('explain of a session without a goal: nulls where a part is unknown, still the declared shape', async () => {
    env = await setup({ forward: false })
    const plain = env.mock.createSession({ directory: '/tmp/project', metadata: {} })
    const explained = await env.runtime.explain(plain.id, '/tmp/project')
    expect(explained).toMatchObject({ sessionId: plain.id, status: null, findings: [expect.objectContaining({ code: 'noGoal' })] })
    expectTyped(explained, 'GoalExplanation')
  })

  it('every nested part of explain, of a history record and of a goal record is a declared interface', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
    env = { cleanup: () => mock.close() }
    const dataDir = tempDataDir()
    const goal = {
      status: 'active',
      lease: { holder: 'another-host', expiresAt: Date.now() + 60_000 },
      checks: [{ command: 'npm test', timeoutMs: 60_000 }],
      criteria: [{ id: 'c1', text: 'the tests pass', source: 'user', state: 'met', evidence: ['e1'], since: 5 }],
      criteriaIssued: 1,
      costBudget: 2,
    }
    const session = mock.createSession({ directory: '/tmp/project', metadata: goalMetadata(goal) })
    mock.setPending(session.id, 'permission', 'per_1', { permission: 'bash' })
    const check = { index: 0, command: 'npm test', result: 'failed', exitStatus: 1, durationMs: 12, outputTail: '1 failing', messageID: 'msg_1', reused: false }
    const digest = { assistantMessages: 1, toolCalls: 2, successfulToolCalls: 1, failingCommands: [{ command: 'npm test', exitCode: 1 }], filesChanged: null, additions: 0, deletions: 0, todos: { total: 2, completed: 1 } }
    const grades = [{ id: 'c1', state: 'met', evidence: ['e1'], source: 'user' }]
    const trail = [
      { time: 10, turn: 1, tail: 'msg_0', verdict: 'continue', note: 'not yet', action: 'continue', auditor: 'p/m', missing: ['tests'], digest, criteria: grades },
      { time: 11, turn: 1, tail: 'msg_0', action: 'check', check },
    ]
    fs.mkdirSync(path.join(dataDir, 'goals'), { recursive: true })
    fs.writeFileSync(path.join(dataDir, 'goals', `${session.id}.history.jsonl`), trail.map((r) => JSON.stringify(r)).join('\n') + '\n')

    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, dataDir })
    const explained = await control.explain(session.id, '/tmp/project')
    expect(explained).toMatchObject({
      cause: { code: 'waitingForUser', since: expect.any(Number) },
      lease: { holder: 'another-host', expiresAt: goal.lease.expiresAt },
      pending: [{ kind: 'permission', id: 'per_1', permission: 'bash' }],
      lastAudit: { time: 10, turn: 1, verdict: 'continue', note: 'not yet', action: 'continue', auditor: 'p/m', missing: ['tests'] },
      lastChecks: [{ ...check, time: 11 }],
      checks: [{ command: 'npm test', timeoutMs: 60_000 }],
      cost: { budget: 2, used: 0 },
      criteria: [goal.criteria[0]],
    })
    const seen = expectTyped(explained, 'GoalExplanation')
    const parts = ['cause', 'lease', 'pending', 'lastAudit', 'lastChecks', 'checks', 'cost', 'criteria']
    expect([...seen].sort()).toEqual(parts.map((part) => `GoalExplanation.${part}`).sort())

    const history = await control.history(session.id)
    expect(history.map((record) => record.action)).toEqual(['continue', 'check'])
    expect(history[0]).toMatchObject({ digest, criteria: grades })
    expect(history[1].check).toEqual({ ...check, time: 11 })
    const historyParts = new Set()
    for (const record of history) expectTyped(record, 'GoalHistoryRecord', interfaces(), historyParts)
    const nested = ['GoalHistoryRecord.digest', 'GoalDigestSummary.failingCommands', 'GoalDigestSummary.todos', 'GoalHistoryRecord.criteria', 'GoalHistoryRecord.check']
    expect([...historyParts].sort()).toEqual(nested.sort())

    const paused = mock.createSession({
      directory: '/tmp/project',
      metadata: goalMetadata({ ...goal, status: 'paused', activeHours: { start: '09:00', end: '17:00', timeZone: 'Europe/Berlin' }, cause: { code: 'userPaused', since: 7 } }),
    })
    const view = await control.getGoal(paused.id, '/tmp/project')
    expect(view.goal).toMatchObject({ activeHours: { start: '09:00', end: '17:00', timeZone: 'Europe/Berlin' }, cause: { code: 'userPaused', since: 7 }, checks: goal.checks, criteria: goal.criteria })
    const recordParts = ['activeHours', 'cause', 'checks', 'criteria']
    expect([...expectTyped(view.goal, 'GoalRecord')].sort()).toEqual(recordParts.map((part) => `GoalRecord.${part}`))

    const missing = await control.explain('ses_nosuch5', '/tmp/project')
    expect(expectTyped(missing, 'GoalExplanation')).toEqual(new Set(['GoalExplanation.findings']))
    expect(missing.findings).toEqual([{ code: 'sessionMissing', message: expect.any(String) }])
  })
})

describe('stored records read field by field', () => {
  it('a goal record carries every stored reference field; a hand-edited trail line of another shape is left out, the rest read', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
    env = { cleanup: () => mock.close() }
    const dataDir = tempDataDir()
    const goal = {
      id: 'g-fields',
      objective: 'Ship it',
      objectiveFile: false,
      status: 'paused',
      tokenBudget: 5000,
      tokensUsed: 1234,
      tokensBaseline: 200,
      tokensCommitted: 300,
      turnsUsed: 3,
      blockedStreak: 1,
      auditFailStreak: 2,
      note: 'half done',
      statusReason: 'paused by the user',
      evaluationProviderID: 'small',
      evaluationModelID: 'nano',
      lastAccountedMessageID: 'msg_9',
      createdAt: 1000,
      updatedAt: 2000,
    }
    const session = mock.createSession({ directory: '/tmp/project', metadata: goalMetadata(goal) })
    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: mock.url }, dataDir })
    const view = await control.getGoal(session.id, '/tmp/project')
    expect(view.goal).toMatchObject(goal)

    const lines = [
      JSON.stringify({ time: 1, turn: 1, tail: 'msg_1', action: 'continue', verdict: 'continue', evidence: ['e1'], changedFiles: ['a.js'] }),
      JSON.stringify(['not', 'a', 'record']),
      JSON.stringify({ time: 2, turn: 'two', tail: 'msg_2', action: 'continue' }),
      JSON.stringify({ time: 3, turn: 2, tail: 'msg_3', action: 'continue', evidence: ['e1', 7] }),
      JSON.stringify({ time: 4, turn: 2, tail: 'msg_4', action: 'budgetLimited', note: null, wrapUp: 'tokenBudget', handoff: 'Done: the parser.' }),
    ]
    fs.mkdirSync(path.join(dataDir, 'goals'), { recursive: true })
    fs.writeFileSync(path.join(dataDir, 'goals', `${session.id}.history.jsonl`), lines.join('\n') + '\n')
    const history = await control.history(session.id)
    expect(history).toEqual([
      { time: 1, turn: 1, tail: 'msg_1', action: 'continue', verdict: 'continue', evidence: ['e1'], changedFiles: ['a.js'], activeMs: 0 },
      { time: 4, turn: 2, tail: 'msg_4', action: 'budgetLimited', wrapUp: 'tokenBudget', handoff: 'Done: the parser.', activeMs: 0 },
    ])
  })
})

describe('what passes through the host callbacks', () => {
  // A request member no request of the runtimes sets today: declared for a host's service.
  const NEVER_SENT = ['maxOutputTokens']

  it('the small-model request, the result read back and the goal notification match their declared types member for member', async () => {
    const verdict = { verdict: 'complete', note: 'nesting works', evidence: ['e1'], missing: [] }
    const result = { text: JSON.stringify(verdict), providerID: 'small', modelID: 'nano', usage: { totalTokens: 321 } }
    const auditor = scriptedAuditor([() => result])
    env = await setup({ auditor, runtimeOptions: { deriveCriteria: false } })
    const session = sessionWithReply(env.mock)
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => env.notifications.length === 1, 8000)

    const [request] = auditor.calls
    expectTyped(request, 'SmallModelRequest')
    const requestKeys = [...Object.keys(request), ...NEVER_SENT].sort()
    expect(requestKeys, 'SmallModelRequest: members sent vs declared').toEqual([...declared('SmallModelRequest').keys()].sort())

    // What the host's service answered is a declared SmallModelResult, and each of its members
    // reached the runtime (the verdict, who answered, what it cost).
    expectShape(result, 'SmallModelResult')
    const [record] = await env.runtime.history(session.id)
    expect(record).toMatchObject({ verdict: 'complete', auditor: 'small/nano', auditTokens: 321 })

    const [notification] = env.notifications
    expect(notification).toMatchObject({ sessionId: session.id, status: 'complete', cause: { code: 'verified' } })
    expect([...expectTyped(notification, 'GoalNotification')]).toEqual(['GoalNotification.cause'])
    expect(Object.keys(notification).sort(), 'GoalNotification: members sent vs declared').toEqual([...declared('GoalNotification').keys()].sort())
  })
})


describe('the runtimes a host holds', () => {
  /** The members TypeScript sees on what `createSessionGoalRuntime` and `createSessionAssistRuntime` return, and the probe's diagnostics. */
  function declaredRuntimeMembers() {
    const probe = path.join(root, '__types_probe_runtimes.ts')
    const source = [
      "import { createSessionGoalRuntime, createSessionAssistRuntime } from './runtime'",
      'declare const goal: ReturnType<typeof createSessionGoalRuntime>',
      'declare const assist: ReturnType<typeof createSessionAssistRuntime>',
      "goal.onPayload({ type: 'session.status' }, '/tmp/project')",
      "assist.onPayload({ type: 'session.status' })",
      'export { goal, assist }',
    ].join('\n')
    const options = { strict: true, noEmit: true, skipLibCheck: true, types: [], module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext }
    const host = ts.createCompilerHost(options)
    const readFile = host.readFile.bind(host)
    host.readFile = (file) => (path.resolve(file) === probe ? source : readFile(file))
    const fileExists = host.fileExists.bind(host)
    host.fileExists = (file) => path.resolve(file) === probe || fileExists(file)
    const program = ts.createProgram([probe], options, host)
    const checker = program.getTypeChecker()
    const declarations = program.getSourceFile(probe).statements.filter(ts.isVariableStatement)
    const members = (index) => checker.getTypeAtLocation(declarations[index].declarationList.declarations[0].name).getProperties().map((symbol) => symbol.name)
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    return { goal: members(0), assist: members(1), diagnostics }
  }

  const methods = (runtime) => Object.keys(runtime).filter((key) => typeof runtime[key] === 'function').sort()

  it('every method of the runtimes is declared, onPayload among them, and onPayload reaches the runtime', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
    const dataDir = tempDataDir()
    const goal = pkg.createSessionGoalRuntime({ openCode: { baseUrl: mock.url }, settings: { dataDir }, logger: null })
    const assist = pkg.createSessionAssistRuntime({ openCode: { baseUrl: mock.url }, settings: { dataDir }, logger: null })
    env = { cleanup: async () => Promise.all([goal.stop(), assist.stop()]).then(() => mock.close()) }

    const declared = declaredRuntimeMembers()
    expect(declared.diagnostics).toEqual([])
    expect(methods(goal)).toContain('onPayload')
    expect(methods(assist)).toContain('onPayload')
    for (const name of methods(goal)) expect(declared.goal, `goal runtime .${name}`).toContain(name)
    for (const name of methods(assist)) expect(declared.assist, `assist runtime .${name}`).toContain(name)

    // The alias is the same forwarding: an idle session's status arms the goal runtime's timer.
    goal.onPayload({ type: 'session.status', properties: { sessionID: 'ses_alias', status: { type: 'idle' } } }, '/tmp/project')
    await waitFor(() => goal.snapshot().sessions.some((s) => s.sessionId === 'ses_alias'))
  })
})

describe('the event follower', () => {
  it('what onStatus receives is an EventStreamStatus, key for key, and the follower has the declared methods', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
    const statuses = []
    const follower = pkg.createEventFollower({ openCode: { baseUrl: mock.url }, firstRetryMs: 20, onStatus: (status) => statuses.push(status) })
    env = { cleanup: async () => follower.close() }
    await waitFor(() => statuses.length === 1, 5000)
    await mock.close()
    await waitFor(() => statuses.length >= 3, 5000)
    for (const status of statuses) expectShape(status, 'EventStreamStatus')
    expect(Object.keys(statuses[0])).toEqual(['state'])
    for (const status of statuses.slice(1)) expect(Object.keys(status).sort()).toEqual(['reason', 'retryInMs', 'state'])
    const file = ts.createSourceFile('index.d.ts', fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8'), ts.ScriptTarget.Latest)
    const declaredClass = file.statements.find((s) => ts.isClassDeclaration(s) && s.name?.text === 'EventFollower')
    const methods = declaredClass.members.map((m) => m.name.text).sort()
    const actual = Object.getOwnPropertyNames(Object.getPrototypeOf(follower)).filter((name) => name !== 'constructor').sort()
    expect(actual).toEqual(methods)
  })
})
