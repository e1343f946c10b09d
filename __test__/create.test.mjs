// createSessionGoal: objective fitting, file before metadata, inline fallback, and a metadata
// MERGE (foreign keys survive), against the built addon and the mock OpenCode over HTTP.
import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { pkg, scriptedAuditor, tempDataDir, goalOf } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'
import { goalFiles, objectivePath, startRecordingProxy } from './control-helpers.mjs'

const { createSessionGoalControl, createSessionGoal, SessionGoalError } = pkg

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

async function world({ smallModel } = {}) {
  const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
  cleanups.push(() => mock.close())
  const dataDir = tempDataDir()
  const proxy = await startRecordingProxy(mock, dataDir)
  cleanups.push(proxy.close)
  const control = createSessionGoalControl({
    openCode: { baseUrl: proxy.url },
    dataDir,
    ...(smallModel ? { generateSmallModelText: smallModel.service.generateSmallModelText } : {}),
  })
  return { mock, dataDir, proxy, control }
}

const FOREIGN = {
  pinned: true,
  vendor: { theme: 'dark' },
  openchamber: { assist: { recap: 'Parser done', suggestion: 'Add tests', forMessageID: 'msg_1', generatedAt: 1 }, dismissed: ['x'] },
}

describe('createSessionGoal', () => {
  it('writes the objective file, then merges the goal into the existing metadata', async () => {
    const { mock, dataDir, proxy, control } = await world()
    const session = mock.createSession({ directory: '/tmp/project', metadata: FOREIGN })
    const installed = await control.createSessionGoal({ sessionId: session.id, directory: '/tmp/project', objective: '  Ship the CSV importer  ', tokenBudget: 20_000 })

    expect(installed.objective).toBe('Ship the CSV importer')
    expect(installed.objectiveFit).toBe('verbatim')
    expect(installed.objectiveFile).toBe(true)
    expect(installed.goal.id).toMatch(/^[0-9a-z]+$/)
    expect(installed.goal.id).toHaveLength(Date.now().toString(36).length + 6)
    expect(fs.readFileSync(objectivePath(dataDir, session.id), 'utf8')).toBe('Ship the CSV importer')

    const metadata = mock.getSession(session.id).metadata
    // Every foreign key survived the write.
    expect(metadata.pinned).toBe(true)
    expect(metadata.vendor).toEqual({ theme: 'dark' })
    expect(metadata.openchamber.assist).toEqual(FOREIGN.openchamber.assist)
    expect(metadata.openchamber.dismissed).toEqual(['x'])
    expect(metadata.openchamber.goal).toMatchObject({
      id: installed.goal.id,
      objective: '',
      objectiveFile: true,
      status: 'active',
      tokenBudget: 20_000,
      tokensUsed: 0,
      turnsUsed: 0,
      blockedStreak: 0,
      note: '',
      statusReason: '',
      lastAccountedMessageID: '',
    })

    // Order: when the PATCH arrived, the objective file already existed.
    const patch = proxy.log.find((entry) => entry.method === 'PATCH')
    expect(patch.fileExists).toBe(true)
    expect(patch.goalInMetadata).toBe(false)
    expect(proxy.log.filter((entry) => entry.method === 'PATCH')).toHaveLength(1)
    // Every call carried ?directory= (checked on the mock's side).
    expect(mock.requests.filter((r) => r.path.startsWith('/session') && r.query.directory !== '/tmp/project')).toEqual([])
  })

  it('replaces an earlier goal (new id, fresh counters) and reports it', async () => {
    const { mock, control } = await world()
    const session = mock.createSession({ directory: '/tmp/project', metadata: FOREIGN })
    const first = await control.createSessionGoal({ sessionId: session.id, objective: 'First goal' })
    const second = await control.createSessionGoal({ sessionId: session.id, objective: 'Second goal' })
    expect(second.replacedGoalId).toBe(first.goal.id)
    expect(second.goal.id).not.toBe(first.goal.id)
    expect(second.directory).toBe('/tmp/project')
    expect(goalOf(mock, session.id).id).toBe(second.goal.id)
    expect(mock.getSession(session.id).metadata.vendor).toEqual({ theme: 'dark' })
  })

  it('stores the objective inline when the file cannot be written', async () => {
    const { mock, dataDir, control } = await world()
    fs.writeFileSync(path.join(dataDir, 'goals'), 'not a directory')
    const session = mock.createSession({ directory: '/tmp/project' })
    const installed = await control.createSessionGoal({ sessionId: session.id, objective: 'Keep going inline' })
    expect(installed.objectiveFile).toBe(false)
    expect(installed.warnings).toHaveLength(1)
    expect(installed.warnings[0]).toMatchObject({ code: 'objectiveInline', message: expect.stringContaining('stored inline') })
    expect(goalOf(mock, session.id)).toMatchObject({ objective: 'Keep going inline', objectiveFile: false, status: 'active' })
  })

  it('distills an objective over 5000 chars with the dispatch provider, and writes the distilled text', async () => {
    const smallModel = scriptedAuditor(['Criteria: the importer reads CSV and XLSX; tests in tests/import pass.'])
    const { mock, dataDir, control } = await world({ smallModel })
    const session = mock.createSession({ directory: '/tmp/project' })
    const objective = 'Implement the importer step by step. '.repeat(200)
    const installed = await control.createSessionGoal({ sessionId: session.id, objective, providerID: 'anthropic', modelID: 'sonnet' })
    expect(installed.objectiveFit).toBe('distilled')
    expect(installed.objective).toBe('Criteria: the importer reads CSV and XLSX; tests in tests/import pass.')
    expect(fs.readFileSync(objectivePath(dataDir, session.id), 'utf8')).toBe(installed.objective)
    expect(smallModel.calls).toHaveLength(1)
    expect(smallModel.calls[0]).toMatchObject({ restrictToPreferredProvider: true, preferredProviderID: 'anthropic', preferredModelID: 'sonnet', directory: '/tmp/project' })
    expect(smallModel.calls[0].prompt).toBe(objective.trim())
    expect(smallModel.calls[0].system).toContain('COMPLETION CRITERIA')
  })

  it('falls back to a head + tail excerpt when the distillation is unavailable or in another script', async () => {
    const japanese = 'ログイン画面のバグを直して、テストを追加する。'.repeat(300)
    for (const reply of [{ error: { statusCode: 404 } }, '로그인 버그를 수정하고 테스트를 추가한다', '   ']) {
      const smallModel = scriptedAuditor([typeof reply === 'string' ? reply : () => reply])
      const { mock, control } = await world({ smallModel })
      const session = mock.createSession({ directory: '/tmp/project' })
      const installed = await control.createSessionGoal({ sessionId: session.id, objective: japanese })
      expect(installed.objectiveFit).toBe('excerpt')
      expect([...installed.objective].length).toBeLessThanOrEqual(5000)
      expect(installed.objective.startsWith('ログイン画面のバグを直して')).toBe(true)
      expect(installed.objective.endsWith('テストを追加する。')).toBe(true)
      expect(installed.objective).toContain('objective shortened for the progress auditor')
    }
    // No small model at all: excerpt as well.
    const { mock, control } = await world()
    const session = mock.createSession({ directory: '/tmp/project' })
    expect((await control.createSessionGoal({ sessionId: session.id, objective: japanese })).objectiveFit).toBe('excerpt')
  })

  it('refuses bad input before writing anything', async () => {
    const { mock, dataDir, proxy, control } = await world()
    const session = mock.createSession({ directory: '/tmp/project', metadata: FOREIGN })
    const child = mock.createSession({ directory: '/tmp/project', parentID: session.id })
    const cases = [
      [{ sessionId: '../../etc/passwd', objective: 'x' }, 400],
      [{ sessionId: 'ses/../../x', objective: 'x' }, 400],
      [{ sessionId: session.id, objective: '   ' }, 400],
      [{ sessionId: session.id, objective: 'x', tokenBudget: 999 }, 400],
      [{ sessionId: session.id, objective: 'x', tokenBudget: 100_000_001 }, 400],
      [{ sessionId: session.id, objective: 'x', tokenBudget: 2500.5 }, 400],
      [{ sessionId: session.id, objective: 'x', tokenBudget: 'lots' }, 400],
      [{ sessionId: child.id, objective: 'x' }, 400],
      [{ sessionId: 'ses_doesnotexist', objective: 'x' }, 404],
    ]
    for (const [request, status] of cases) {
      const error = await control.createSessionGoal(request).catch((e) => e)
      expect(error, JSON.stringify(request)).toBeInstanceOf(SessionGoalError)
      expect(error.statusCode, JSON.stringify(request)).toBe(status)
    }
    expect(proxy.log.filter((entry) => entry.method !== 'GET')).toEqual([])
    expect(goalFiles(dataDir)).toEqual([])
    expect(mock.getSession(session.id).metadata).toEqual(FOREIGN)
  })

  it('accepts the budget bounds exactly', async () => {
    const { mock, control } = await world()
    for (const budget of [1000, 100_000_000]) {
      const session = mock.createSession({ directory: '/tmp/project' })
      const installed = await control.createSessionGoal({ sessionId: session.id, objective: 'bounded', tokenBudget: budget })
      expect(goalOf(mock, session.id).tokenBudget).toBe(budget)
      expect(installed.goal.tokenBudget).toBe(budget)
    }
  })

  it('takes OpenChamber-style options (buildOpenCodeUrl, getOpenCodeAuthHeaders, getSmallModelService)', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
    cleanups.push(() => mock.close())
    const smallModel = scriptedAuditor(['Distilled criteria.'])
    const built = []
    const control = createSessionGoalControl({
      buildOpenCodeUrl: (apiPath, prefix) => {
        built.push([apiPath, prefix])
        return mock.url + apiPath
      },
      getOpenCodeAuthHeaders: async () => ({ authorization: 'Basic host' }),
      getSmallModelService: smallModel.getSmallModelService,
      settings: { dataDir: tempDataDir() },
    })
    const session = mock.createSession({ directory: '/tmp/project' })
    const installed = await control.createSessionGoal({ sessionId: session.id, objective: 'x'.repeat(6000) })
    expect(installed.objectiveFit).toBe('distilled')
    expect(built.some(([apiPath]) => apiPath === `/session/${session.id}`)).toBe(true)
    expect(mock.requests.every((r) => r.headers.authorization === 'Basic host')).toBe(true)
    expect(fs.readFileSync(objectivePath(control.dataDir, session.id), 'utf8')).toBe('Distilled criteria.')
  })

  it('works as one call with the reference names (baseUrl, sessionID, onWarning)', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
    cleanups.push(() => mock.close())
    const dataDir = tempDataDir()
    fs.writeFileSync(path.join(dataDir, 'goals'), 'blocks the file write')
    const session = mock.createSession({ directory: '/tmp/project' })
    const warnings = []
    const installed = await createSessionGoal({
      baseUrl: mock.url,
      authHeaders: { authorization: 'Bearer t0ken' },
      dataDir,
      sessionID: session.id,
      directory: '/tmp/project',
      objective: 'Reference-shaped call',
      tokenBudget: null,
      onWarning: (warning) => warnings.push(warning),
    })
    expect(installed.goal.status).toBe('active')
    expect(warnings).toHaveLength(1)
    expect(mock.requests.every((r) => r.headers.authorization === 'Bearer t0ken')).toBe(true)
    const missing = await createSessionGoal({ baseUrl: mock.url, sessionID: session.id }).catch((e) => e)
    expect(missing.statusCode).toBe(400)
  })

  it('one settings value: create, the one-call form and a scheduled task store the same settings; an edit patches them', async () => {
    const { mock, control } = await world()
    const settings = {
      tokenBudget: 20_000,
      costBudget: 2.5,
      timeBudgetMs: 3_600_000,
      activeHours: { start: '09:00', end: '17:00', timeZone: 'UTC' },
      checks: ['npm test'],
      criteria: ['the importer reads CSV'],
    }
    const stored = (sessionId) => mock.getSession(sessionId).metadata.openchamber.goal
    const expected = {
      tokenBudget: 20_000,
      costBudget: 2.5,
      timeBudgetMs: 3_600_000,
      activeHours: { start: '09:00', end: '17:00', timeZone: 'UTC' },
      checks: [{ command: 'npm test' }],
    }
    const created = mock.createSession({ directory: '/tmp/project' })
    await control.createSessionGoal({ sessionId: created.id, directory: '/tmp/project', objective: 'Import CSV', ...settings })
    const oneCall = mock.createSession({ directory: '/tmp/project' })
    await createSessionGoal({ baseUrl: mock.url, dataDir: control.dataDir, sessionID: oneCall.id, directory: '/tmp/project', objective: 'Import CSV', ...settings })
    const scheduled = mock.createSession({ directory: '/tmp/project' })
    const stamp = await control.stampScheduledGoal({ sessionId: scheduled.id, directory: '/tmp/project', prompt: 'Import CSV', ...settings })
    expect(stamp.introPart.text).toContain('20000 tokens')
    for (const session of [created, oneCall, scheduled]) {
      expect(stored(session.id), session.id).toMatchObject(expected)
      expect(stored(session.id).criteria.map((c) => [c.id, c.text, c.source]), session.id).toEqual([['c1', 'the importer reads CSV', 'user']])
    }

    // An edit is a patch of the same settings: what it names changes, a clear flag removes, the rest stays.
    const edited = await control.editGoal({ sessionId: created.id, costBudget: 4, clearTimeBudget: true, criteria: ['the importer reads CSV', 'docs say how'] })
    expect(edited.goal).toMatchObject({ tokenBudget: 20_000, costBudget: 4, checks: [{ command: 'npm test' }] })
    expect(edited.goal.timeBudgetMs).toBeUndefined()
    const after = stored(created.id)
    expect(after).toMatchObject({ costBudget: 4, activeHours: expected.activeHours })
    expect(after.timeBudgetMs).toBeUndefined()
    expect(after.criteria.map((c) => c.id)).toEqual(['c1', 'c2'])

    // A refusal names the field as the request spells it, and writes nothing.
    const patches = mock.patches.length
    const refused = await control.editGoal({ sessionId: created.id, activeHours: { start: '9', end: '17:00', timeZone: 'UTC' } }).catch((e) => e)
    expect([refused.code, refused.field]).toEqual(['invalidInput', 'activeHours'])
    const nested = await control.sendPrompt({ sessionId: created.id, prompt: 'x', goal: { timeBudgetMs: 5 } }).catch((e) => e)
    expect([nested.code, nested.field]).toEqual(['invalidInput', 'goal.timeBudgetMs'])
    expect(mock.patches.length).toBe(patches)
  })
})
