// The intake contract: the package entry's JS prefilter forwards exactly the payload types the
// native intake reads (goal-core's intake list), and drops everything else before native code.
import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { pkg } from './helpers.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

let runtime
afterEach(async () => {
  await runtime?.stop()
  runtime = undefined
})

/** A goal runtime whose native `processPayload` only records the types it is handed. */
function recordingRuntime() {
  // Port 9 (discard): nothing is ever fetched, the runtime only needs a base URL.
  runtime = pkg.createSessionGoalRuntime({ openCode: { baseUrl: 'http://127.0.0.1:9' } })
  const forwarded = []
  runtime[Symbol.for('session-goal-runtime.native')].processPayload = (payload) => forwarded.push(payload.type)
  return forwarded
}

describe('intake contract', () => {
  it('the native list is the one in goal-core (intake.rs INTAKE_PAYLOADS), in order, without duplicates', () => {
    const types = pkg.intakePayloadTypes()
    // The list as intake.rs writes it down: what the binary reports must be exactly that.
    const source = fs.readFileSync(path.join(root, 'crates/goal-core/src/intake.rs'), 'utf8')
    const table = source.slice(source.indexOf('pub const INTAKE_PAYLOADS'), source.indexOf('];', source.indexOf('pub const INTAKE_PAYLOADS')))
    const written = [...table.matchAll(/\("([^"]+)", PayloadReading::/g)].map((m) => m[1])
    expect(written.length).toBeGreaterThan(5)
    expect(types).toEqual(written)
    expect(new Set(types).size).toBe(types.length)
    for (const type of types) expect(type).toMatch(/^[a-z0-9]+(\.[a-z0-9]+)+$/)
  })

  it('every type native code reads passes the JS prefilter', () => {
    const forwarded = recordingRuntime()
    const types = pkg.intakePayloadTypes()
    // A fresh object each time: the same object is handed to each intake group once.
    for (const type of types) runtime.processPayload({ type, properties: {} })
    expect(forwarded).toEqual(types)
  })

  it('types native code does not read never leave JS, however close they look', () => {
    const forwarded = recordingRuntime()
    const near = [
      'message.part.delta',
      'message.part.updated',
      'session.idle',
      'permission.updated',
      'question.v3.asked',
      'session.statu5',
      'Session.status',
      'session.status ',
      '',
      'x'.repeat(200),
    ]
    for (const type of near) runtime.processPayload({ type, properties: {} })
    for (const type of [undefined, null, 7, {}, ['session.status']]) runtime.processPayload({ type })
    expect(forwarded).toEqual([])
  })
})
