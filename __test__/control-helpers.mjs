// Helpers for the goal creation and control suites: a recording proxy in front of the mock
// OpenCode (to prove the order objective file → goal metadata → dispatch), a minimal
// Express-like app on node:http, and a child-process runner for the CLI.
import http from 'node:http'
import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const CLI = path.join(ROOT, 'bin', 'session-goal.js')

export const objectivePath = (dataDir, sessionId) => path.join(dataDir, 'goals', `${sessionId}.md`)

/** Every file under <dataDir>/goals (temp files included). */
export const goalFiles = (dataDir) => {
  try {
    return fs.readdirSync(path.join(dataDir, 'goals')).sort()
  } catch {
    return []
  }
}

/**
 * A proxy that records, for each request as it ARRIVES (before the mock sees it), whether the
 * session's objective file exists and whether its metadata already holds a goal.
 */
/**
 * A close for `server` that ends every connection it accepted. `server.close()` alone waits for
 * connections that never sent a request: the addon's HTTP client can open one that a request
 * raced for and then left pooled, unused, and the close then hung until Node's header timeout.
 */
export function closerOf(server) {
  const sockets = new Set()
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  return () => {
    const closed = new Promise((resolve) => server.close(() => resolve()))
    for (const socket of sockets) socket.destroy()
    return closed
  }
}

export async function startRecordingProxy(mock, dataDir) {
  const log = []
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1')
    const match = /^\/session\/([^/]+)/.exec(url.pathname)
    const sessionId = match && match[1] !== 'status' ? decodeURIComponent(match[1]) : undefined
    const chunks = []
    for await (const chunk of req) chunks.push(chunk)
    const body = Buffer.concat(chunks)
    log.push({
      method: req.method,
      path: url.pathname,
      sessionId,
      fileExists: sessionId ? fs.existsSync(objectivePath(dataDir, sessionId)) : false,
      goalInMetadata: sessionId ? Boolean(mock.getSession(sessionId)?.metadata?.openchamber?.goal) : false,
      headers: { ...req.headers },
    })
    const upstream = http.request(
      mock.url + req.url,
      { method: req.method, headers: { ...req.headers, host: new URL(mock.url).host } },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers)
        answer.pipe(res)
      },
    )
    upstream.on('error', () => res.destroy())
    upstream.end(body)
  })
  const close = closerOf(server)
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    log,
    /** Index of the first logged request matching method and a path test. */
    indexOf(method, test) {
      return log.findIndex((entry) => entry.method === method && (typeof test === 'string' ? entry.path === test : test.test(entry.path)))
    },
    close,
  }
}

/**
 * A minimal Express-like app on node:http: app.get/put/delete(path-with-:params, handler),
 * req.params (percent-decoded, as Express does), res.status().json(). With `json: true` it parses
 * JSON bodies into req.body first (like express.json()), else handlers read the stream.
 */
export async function startMiniApp({ json = false } = {}) {
  const routes = []
  const app = {}
  for (const method of ['get', 'put', 'delete']) {
    app[method] = (pattern, handler) => {
      const names = []
      const source = pattern.replace(/:([A-Za-z]+)/g, (_, name) => {
        names.push(name)
        return '([^/]+)'
      })
      routes.push({ method: method.toUpperCase(), regex: new RegExp(`^${source}$`), names, handler })
    }
  }
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1')
    res.status = (code) => {
      res.statusCode = code
      return res
    }
    res.json = (value) => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(value))
    }
    for (const route of routes) {
      const found = route.method === req.method && route.regex.exec(url.pathname)
      if (!found) continue
      let params
      try {
        params = Object.fromEntries(route.names.map((name, i) => [name, decodeURIComponent(found[i + 1])]))
      } catch {
        return res.status(400).json({ error: 'bad path' })
      }
      req.params = params
      if (json && req.method !== 'GET') {
        const chunks = []
        for await (const chunk of req) chunks.push(chunk)
        const text = Buffer.concat(chunks).toString('utf8')
        try {
          req.body = text ? JSON.parse(text) : {}
        } catch {
          return res.status(400).json({ error: 'bad json' })
        }
      }
      return route.handler(req, res)
    }
    res.status(404).json({ error: 'no route' })
  })
  const close = closerOf(server)
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { app, url: `http://127.0.0.1:${server.address().port}`, close }
}

/** Runs the CLI as a child process (async: the mock lives in this process and must keep answering). */
export function runCli(args, { env = {}, timeoutMs = 20_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: ROOT,
      env: { ...process.env, OPENCODE_SERVER_PASSWORD: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`CLI timed out: ${args.join(' ')}\n${stdout}\n${stderr}`))
    }, timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** Starts a long-running CLI command; lines of stdout are collected as they arrive. */
export function startCli(args, { env = {} } = {}) {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, OPENCODE_SERVER_PASSWORD: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines = []
  let stderr = ''
  let pending = ''
  child.stdout.on('data', (chunk) => {
    pending += chunk
    let index
    while ((index = pending.indexOf('\n')) >= 0) {
      lines.push(pending.slice(0, index))
      pending = pending.slice(index + 1)
    }
  })
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })))
  return {
    child,
    lines,
    get stderr() {
      return stderr
    },
    exited,
    /** Stops it by its own pid (SIGTERM) and waits for the exit. */
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      return exited
    },
  }
}
