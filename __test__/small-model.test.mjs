// The built-in small model (no host service): model choice from OpenCode's config and provider
// list, both wire formats, failures, against the mock OpenCode and a scripted model server.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { setup, sessionWithReply, goalOf, waitFor } from './helpers.mjs'
import { startScriptedModel, AUDIT_SYSTEM_MARK } from './mock/model.mjs'

let model
let env
beforeAll(async () => {
  model = await startScriptedModel()
})
afterAll(async () => {
  await model?.close()
})
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const mockProvider = (models, options = {}) => ({
  id: 'mock',
  options: { baseURL: model.baseURL, apiKey: 'mock-key', ...options },
  models: { 'mock-model': {}, ...models },
})

/** A goal session whose objective routes audits to `scenario`; the continuation reply is scripted. */
function goalSession(mock, scenario, reply = {}) {
  const session = sessionWithReply(mock, {
    goal: { objective: `Make the parser handle nested lists ${scenario}` },
    reply,
  })
  mock.scriptReplies(session.id, [{ text: 'Done: nesting works. Verified: tests pass.', tokens: { input: 3000, output: 200 }, ...reply }])
  mock.setStatus(session.id, 'idle')
  return session
}

describe('built-in small model', () => {
  it("audits with OpenCode's small_model over the OpenAI chat API, reading the catalog once", async () => {
    const tag = model.scenario('config-small', {
      audits: [{ verdict: 'continue', note: 'nesting still missing' }, { verdict: 'complete', note: 'nested lists parse' }],
    })
    env = await setup({
      mockOptions: {
        config: { small_model: 'mock/mock-small' },
        providers: [mockProvider({ 'mock-small': { limit: { output: 1500 } } })],
      },
    })
    const session = goalSession(env.mock, tag)

    await waitFor(() => goalOf(env.mock, session.id)?.status === 'complete', 10_000)
    const goal = goalOf(env.mock, session.id)
    expect(goal).toMatchObject({ statusReason: 'verified by audit', note: 'nested lists parse', turnsUsed: 1 })
    expect(goal).toMatchObject({ evaluationProviderID: 'mock', evaluationModelID: 'mock-small' })

    const audits = model.requestsOf('config-small', 'audit')
    expect(audits).toHaveLength(2)
    for (const audit of audits) {
      expect(audit).toMatchObject({ api: 'openai', path: '/v1/chat/completions', model: 'mock-small', stream: false })
      expect(audit.auth.bearer).toBe('mock-key')
      expect(audit.body.max_tokens).toBe(1500)
      expect(audit.system).toContain(AUDIT_SYSTEM_MARK)
      expect(audit.prompt).toContain('<objective>')
      expect(audit.prompt).toContain('Make the parser handle nested lists')
    }
    // Both audits ran within the cache lifetime: OpenCode was asked once.
    const catalogReads = env.mock.requests.filter((r) => r.path === '/config/providers')
    expect(catalogReads).toHaveLength(1)
    expect(catalogReads[0].query.directory).toBe('/tmp/project')
  })

  it("picks the newest small family model of the session's own provider, never another provider's", async () => {
    const tag = model.scenario('family', { audits: [{ verdict: 'complete', note: 'done' }] })
    env = await setup({
      mockOptions: {
        providers: [
          mockProvider({
            'gpt-4.1-nano': { family: 'gpt-nano', release_date: '2025-04-14' },
            'gpt-5.4-nano': { family: 'gpt-nano', release_date: '2026-03-17' },
            'claude-haiku-9': { family: 'claude-haiku', release_date: '2027-01-01' },
          }),
          // A cheaper family elsewhere must not receive this session's content.
          { id: 'other', options: { baseURL: model.baseURL, apiKey: 'other-key' }, models: { 'gemini-flash-x': { family: 'gemini-flash' } } },
        ],
      },
    })
    const session = goalSession(env.mock, tag)
    await waitFor(() => goalOf(env.mock, session.id)?.status === 'complete', 10_000)
    const audits = model.requestsOf('family', 'audit')
    expect(audits.map((a) => a.model)).toEqual(['gpt-5.4-nano'])
    expect(audits[0].auth.bearer).toBe('mock-key')
    expect(goalOf(env.mock, session.id).evaluationModelID).toBe('gpt-5.4-nano')
  })

  it("falls back to the session's own model when its provider lists no small family", async () => {
    const tag = model.scenario('session-model', { audits: [{ verdict: 'complete', note: 'done' }] })
    env = await setup({ mockOptions: { providers: [mockProvider({})] } })
    const session = goalSession(env.mock, tag)
    await waitFor(() => goalOf(env.mock, session.id)?.status === 'complete', 10_000)
    expect(model.requestsOf('session-model', 'audit').map((a) => a.model)).toEqual(['mock-model'])
  })

  it('the smallModel option overrides OpenCode’s small_model', async () => {
    const tag = model.scenario('override', { audits: [{ verdict: 'complete', note: 'done' }] })
    env = await setup({
      runtimeOptions: { smallModel: { providerID: 'other', modelID: 'other-small' } },
      mockOptions: {
        config: { small_model: 'mock/mock-model' },
        providers: [mockProvider({}), { id: 'other', options: { baseURL: model.baseURL, apiKey: 'other-key' }, models: { 'other-small': {} } }],
      },
    })
    const session = goalSession(env.mock, tag)
    await waitFor(() => goalOf(env.mock, session.id)?.status === 'complete', 10_000)
    const [audit] = model.requestsOf('override', 'audit')
    expect(audit.model).toBe('other-small')
    expect(audit.auth.bearer).toBe('other-key')
    expect(goalOf(env.mock, session.id)).toMatchObject({ evaluationProviderID: 'other', evaluationModelID: 'other-small' })
  })

  it('speaks the Anthropic messages API to @ai-sdk/anthropic models', async () => {
    const tag = model.scenario('anthropic', { audits: [{ verdict: 'complete', note: 'done' }] })
    env = await setup({
      mockOptions: {
        providers: [
          {
            id: 'claude',
            options: { baseURL: model.baseURL, apiKey: 'anthropic-key' },
            models: {
              'claude-sonnet-9': { family: 'claude-sonnet', api: { id: 'claude-sonnet-9', url: '', npm: '@ai-sdk/anthropic' } },
              'claude-haiku-9': {
                family: 'claude-haiku',
                release_date: '2027-01-01',
                api: { id: 'claude-haiku-9-20270101', url: '', npm: '@ai-sdk/anthropic' },
                limit: { output: 900 },
              },
            },
          },
        ],
      },
    })
    const session = goalSession(env.mock, tag, { providerID: 'claude', modelID: 'claude-sonnet-9' })
    await waitFor(() => goalOf(env.mock, session.id)?.status === 'complete', 10_000)
    const [audit] = model.requestsOf('anthropic', 'audit')
    expect(audit).toMatchObject({ api: 'anthropic', path: '/v1/messages', model: 'claude-haiku-9-20270101' })
    expect(audit.auth).toEqual({ bearer: '', xApiKey: 'anthropic-key', anthropicVersion: '2023-06-01' })
    expect(audit.body.max_tokens).toBe(900)
    expect(audit.body.system).toContain(AUDIT_SYSTEM_MARK)
    expect(audit.body.messages).toEqual([{ role: 'user', content: audit.prompt }])
    expect(goalOf(env.mock, session.id)).toMatchObject({ evaluationProviderID: 'claude', evaluationModelID: 'claude-haiku-9' })
  })

  it('a 401 and an exhausted output are two unavailable audits: the goal blocks, logs keep the key out', async () => {
    const tag = model.scenario('unavailable', { audits: [{ status: 401 }, { content: '', finish: 'length' }] })
    const logs = []
    env = await setup({
      runtimeOptions: { logger: (level, message) => logs.push(`${level} ${message}`) },
      mockOptions: { providers: [mockProvider({}, { apiKey: 'k-very-secret' })] },
    })
    const session = goalSession(env.mock, tag)
    await waitFor(() => goalOf(env.mock, session.id)?.status === 'blocked', 10_000)
    const goal = goalOf(env.mock, session.id)
    expect(goal.statusReason).toBe('progress audit unavailable')
    // One unaudited continuation after the first failure, none after the second.
    expect(goal.turnsUsed).toBe(1)
    expect(env.mock.prompts).toHaveLength(1)
    expect(model.requestsOf('unavailable', 'audit')).toHaveLength(2)
    const failures = logs.filter((line) => line.includes('progress audit failed'))
    expect(failures.some((line) => line.includes('provider-unauthorized'))).toBe(true)
    expect(failures.some((line) => line.includes('output-exhausted'))).toBe(true)
    expect(logs.join('\n')).not.toContain('k-very-secret')
    expect(logs.join('\n')).not.toContain('nested lists')
  })

  it("no small model for a session whose provider OpenCode does not know: silent, then blocked", async () => {
    const tag = model.scenario('none', { audits: [{ verdict: 'complete', note: 'never asked' }] })
    const logs = []
    env = await setup({
      runtimeOptions: { logger: (level, message) => logs.push(`${level} ${message}`) },
      mockOptions: { providers: [mockProvider({ 'gemini-flash-x': { family: 'gemini-flash' } })] },
    })
    const session = goalSession(env.mock, tag, { providerID: 'ghost', modelID: 'ghost-model' })
    await waitFor(() => goalOf(env.mock, session.id)?.status === 'blocked', 10_000)
    expect(goalOf(env.mock, session.id).statusReason).toBe('progress audit unavailable')
    expect(model.requestsOf('none')).toHaveLength(0)
    expect(logs.filter((line) => line.includes('progress audit failed'))).toEqual([])
  })
})
