// docs/defaults.md is the one place every default is stated: each option row must equal what
// goalRuntimeDefaults() reports (the core's own definition), and each bounded-silence row the
// constant it names in crates/goal-core/src/sched/silence.rs (or goal/decide/start.rs).
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { pkg } from './helpers.mjs'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const doc = fs.readFileSync(path.join(root, 'docs', 'defaults.md'), 'utf8')
// The watch's constants, and the look-agains of a session answering 404 (the decision's).
const silence = ['sched/silence.rs', 'goal/decide/start.rs']
  .map((file) => fs.readFileSync(path.join(root, 'crates', 'goal-core', 'src', file), 'utf8'))
  .join('\n')

/** The rows of the table under `heading`: [first cell, second cell] without backticks. */
function rows(heading) {
  const section = doc.split(/^## /m).find((part) => part.startsWith(heading))
  expect(section, `docs/defaults.md has a section "${heading}"`).toBeTruthy()
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => line.split('|').slice(1, 3).map((cell) => cell.trim().replaceAll('`', '')))
}

/** A Rust constant of silence.rs in its documented unit: `Duration::from_secs(n)` → "n s". */
function constant(name) {
  const match = silence.match(new RegExp(`pub const ${name}: [^=]+= ([^;]+);`))
  expect(match, `sched/silence.rs defines ${name}`).toBeTruthy()
  const value = match[1]
  const seconds = value.match(/Duration::from_secs\((\d+)\)/)
  if (seconds) return `${seconds[1]} s`
  return value.trim()
}

describe('docs/defaults.md', () => {
  it('states every option default as the core defines it, and no option twice', () => {
    const defaults = pkg.goalRuntimeDefaults()
    const table = rows('Options')
    expect(new Set(table.map(([name]) => name)).size).toBe(table.length)
    for (const [name, value] of table) {
      expect(name in defaults, `goalRuntimeDefaults() reports ${name}`).toBe(true)
      expect(String(defaults[name]), name).toBe(value)
    }
    for (const name of Object.keys(defaults)) {
      expect(table.some(([row]) => row === name), `docs/defaults.md states ${name}`).toBe(true)
    }
  })

  it('states the bounded-silence constants as the core defines them', () => {
    const table = rows('Bounded silence')
    expect(table.length).toBeGreaterThanOrEqual(7)
    for (const [name, value] of table) expect(constant(name), name).toBe(value)
  })

  it('is not contradicted: no other document calls the sweep anything but five minutes', () => {
    const docs = ['README.md', 'INTEGRATION.md', ...fs.readdirSync(path.join(root, 'docs')).map((f) => path.join('docs', f))]
    for (const file of docs.filter((f) => f.endsWith('.md'))) {
      const text = fs.readFileSync(path.join(root, file), 'utf8')
      expect(text, file).not.toMatch(/sweep[^.\n]{0,40}\b(10|20|60) s by default/i)
      expect(text, file).not.toMatch(/one sweep interval \((?!5 min)[^)]*\)/i)
    }
  })
})
