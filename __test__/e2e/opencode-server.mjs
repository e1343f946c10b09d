// Starts a real OpenCode server (the `opencode-ai` devDependency) fully offline: a temporary HOME,
// a project directory whose opencode.json points provider `mock` at a scripted model server, and
// `opencode serve` on a free loopback port. Also the host-side goal helpers a UI would run:
// create a session, write the goal through a fresh-read merge, send the first prompt.
//
//   const oc = await startOpenCode({ modelBaseURL: model.baseURL })
//   ... oc.url, oc.directory, oc.api(method, path, body), oc.apiIn(directory)(method, path, body) ...
//   await oc.close()

import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const packageRoot = path.resolve(here, '..', '..')

/** The agent model and the small model of the scripted provider. */
export const AGENT_MODEL = { providerID: 'mock', modelID: 'mock-model' }
export const SMALL_MODEL = { providerID: 'mock', modelID: 'mock-small' }

/** The API key written into the project's opencode.json (a test value, not a credential). */
export const TEST_API_KEY = 'test-key-not-a-secret'

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** The opencode binary installed by npm. */
export function opencodeBinary() {
  const bin = path.join(packageRoot, 'node_modules', '.bin', process.platform === 'win32' ? 'opencode.cmd' : 'opencode')
  if (!fs.existsSync(bin)) throw new Error('opencode is not installed: run `npm ci` (devDependency opencode-ai)')
  return bin
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/**
 * The project config: provider `mock` at the scripted server, its small model for audits.
 * `modelCost` (`{input, output}`, US dollars per million tokens) prices the agent model, so
 * OpenCode reports each reply's `info.cost`; without it every cost is 0. `config` adds top-level
 * keys (e.g. `mcp`).
 */
export function projectConfig(modelBaseURL, { smallModel = true, modelCost, config = {} } = {}) {
  return {
    $schema: 'https://opencode.ai/config.json',
    provider: {
      mock: {
        npm: '@ai-sdk/openai-compatible',
        name: 'Mock',
        options: { baseURL: modelBaseURL, apiKey: TEST_API_KEY },
        models: {
          'mock-model': { name: 'Mock Model', limit: { context: 128000, output: 8192 }, ...(modelCost ? { cost: modelCost } : {}) },
          'mock-small': { name: 'Mock Small', limit: { context: 32000, output: 2048 } },
        },
      },
    },
    model: `${AGENT_MODEL.providerID}/${AGENT_MODEL.modelID}`,
    ...(smallModel ? { small_model: `${SMALL_MODEL.providerID}/${SMALL_MODEL.modelID}` } : {}),
    autoupdate: false,
    share: 'disabled',
    ...config,
  }
}

/**
 * @param {{ modelBaseURL: string, smallModel?: boolean, modelCost?: { input: number, output: number }, config?: object, git?: boolean, startTimeoutMs?: number, log?: (line: string) => void }} options
 */
export async function startOpenCode(options) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'goal-e2e-'))
  const home = path.join(root, 'home')
  const directory = path.join(root, 'project')
  // OpenCode is a Bun executable that extracts a native library (about 5 MB) into the temp
  // directory each time it starts; without TMPDIR in its environment that is /tmp, and the files
  // stay there. Inside `root`, close() removes them.
  const tmp = path.join(root, 'tmp')
  fs.mkdirSync(tmp, { recursive: true })
  fs.mkdirSync(home, { recursive: true })
  fs.mkdirSync(directory, { recursive: true })
  fs.writeFileSync(path.join(directory, 'opencode.json'), JSON.stringify(projectConfig(options.modelBaseURL, options), null, 2))
  fs.writeFileSync(path.join(directory, 'README.md'), '# Demo project\n')
  if (options.git) {
    // OpenCode tracks a session's file changes (GET /session/:id/diff) only in a git project.
    const git = (...args) =>
      execFileSync('git', args, { cwd: directory, stdio: 'ignore', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } })
    git('init', '-q')
    git('add', '-A')
    git('commit', '-q', '-m', 'initial')
  }
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    TMPDIR: tmp,
    BUN_TMPDIR: tmp,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    // Offline and quiet: no catalog download (GET /provider waits for it otherwise), no LSP or
    // plugin installs, no Claude Code imports from the (empty) HOME.
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
    OPENCODE_DISABLE_CLAUDE_CODE: '1',
    OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
    OPENCODE_DISABLE_SHARE: '1',
    NO_COLOR: '1',
  }
  const output = []
  const keep = (chunk) => {
    const text = chunk.toString('utf8')
    output.push(text)
    if (output.length > 200) output.shift()
    options.log?.(text)
  }
  let child = null
  let exited = null
  const killOnExit = () => stop('SIGKILL')
  function spawnServer() {
    exited = null
    child = spawn(opencodeBinary(), ['serve', '--port', String(port), '--hostname', '127.0.0.1'], {
      cwd: directory,
      env,
      // Same process group as the caller: a Ctrl-C in the terminal reaches OpenCode too, and the
      // exit hook below covers a caller that ends without close().
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    process.once('exit', killOnExit)
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    const mine = child
    mine.on('exit', (code, signal) => {
      if (mine !== child) return
      exited = { code, signal }
      process.removeListener('exit', killOnExit)
    })
  }

  const api = async (method, pathname, body, { query = {}, in: where = directory } = {}) => {
    const target = new URL(url + pathname)
    if (where) target.searchParams.set('directory', where)
    for (const [key, value] of Object.entries(query)) target.searchParams.set(key, String(value))
    const response = await fetch(target, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    })
    const text = await response.text()
    if (!response.ok) throw new Error(`${method} ${pathname} → HTTP ${response.status}`)
    return text ? JSON.parse(text) : null
  }

  async function waitHealthy() {
    const startedAt = Date.now()
    const deadline = startedAt + (options.startTimeoutMs ?? 60_000)
    for (;;) {
      if (exited) throw new Error(`opencode exited during start (${JSON.stringify(exited)}):\n${output.join('').slice(-2000)}`)
      try {
        const health = await fetch(`${url}/global/health`, { signal: AbortSignal.timeout(1000) })
        if (health.ok) break
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        stop()
        throw new Error(`opencode did not answer within ${options.startTimeoutMs ?? 60_000} ms:\n${output.join('').slice(-2000)}`)
      }
      await sleep(150)
    }
    return Date.now() - startedAt
  }

  function stop(signal = 'SIGTERM') {
    if (exited || !child) return
    try {
      child.kill(signal)
    } catch {
      // already gone
    }
  }

  async function halt() {
    stop()
    const until = Date.now() + 3000
    while (!exited && Date.now() < until) await sleep(50)
    if (!exited) stop('SIGKILL')
    const killed = Date.now() + 5000
    while (!exited && Date.now() < killed) await sleep(50)
  }

  spawnServer()
  const startMs = await waitHealthy()

  return {
    url,
    directory,
    home,
    startMs,
    output,
    api,
    /**
     * The API in another directory (`null`: none, for the server-wide routes). A directory of its
     * own gets the project's opencode.json (the scripted provider) on first use.
     */
    apiIn(where) {
      if (where && where !== directory && !fs.existsSync(path.join(where, 'opencode.json'))) {
        fs.mkdirSync(where, { recursive: true })
        fs.copyFileSync(path.join(directory, 'opencode.json'), path.join(where, 'opencode.json'))
      }
      return (method, pathname, body, options = {}) => api(method, pathname, body, { ...options, in: where })
    },
    /** A directory beside the project (removed with it), for sessions of more directories. */
    besideProject: (name) => path.join(root, name),
    get child() {
      return child
    },
    /**
     * Stops OpenCode (SIGTERM, SIGKILL after 3 s), as a crash or an update would, and starts it
     * again on the same port, HOME and project: a turn running meanwhile is cut.
     */
    async restart() {
      await halt()
      spawnServer()
      return waitHealthy()
    },
    async close() {
      await halt()
      fs.rmSync(root, { recursive: true, force: true })
    },
  }
}

/** The synthetic reminder a host attaches after the first prompt of a goal. */
export function goalIntroText(tokenBudget) {
  let text =
    '<system-reminder>\nGoal mode is active: the user message above is the objective. The system will prompt you to ' +
    'continue until the objective is verifiably complete. Progress is evaluated independently after each turn, so end ' +
    'every turn with what is done, what is verified and what remains.'
  if (tokenBudget) text += ` A token budget of ${tokenBudget} tokens applies to this goal.`
  return text + '\n</system-reminder>'
}

/**
 * Writes `metadata.openchamber.goal` the way a host must: read the session fresh, merge the goal
 * into the namespace, PATCH the whole metadata (OpenCode replaces it).
 */
export async function writeGoalMetadata(api, sessionId, mutate) {
  const session = await api('GET', `/session/${sessionId}`)
  const metadata = session.metadata && typeof session.metadata === 'object' ? session.metadata : {}
  const namespace = metadata.openchamber && typeof metadata.openchamber === 'object' ? metadata.openchamber : {}
  const goal = mutate(namespace.goal ?? null)
  const next = { ...metadata, openchamber: { ...namespace, goal: { ...goal, updatedAt: Date.now() } } }
  return api('PATCH', `/session/${sessionId}`, { metadata: next })
}

/** An id in OpenCode's shape (`prefix` + 12 hex digits of time + 14 base-62 characters). */
function opencodeStyleId(prefix) {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
  const suffix = Array.from({ length: 14 }, () => alphabet[Math.floor(Math.random() * 62)]).join('')
  return prefix + (BigInt(Date.now()) * 4096n).toString(16).padStart(12, '0').slice(-12) + suffix
}

/**
 * Creates a session with a goal and sends its first prompt (goal written before dispatch, as the
 * reference orders it); `goalFields` are added to the goal (e.g. `{costBudget}`). Returns the
 * session id, the goal id and the prompt's body. With `retry` (a function that runs a step until
 * it succeeds), each step is retried within the same session, and the prompt carries its own
 * message and part ids so that a post repeated after a lost answer stays one message: what a
 * client does across a server restart.
 */
export async function createGoalSession(api, { objective, tokenBudget = null, title, model = AGENT_MODEL, checks, criteria, goalFields = {}, retry } = {}) {
  const step = retry ?? ((run) => run())
  const session = await step(() => api('POST', '/session', title ? { title } : {}))
  const goalId = `goal-${Math.random().toString(36).slice(2, 10)}`
  const now = Date.now()
  await step(() => writeGoalMetadata(api, session.id, () => ({
    id: goalId,
    objective,
    objectiveFile: false,
    status: 'active',
    tokenBudget,
    tokensUsed: 0,
    turnsUsed: 0,
    blockedStreak: 0,
    auditFailStreak: 0,
    note: '',
    statusReason: '',
    lastAccountedMessageID: '',
    createdAt: now,
    updatedAt: now,
    ...(checks ? { checks } : {}),
    ...(criteria ? { criteria, criteriaIssued: criteria.length } : {}),
    ...goalFields,
  })))
  const parts = [
    { type: 'text', text: objective },
    { type: 'text', text: goalIntroText(tokenBudget), synthetic: true },
  ]
  const ids = retry ? { messageID: opencodeStyleId('msg_') } : {}
  if (retry) parts.forEach((part) => (part.id = opencodeStyleId('prt_')))
  const prompt = { model, agent: 'build', ...ids, parts }
  await step(() => api('POST', `/session/${session.id}/prompt_async`, prompt))
  return { sessionId: session.id, goalId, prompt }
}

/** Resumes a paused goal: statusReason `resumed` and status active, through a fresh-read merge. */
export function resumeGoal(api, sessionId) {
  return writeGoalMetadata(api, sessionId, (goal) => ({ ...goal, status: 'active', statusReason: 'resumed' }))
}

/** The goal stored on the session now. */
export async function readGoal(api, sessionId) {
  const session = await api('GET', `/session/${sessionId}`)
  return session?.metadata?.openchamber?.goal ?? null
}
