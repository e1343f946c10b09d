// The feature ledger (scripts/features.mjs, docs/features.md): current for this tree, and the check
// fails on a tree whose table is stale, whose file belongs to no feature, or to two.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { checkLedger, ledger } from '../scripts/features.mjs'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
let made = []
afterEach(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true })
  made = []
})

/** A tree of `files` (path → text) in a temp directory, with an empty docs/. */
function tree(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'feature-ledger-'))
  made.push(dir)
  fs.mkdirSync(path.join(dir, 'docs'))
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
    fs.writeFileSync(path.join(dir, file), text)
  }
  return dir
}

const core = 'crates/goal-core/src'
const FEATURES = [
  { name: 'core', about: 'the core', files: [`${core}/lib.rs`] },
  { name: 'binding', about: 'the binding', files: ['src/'] },
]

describe('the feature ledger', () => {
  it('is current for this tree, every source file in exactly one feature', () => {
    const { ok, out } = checkLedger(root)
    expect(out.join('\n')).not.toMatch(/STALE|IN NO FEATURE|IN TWO FEATURES|NAMES NO SOURCE FILE/)
    expect(ok).toBe(true)
  })

  it('counts a Rust file up to its tests block, and fails once the table is stale', () => {
    const lib = '#[cfg(test)]\nfn helper() {}\nfn real() {}\n\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n'
    const dir = tree({ [`${core}/lib.rs`]: lib, [`${core}/tests.rs`]: 'fn t() {}\n', 'src/lib.rs': 'a\nb\n' })
    const figures = ledger(dir, FEATURES)
    // The #[cfg(test)] helper counts; the tests block and tests.rs do not.
    expect(figures.rows.map((row) => [row.name, row.files, row.lines])).toEqual([
      ['core', 1, 4],
      ['binding', 1, 2],
    ])
    expect(checkLedger(dir, { write: true, features: FEATURES }).ok).toBe(true)
    expect(checkLedger(dir, { features: FEATURES }).ok).toBe(true)
    fs.appendFileSync(path.join(dir, 'src/lib.rs'), 'c\n')
    const stale = checkLedger(dir, { features: FEATURES })
    expect(stale.ok).toBe(false)
    expect(stale.out.join('\n')).toMatch(/docs\/features.md IS STALE/)
  })

  it('names a file of no feature, a file of two, and an entry that names no file', () => {
    const dir = tree({ [`${core}/lib.rs`]: 'x\n', [`${core}/new.rs`]: 'y\n', 'src/lib.rs': 'z\n' })
    const features = [...FEATURES, { name: 'again', about: '', files: ['src/lib.rs', 'src/gone.rs'] }]
    const { ok, out } = checkLedger(dir, { write: true, features })
    expect(ok).toBe(false)
    const text = out.join('\n')
    expect(text).toMatch(`IN NO FEATURE: ${core}/new.rs`)
    expect(text).toMatch('IN TWO FEATURES: src/lib.rs (binding, again)')
    expect(text).toMatch('NAMES NO SOURCE FILE: again: src/gone.rs')
  })
})
