// The option names each runtime (and the goal control, and the event follower) knows, top level and inside its nested
// objects, each with what its value must be (a kind of lib/option-types.js, or the shape of the
// options object it holds). A name a runtime does not know (a typo such as `idleQuietMS`, or a
// newer host's option) is named in one warn line of the runtime's logger and ignored, never a
// reason to stop; a known name whose value has the wrong type is refused (runtime.js). The
// native names here are those of index.d.ts (generated from the binding's option structs), and
// __test__/unknown-options and __test__/option-types check names and kinds against it, so neither
// can drift. OpenChamber's flat names (lib/drop-in.js) are known too.
'use strict'

const { FLAT_CONNECTION, GOAL_TUNABLES, ASSIST_TUNABLES } = require('./drop-in.js')
const { isObject } = require('./objects.js')
const { MILLISECONDS, NUMBER, SWITCH, TEXT, TEXTS, HEADERS, CALLBACK, LOGGER, isKind } = require('./option-types.js')

const OPEN_CODE = Object.freeze({ baseUrl: TEXT, headers: HEADERS, buildUrl: CALLBACK, getHeaders: CALLBACK, fetchTimeoutMs: MILLISECONDS })
const SMALL_MODEL = Object.freeze({ generate: CALLBACK, providerID: TEXT, modelID: TEXT })
const SETTINGS = Object.freeze({ dataDir: TEXT })
const sizes = (list) => Object.freeze(Object.fromEntries(list.map((name) => [name, NUMBER])))
const EVIDENCE = sizes(['maxToolCalls', 'maxCommandChars', 'outputTailLines', 'outputTailChars', 'maxFiles', 'maxTodos', 'maxDigestChars', 'historyMaxRecords'])

// A tunable is a number of milliseconds when its name says so (`…Ms`), else a count; the goal
// runtime's others are switches and the evidence sizes.
const tunableKind = (name) => (name === 'evidence' ? EVIDENCE : SWITCHES.has(name) ? SWITCH : name.endsWith('Ms') ? MILLISECONDS : NUMBER)
const SWITCHES = new Set(['deriveCriteria', 'wrapUp'])
const tunables = (list) => Object.freeze(Object.fromEntries(list.map((name) => [name, tunableKind(name)])))
const GOAL_TUNABLES_SHAPE = tunables(GOAL_TUNABLES)
const ASSIST_TUNABLES_SHAPE = tunables(ASSIST_TUNABLES)

// OpenChamber's flat connection (each the kind of its nested name) and small model.
const FLAT = Object.freeze({
  ...Object.fromEntries([...FLAT_CONNECTION].map(([flat, nested]) => [flat, OPEN_CODE[nested]])),
  generateSmallModelText: CALLBACK,
  getSmallModelService: CALLBACK,
})

const GOAL_RUNTIME = Object.freeze({
  openCode: OPEN_CODE,
  settings: SETTINGS,
  smallModel: SMALL_MODEL,
  emitGoalNotification: CALLBACK,
  logger: LOGGER,
  tunables: GOAL_TUNABLES_SHAPE,
  directories: TEXTS,
  recoverOnStart: SWITCH,
  ...FLAT,
  ...GOAL_TUNABLES_SHAPE,
})

const ASSIST_RUNTIME = Object.freeze({
  openCode: OPEN_CODE,
  settings: SETTINGS,
  smallModel: SMALL_MODEL,
  logger: LOGGER,
  tunables: ASSIST_TUNABLES_SHAPE,
  ...FLAT,
  ...ASSIST_TUNABLES_SHAPE,
})

// createSessionGoalControl's options (only their types are checked: the control names no
// unknown option).
const GOAL_CONTROL = Object.freeze({
  openCode: OPEN_CODE,
  settings: SETTINGS,
  dataDir: TEXT,
  smallModel: SMALL_MODEL,
  smallModelTimeoutMs: MILLISECONDS,
  landingTimeoutMs: MILLISECONDS,
  commandTimeoutMs: MILLISECONDS,
  ...FLAT,
})

// createEventFollower's options (only their types are checked, as for the control): the
// connection, nested or with OpenChamber's flat names, what the host hears, the reconnects.
const EVENT_FOLLOWER = Object.freeze({
  openCode: OPEN_CODE,
  onStatus: CALLBACK,
  onPayload: CALLBACK,
  deliver: SWITCH,
  firstRetryMs: MILLISECONDS,
  answerTimeoutMs: MILLISECONDS,
  ...Object.fromEntries([...FLAT_CONNECTION].map(([flat, nested]) => [flat, OPEN_CODE[nested]])),
})

/** The names in `options` that `shape` does not know, as paths (`tunables.idleQuietMS`). */
function unknownOptionNames(options, shape, prefix = '') {
  if (!isObject(options)) return []
  const unknown = []
  for (const name of Object.keys(options)) {
    if (!Object.hasOwn(shape, name)) unknown.push(prefix + name)
    else if (!isKind(shape[name])) unknown.push(...unknownOptionNames(options[name], shape[name], `${prefix}${name}.`))
  }
  return unknown
}

/** A known name that differs from `path`'s last name only in case (`idleQuietMS` → `idleQuietMs`). */
function likelyMeant(path, shape) {
  const parts = path.split('.')
  let level = shape
  for (const part of parts.slice(0, -1)) level = level[part]
  const last = parts[parts.length - 1].toLowerCase()
  return Object.keys(level).find((name) => name.toLowerCase() === last)
}

/**
 * One line naming the unknown options and, where a known name differs only in case, that name;
 * `null` when every name is known.
 */
function unknownOptionsLine(options, shape) {
  const unknown = unknownOptionNames(options, shape)
  if (unknown.length === 0) return null
  const described = unknown.map((path) => {
    const meant = likelyMeant(path, shape)
    return meant ? `${path} (did you mean ${meant}?)` : path
  })
  return `[session-goal] unknown option${unknown.length > 1 ? 's' : ''} ignored: ${described.join(', ')}`
}

module.exports = { GOAL_RUNTIME, ASSIST_RUNTIME, GOAL_CONTROL, EVENT_FOLLOWER, OPEN_CODE, SMALL_MODEL, SETTINGS, EVIDENCE, unknownOptionsLine }
