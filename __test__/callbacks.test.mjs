// Host callbacks through the package entry: native code is the one layer that calls them, so a
// throw, a rejection or a sync value where a promise may come is an unavailable service or a
// plain answer there, never a crash or an unhandled rejection (vitest fails a run on one).
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor } from './helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const complete = { verdict: 'complete', note: 'verified' }

describe('host callbacks', () => {
  it('a rejecting notification sink and a throwing logger do not stop a goal from settling', async () => {
    let notified = 0
    let logged = 0
    env = await setup({
      auditor: scriptedAuditor([complete]),
      runtimeOptions: {
        emitGoalNotification: () => {
          notified += 1
          return Promise.reject(new Error('sink down'))
        },
        logger: () => {
          logged += 1
          throw new Error('logger broke')
        },
      },
    })
    const session = sessionWithReply(env.mock)
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'complete')
    await waitFor(() => notified === 1 && logged > 0)
  })

  it('a sync headers callback is used as is; a rejecting one means no headers, not a failure', async () => {
    const auditor = scriptedAuditor([complete])
    env = await setup({
      auditor,
      runtimeOptions: {
        openCode: undefined,
        buildOpenCodeUrl: (path, prefix) => `${env.mock.url}${prefix}${path}`,
        getOpenCodeAuthHeaders: () => ({ authorization: 'Bearer sync' }),
      },
    })
    const first = sessionWithReply(env.mock)
    env.mock.setStatus(first.id, 'idle')
    await waitFor(() => goalOf(env.mock, first.id).status === 'complete')
    const ours = env.mock.requests.filter((r) => r.path.startsWith('/session/' + first.id))
    expect(ours.length).toBeGreaterThan(0)
    expect(ours.every((r) => r.headers.authorization === 'Bearer sync')).toBe(true)
    await env.cleanup()

    env = await setup({
      auditor: scriptedAuditor([complete]),
      runtimeOptions: {
        openCode: undefined,
        buildOpenCodeUrl: (path, prefix) => `${env.mock.url}${prefix}${path}`,
        getOpenCodeAuthHeaders: () => Promise.reject(Object.assign(new Error('vault locked'), { statusCode: 503 })),
      },
    })
    const second = sessionWithReply(env.mock)
    env.mock.setStatus(second.id, 'idle')
    await waitFor(() => goalOf(env.mock, second.id).status === 'complete')
    const unauthenticated = env.mock.requests.filter((r) => r.path.startsWith('/session/' + second.id))
    expect(unauthenticated.every((r) => r.headers.authorization === undefined)).toBe(true)
  })

  it('a throwing or non-string buildOpenCodeUrl makes reads fail (retried after a long pause), never a crash', async () => {
    for (const buildOpenCodeUrl of [() => { throw new Error('no server') }, () => 42]) {
      env = await setup({
        auditor: scriptedAuditor([complete]),
        forward: false,
        runtimeOptions: { openCode: undefined, buildOpenCodeUrl, idleQuietMs: 20, maxRetryAttempts: 2 },
      })
      const session = sessionWithReply(env.mock)
      env.runtime.processPayload({ type: 'session.status', properties: { sessionID: session.id, status: { type: 'idle' } } })
      // The first read and its retries fail; the goal is not dropped (the host may only be
      // starting its server): a long pause, then a fresh round. Nothing reached the server.
      await waitFor(() => env.runtime.snapshot().ticks >= 5)
      const tracked = env.runtime.snapshot().sessions.find((s) => s.sessionId === session.id)
      expect(tracked).toBeDefined()
      expect(env.mock.requests.filter((r) => r.path.includes(session.id))).toEqual([])
      expect(goalOf(env.mock, session.id).status).toBe('active')
      await env.cleanup()
      env = undefined
    }
  })

  it("OpenChamber's getSmallModelService: a missing service or a thrown 404 is silent, other throws are unavailable", async () => {
    const lines = []
    env = await setup({
      runtimeOptions: {
        getSmallModelService: async () => ({
          generateSmallModelText: async () => {
            throw Object.assign(new Error('rate limited'), { statusCode: 429, code: 'rate-limited' })
          },
        }),
        logger: (level, message) => lines.push(`${level} ${message}`),
      },
    })
    const session = sessionWithReply(env.mock)
    env.mock.scriptReplies(session.id, [{ text: 'x' }])
    env.mock.setStatus(session.id, 'idle')
    await waitFor(() => goalOf(env.mock, session.id).status === 'blocked', 8000)
    expect(goalOf(env.mock, session.id).statusReason).toBe('progress audit unavailable')
    // The rejection's status and code reached native code (they are logged; a 404 would not be).
    expect(lines.some((l) => l.includes('progress audit failed') && l.includes('429') && l.includes('rate-limited'))).toBe(true)
    await env.cleanup()
    lines.length = 0

    env = await setup({
      runtimeOptions: { getSmallModelService: async () => null, logger: (level, message) => lines.push(`${level} ${message}`) },
    })
    const quiet = sessionWithReply(env.mock)
    env.mock.scriptReplies(quiet.id, [{ text: 'x' }])
    env.mock.setStatus(quiet.id, 'idle')
    await waitFor(() => goalOf(env.mock, quiet.id).status === 'blocked', 8000)
    expect(goalOf(env.mock, quiet.id).statusReason).toBe('progress audit unavailable')
    expect(lines.filter((l) => l.includes('progress audit failed'))).toEqual([])
    await env.cleanup()
    lines.length = 0

    // A service that rejects with a 404 (no small model configured): unavailable, and silent
    // where the 429 above was logged.
    let asked = 0
    env = await setup({
      runtimeOptions: {
        getSmallModelService: async () => ({
          generateSmallModelText: async () => {
            asked += 1
            throw Object.assign(new Error('no small model'), { statusCode: 404 })
          },
        }),
        logger: (level, message) => lines.push(`${level} ${message}`),
      },
    })
    const missing = sessionWithReply(env.mock)
    env.mock.scriptReplies(missing.id, [{ text: 'x' }])
    env.mock.setStatus(missing.id, 'idle')
    await waitFor(() => goalOf(env.mock, missing.id).status === 'blocked', 8000)
    expect(asked).toBeGreaterThanOrEqual(1)
    expect(goalOf(env.mock, missing.id).statusReason).toBe('progress audit unavailable')
    expect(lines.filter((l) => l.includes('progress audit failed'))).toEqual([])
    expect(lines.filter((l) => l.includes('404'))).toEqual([])
  })

  it('a promise whose then throws, or whose value throws when read, is unavailable; the next promise still settles', async () => {
    const answers = {
      thenThrows: () => {
        const promise = Promise.resolve({ text: JSON.stringify(complete) })
        promise.then = () => {
          throw new Error('then broke')
        }
        return promise
      },
      getterThrows: async () => ({
        get text() {
          throw new Error('getter broke')
        },
      }),
      answers: async () => ({ text: JSON.stringify(complete), providerID: 'mock', modelID: 'mock-model' }),
    }
    const asked = { thenThrows: 0, getterThrows: 0, answers: 0 }
    let mode = 'thenThrows'
    env = await setup({
      runtimeOptions: {
        generateSmallModelText: () => {
          asked[mode] += 1
          return answers[mode]()
        },
      },
    })
    for (const [next, expected] of [['thenThrows', 'blocked'], ['getterThrows', 'blocked'], ['answers', 'complete']]) {
      mode = next
      const session = sessionWithReply(env.mock)
      env.mock.scriptReplies(session.id, [{ text: 'x' }])
      env.mock.setStatus(session.id, 'idle')
      await waitFor(() => goalOf(env.mock, session.id).status === expected, 8000)
      if (expected === 'blocked') expect(goalOf(env.mock, session.id).statusReason).toBe('progress audit unavailable')
      expect(asked[next]).toBeGreaterThanOrEqual(1)
    }
  })
})
