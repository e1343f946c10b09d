// Every option of the runtimes, of the goal control and of the event follower, given a value of
// the wrong type, is refused with the package's own sentence and the option's path as `field`,
// never napi's conversion text. The options walked are those index.d.ts declares (the binding's
// option structs, nested ones included) plus OpenChamber's flat names; what each must be is read
// from its declared type, so an option added to the binding without a kind in
// lib/option-names.js fails here.
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { afterEach, describe, expect, it } from 'vitest'
import { pkg } from './helpers.mjs'

const require = createRequire(import.meta.url)
const dropIn = require('../lib/drop-in.js')
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

/** The interfaces of index.d.ts: name → (member → its type's text). */
function interfaces() {
  const file = ts.createSourceFile('index.d.ts', fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8'), ts.ScriptTarget.Latest)
  const out = new Map()
  for (const s of file.statements) {
    if (ts.isInterfaceDeclaration(s)) out.set(s.name.text, new Map(s.members.map((m) => [m.name.text, m.type.getText(file)])))
  }
  return out
}
const declared = interfaces()

/** Every option path of interface `name` with its declared type, nested interfaces walked too. */
function optionsOf(name, prefix = '') {
  const out = []
  for (const [member, type] of declared.get(name)) {
    out.push({ path: prefix + member, type })
    if (declared.has(type)) out.push(...optionsOf(type, `${prefix}${member}.`))
  }
  return out
}

/**
 * OpenChamber's flat names beside a runtime's, the control's or the event follower's options,
 * typed as their nested twins (the small model's only where the options have one).
 */
function flatOptions(options, tunableNames) {
  const typeOf = (p) => options.find((option) => option.path === p).type
  const flat = [...dropIn.FLAT_CONNECTION].map(([name, nested]) => ({ path: name, type: typeOf(`openCode.${nested}`) }))
  if (options.some((option) => option.path === 'smallModel')) {
    flat.push({ path: 'generateSmallModelText', type: '() => unknown' }, { path: 'getSmallModelService', type: '() => unknown' })
  }
  for (const option of options) {
    const [first, ...rest] = option.path.split('.')
    if (first === 'tunables' && tunableNames.includes(rest[0])) flat.push({ path: rest.join('.'), type: option.type })
  }
  return flat
}

/** What the sentence says the value must be, from the declared type (the test's own reading). */
function mustBe({ path: optionPath, type }) {
  const name = optionPath.split('.').pop()
  if (declared.has(type)) return 'an object'
  if (type === 'number') return name.endsWith('Ms') ? 'a number of milliseconds' : 'a number'
  if (type === 'boolean') return 'true or false'
  if (type === 'string') return 'a string'
  if (type === 'Array<string>') return 'an array of strings'
  if (type === 'Record<string, string>') return 'an object of header names and string values'
  if (type.startsWith('(')) return name === 'logger' ? 'a function, or null or false for no log lines' : 'a function'
  throw new Error(`no reading of the type ${type} (${optionPath})`)
}

/** A value of the wrong type for `type`. */
function wrongValue(type) {
  if (declared.has(type)) return 'not an object'
  return { number: 'fast', boolean: 'yes', string: 5, 'Array<string>': ['ok', 5], 'Record<string, string>': { authorization: 5 } }[type] ?? 5
}

/** `base` with `value` put at `optionPath` (nested objects copied, not changed). */
function withValue(base, optionPath, value) {
  const [first, ...rest] = optionPath.split('.')
  if (rest.length === 0) return { ...base, [first]: value }
  return { ...base, [first]: withValue(base[first] ?? {}, rest.join('.'), value) }
}

const BASE = { openCode: { baseUrl: 'http://127.0.0.1:9' }, settings: { dataDir: '/tmp/unused-data-dir' }, logger: null }

const made = []
afterEach(async () => {
  while (made.length) {
    const object = made.pop()
    object.close?.()
    await object.stop?.()
  }
})

function refusal(create, options) {
  try {
    made.push(create(options))
  } catch (error) {
    return error
  }
  return null
}

const constructors = [
  ['createSessionGoalRuntime', 'SessionGoalRuntimeOptions', dropIn.GOAL_TUNABLES],
  ['createSessionAssistRuntime', 'SessionAssistRuntimeOptions', dropIn.ASSIST_TUNABLES],
  ['createSessionGoalControl', 'GoalControlOptions', []],
  ['createEventFollower', 'EventFollowerOptions', []],
]

describe('a wrong-typed option is refused in the package\'s words', () => {
  it.each(constructors)('%s: every option, nested and flat', (constructor, optionsInterface, tunableNames) => {
    const nested = optionsOf(optionsInterface)
    const walked = [...nested, ...flatOptions(nested, tunableNames)]
    for (const option of walked) {
      const error = refusal(pkg[constructor], withValue(BASE, option.path, wrongValue(option.type)))
      const said = `${constructor} with a wrong-typed ${option.path}`
      expect(error, said).toBeInstanceOf(pkg.SessionGoalError)
      expect({ code: error.code, field: error.field, message: error.message }, said).toEqual({
        code: 'invalidInput',
        field: option.path,
        message: `${option.path} must be ${mustBe(option)}`,
      })
      expect(error.message, said).not.toMatch(/napi|rust|convert/i)
      // null is "not given": never a conversion error (only a missing OpenCode location is refused).
      const unset = refusal(pkg[constructor], withValue(BASE, option.path, null))
      if (unset) expect({ code: unset.code, field: unset.field }, `${constructor} with ${option.path}: null`).toEqual({ code: 'invalidInput', field: 'openCode' })
    }
    // Each has more than a handful: the walk reached the nested objects and the flat names.
    expect(walked.length).toBeGreaterThan(tunableNames.length + 10)
  })

  it('the issue\'s example: idleQuietMs: \'fast\'', () => {
    const error = refusal(pkg.createSessionGoalRuntime, { ...BASE, idleQuietMs: 'fast' })
    expect(error).toMatchObject({ name: 'SessionGoalError', code: 'invalidInput', field: 'idleQuietMs', message: 'idleQuietMs must be a number of milliseconds' })
    expect(error.toJSON()).toEqual({ error: 'idleQuietMs must be a number of milliseconds', code: 'invalidInput', field: 'idleQuietMs' })
  })

  it('what is not given is not refused: null, undefined, logger: false, and a number the runtime cannot use (it takes the default)', () => {
    const goal = refusal(pkg.createSessionGoalRuntime, { ...BASE, idleQuietMs: null, kickoffQuietMs: undefined, tunables: { maxAutoTurns: Number.NaN }, directories: null, logger: false, emitGoalNotification: null })
    expect(goal).toBeNull()
    expect(refusal(pkg.createSessionGoalControl, { ...BASE, dataDir: null, openCode: { baseUrl: 'http://127.0.0.1:9', headers: null } })).toBeNull()
  })
})
