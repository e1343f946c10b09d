// Each runtime's log lines reach its own logger only: two runtimes in one process, against two
// mock OpenCodes, never see each other's lines, and `logger: null` is silent beside a logging one.
import { afterEach, describe, expect, it, vi } from 'vitest'
import { setup, scriptedAuditor, goalMetadata, goalOf, waitFor, sleep } from './helpers.mjs'

let envs = []
afterEach(async () => {
  vi.restoreAllMocks()
  for (const env of envs) await env.cleanup()
  envs = []
})

/** A runtime against a mock of its own, with one idle session `id` whose goal runs to complete. */
async function runtimeWithSession(id, runtimeOptions) {
  const auditor = scriptedAuditor([{ verdict: 'continue', note: 'n' }, { verdict: 'complete', note: 'n' }])
  const env = await setup({ auditor, runtimeOptions })
  envs.push(env)
  env.mock.createSession({ id, directory: '/tmp/project', metadata: goalMetadata() })
  // Message ids of their own: the two mocks count ids alike, and runtimes of one environment share
  // their dispatch claims (a claimed tail is not continued twice), which real OpenCode ids never meet.
  const tag = id.slice('ses_'.length)
  env.mock.addUserMessage(id, 'Please make the parser handle nested lists', { id: `msg_00000000000001${tag}u` })
  env.mock.addAssistantMessage(id, { id: `msg_00000000000001${tag}a`, text: 'Started: skeleton in place. Remaining: nesting.', tokens: { input: 1000, output: 100 } })
  // The goal's event has reached the runtime before the host reports the session idle.
  await waitFor(() => env.runtime.isGoalActive(id), 5000)
  env.mock.scriptReplies(id, [{ text: 'first pass', tokens: { input: 10 } }, { text: 'nesting done, tests pass', tokens: { input: 10 } }])
  return env
}

/** Starts both goals at once and waits until both settled, plus time for late lines to arrive. */
async function runBoth(pairs) {
  for (const [env, id] of pairs) {
    env.runtime.processPayload({ type: 'session.status', properties: { sessionID: id, status: { type: 'idle' } } }, '/tmp/project')
  }
  await waitFor(() => pairs.every(([env, id]) => goalOf(env.mock, id)?.status === 'complete'), 20000).catch((e) => {
    throw new Error(e.message + JSON.stringify(pairs.map(([env, id]) => goalOf(env.mock, id))))
  })
  // Logger calls are queued to the JS thread; this outlasts that queue by far.
  await sleep(500)
}

const mentions = (lines, id) => lines.filter((line) => line.includes(id))

describe('log lines go to the runtime that produced them', () => {
  it('a logging runtime gets only its own lines; a logger: null runtime beside it is silent', async () => {
    const printed = []
    for (const m of ['log', 'warn', 'error', 'info']) vi.spyOn(console, m).mockImplementation((...args) => printed.push(args.join(' ')))
    const lines = []
    const loud = await runtimeWithSession('ses_routeloud', { logger: (level, message) => lines.push(`${level} ${message}`) })
    const silent = await runtimeWithSession('ses_routesilent', { logger: null })
    await runBoth([[loud, 'ses_routeloud'], [silent, 'ses_routesilent']])
    // The silent runtime did the same work (two turns sent), so it had lines to leak.
    expect(silent.mock.sends('ses_routesilent').length).toBeGreaterThanOrEqual(1)
    expect(mentions(lines, 'ses_routeloud').some((line) => line.includes('settled as complete'))).toBe(true)
    expect(mentions(lines, 'ses_routesilent')).toEqual([])
    expect(mentions(printed, 'ses_routesilent')).toEqual([])
    expect(mentions(printed, 'ses_routeloud')).toEqual([])
  })

  it('two runtimes with two loggers: each line exactly once, in its own logger', async () => {
    const first = []
    const second = []
    const a = await runtimeWithSession('ses_routefirst', { logger: (level, message) => first.push(`${level} ${message}`) })
    const b = await runtimeWithSession('ses_routesecond', { logger: (level, message) => second.push(`${level} ${message}`) })
    await runBoth([[a, 'ses_routefirst'], [b, 'ses_routesecond']])
    expect(mentions(first, 'ses_routesecond')).toEqual([])
    expect(mentions(second, 'ses_routefirst')).toEqual([])
    for (const [lines, id] of [[first, 'ses_routefirst'], [second, 'ses_routesecond']]) {
      const settled = mentions(lines, id).filter((line) => line.includes('settled as complete'))
      expect(settled).toHaveLength(1)
      const turnOne = mentions(lines, id).filter((line) => line.includes('(turn 1/'))
      expect(turnOne).toHaveLength(1)
    }
  })

  it('two runtimes without a logger option print each operator line once on the console', async () => {
    const printed = []
    for (const m of ['log', 'warn']) vi.spyOn(console, m).mockImplementation((...args) => printed.push(args.join(' ')))
    const a = await runtimeWithSession('ses_routeconsa', {})
    const b = await runtimeWithSession('ses_routeconsb', {})
    await runBoth([[a, 'ses_routeconsa'], [b, 'ses_routeconsb']])
    for (const id of ['ses_routeconsa', 'ses_routeconsb']) {
      expect(printed.filter((line) => line.startsWith(`[session-goal] ${id} settled as complete`))).toHaveLength(1)
      expect(printed.filter((line) => line.startsWith(`[session-goal] continuing ${id} (turn 1/`))).toHaveLength(1)
    }
  })
})
