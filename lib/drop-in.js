// The one place OpenChamber's own names are adapted, for its drop-in entry points only:
// - the runtimes' flat connection and small model (`buildOpenCodeUrl`, `getOpenCodeAuthHeaders`,
//   `fetchTimeoutMs`; `getSmallModelService`, or the flat `generateSmallModelText` this package
//   took before), which native code takes nested in `openCode: {…}` and `smallModel: {…}`
//   (createSessionGoalRuntime, createSessionAssistRuntime, and the goal control and
//   writeSessionMetadataKey, which share their connection);
// - create.js's `{baseUrl, authHeaders, sessionID, onWarning}` (createSessionGoal);
// - the orchestration route's flat goal fields (`goal: true, goalTokenBudget, …`) on the
//   control's createSession / sendPrompt / forkSession, which mirror that route;
// - the runtimes' flat tunables (`idleQuietMs`, `kickoffQuietMs`, `maxAutoTurns` and
//   `deriveCriteria` beside the callbacks; the assist's `quietMs`), which native code takes
//   nested in `tunables: {…}`.
// Every other entry point takes the package's own nested options.
'use strict'

const { isObject } = require('./objects.js')

// OpenChamber passes `getSmallModelService()`, resolving to a service with
// `generateSmallModelText(request)`, or to nothing when there is no small model (404, silent).
// Native code takes the call itself; errors thrown by the service keep their `statusCode`.
function smallModelOfService(getService) {
  return async (request) => {
    const service = await getService()
    if (!service || typeof service.generateSmallModelText !== 'function') return { error: { statusCode: 404 } }
    return service.generateSmallModelText(request)
  }
}

// The flat connection names and where each goes in `openCode: {…}`.
const FLAT_CONNECTION = new Map([
  ['buildOpenCodeUrl', 'buildUrl'],
  ['getOpenCodeAuthHeaders', 'getHeaders'],
  ['fetchTimeoutMs', 'fetchTimeoutMs'],
])

const given = (value) => value !== undefined && value !== null

/**
 * Options with the flat connection and small-model names moved into `openCode: {…}` and
 * `smallModel: {generate}` (a flat `generateSmallModelText` wins over `getSmallModelService`, as
 * it did). Returns `{options}` or `{problem, field}` when one setting is given both ways
 * (neither silently wins). A nested value that is not an object is passed on untouched, for
 * native code to refuse.
 */
function nestedConnection(source) {
  const options = { ...source }
  for (const key of [...FLAT_CONNECTION.keys(), 'generateSmallModelText', 'getSmallModelService']) delete options[key]
  const flat = [...FLAT_CONNECTION.keys()].filter((key) => given(source[key]))
  if (flat.length > 0 && (!given(source.openCode) || isObject(source.openCode))) {
    const openCode = { ...(source.openCode ?? {}) }
    for (const key of flat) {
      const nested = FLAT_CONNECTION.get(key)
      if (given(openCode[nested])) return { problem: `pass ${key} or openCode.${nested}, not both`, field: key }
      openCode[nested] = source[key]
    }
    options.openCode = openCode
  }
  const generate =
    typeof source.generateSmallModelText === 'function'
      ? source.generateSmallModelText
      : typeof source.getSmallModelService === 'function'
        ? smallModelOfService(source.getSmallModelService)
        : undefined
  if (generate && (!given(source.smallModel) || isObject(source.smallModel))) {
    const flatName = typeof source.generateSmallModelText === 'function' ? 'generateSmallModelText' : 'getSmallModelService'
    if (given(source.smallModel?.generate)) return { problem: `pass ${flatName} or smallModel.generate, not both`, field: flatName }
    options.smallModel = { ...(source.smallModel ?? {}), generate }
  }
  return { options }
}

/** create.js's connection `{baseUrl, authHeaders}` as the package's `openCode: {baseUrl, headers}`. */
function referenceConnection(options) {
  const out = { ...options }
  delete out.baseUrl
  delete out.authHeaders
  if (!out.openCode && typeof options.baseUrl === 'string' && typeof options.buildOpenCodeUrl !== 'function') {
    out.openCode = { baseUrl: options.baseUrl, ...(isObject(options.authHeaders) ? { headers: { ...options.authHeaders } } : {}) }
  }
  return out
}

/**
 * create.js's request (`sessionID` as well as `sessionId`): the one object's fields other than
 * the connection and the warning sink, the goal settings among them.
 */
function referenceRequest(options) {
  const { sessionID, onWarning, baseUrl, authHeaders, ...request } = options
  return { ...request, sessionId: options.sessionId ?? sessionID }
}

/** Calls create.js's `onWarning(message, error)` for each warning; a throwing sink changes nothing. */
function reportWarnings(onWarning, warnings) {
  if (typeof onWarning !== 'function') return
  for (const warning of warnings) {
    try {
      onWarning(warning.message, Object.assign(new Error(warning.message), { name: 'GoalWarning', code: warning.code }))
    } catch {
      // A throwing warning sink must not fail a goal that is already installed.
    }
  }
}

// The orchestration route's flat goal fields, each `goal` + the nested setting's name
// (`goalTokenBudget` → `goal.tokenBudget`). A fixed list: a new setting needs no flat name.
const FLAT_GOAL_FIELDS = new Map(
  ['goalTokenBudget', 'goalTimeBudgetMs', 'goalActiveHours', 'goalChecks', 'goalCostBudget', 'goalCriteria'].map((flat) => [
    flat,
    flat.charAt(4).toLowerCase() + flat.slice(5),
  ]),
)

/**
 * A create/send/fork request with the route's flat goal fields moved into `goal: {…}`. Returns
 * `{request}` or `{problem, field}`: a flat field needs `goal: true` (the route's own rule,
 * "goalTokenBudget requires goal"), and one setting may not be given both ways.
 */
function orchestrationRequest(request) {
  const flat = Object.keys(request).filter((key) => FLAT_GOAL_FIELDS.has(key) && request[key] !== undefined && request[key] !== null)
  if (flat.length === 0) return { request }
  const { goal } = request
  if (goal !== true && !isObject(goal)) return { problem: `${flat[0]} requires goal`, field: flat[0] }
  const settings = isObject(goal) ? { ...goal } : {}
  const rest = { ...request }
  for (const key of FLAT_GOAL_FIELDS.keys()) delete rest[key]
  for (const key of flat) {
    const nested = FLAT_GOAL_FIELDS.get(key)
    if (settings[nested] !== undefined && settings[nested] !== null) {
      return { problem: `pass ${key} or goal.${nested}, not both`, field: key }
    }
    settings[nested] = request[key]
  }
  return { request: { ...rest, goal: settings } }
}

// Every tunable of each runtime, under the one name it has flat and in `tunables`. OpenChamber
// passes idleQuietMs, kickoffQuietMs, maxAutoTurns and deriveCriteria flat; the rest were
// documented flat before `tunables` existed, and stay accepted so that no host breaks.
const GOAL_TUNABLES = Object.freeze([
  'idleQuietMs', 'kickoffQuietMs', 'resumeKickoffMs', 'maxAutoTurns', 'messageFetchLimit', 'auditTimeoutMs',
  'maxRetryAttempts', 'maxDispatchAttempts', 'leaseMs', 'sweepIntervalMs', 'noProgressTurns', 'evidence',
  'maxProviderWaitMs', 'maxProviderWaits', 'deriveCriteria', 'reviewTimeoutMs', 'wrapUp',
])
const ASSIST_TUNABLES = Object.freeze(['quietMs', 'messageFetchLimit', 'modelTimeoutMs'])

/**
 * Runtime options with the flat tunables among `names` moved into `tunables: {…}`. Returns
 * `{options}` or `{problem, field}` when one setting is given both ways (neither silently wins).
 * A `tunables` that is not an object is passed on untouched, for native code to refuse.
 */
function nestedTunables(options, names) {
  const flat = names.filter((name) => options[name] !== undefined && options[name] !== null)
  if (flat.length === 0) return { options }
  const given = options.tunables
  if (given !== undefined && given !== null && !isObject(given)) return { options }
  const tunables = isObject(given) ? { ...given } : {}
  const rest = { ...options }
  for (const name of names) delete rest[name]
  for (const name of flat) {
    if (tunables[name] !== undefined && tunables[name] !== null) {
      return { problem: `pass ${name} or tunables.${name}, not both`, field: name }
    }
    tunables[name] = options[name]
  }
  return { options: { ...rest, tunables } }
}

module.exports = {
  nestedConnection,
  FLAT_CONNECTION,
  referenceConnection,
  referenceRequest,
  reportWarnings,
  orchestrationRequest,
  nestedTunables,
  GOAL_TUNABLES,
  ASSIST_TUNABLES,
}
