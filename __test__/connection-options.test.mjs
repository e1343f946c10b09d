// One `openCode` connection object and one `smallModel` object, shared by the runtimes, the goal
// control and writeSessionMetadataKey; OpenChamber's flat names reach the same settings through
// lib/drop-in.js, and the native binding itself reads the nested form only.
import { createRequire } from 'node:module'
import { afterEach, describe, expect, it } from 'vitest'
import { pkg, tempDataDir, waitFor } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'

const require = createRequire(import.meta.url)
const native = require('../lib/load-native.js').loadNative()

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

async function mockServer() {
  const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
  cleanups.push(() => mock.close())
  return mock
}

/** A connection built per request: counts the calls and sends a marker header. */
function hostConnection(mock) {
  const calls = { urls: 0, headers: 0 }
  return {
    calls,
    buildUrl: (apiPath) => {
      calls.urls += 1
      return `${mock.url}${apiPath}`
    },
    getHeaders: async () => {
      calls.headers += 1
      return { 'x-host': 'nested' }
    },
  }
}

/** A small model that answers every request with one distilled objective, and counts them. */
function distiller() {
  const requests = []
  return {
    requests,
    generate: async (request) => {
      requests.push(request)
      return { text: 'Distilled objective.', providerID: 'mock', modelID: 'small' }
    },
  }
}

const LONG_OBJECTIVE = 'Port the parser to Rust and keep every test green. '.repeat(120)

describe('one openCode object and one smallModel object', () => {
  it('the goal control takes both nested: the host connection is asked per request and the small model distills', async () => {
    const mock = await mockServer()
    const { calls, buildUrl, getHeaders } = hostConnection(mock)
    const model = distiller()
    const control = pkg.createSessionGoalControl({ openCode: { buildUrl, getHeaders, fetchTimeoutMs: 2000 }, smallModel: { generate: model.generate }, dataDir: tempDataDir() })
    const session = mock.createSession({ directory: '/tmp/project' })
    const installed = await control.createSessionGoal({ sessionId: session.id, directory: '/tmp/project', objective: LONG_OBJECTIVE })
    expect(installed.objectiveFit).toBe('distilled')
    expect(model.requests).toHaveLength(1)
    expect(calls.urls).toBeGreaterThan(0)
    expect(calls.headers).toBe(calls.urls)
    const sent = mock.requests.filter((r) => r.path.startsWith('/session'))
    expect(sent.length).toBeGreaterThan(0)
    expect(sent.every((r) => r.headers['x-host'] === 'nested')).toBe(true)
  })

  it("OpenChamber's flat names reach the same settings, on every entry point that took them", async () => {
    const mock = await mockServer()
    const { calls, buildUrl, getHeaders } = hostConnection(mock)
    const model = distiller()
    const flat = { buildOpenCodeUrl: buildUrl, getOpenCodeAuthHeaders: getHeaders, fetchTimeoutMs: 2000 }
    const control = pkg.createSessionGoalControl({ ...flat, getSmallModelService: async () => ({ generateSmallModelText: model.generate }), dataDir: tempDataDir() })
    const session = mock.createSession({ directory: '/tmp/project' })
    expect((await control.createSessionGoal({ sessionId: session.id, directory: '/tmp/project', objective: LONG_OBJECTIVE })).objectiveFit).toBe('distilled')
    expect(model.requests).toHaveLength(1)
    const before = calls.urls
    await pkg.writeSessionMetadataKey({ ...flat, sessionId: session.id, directory: '/tmp/project', key: 'note', value: 'hi' })
    expect(calls.urls).toBeGreaterThan(before)
    expect(mock.getSession(session.id).metadata.openchamber.note).toBe('hi')
    expect(mock.requests.every((r) => r.headers['x-host'] === 'nested')).toBe(true)
    for (const create of [pkg.createSessionGoalRuntime, pkg.createSessionAssistRuntime]) {
      const runtime = create({ ...flat, generateSmallModelText: model.generate, logger: null })
      cleanups.push(() => runtime.stop())
    }
  })

  it('a runtime reaches OpenCode through a nested host connection', async () => {
    const mock = await mockServer()
    const { calls, buildUrl, getHeaders } = hostConnection(mock)
    const runtime = pkg.createSessionGoalRuntime({ openCode: { buildUrl, getHeaders }, directories: ['/tmp/project'], logger: null, settings: { dataDir: tempDataDir() } })
    cleanups.push(() => runtime.stop())
    // The scan at start lists the server's sessions through the host's connection.
    await waitFor(() => mock.requests.some((r) => r.path === '/experimental/session' && r.headers['x-host'] === 'nested'))
    expect(calls.urls).toBeGreaterThan(0)
    expect(runtime.snapshot().stopped).toBe(false)
  })

  it('one setting given flat and nested is refused, naming the flat field', async () => {
    const cases = [
      [{ openCode: { baseUrl: 'http://127.0.0.1:9', fetchTimeoutMs: 1000 }, fetchTimeoutMs: 2000 }, 'fetchTimeoutMs'],
      [{ openCode: { buildUrl: () => 'x' }, buildOpenCodeUrl: () => 'y' }, 'buildOpenCodeUrl'],
      [{ openCode: { baseUrl: 'http://127.0.0.1:9' }, smallModel: { generate: async () => ({}) }, generateSmallModelText: async () => ({}) }, 'generateSmallModelText'],
    ]
    for (const [options, field] of cases) {
      for (const create of [pkg.createSessionGoalRuntime, pkg.createSessionAssistRuntime, pkg.createSessionGoalControl]) {
        let error
        try {
          create({ ...options, logger: null })
        } catch (thrown) {
          error = thrown
        }
        expect([error?.code, error?.field], `${create.name} ${field}`).toEqual(['invalidInput', field])
      }
    }
    const write = await pkg.writeSessionMetadataKey({ openCode: { baseUrl: 'http://127.0.0.1:9', fetchTimeoutMs: 1 }, fetchTimeoutMs: 2, sessionId: 'ses_x1234', key: 'k' }).catch((e) => e)
    expect([write.code, write.field]).toEqual(['invalidInput', 'fetchTimeoutMs'])
  })

  it('the native binding reads the nested form only: a flat connection there is no connection', () => {
    const mock = { url: 'http://127.0.0.1:9' }
    expect(() => native.createGoalControl({ buildOpenCodeUrl: () => mock.url })).toThrow(/openCode/)
    expect(() => native.createGoalControl({ openCode: { buildUrl: () => mock.url } })).not.toThrow()
  })
})
