// Writes one generated section of RELIABILITY.md (used by `--write` of scripts/chaos-real.mjs and
// scripts/soak.mjs): the text between `<!-- NAME:begin -->` and `<!-- NAME:end -->` is replaced,
// and a missing section is appended under its heading. Like scripts/fault-suite.mjs --write, the
// rows may only name a committed tree: the work tree must be clean.
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

/** The short commit the run measured; throws when the work tree has changes. */
export function measuredCommit() {
  const git = (...args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim()
  if (git('status', '--porcelain')) throw new Error('--write needs a clean work tree: commit first')
  return git('rev-parse', '--short', 'HEAD')
}

/** Puts `body` into the section `name` of RELIABILITY.md (appended under `heading` when absent). */
export function writeReliabilitySection(name, heading, body) {
  const file = path.join(ROOT, 'RELIABILITY.md')
  const begin = `<!-- ${name}:begin -->`
  const end = `<!-- ${name}:end -->`
  let doc = fs.readFileSync(file, 'utf8')
  const start = doc.indexOf(begin)
  const stop = doc.indexOf(end)
  if (start >= 0 && stop > start) doc = doc.slice(0, start) + [begin, body, end].join('\n') + doc.slice(stop + end.length)
  else doc = `${doc.replace(/\n*$/, '')}\n\n## ${heading}\n\n${[begin, body, end].join('\n')}\n`
  fs.writeFileSync(file, doc)
  console.log(`RELIABILITY.md updated (${name})`)
}
