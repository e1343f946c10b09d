// A real `opencode serve` killed in the middle of a turn and started again, behind a host whose
// event stream never comes back (docs/reliability.md, "Bounded silence"; INTEGRATION.md, "When
// OpenCode restarts"): OpenChamber's reconnect after a restart waits on Node's 300 s headers
// timeout, so here the host closes its follower at the stream's first disconnect and forwards
// nothing more, not even a heartbeat. The runtime runs at OpenChamber's settings: created with
// OpenChamber's option names (buildOpenCodeUrl, getOpenCodeAuthHeaders, emitGoalNotification) and
// no quiet window, sweep or fetch timeout, so the defaults hold (15 s idle quiet, 3 s kickoff, the
// sweep every 5 min); its audits go to OpenCode's small_model (the scripted model). The goal must
// be acted on within 60 s of OpenCode answering again, and then complete.
import { beforeAll, describe, expect, it } from 'vitest'
import { createRequire } from 'node:module'
import { tempDataDir, waitFor } from '../helpers.mjs'
import { createGoalSession, readGoal } from './opencode-server.mjs'
import { useOpenCode } from './forwarding-host.mjs'

const require = createRequire(import.meta.url)
const pkg = require('../../runtime.js')

const BOUND_MS = 60_000
const CUT_NOTE = 'The last turn was cut: it ended with no finish (OpenCode restarted or its stream broke), so it was continued without an audit.'

let model
let oc
const env = useOpenCode()
beforeAll(() => ({ model, oc } = env))

const goalOf = (sessionId) => readGoal(oc.api, sessionId)
const messagesOf = (sessionId) => oc.api('GET', `/session/${sessionId}/message`)
const usage = (prompt, completion) => ({ prompt_tokens: prompt, completion_tokens: completion })
const isCut = (m) => m.info.role === 'assistant' && !m.info.time?.completed && !m.info.finish && !m.info.error

/**
 * A host as OpenChamber's server runs one, except that its stream, once broken, stays broken: the
 * runtime with OpenChamber's options only, and the package's follower (`deliver: false`) with
 * each payload forwarded to processPayload until the first disconnect, when the follower is
 * closed. Resolves once the stream is connected.
 */
async function startHostThatNeverReconnects() {
  const notifications = []
  const buildOpenCodeUrl = (pathname, prefix = '') => `${oc.url}${prefix || ''}${pathname}`
  const getOpenCodeAuthHeaders = () => ({})
  const runtime = pkg.createSessionGoalRuntime({
    buildOpenCodeUrl,
    getOpenCodeAuthHeaders,
    emitGoalNotification: (event) => {
      notifications.push(event)
    },
    settings: { dataDir: tempDataDir() },
  })
  let connected = false
  let brokenAt = null
  const stream = pkg.createEventFollower({
    buildOpenCodeUrl,
    getOpenCodeAuthHeaders,
    deliver: false,
    onPayload: (payload, directory) => runtime.processPayload(payload, directory),
    onStatus: ({ state }) => {
      if (state === 'connected') connected = true
      if (state === 'disconnected' && connected && brokenAt === null) {
        brokenAt = Date.now()
        stream.close()
      }
    },
  })
  await waitFor(() => connected, 10_000)
  return {
    runtime,
    notifications,
    get brokenAt() {
      return brokenAt
    },
    async stop() {
      stream.close()
      await runtime.stop()
    },
  }
}

describe('OpenCode restarted mid-turn behind a host whose stream never comes back', () => {
  it('the cut turn is continued within 60 s of OpenCode answering again, and the goal completes', async () => {
    // The first turn finishes; the continuation's turn stalls (cut by the restart); the turn
    // after it finishes. The cut turn is continued without an audit: two audits in all.
    let agentTurns = 0
    const tag = model.scenario('restart-silent', {
      turns: [
        { text: 'Done: first half. Remaining: second half.', usage: usage(700, 40) },
        () => (agentTurns++ === 0 ? { text: 'Starting the second half', stall: true } : { text: 'Done: second half, verified.', usage: usage(900, 70) }),
      ],
      audits: [{ verdict: 'continue', note: 'second half left' }, { verdict: 'complete', note: 'both halves done' }],
    })
    const host = await startHostThatNeverReconnects()
    try {
      const { sessionId } = await createGoalSession(oc.api, { objective: `Finish both halves ${tag}` })
      // The continuation's turn streams, then stalls: OpenCode is killed and started again.
      await model.waitForStall('restart-silent', { timeoutMs: 60_000 })
      await oc.restart()
      const answering = Date.now()
      expect(host.brokenAt).not.toBeNull()
      const cut = (await messagesOf(sessionId)).filter((m) => m.info.role === 'assistant').at(-1)
      expect(isCut(cut)).toBe(true)

      // Within 60 s of OpenCode answering: one continuation over the cut reply.
      const continued = await waitFor(
        async () => {
          const users = (await messagesOf(sessionId)).filter((m) => m.info.role === 'user')
          return users.length >= 3 ? users[2] : null
        },
        BOUND_MS + 10_000,
        200,
      )
      const actedAfterMs = continued.info.time.created - answering
      console.log(`[restart-e2e] continuation over the cut turn ${(actedAfterMs / 1000).toFixed(1)} s after OpenCode answered (stream broken ${((answering - host.brokenAt) / 1000).toFixed(1)} s before)`)
      expect(actedAfterMs).toBeLessThanOrEqual(BOUND_MS)
      // The goal says why, while the next turn runs (until the audit after it), and the trail.
      const during = await goalOf(sessionId)
      expect(during.status).toBe('active')
      expect(during.cutTurns).toBe(1)
      expect(during.note).toBe(CUT_NOTE)
      const trail = await host.runtime.history(sessionId)
      expect(trail.filter((line) => line.action === 'continue (turn cut)')).toMatchObject([{ cut: 1, tail: cut.info.id }])

      // Then the goal completes, still without a stream: the silence watch finds the idle.
      const done = await waitFor(
        async () => {
          const goal = await goalOf(sessionId)
          return goal?.status === 'complete' ? goal : null
        },
        90_000,
        200,
      )
      expect(done.statusReason).toBe('verified by audit')
      const messages = await messagesOf(sessionId)
      // The first prompt, the continuation that was cut, one continuation over the cut reply.
      expect(messages.filter((m) => m.info.role === 'user')).toHaveLength(3)
      expect(messages.filter(isCut)).toHaveLength(1)
      expect(model.requestsOf('restart-silent', 'audit')).toHaveLength(2)
      await waitFor(() => host.notifications.length === 1, 5000)
      expect(host.notifications[0]).toMatchObject({ sessionId, status: 'complete' })
      expect(host.runtime.snapshot()).toMatchObject({ panics: 0, ticksTimedOut: 0 })
    } finally {
      await host.stop()
    }
  }, 240_000)
})
