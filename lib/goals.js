// Goal creation and control for hosts, on top of the native GoalControl:
// - the objective store (writeObjective / readObjective / deleteObjective);
// - the objective routes, for Express-style apps (registerSessionGoalRoutes) or any server
//   (handleObjectiveRequest → {status, body});
// - createSessionGoalControl(options): create / send / fork with a goal, scheduled-task stamping,
//   edit / pause / resume / complete / clear, views;
// - createSessionGoal(options): the one-call form of the reference's create.js.
// Every failure is thrown as a SessionGoalError (lib/errors.js); partial success resolves with
// `warnings: [{code, message, field?}]`.
'use strict'

const { SessionGoalError, fromThrown, invalidInput, settle } = require('./errors.js')
const { referenceConnection, referenceRequest, reportWarnings, orchestrationRequest } = require('./drop-in.js')
const { isObject } = require('./objects.js')
const { GOAL_CONTROL } = require('./option-names.js')
const { wrongTypedOption, withoutNullOptions } = require('./option-types.js')

const ROUTE = '/api/goals/objective/:sessionId'
/** Largest request body the objective routes read (the reference's express.json limit). */
const MAX_BODY_BYTES = 1024 * 1024


// napi reads `null` as a wrong-typed value for optional fields; a host's JSON often has them.
function withoutNulls(request) {
  const out = {}
  for (const [key, value] of Object.entries(request)) if (value !== null && value !== undefined) out[key] = value
  return out
}

function dataDirOf(options) {
  if (!isObject(options)) return undefined
  if (typeof options.dataDir === 'string' && options.dataDir) return options.dataDir
  if (isObject(options.settings) && typeof options.settings.dataDir === 'string' && options.settings.dataDir) {
    return options.settings.dataDir
  }
  return undefined
}

/** @param {{native: any, adaptOptions: (options: any) => ({options: any} | {problem: string, field: string})}} deps */
function createGoalApi({ native, adaptOptions }) {
  // The core's session-id rule (src/validate.rs), checked before any file access.
  function checkedSessionId(sessionId) {
    if (typeof sessionId !== 'string' || !native.inputRules.isSessionId(sessionId)) throw invalidInput('invalid session id', 'sessionId')
    return sessionId
  }

  async function writeObjective(sessionId, content, options) {
    checkedSessionId(sessionId)
    if (typeof content !== 'string') throw invalidInput('objective content must be a string', 'content')
    return settle(() => native.writeObjectiveFile(sessionId, content, dataDirOf(options)))
  }

  /** The objective text, or `null` when there is none (no file, an unreadable or empty one). */
  async function readObjective(sessionId, options) {
    checkedSessionId(sessionId)
    return settle(() => native.readObjectiveFile(sessionId, dataDirOf(options)))
  }

  /** Whether a file was removed (`false` when there was none). */
  async function deleteObjective(sessionId, options) {
    checkedSessionId(sessionId)
    return settle(() => native.deleteObjectiveFile(sessionId, dataDirOf(options)))
  }

  /**
   * The objective routes without a framework.
   * @returns {Promise<{status: number, body: object}>}
   */
  async function handleObjectiveRequest({ method, sessionId, body } = {}, options = {}) {
    const verb = String(method ?? '').toUpperCase()
    const id = typeof sessionId === 'string' ? sessionId : ''
    if (verb === 'GET') {
      // The reference answers an id it cannot have stored as not found.
      const content = native.inputRules.isSessionId(id) ? await readObjective(id, options) : null
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
        if (error.statusCode >= 500) logRouteError(options, error)
        return { status: error.statusCode, body: { error: error.message } }
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
      throw invalidInput('registerSessionGoalRoutes: app must have put(), get() and delete()', 'app')
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
    if (!isObject(options)) throw invalidInput('createSessionGoalControl: options must be an object', 'options')
    const wrong = wrongTypedOption(options, GOAL_CONTROL)
    if (wrong) throw invalidInput(wrong.problem, wrong.field)
    const adapted = adaptOptions(withoutNullOptions(options, GOAL_CONTROL))
    if (adapted.problem) throw invalidInput(adapted.problem, adapted.field)
    let inner
    try {
      inner = native.createGoalControl(adapted.options)
    } catch (error) {
      throw fromThrown(error, 'invalidInput')
    }
    const method = (name) => (request) => {
      if (!isObject(request)) return Promise.reject(invalidInput('request must be an object', 'request'))
      return settle(() => inner[name](withoutNulls(request)))
    }
    // create / send / fork: `goal: true` is a goal without limits, `goal: {tokenBudget, …}` one
    // with them; the settings are converted once, natively (src/goal_settings.rs).
    const prompting = (name) => (request) => {
      if (!isObject(request)) return method(name)(request)
      const adapted = orchestrationRequest(request)
      if (adapted.problem) return Promise.reject(invalidInput(adapted.problem, adapted.field))
      const { goal, ...rest } = adapted.request
      if (goal === true) return method(name)({ ...rest, goal: {} })
      if (goal === false || goal === undefined || goal === null) return method(name)(rest)
      return method(name)({ ...rest, goal: isObject(goal) ? withoutNulls(goal) : goal })
    }
    return {
      get dataDir() {
        return inner.dataDir
      },
      createSessionGoal: method('createSessionGoal'),
      createSession: prompting('createSession'),
      sendPrompt: prompting('sendPrompt'),
      forkSession: prompting('forkSession'),
      stampScheduledGoal: method('stampScheduledGoal'),
      editGoal: method('editGoal'),
      pauseGoal: method('pauseGoal'),
      resumeGoal: method('resumeGoal'),
      completeGoal: method('completeGoal'),
      clearGoal: method('clearGoal'),
      getGoal: (sessionId, directory) => settle(() => inner.getGoal(String(sessionId ?? ''), typeof directory === 'string' ? directory : undefined)),
      listGoals: (directory) => settle(() => inner.listGoals(String(directory ?? ''))),
      history: (sessionId, limit) => settle(() => inner.history(String(sessionId ?? ''), typeof limit === 'number' ? limit : undefined)),
      explain: (sessionId, directory) => settle(() => inner.explain(String(sessionId ?? ''), typeof directory === 'string' ? directory : undefined)),
    }
  }

  /**
   * One call, like the reference's create.js: connection options and the request in one object.
   * Accepts the reference's names too (`baseUrl`, `authHeaders`, `sessionID`, `onWarning`).
   */
  async function createSessionGoal(options) {
    if (!isObject(options)) throw invalidInput('options must be an object', 'options')
    const control = createSessionGoalControl(referenceConnection(options))
    const installed = await control.createSessionGoal(withoutNulls(referenceRequest(options)))
    reportWarnings(options.onWarning, installed.warnings)
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

module.exports = { createGoalApi }
