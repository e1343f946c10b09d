// What each option's value must be, so that a value of the wrong type is refused in the
// package's own words, naming the option as the host wrote it ("idleQuietMs must be a number of
// milliseconds", field `idleQuietMs`), before native code sees it: napi's conversion error
// names Rust types and the nested object the package moved a flat option into.
//
// A kind says what a value must be; lib/option-names.js gives every option name its kind, or the
// shape of the options object it holds. A value that is null or undefined is "not given" (and a
// null is taken out before native code sees it), and a number of the right type that is
// unusable (NaN, negative) is left to the runtime, which takes the default for it.
'use strict'

const { isObject } = require('./objects.js')

const kinds = new Set()

/** A kind of value: the words that finish "<option> must be …", and the test of a value. */
function kind(description, accepts) {
  const made = Object.freeze({ description, accepts })
  kinds.add(made)
  return made
}

const MILLISECONDS = kind('a number of milliseconds', (value) => typeof value === 'number')
const NUMBER = kind('a number', (value) => typeof value === 'number')
const SWITCH = kind('true or false', (value) => typeof value === 'boolean')
const TEXT = kind('a string', (value) => typeof value === 'string')
const TEXTS = kind('an array of strings', (value) => Array.isArray(value) && value.every((item) => typeof item === 'string'))
const HEADERS = kind('an object of header names and string values', (value) => isObject(value) && Object.values(value).every((item) => typeof item === 'string'))
const CALLBACK = kind('a function', (value) => typeof value === 'function')
// `logger: false`, like `logger: null`, asks for no log lines at all (lib/operator-console.js).
const LOGGER = kind('a function, or null or false for no log lines', (value) => typeof value === 'function' || value === false)

/** Whether a shape's entry is a kind (else it is the shape of a nested options object). */
const isKind = (entry) => kinds.has(entry)

/**
 * The first option of `options` (walked by `shape`, nested objects included) whose value is of
 * the wrong type, as `{problem, field}` with `field` its path (`tunables.idleQuietMs`); `null`
 * when there is none. Names the shape does not know are not checked (they are reported apart, as
 * unknown).
 */
function wrongTypedOption(options, shape, prefix = '') {
  if (!isObject(options)) return null
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined || value === null || !Object.hasOwn(shape, name)) continue
    const entry = shape[name]
    const field = prefix + name
    if (isKind(entry)) {
      if (!entry.accepts(value)) return { problem: `${field} must be ${entry.description}`, field }
    } else if (!isObject(value)) {
      return { problem: `${field} must be an object`, field }
    } else {
      const nested = wrongTypedOption(value, entry, `${field}.`)
      if (nested) return nested
    }
  }
  return null
}

/**
 * `options` without the known options that are null, at every level of `shape`: null is "not
 * given" for the host, while native code would refuse it as a value of the wrong type. Objects
 * are copied, never changed.
 */
function withoutNullOptions(options, shape) {
  if (!isObject(options)) return options
  const out = {}
  for (const [name, value] of Object.entries(options)) {
    const entry = Object.hasOwn(shape, name) ? shape[name] : undefined
    if (value === null && entry !== undefined) continue
    out[name] = entry !== undefined && !isKind(entry) ? withoutNullOptions(value, entry) : value
  }
  return out
}

module.exports = { MILLISECONDS, NUMBER, SWITCH, TEXT, TEXTS, HEADERS, CALLBACK, LOGGER, isKind, wrongTypedOption, withoutNullOptions }
