// The option names each runtime knows, top level and inside its nested objects, so that a name
// it does not know (a typo such as `idleQuietMS`, or a newer host's option) is named in one warn
// line of the runtime's logger and ignored, never a reason to stop. The native names here are
// those of index.d.ts (generated from the binding's option structs); __test__/unknown-options
// checks that the two agree, so neither can drift. OpenChamber's flat names (lib/drop-in.js)
// are known too.
'use strict'

const { FLAT_CONNECTION, GOAL_TUNABLES, ASSIST_TUNABLES } = require('./drop-in.js')
const { isObject } = require('./objects.js')

// A shape maps each known name to the shape of its value when that is an options object of its
// own, else to null.
const names = (list, shapeOf = () => null) => Object.freeze(Object.fromEntries(list.map((name) => [name, shapeOf(name)])))

const OPEN_CODE = names(['baseUrl', 'headers', 'buildUrl', 'getHeaders', 'fetchTimeoutMs'])
const SMALL_MODEL = names(['generate', 'providerID', 'modelID'])
const SETTINGS = names(['dataDir'])
const EVIDENCE = names(['maxToolCalls', 'maxCommandChars', 'outputTailLines', 'outputTailChars', 'maxFiles', 'maxTodos', 'maxDigestChars', 'historyMaxRecords'])
const GOAL_TUNABLES_SHAPE = names(GOAL_TUNABLES, (name) => (name === 'evidence' ? EVIDENCE : null))
const ASSIST_TUNABLES_SHAPE = names(ASSIST_TUNABLES)
const FLAT_SMALL_MODEL = ['generateSmallModelText', 'getSmallModelService']

const GOAL_RUNTIME = Object.freeze({
  openCode: OPEN_CODE,
  settings: SETTINGS,
  smallModel: SMALL_MODEL,
  emitGoalNotification: null,
  logger: null,
  tunables: GOAL_TUNABLES_SHAPE,
  directories: null,
  recoverOnStart: null,
  ...names([...FLAT_CONNECTION.keys(), ...FLAT_SMALL_MODEL]),
  ...GOAL_TUNABLES_SHAPE,
})

const ASSIST_RUNTIME = Object.freeze({
  openCode: OPEN_CODE,
  settings: SETTINGS,
  smallModel: SMALL_MODEL,
  logger: null,
  tunables: ASSIST_TUNABLES_SHAPE,
  ...names([...FLAT_CONNECTION.keys(), ...FLAT_SMALL_MODEL]),
  ...ASSIST_TUNABLES_SHAPE,
})


/** The names in `options` that `shape` does not know, as paths (`tunables.idleQuietMS`). */
function unknownOptionNames(options, shape, prefix = '') {
  if (!isObject(options)) return []
  const unknown = []
  for (const name of Object.keys(options)) {
    if (!Object.hasOwn(shape, name)) unknown.push(prefix + name)
    else if (shape[name] !== null) unknown.push(...unknownOptionNames(options[name], shape[name], `${prefix}${name}.`))
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

module.exports = { GOAL_RUNTIME, ASSIST_RUNTIME, OPEN_CODE, SMALL_MODEL, SETTINGS, EVIDENCE, unknownOptionsLine }
