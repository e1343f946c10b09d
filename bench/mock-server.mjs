// The mock OpenCode of the tests (__test__/mock/opencode.mjs), run in its own process for the
// benchmarks, so that its HTTP handling, memory and CPU never count against the host process
// being measured. Driven over the fork IPC channel: {id, cmd, args} → {id, result | error}.
//
// Every recorded request is stamped with `atHr`: process.hrtime in ms (CLOCK_MONOTONIC, shared by
// every process on the machine), taken when the request arrives, before any injected delay. The
// host compares it with its own process.hrtime, so cross-process latencies need no clock sync.
import { startMockOpenCode } from '../__test__/mock/opencode.mjs'
import { freshGoal } from '../__test__/mock/goal.mjs'

const hrMs = () => Number(process.hrtime.bigint()) / 1e6

let mock = null
// sessionId → arrival times (atHr) of its POST /session/:id/prompt_async requests.
const promptArrivals = new Map()
let notifyPrompts = false
// Request log kept compact (the mock's own log clones headers and bodies of every request).
let log = []
let keepLog = false
// Every request recorded (the event stream included), and the session lists among them.
const counts = { total: 0, lists: 0, censuses: 0 }

const PROMPT_PATH = /^\/session\/([^/]+)\/prompt_async$/

// Goal ids stay unique across calls: sessions that carry one goal id are a fork and its copies
// to the runtime, which adopts the copies paused instead of continuing them.
let goalsCreated = 0

function goalMetadata(index, fields) {
  const created = Date.now() - 60_000
  return {
    openchamber: {
      goal: freshGoal({
        id: `goal-bench-${index}`,
        objective: 'Make the parser handle nested lists and keep every existing test green',
        createdAt: created,
        updatedAt: created,
        ...fields,
      }),
    },
  }
}

const commands = {
  async start({ directory = '/tmp/project', turns = false } = {}) {
    // `turns`: every prompt starts a turn that keeps running, as on OpenCode (a prompt stored
    // with no turn is a stranded message, which the runtime rightly posts again under its id).
    const replies = turns ? [{ text: 'Working on the nesting.', completed: false }] : undefined
    mock = await startMockOpenCode({ heartbeatMs: 3_600_000, directory, autoUserMessage: true, replies })
    // Stamp and index every request as it is recorded (the mock calls mock.requests.push on arrival).
    const requests = mock.requests
    requests.push = (record) => {
      const atHr = hrMs()
      counts.total++
      if (record.method === 'GET' && record.path === '/session') counts.lists++
      if (record.method === 'GET' && record.path === '/experimental/session') counts.censuses++
      const match = record.method === 'POST' ? PROMPT_PATH.exec(record.path) : null
      if (match) {
        const sessionId = decodeURIComponent(match[1])
        const list = promptArrivals.get(sessionId)
        const arrival = { atHr, messageID: record.body?.messageID ?? null }
        if (list) list.push(arrival)
        else promptArrivals.set(sessionId, [arrival])
        if (notifyPrompts) process.send({ event: 'prompt', sessionId, atHr })
      }
      if (keepLog) log.push({ method: record.method, path: record.path, query: record.query, body: record.body, atHr })
      // The mock's own arrays are not needed by the benchmarks and would only grow.
      return 0
    }
    return { url: mock.url }
  },

  /** Sessions with an active goal and one completed exchange, idle (like the tests' sessionWithReply); `owned`: goals name their session. */
  createGoalSessions({ count, directory = '/tmp/project', ids, goal = {}, owned = false, goalAfterSession = false }) {
    const created = []
    for (let index = 0; index < count; index++) {
      const metadata = goalMetadata(goalsCreated++, goal)
      const session = mock.createSession({ id: ids?.[index], directory, metadata })
      // `goalAfterSession`: the goal was set on the session after it was made (as a user sets one
      // on an existing session), so a server that cannot list still shows whose goal it is.
      if (goalAfterSession) {
        const at = session.time.created + 1
        mock.setMetadata(session.id, { openchamber: { goal: { ...metadata.openchamber.goal, createdAt: at, updatedAt: at } } })
      }
      // `owned`: the goal names its session, as this package writes goals (OpenChamber's UI
      // writes them without `sessionId`).
      if (owned) mock.setMetadata(session.id, { openchamber: { goal: { ...metadata.openchamber.goal, sessionId: session.id } } })
      // As on a real server, the finished turn's user message carries its file changes.
      mock.addUserMessage(session.id, 'Please make the parser handle nested lists', { summary: { diffs: [] } })
      mock.addAssistantMessage(session.id, {
        text: 'Started: parser skeleton in place. Remaining: nesting.',
        tokens: { input: 1000, output: 100 },
      })
      created.push(session.id)
      // The mock records every emitted event; nothing here reads them.
      if (mock.events.length > 10_000) mock.events.length = 0
    }
    mock.events.length = 0
    return created
  },

  /** The session objects (with metadata) of `ids`, as a `session.updated` event carries them. */
  sessionInfos({ ids }) {
    return ids.map((id) => mock.getSession(id))
  },

  /** Deletes sessions (the soak removes each round's sessions so later lists stay small). */
  deleteSessions({ ids }) {
    for (const id of ids) mock.deleteSession(id)
    mock.events.length = 0
    return true
  },

  fault({ pathSource = '.*', delayMs, method, status }) {
    mock.fault({ path: new RegExp(pathSource), delayMs, method, status })
    return true
  },

  /** Requests recorded so far: all of them, and the session lists (`GET /session`). */
  requestCounts() {
    return { ...counts }
  },

  clearFaults() {
    mock.clearFaults()
    return true
  },

  setLogging({ keep = false, prompts = false }) {
    keepLog = keep
    notifyPrompts = prompts
    return true
  },

  takeLog() {
    const out = log
    log = []
    return out
  },

  /**
   * Prompts per session. `duplicated`: sessions that got two different continuations (two
   * message ids, or a post without one beside another). `reposted`: sessions whose one
   * continuation was posted again under its own id (a repeat of one message, not a second
   * continuation: a mock started without turns leaves every prompt stranded). `first` and
   * `last`: the earliest and the latest first prompt of a session.
   */
  promptStats() {
    let prompts = 0
    let duplicated = 0
    let reposted = 0
    let first = Infinity
    let last = -Infinity
    for (const list of promptArrivals.values()) {
      prompts += list.length
      const ids = new Set(list.map((arrival) => arrival.messageID ?? `(no id ${arrival.atHr})`))
      if (ids.size > 1) duplicated++
      else if (list.length > 1) reposted++
      // When the session was driven: its first prompt (a re-post comes quiet windows later).
      const driven = list[0].atHr
      if (driven < first) first = driven
      if (driven > last) last = driven
    }
    return { sessions: promptArrivals.size, prompts, duplicated, reposted, first, last }
  },

  promptedSessions() {
    return [...promptArrivals.keys()]
  },

  resetPrompts() {
    promptArrivals.clear()
    return true
  },

  usage() {
    return { cpu: process.cpuUsage(), rss: process.memoryUsage().rss }
  },

  async close() {
    await mock?.close()
    setImmediate(() => process.exit(0))
    return true
  },
}

process.on('message', async (message) => {
  if (!message || typeof message !== 'object' || !('cmd' in message)) return
  const { id, cmd, args } = message
  try {
    const handler = commands[cmd]
    if (!handler) throw new Error(`unknown command ${cmd}`)
    const result = await handler(args ?? {})
    process.send({ id, result })
  } catch (error) {
    process.send({ id, error: String(error?.stack ?? error) })
  }
})
process.on('disconnect', () => process.exit(0))
