// Goal creation and control for hosts, on top of the native GoalControl:
// - the objective store (writeObjective / readObjective / deleteObjective) with errors that carry
//   statusCode, as OpenChamber's objectives.js has them;
// - the objective routes, for Express-style apps (registerSessionGoalRoutes) or any server
//   (handleObjectiveRequest → {status, body});
// - createSessionGoalControl(options): create / send / fork with a goal, scheduled-task stamping,
//   edit / pause / resume / complete / clear; failures are thrown as SessionGoalError (statusCode,
//   partial, partialAction, sessionId, directory);
// - createSessionGoal(options): the one-call form of the reference's create.js.
// The native layer returns failures as values; this file only turns them into exceptions and
// adapts host callbacks (through the package entry's adaptOptions).
'use strict'

const ROUTE = '/api/goals/objective/:sessionId'
/** Largest request body the objective routes read (the reference's express.json limit). */
const MAX_BODY_BYTES = 1024 * 1024

class SessionGoalError extends Error {
  /** @param {{error: string, statusCode: number, partial?: boolean, partialAction?: string, sessionId?: string, directory?: string}} failure */
  constructor(failure) {
    super(String(failure.error ?? 'goal operation failed'))
    this.name = 'SessionGoalError'
    this.statusCode = Number.isInteger(failure.statusCode) ? failure.statusCode : 500
    this.partial = failure.partial === true
    if (failure.partialAction) this.partialAction = failure.partialAction
    if (failure.sessionId) this.sessionId = failure.sessionId
    if (failure.directory) this.directory = failure.directory
  }

  /** The HTTP error body: {error, partial?, partialAction?, sessionId?, directory?}. */
  toJSON() {
    const body = { error: this.message }
    if (this.partial) body.partial = true
    for (const key of ['partialAction', 'sessionId', 'directory']) if (this[key]) body[key] = this[key]
    return body
  }
}

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value)

// napi reads `null` as a wrong-typed value for optional fields; a host's JSON often has them.
function withoutNulls(request) {
  const out = {}
  for (const [key, value] of Object.entries(request)) if (value !== null && value !== undefined) out[key] = value
  return out
}

// Argument conversion errors from napi (a number where a string belongs) are bad input.
function conversionError(error) {
  const message = error && typeof error.message === 'string' ? error.message : String(error)
  return new SessionGoalError({ error: `invalid request: ${message}`, statusCode: 400 })
}

async function settle(invoke) {
  let result
  try {
    result = await invoke()
  } catch (error) {
    throw conversionError(error)
  }
  if (result && result.failed === true) throw new SessionGoalError(result)
  return result
}

function dataDirOf(options) {
  if (!isObject(options)) return undefined
  if (typeof options.dataDir === 'string' && options.dataDir) return options.dataDir
  if (isObject(options.settings) && typeof options.settings.dataDir === 'string' && options.settings.dataDir) {
    return options.settings.dataDir
  }
  return undefined
}

/** @param {{native: any, adaptOptions: (options: any) => any}} deps */
function createGoalApi({ native, adaptOptions }) {
  async function writeObjective(sessionId, content, options) {
    if (typeof sessionId !== 'string') throw new SessionGoalError({ error: 'invalid session id', statusCode: 400 })
    if (typeof content !== 'string') throw new SessionGoalError({ error: 'objective content must be a string', statusCode: 400 })
    return settle(() => native.writeObjectiveFile(sessionId, content, dataDirOf(options)))
  }

  async function readObjective(sessionId, options) {
    if (typeof sessionId !== 'string') return null
    try {
      return await native.readObjectiveFile(sessionId, dataDirOf(options))
    } catch {
      return null
    }
  }

  async function deleteObjective(sessionId, options) {
    if (typeof sessionId !== 'string') return false
    try {
      return await native.deleteObjectiveFile(sessionId, dataDirOf(options))
    } catch {
      return false
    }
  }

  /**
   * The objective routes without a framework.
   * @returns {Promise<{status: number, body: object}>}
   */
  async function handleObjectiveRequest({ method, sessionId, body } = {}, options = {}) {
    const verb = String(method ?? '').toUpperCase()
    const id = typeof sessionId === 'string' ? sessionId : ''
    if (verb === 'GET') {
      const content = await readObjective(id, options)
      return content === null ? { status: 404, body: { error: 'objective not found' } } : { status: 200, body: { content } }
    }
    if (verb === 'PUT') {
      if (!isObject(body) || typeof body.content !== 'string') {
        return { status: 400, body: { error: 'body must be {"content": string}' } }
      }
      try {
        await writeObjective(id, body.content, options)
        return { status: 200, body: { ok: true } }
      } catch (error) {
        const status = error instanceof SessionGoalError ? error.statusCode : 500
        if (status >= 500) logRouteError(options, error)
        return { status, body: { error: error instanceof SessionGoalError ? error.message : 'failed to write objective' } }
      }
    }
    if (verb === 'DELETE') {
      // The core's session-id rule (src/validate.rs), not a copy of it.
      if (!native.inputRules.isSessionId(id)) return { status: 400, body: { error: 'invalid session id' } }
      await deleteObjective(id, options)
      return { status: 200, body: { ok: true } }
    }
    return { status: 405, body: { error: 'method not allowed' } }
  }

  /**
   * Registers PUT/GET/DELETE /api/goals/objective/:sessionId on an Express-style app (`app.put`,
   * `app.get`, `app.delete`; `req.params.sessionId`; `res.status().json()` or plain node:http
   * responses). Uses `req.body` when a JSON parser ran, else reads the body itself (1 MB limit).
   */
  function registerSessionGoalRoutes(app, options = {}) {
    if (!app || typeof app.put !== 'function' || typeof app.get !== 'function' || typeof app.delete !== 'function') {
      throw new TypeError('registerSessionGoalRoutes: app must have put(), get() and delete()')
    }
    const route = isObject(options) && typeof options.path === 'string' ? options.path : ROUTE
    const handle = (method) => async (req, res) => {
      let result
      try {
        const sessionId = req && req.params ? req.params.sessionId : undefined
        let body
        if (method === 'PUT') {
          const read = await requestBody(req)
          if (read.error) result = read.error
          else body = read.body
        }
        if (!result) result = await handleObjectiveRequest({ method, sessionId, body }, options)
      } catch (error) {
        logRouteError(options, error)
        result = { status: 500, body: { error: 'internal error' } }
      }
      respond(res, result)
    }
    app.put(route, handle('PUT'))
    app.get(route, handle('GET'))
    app.delete(route, handle('DELETE'))
    return app
  }

  function createSessionGoalControl(options) {
    if (!isObject(options)) throw new TypeError('createSessionGoalControl: options must be an object')
    const inner = native.createGoalControl(adaptOptions(connectionOptions(options)))
    const method = (name) => (request) => {
      if (!isObject(request)) return Promise.reject(new SessionGoalError({ error: 'request must be an object', statusCode: 400 }))
      return settle(() => inner[name](withoutNulls(request)))
    }
    return {
      get dataDir() {
        return inner.dataDir
      },
      createSessionGoal: method('createSessionGoal'),
      createSession: method('createSession'),
      sendPrompt: method('sendPrompt'),
      forkSession: method('forkSession'),
      stampScheduledGoal: method('stampScheduledGoal'),
      editGoal: method('editGoal'),
      pauseGoal: method('pauseGoal'),
      resumeGoal: method('resumeGoal'),
      completeGoal: method('completeGoal'),
      clearGoal: method('clearGoal'),
      getGoal: (sessionId, directory) => settle(() => inner.getGoal(String(sessionId ?? ''), typeof directory === 'string' ? directory : undefined)),
      listGoals: (directory) => settle(() => inner.listGoals(String(directory ?? ''))),
      history: (sessionId, limit) => inner.history(String(sessionId ?? ''), typeof limit === 'number' ? limit : undefined),
      explain: (sessionId, directory) => settle(() => inner.explain(String(sessionId ?? ''), typeof directory === 'string' ? directory : undefined)),
      native: inner,
    }
  }

  /**
   * One call, like the reference's create.js: connection options and the request in one object.
   * Accepts the reference's names too (`baseUrl`, `authHeaders`, `sessionID`, `onWarning`).
   */
  async function createSessionGoal(options) {
    if (!isObject(options)) throw new SessionGoalError({ error: 'options must be an object', statusCode: 400 })
    const control = createSessionGoalControl(options)
    const request = withoutNulls({
      sessionId: options.sessionId ?? options.sessionID,
      directory: options.directory,
      objective: options.objective,
      tokenBudget: options.tokenBudget,
      providerID: options.providerID,
      modelID: options.modelID,
    })
    const installed = await control.createSessionGoal(request)
    if (typeof options.onWarning === 'function') {
      for (const warning of installed.warnings) {
        try {
          // The reference calls onWarning(message, error); the error carries the cause.
          options.onWarning(warning, warningError(warning))
        } catch {
          // A throwing warning sink must not fail a goal that is already installed.
        }
      }
    }
    return installed
  }

  return {
    SessionGoalError,
    writeObjective,
    readObjective,
    deleteObjective,
    handleObjectiveRequest,
    registerSessionGoalRoutes,
    createSessionGoalControl,
    createSessionGoal,
  }
}

// A warning such as "objective file not written (<cause>); …" as an Error whose message is the
// cause in parentheses (the whole warning when there is none).
function warningError(warning) {
  const cause = /\(([^()]+)\)/.exec(warning)
  const error = new Error(cause ? cause[1] : warning)
  error.name = 'GoalWarning'
  return error
}

// The reference's create.js took {baseUrl, authHeaders}; the runtime takes openCode: {baseUrl, headers}.
function connectionOptions(options) {
  const out = withoutNulls(options)
  if (!out.openCode && typeof options.baseUrl === 'string' && typeof options.buildOpenCodeUrl !== 'function') {
    out.openCode = { baseUrl: options.baseUrl, headers: isObject(options.authHeaders) ? { ...options.authHeaders } : undefined }
  }
  if (out.openCode && isObject(out.openCode) && !isObject(out.openCode.headers)) {
    out.openCode = { ...out.openCode }
    delete out.openCode.headers
  }
  return out
}

function logRouteError(options, error) {
  const message = `[session-goal] objective route failed: ${error && error.message ? error.message : 'unknown error'}`
  if (isObject(options) && typeof options.logger === 'function') {
    try {
      options.logger('warn', message)
    } catch {
      // ignore a throwing logger
    }
  } else {
    console.warn(message)
  }
}

function requestBody(req) {
  if (req && req.body !== undefined) return Promise.resolve({ body: req.body })
  if (!req || typeof req.on !== 'function') return Promise.resolve({ body: undefined })
  return new Promise((resolve) => {
    const chunks = []
    let size = 0
    let done = false
    const finish = (value) => {
      if (done) return
      done = true
      resolve(value)
    }
    req.on('data', (chunk) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        finish({ error: { status: 413, body: { error: 'request body too large' } } })
        req.resume()
        return
      }
      if (!done) chunks.push(chunk)
    })
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      if (!text.trim()) return finish({ body: undefined })
      try {
        finish({ body: JSON.parse(text) })
      } catch {
        finish({ error: { status: 400, body: { error: 'body must be JSON' } } })
      }
    })
    req.on('error', () => finish({ error: { status: 400, body: { error: 'request body unreadable' } } }))
  })
}

function respond(res, { status, body }) {
  if (typeof res.status === 'function' && typeof res.json === 'function') {
    res.status(status).json(body)
    return
  }
  const text = JSON.stringify(body)
  res.statusCode = status
  if (typeof res.setHeader === 'function') {
    res.setHeader('content-type', 'application/json; charset=utf-8')
    res.setHeader('content-length', Buffer.byteLength(text))
  }
  res.end(text)
}

module.exports = { createGoalApi, SessionGoalError, OBJECTIVE_ROUTE: ROUTE }
