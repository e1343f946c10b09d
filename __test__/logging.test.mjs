// Logs reach the host's logger and never carry prompts, model output or credentials.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor } from './helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

describe('logging and credentials', () => {
  it('sends the host auth headers, and no log line contains objective, output or credentials', async () => {
    const lines = []
    const secretObjective = 'OBJECTIVE-CANARY-7f3a'
    const secretNote = 'NOTE-CANARY-91bd'
    const secretReply = 'REPLY-CANARY-44ce'
    const token = 'Bearer TOKEN-CANARY-0c2e'
    const auditor = scriptedAuditor([{ verdict: 'continue', note: secretNote }, 'garbage without json ' + secretNote, { verdict: 'complete', note: secretNote }])
    env = await setup({ auditor, forward: true, runtimeOptions: { logger: (level, message) => lines.push(`${level} ${message}`) } })
    await env.runtime.stop()
    // Rebuild with OpenChamber-style URL/header callbacks so both are exercised.
    const { pkg } = await import('./helpers.mjs')
    const runtime = pkg.createSessionGoalRuntime({
      buildOpenCodeUrl: (path, prefix = '') => `${env.mock.url}${prefix}${path}`,
      getOpenCodeAuthHeaders: async () => ({ authorization: token }),
      getSmallModelService: async () => auditor.service,
      idleQuietMs: 100,
      // The same reply every turn is what this test needs; the no-progress breaker is tested elsewhere.
      noProgressTurns: 0,
      logger: (level, message) => lines.push(`${level} ${message}`),
      settings: { dataDir: env.dataDir },
    })
    const { forwardEvents } = await import('./helpers.mjs')
    const stream = forwardEvents(env.mock.url, runtime)
    await waitFor(() => env.mock.eventStreams >= 2)
    const session = sessionWithReply(env.mock, { goal: { objective: secretObjective }, reply: { text: secretReply } })
    env.mock.scriptReplies(session.id, [{ text: secretReply, tokens: { input: 10 } }])
    env.mock.fault({ method: 'GET', path: '/session/status', times: 1, status: 500, body: { message: secretReply } })
    runtime.processPayload({ type: 'session.status', properties: { sessionID: session.id, status: { type: 'idle' } } }, '/tmp/project')
    await waitFor(() => goalOf(env.mock, session.id).status === 'complete', 8000)
    stream.close()
    await runtime.stop()
    const withAuth = env.mock.requests.filter((r) => r.headers.authorization === token)
    expect(withAuth.length).toBeGreaterThan(3)
    expect(lines.length).toBeGreaterThan(0)
    expect(lines.some((l) => l.includes('continuation sent'))).toBe(true)
    expect(lines.some((l) => l.includes('audit parse failed'))).toBe(true)
    for (const line of lines) {
      for (const canary of [secretObjective, secretNote, secretReply, 'TOKEN-CANARY']) expect(line).not.toContain(canary)
    }
  })
})
