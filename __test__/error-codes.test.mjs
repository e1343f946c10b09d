// The error and warning codes are one closed list on both sides: the core's kinds (ErrorKind::ALL,
// WarningCode::ALL, handed over by the binding), the codes lib/errors.js accepts, and the tables
// of docs/errors.md. A kind added on one side only fails here, instead of reaching JavaScript as
// an unknown code.
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const require = createRequire(import.meta.url)
const native = require('../lib/load-native.js').loadNative()
const { ERROR_CODES, SessionGoalError } = require('../lib/errors.js')
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

/** The codes in the first column of the table under `heading` in docs/errors.md. */
function documentedCodes(heading) {
  const page = fs.readFileSync(path.join(root, 'docs', 'errors.md'), 'utf8')
  const section = page.split(`## ${heading}`)[1].split('\n## ')[0]
  return [...section.matchAll(/^\| `(\w+)` \|/gm)].map((match) => match[1])
}

describe('error and warning codes', () => {
  it("the core's error kinds are exactly lib/errors.js's codes and the documented ones, in order", () => {
    const kinds = native.errorCodes()
    expect(kinds.length).toBeGreaterThan(0)
    expect(Object.keys(ERROR_CODES)).toEqual(kinds)
    expect(documentedCodes('Error codes')).toEqual(kinds)
    for (const code of kinds) expect(new SessionGoalError({ code, message: 'x' }).code).toBe(code)
  })

  it("the core's warning codes are exactly the documented ones", () => {
    const codes = native.warningCodes()
    expect(codes.length).toBeGreaterThan(0)
    expect(documentedCodes('Warning codes')).toEqual(codes)
  })
})
