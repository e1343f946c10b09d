// createEventFollower: goal-core's follower of OpenCode's event stream (src/event_follower.rs,
// crates/goal-core/src/io/event_follower.rs), the package's one reader of `GET /global/event`.
// By default it delivers each event to the runtimes of its JavaScript environment that talk to
// the same server; `onPayload` hands a host each payload as a forwarding host passes it on, and
// `deliver: false` leaves the forwarding to the host. Reconnects follow the loop's one backoff
// rule (crates/goal-core/src/time/backoff.rs): doubling from `firstRetryMs`, at most 10 s.
import { afterEach, describe, expect, it } from 'vitest'
import { startMockOpenCode } from './mock/opencode.mjs'
import { goalMetadata, goalOf, pkg, scriptedAuditor, sleep, tempDataDir, waitFor } from './helpers.mjs'

const cleanups = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function mockServer(options = {}) {
  const mock = await startMockOpenCode({ heartbeatMs: 60_000, replyDelayMs: 15, ...options })
  cleanups.push(() => mock.close())
  return mock
}

function follower(options) {
  const made = pkg.createEventFollower(options)
  cleanups.push(() => made.close())
  return made
}

function runtimeOn(url, options = {}) {
  const runtime = pkg.createSessionGoalRuntime({
    openCode: { baseUrl: url },
    settings: { dataDir: tempDataDir() },
    idleQuietMs: 150,
    kickoffQuietMs: 100,
    resumeKickoffMs: 50,
    logger: null,
    ...options,
  })
  cleanups.push(() => runtime.stop())
  return runtime
}

const tracked = (runtime, sessionId) => runtime.snapshot().sessions.some((s) => s.sessionId === sessionId)
const streamRequests = (mock) => mock.requests.filter((r) => r.path === '/global/event').length

describe('delivery to the runtimes', () => {
  it('a goal is driven to complete by the follower alone, and only the runtimes of that server hear it', async () => {
    const [mock, other] = [await mockServer(), await mockServer()]
    const auditor = scriptedAuditor([{ verdict: 'complete', note: 'verified' }])
    const runtime = runtimeOn(mock.url, { generateSmallModelText: auditor.service.generateSmallModelText })
    const elsewhere = runtimeOn(other.url)
    const statuses = []
    follower({ openCode: { baseUrl: mock.url }, onStatus: (status) => statuses.push(status) })
    await waitFor(() => statuses.some((s) => s.state === 'connected'), 5000)
    expect(statuses[0]).toEqual({ state: 'connected' })

    const session = mock.createSession({ metadata: goalMetadata() })
    mock.addUserMessage(session.id, 'Please make the parser handle nested lists')
    mock.addAssistantMessage(session.id, { text: 'Done: nesting works. Verified: tests pass.', tokens: { input: 1000, output: 100 } })
    mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10_000)
    expect(auditor.calls.length).toBe(1)
    expect(tracked(elsewhere, session.id)).toBe(false)
    expect(elsewhere.snapshot().sessions).toEqual([])
  })

  it('every connection makes a goal runtime scan its directories: a goal whose events were missed is picked up', async () => {
    const mock = await mockServer()
    const auditor = scriptedAuditor([{ verdict: 'complete', note: 'verified' }])
    // recoverOnStart off: only a connection makes the runtime look.
    runtimeOn(mock.url, { directories: ['/tmp/project'], recoverOnStart: false, generateSmallModelText: auditor.service.generateSmallModelText })
    const session = mock.createSession({ metadata: goalMetadata() })
    mock.addUserMessage(session.id, 'Please make the parser handle nested lists')
    mock.addAssistantMessage(session.id, { text: 'Done: nesting works.', tokens: { input: 1000, output: 100 } })
    await sleep(300)
    expect(goalOf(mock, session.id).status).toBe('active')
    follower({ openCode: { baseUrl: mock.url } })
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10_000)
  })

  it('deliver: false leaves the forwarding to the host: the runtime hears nothing from the follower, the host gets every payload', async () => {
    const mock = await mockServer()
    const runtime = runtimeOn(mock.url)
    const handed = []
    follower({ openCode: { baseUrl: mock.url }, deliver: false, onPayload: (payload, directory) => handed.push([payload, directory]) })
    await mock.waitFor(() => mock.eventStreams === 1, { timeoutMs: 5000 })
    const session = mock.createSession({})
    mock.setStatus(session.id, 'idle')
    await waitFor(() => handed.some(([p]) => p.type === 'session.status'), 5000)
    await sleep(100)
    expect(tracked(runtime, session.id)).toBe(false)
    // The host forwards it itself, and then the runtime has it.
    for (const [payload, directory] of handed) runtime.processPayload(payload, directory)
    await waitFor(() => tracked(runtime, session.id), 5000)
  })
})

describe('what the host hears', () => {
  it('onPayload: each payload in the stream\'s order, the envelope unwrapped, `global` as no directory, no sync twins', async () => {
    const mock = await mockServer({ syncEvents: true })
    const handed = []
    follower({ openCode: { baseUrl: mock.url }, onPayload: (payload, directory) => handed.push([payload, directory]) })
    await mock.waitFor(() => mock.eventStreams === 1, { timeoutMs: 5000 })
    mock.events.length = 0
    const session = mock.createSession({ directory: '/tmp/one' })
    mock.addUserMessage(session.id, 'hello')
    mock.emit({ type: 'installation.updated', properties: { version: '9' } }, 'global')
    mock.emit({ type: 'bare.event', properties: {} })
    const sent = mock.events.map((envelope) => [envelope.payload, envelope.directory === undefined || envelope.directory === 'global' ? '' : envelope.directory])
    await waitFor(() => handed.length >= sent.length + 1, 5000)
    await sleep(100)
    // server.connected came first, on the connection.
    expect(handed[0][0].type).toBe('server.connected')
    expect(handed.slice(1)).toEqual(sent)
    expect(handed.some(([p]) => p.type === 'sync')).toBe(false)
    expect(sent.some(([, directory]) => directory === '/tmp/one')).toBe(true)
    expect(sent.filter(([, directory]) => directory === '')).toHaveLength(2)
  })

  it('onStatus: why the stream ended and when the next attempt is, doubling from firstRetryMs (the loop\'s one backoff rule)', async () => {
    const mock = await mockServer()
    const statuses = []
    follower({ openCode: { baseUrl: mock.url }, firstRetryMs: 40, onStatus: (status) => statuses.push(status) })
    await waitFor(() => statuses.length === 1, 5000)
    await mock.close()
    await waitFor(() => statuses.length >= 5, 5000)
    const [connected, ...dropped] = statuses
    expect(connected).toEqual({ state: 'connected' })
    expect(dropped.slice(0, 4).map((s) => [s.state, s.retryInMs])).toEqual([
      ['disconnected', 40],
      ['disconnected', 80],
      ['disconnected', 160],
      ['disconnected', 320],
    ])
    for (const status of dropped) {
      expect(typeof status.reason).toBe('string')
      expect(status.reason).not.toContain(mock.url)
    }
    expect(dropped.slice(1).every((s) => /connect/i.test(s.reason)), JSON.stringify(dropped)).toBe(true)
  })

  it('a refused stream names its HTTP status; a first retry of a minute still waits no more than the cap of 10 s', async () => {
    const mock = await mockServer()
    mock.fault({ method: 'GET', path: '/global/event', times: 1, status: 401 })
    const statuses = []
    follower({ openCode: { baseUrl: mock.url }, firstRetryMs: 60_000, onStatus: (status) => statuses.push(status) })
    await waitFor(() => statuses.length === 1, 5000)
    expect(statuses[0]).toEqual({ state: 'disconnected', reason: expect.stringMatching(/^HTTP 401 /), retryInMs: 10_000 })
  })

  it('callbacks that throw or reject change nothing: the stream goes on, the process with it', async () => {
    const mock = await mockServer()
    let payloads = 0
    let statuses = 0
    follower({
      openCode: { baseUrl: mock.url },
      onStatus: () => {
        statuses += 1
        throw new Error('the host\'s status line broke')
      },
      onPayload: (payload) => {
        payloads += 1
        if (payload.type === 'session.created') throw new Error('the host broke')
        return Promise.reject(Object.assign(new Error('and rejected'), { statusCode: 500 }))
      },
    })
    await mock.waitFor(() => mock.eventStreams === 1, { timeoutMs: 5000 })
    mock.createSession({})
    mock.createSession({})
    // server.connected, then two session.created and two session.updated.
    await waitFor(() => payloads === 5, 5000)
    expect(statuses).toBe(1)
  })
})

describe('the connection', () => {
  it('OpenChamber\'s flat names: buildOpenCodeUrl and getOpenCodeAuthHeaders are asked for the stream', async () => {
    const mock = await mockServer()
    const asked = []
    follower({
      buildOpenCodeUrl: (path, prefix) => {
        asked.push([path, prefix])
        return `${mock.url}${prefix}${path}`
      },
      getOpenCodeAuthHeaders: async () => ({ authorization: 'Bearer follower' }),
    })
    await mock.waitFor(() => mock.eventStreams === 1, { timeoutMs: 5000 })
    expect(asked).toEqual([['/global/event', '']])
    const request = mock.requests.find((r) => r.path === '/global/event')
    expect(request.headers.authorization).toBe('Bearer follower')
    expect(request.headers.accept).toBe('text/event-stream')
  })

  it('close() ends the stream and no attempt is made again', async () => {
    const mock = await mockServer()
    const made = follower({ openCode: { baseUrl: mock.url }, firstRetryMs: 20 })
    await mock.waitFor(() => mock.eventStreams === 1, { timeoutMs: 5000 })
    expect(made.isRunning()).toBe(true)
    made.close()
    made.close()
    await mock.waitFor(() => mock.eventStreams === 0, { timeoutMs: 5000 })
    await sleep(200)
    expect(made.isRunning()).toBe(false)
    expect(streamRequests(mock)).toBe(1)
  })

  it('a host whose stream must stay down closes it on its first disconnect', async () => {
    const mock = await mockServer()
    const statuses = []
    const made = follower({
      openCode: { baseUrl: mock.url },
      firstRetryMs: 20,
      onStatus: (status) => {
        statuses.push(status.state)
        if (status.state === 'disconnected') made.close()
      },
    })
    await mock.waitFor(() => mock.eventStreams === 1, { timeoutMs: 5000 })
    mock.dropEventStreams()
    await waitFor(() => statuses.includes('disconnected'), 5000)
    await sleep(200)
    expect(statuses).toEqual(['connected', 'disconnected'])
    expect(streamRequests(mock)).toBe(1)
  })

  it('unusable options are refused in the package\'s words', () => {
    const refused = (options) => {
      try {
        pkg.createEventFollower(options)
      } catch (error) {
        return { name: error.name, code: error.code, field: error.field, message: error.message }
      }
      return null
    }
    expect(refused({})).toEqual({ name: 'SessionGoalError', code: 'invalidInput', field: 'openCode', message: expect.stringContaining('openCode: { baseUrl }') })
    expect(refused(undefined)).toMatchObject({ code: 'invalidInput', field: 'options' })
    expect(refused({ openCode: { baseUrl: 'http://127.0.0.1:9' }, deliver: 'no' })).toMatchObject({ code: 'invalidInput', field: 'deliver', message: 'deliver must be true or false' })
    expect(refused({ buildOpenCodeUrl: () => 'http://127.0.0.1:9', openCode: { buildUrl: () => 'http://127.0.0.1:9' } })).toMatchObject({ code: 'invalidInput', field: 'buildOpenCodeUrl' })
  })
})
