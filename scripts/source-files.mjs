// What the structure checks call a source file, which of them are tests, and how the lines of one
// are counted outside its tests: one reading for scripts/module-graph.mjs (the file-size limit,
// the layout check) and scripts/features.mjs (the feature ledger), so both count alike.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

/** Folders whose files are source, and the source files at the repository's root. */
export const SOURCE_DIRS = ['crates/goal-core/src', 'crates/goal-core/examples', 'src', 'crates/goal-sim/src', 'lib', 'bin', 'scripts', 'examples', 'bench']
const SOURCE_ROOT_FILES = ['runtime.js', 'runtime.mjs', 'index.js', 'build.rs']
/** Written by a tool (`npx napi build`), not by hand: named in the layout, not measured. */
export const GENERATED_FILES = ['index.js']
const SOURCE_EXTENSIONS = /\.(rs|js|mjs|cjs|cts|mts|sh|c|html|css)$/
const SKIPPED_DIRS = new Set(['node_modules', 'target', 'gen', 'icons'])

/**
 * Test code: the core's tests.rs and *_tests.rs files, test folders, and the fault suite (a test
 * suite run by `npm test`, its classes and harness included).
 */
export const isTestFile = (path) =>
  /(^|\/)(tests?\.rs|[^/]*_tests\.rs)$/.test(path) || /(^|\/)(tests|__test__)\//.test(path) || path.startsWith('scripts/faults/')

function filesUnder(repo, dir) {
  const out = []
  for (const name of readdirSync(join(repo, dir)).sort()) {
    const path = `${dir}/${name}`
    if (statSync(join(repo, path)).isDirectory()) {
      if (!SKIPPED_DIRS.has(name)) out.push(...filesUnder(repo, path))
    } else if (SOURCE_EXTENSIONS.test(name)) out.push(path)
  }
  return out
}

/** Every source file of the repository at `repo`, tests included, by its path from the root. */
export function sourceFiles(repo) {
  const exists = (path) => existsSync(join(repo, path))
  return [...SOURCE_DIRS.filter(exists).flatMap((dir) => filesUnder(repo, dir)), ...SOURCE_ROOT_FILES.filter(exists)]
}

/** Source with comments, string and char literals blanked (newlines kept, so line numbers hold). */
export function strip(src) {
  let out = ''
  let i = 0
  const n = src.length
  while (i < n) {
    const c = src[i]
    const next = src[i + 1]
    if (c === '/' && next === '/') {
      while (i < n && src[i] !== '\n') i++
    } else if (c === '/' && next === '*') {
      let depth = 1
      i += 2
      while (i < n && depth > 0) {
        if (src[i] === '/' && src[i + 1] === '*') (depth++, (i += 2))
        else if (src[i] === '*' && src[i + 1] === '/') (depth--, (i += 2))
        else (out += src[i] === '\n' ? '\n' : ''), i++
      }
    } else if (c === 'r' && (next === '"' || next === '#') && !/[A-Za-z0-9_]/.test((src[i - 1] === 'b' ? src[i - 2] : src[i - 1]) ?? '')) {
      let j = i + 1
      let hashes = 0
      while (src[j] === '#') (hashes++, j++)
      if (src[j] !== '"') {
        out += c
        i++
        continue
      }
      const close = '"' + '#'.repeat(hashes)
      const end = src.indexOf(close, j + 1)
      const body = src.slice(i, end + close.length)
      out += '""' + '\n'.repeat((body.match(/\n/g) ?? []).length)
      i = end + close.length
    } else if (c === '"') {
      let j = i + 1
      let lines = 0
      while (j < n && src[j] !== '"') {
        if (src[j] === '\\') j++
        if (src[j] === '\n') lines++
        j++
      }
      out += '""' + '\n'.repeat(lines)
      i = j + 1
    } else if (c === "'") {
      // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a): only literals are blanked.
      const m = /^'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'/u.exec(src.slice(i, i + 12))
      if (m) {
        out += "' '"
        i += m[0].length
      } else {
        out += c
        i++
      }
    } else {
      out += c
      i++
    }
  }
  return out
}

/** Index just past the block whose `{` is at `open`. */
export function blockEnd(text, open) {
  let depth = 0
  for (let i = open; i < text.length; i++) {
    if (text[i] === '{') depth++
    else if (text[i] === '}' && --depth === 0) return i + 1
  }
  return text.length
}

/**
 * Lines of a file outside its tests: a Rust file up to its `#[cfg(test)] mod tests { … }` block
 * (other `#[cfg(test)]` items before it count: they are compiled code the file holds), any other
 * file whole. Comments and blank lines count.
 */
export function linesOutsideTests(repo, path) {
  const text = readFileSync(join(repo, path), 'utf8')
  const total = text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
  if (!path.endsWith('.rs')) return total
  // Stripped text keeps every newline, so a line number in it is the line number in the file.
  const code = strip(text)
  const tests = /^#\[cfg\(test\)\]\s*mod\s+tests\s*\{/m.exec(code)
  return tests ? code.slice(0, tests.index).split('\n').length - 1 : total
}
