#!/usr/bin/env node
// Structure checks for crates/goal-core and the binding (src/), run by scripts/test-all.sh and
// .ci/run:
// - the import graph between the core's top-level modules, and between its files (from
//   `crate::…` and `super::…` paths in non-test code, each followed to the file it names), must
//   have no cycle;
// - the import graphs of the binding, between its top-level modules (a folder is one) and between
//   its files, must have no cycle (the crate root, lib.rs, declares every module and is left
//   out, as the core's root is);
// - goal/'s folders import only downward, in the order of GOAL_FOLDERS (decide ← gather ←
//   act): no two import each other both ways and none imports a folder above it;
// - the decision (goal/decide/) is pure: it imports no I/O module, nothing of tokio, and has no
//   `async fn`; at most two files under goal/ import the guarded writer (io::writer);
// - modules listed as pure must not depend on an I/O module;
// - no function outside tests, in goal-core or in the binding (src/), may be longer than 100
//   lines;
// - no source file outside tests may be longer than 600 lines;
// - every source file must be named in docs/layout.md;
// - every source file must belong to one feature of the ledger, and docs/features.md must be
//   current (scripts/features.mjs).
// Usage: node scripts/module-graph.mjs [--graph] [--longest N] [--allow-long] [--no-fail] [--write]
//   --graph     print the import graphs (top-level modules, goal/'s folders, the binding)
//   --longest N print the N longest functions
//   --allow-long  report functions over the limit without failing
//   --write     write docs/features.md afresh
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { checkLedger } from './features.mjs'
import { GENERATED_FILES, blockEnd, isTestFile, linesOutsideTests, sourceFiles, strip } from './source-files.mjs'

const repo = process.env.MODULE_GRAPH_REPO ?? join(fileURLToPath(new URL('.', import.meta.url)), '..')
const root = join(repo, 'crates', 'goal-core', 'src')
const args = process.argv.slice(2)
const flag = (name) => args.includes(name)
const longestCount = args.includes('--longest') ? Number(args[args.indexOf('--longest') + 1]) || 15 : 0
const MAX_FUNCTION_LINES = 100
const MAX_FILE_LINES = 600

// goal/'s folders in the order a tick uses them, lowest first: a folder may import only the ones
// before it (the decision imports neither reads nor effects; the executor may use the reads'
// memory; the tick's driver, a file above them all, uses every one).
const GOAL_FOLDERS = ['decide', 'gather', 'act']
// Most files under goal/ that may import the guarded writer: the executor, and the echo of a
// watched write (`goal/act/mod.rs`, `goal/act/echo.rs`).
const MAX_WRITER_IMPORTERS = 2

// Modules (a top-level module, or `top::file`) whose code must stay free of I/O: they may not
// import any module listed in IO. A top-level name covers every file under it.
const PURE = ['wire', 'config', 'error', 'record', 'text', 'time', 'evidence', 'intake', 'goal::decide', 'sched::silence', 'sched::outcome',
  'assist::content', 'small_model::catalog', 'small_model::wire', 'io::prompt_outcome']
// Modules that perform I/O (network, files, tasks, locks and wake-ups).
const IO = ['io', 'sched', 'runtime', 'embed', 'control', 'small_model', 'goal::tick', 'goal::context', 'goal::gather',
  'goal::act', 'assist::runtime']
const within = (list, path) => list.some((m) => path === m || path.startsWith(`${m}::`))
const isPure = (path) => within(PURE, path)
const isIo = (path) => within(IO, path) && !isPure(path)

function walk(dir) {
  const out = []
  for (const name of readdirSync(dir)) {
    const full = join(dir, name)
    if (statSync(full).isDirectory()) out.push(...walk(full))
    else if (name.endsWith('.rs')) out.push(full)
  }
  return out
}

/** Module path of a file under `base`: a/b.rs → [a, b]; a/mod.rs → [a]; lib.rs → []. */
function modulePathUnder(base, file) {
  const parts = relative(base, file).split(sep)
  const last = parts.pop().replace(/\.rs$/, '')
  if (last !== 'mod' && last !== 'lib') parts.push(last)
  return parts
}
const modulePath = (file) => modulePathUnder(root, file)

/** Code with `#[cfg(test)]` items blanked (newlines kept). */
function withoutTests(text) {
  let out = text
  const re = /#\[cfg\(test\)\]\s*(pub\s+)?mod\s+\w+\s*(;|\{)/g
  let m
  while ((m = re.exec(out))) {
    if (m[2] === ';') continue
    const open = m.index + m[0].length - 1
    const end = blockEnd(out, open)
    const blank = out.slice(m.index, end).replace(/[^\n]/g, ' ')
    out = out.slice(0, m.index) + blank + out.slice(end)
  }
  return out
}

/** Expands a `use` tree (`crate::{a::{B, C}, d}`) into its leaf paths. */
function expandUse(tree) {
  tree = tree.replace(/\s+/g, '')
  const brace = tree.indexOf('{')
  if (brace < 0) return [tree.replace(/\bas\w+$/, '')]
  const prefix = tree.slice(0, brace)
  const inner = tree.slice(brace + 1, tree.lastIndexOf('}'))
  const parts = []
  let depth = 0
  let start = 0
  for (let i = 0; i < inner.length; i++) {
    if (inner[i] === '{') depth++
    else if (inner[i] === '}') depth--
    else if (inner[i] === ',' && depth === 0) (parts.push(inner.slice(start, i)), (start = i + 1))
  }
  parts.push(inner.slice(start))
  return parts.filter(Boolean).flatMap((p) => expandUse(p).map((leaf) => prefix + leaf))
}

/** Resolves a path written in module `self` to an absolute module path (first segments). */
function resolve(path, self, isModRoot) {
  const segs = path.split('::').filter(Boolean)
  if (segs[0] === 'crate') return segs.slice(1)
  if (segs[0] === 'self') return [...self, ...segs.slice(1)]
  if (segs[0] === 'super') {
    // In a.rs (module a) `super` is the parent; the same holds for a/mod.rs.
    let base = [...self]
    while (segs[0] === 'super') (segs.shift(), base.pop())
    return [...base, ...segs]
  }
  return null
}

const bindingRoot = join(repo, 'src')
/** Records the length of every function with a body in `text` (stripped source). */
function functionLengths(text, name) {
  for (const m of text.matchAll(/\bfn\s+(\w+)/g)) {
    let i = m.index + m[0].length
    let depth = 0
    while (i < text.length) {
      const c = text[i]
      if (c === '(' || c === '[' || c === '<') depth++
      else if (c === ')' || c === ']' || (c === '>' && text[i - 1] !== '-' && text[i - 1] !== '=')) depth--
      else if (c === ';' && depth <= 0) break
      else if (c === '{' && depth <= 0) break
      i++
    }
    if (text[i] !== '{') continue
    const end = blockEnd(text, i)
    const startLine = text.slice(0, m.index).split('\n').length
    const endLine = text.slice(0, end).split('\n').length
    functions.push({ name: m[1], file: name, line: startLine, lines: endLine - startLine + 1 })
  }
}

/** Every `crate::…`, `super::…` and `self::…` path in `text` (stripped source), with its line. */
function crateRefs(text) {
  const refs = []
  for (const m of text.matchAll(/\buse\s+((?:crate|super|self)::[^;]*);/g)) {
    for (const leaf of expandUse(m[1])) refs.push([leaf, text.slice(0, m.index).split('\n').length])
  }
  for (const m of text.matchAll(/(?<![\w:])((?:crate|super)(?:::\w+)+)/g)) {
    refs.push([m[1], text.slice(0, m.index).split('\n').length])
  }
  return refs
}

const files = walk(root).filter((f) => !/(^|[\\/])tests?\.rs$/.test(f) && !f.includes(`${sep}tests${sep}`))
const coreModules = new Set(files.map((f) => modulePath(f).join('::')))
/** The file a path names: its longest prefix that is a file's module (`goal::decide::review`). */
const coreModuleOf = (abs) => {
  for (let n = abs.length; n > 0; n--) if (coreModules.has(abs.slice(0, n).join('::'))) return abs.slice(0, n).join('::')
  return abs[0]
}
const edges = new Map() // top-level module → Map(target → [evidence])
const fileEdges = new Map() // file module path → Set(file module path)
const functions = []
const topLevel = new Set()
let extraAccesses = 0

for (const file of files) {
  const self = modulePath(file)
  const top = self[0] ?? '(lib)'
  topLevel.add(top)
  const text = withoutTests(strip(readFileSync(file, 'utf8')))
  extraAccesses += (text.match(/\.extra\b/g) ?? []).length
  for (const [path, line] of crateRefs(text)) {
    const abs = resolve(path, self)
    if (!abs || abs.length === 0) continue
    const target = abs[0]
    const where = `${relative(root, file)}:${line} ${path}`
    if (target !== top && top !== '(lib)') {
      if (!edges.has(top)) edges.set(top, new Map())
      const to = edges.get(top)
      if (!to.has(target)) to.set(target, [])
      to.get(target).push(where)
    }
    const from = self.join('::') || '(lib)'
    const to = coreModuleOf(abs)
    if (to === from) continue
    if (!fileEdges.has(from)) fileEdges.set(from, new Map())
    fileEdges.get(from).set(to, where)
  }
  functionLengths(text, relative(root, file))
}

// The binding: its functions count toward the length limit too, and its modules form graphs of
// their own (an edge is a `crate::module…` path; items defined in lib.rs are not a module): one
// between its top-level modules (`types` is one node, whichever of its files imports or is
// imported) and one between its files.
const bindingEdges = new Map() // top-level module → Map(top-level module → evidence)
const bindingFileEdges = new Map() // file module path → Map(file module path → evidence)
const bindingFiles = walk(bindingRoot)
const bindingModules = new Set(bindingFiles.map((f) => modulePathUnder(bindingRoot, f).join('::')))
/** The module of the binding a path names: its longest prefix that is a file's module. */
const bindingModuleOf = (abs) => {
  for (let n = abs.length; n > 0; n--) if (bindingModules.has(abs.slice(0, n).join('::'))) return abs.slice(0, n).join('::')
  return null
}
const addEdge = (graph, from, to, where) => {
  if (from === to) return
  if (!graph.has(from)) graph.set(from, new Map())
  graph.get(from).set(to, where)
}
for (const file of bindingFiles) {
  const self = modulePathUnder(bindingRoot, file)
  const text = withoutTests(strip(readFileSync(file, 'utf8')))
  extraAccesses += (text.match(/\.extra\b/g) ?? []).length
  functionLengths(text, `src/${relative(bindingRoot, file)}`)
  if (self.length === 0) continue
  for (const [path, line] of crateRefs(text)) {
    const abs = resolve(path, self)
    const target = abs && abs.length > 0 ? bindingModuleOf(abs) : null
    if (!target) continue
    const where = `src/${relative(bindingRoot, file)}:${line} ${path}`
    addEdge(bindingEdges, self[0], target.split('::')[0], where)
    addEdge(bindingFileEdges, self.join('::'), target, where)
  }
}

/** Strongly connected components with more than one node (Tarjan). */
function cycles(graph) {
  let index = 0
  const stack = []
  const on = new Set()
  const idx = new Map()
  const low = new Map()
  const out = []
  const nodes = new Set([...graph.keys(), ...[...graph.values()].flatMap((m) => [...m.keys()])])
  const visit = (v) => {
    idx.set(v, index)
    low.set(v, index++)
    stack.push(v)
    on.add(v)
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!idx.has(w)) (visit(w), low.set(v, Math.min(low.get(v), low.get(w))))
      else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)))
    }
    if (low.get(v) === idx.get(v)) {
      const comp = []
      let w
      do (w = stack.pop()), on.delete(w), comp.push(w)
      while (w !== v)
      if (comp.length > 1) out.push(comp.sort())
    }
  }
  for (const v of nodes) if (!idx.has(v)) visit(v)
  return out
}

let failed = false
const moduleCount = topLevel.size
const edgeCount = [...edges.values()].reduce((n, m) => n + m.size, 0)
console.log(`goal-core: ${moduleCount} top-level modules, ${edgeCount} import edges between them`)
if (flag("--where")) for (const [f, t] of edges) for (const [x, w] of t) console.log(f, "→", x, w.join(" | "))
if (flag('--graph')) {
  for (const [from, to] of [...edges].sort()) console.log(`  ${from} → ${[...to.keys()].sort().join(', ')}`)
}
const topCycles = cycles(edges)
if (topCycles.length === 0) console.log('top-level import cycles: none')
for (const comp of topCycles) {
  failed = true
  console.log(`IMPORT CYCLE between ${comp.length} top-level modules: ${comp.join(', ')}`)
  const set = new Set(comp)
  for (const from of comp)
    for (const [to, where] of edges.get(from) ?? [])
      if (set.has(to)) console.log(`  ${from} → ${to}  (${where[0]}${where.length > 1 ? `, +${where.length - 1}` : ''})`)
}
let pureFiles = 0
for (const [from, to] of fileEdges) {
  if (!isPure(from)) continue
  pureFiles++
  for (const [target, where] of to) {
    if (isIo(target)) {
      failed = true
      console.log(`PURE module ${from} imports I/O module ${target} (${where})`)
    }
  }
}
console.log(`pure modules importing I/O: checked ${pureFiles}`)
const fileCycles = cycles(fileEdges)
console.log(`file-level import cycles: ${fileCycles.length === 0 ? 'none' : fileCycles.length}`)
for (const comp of fileCycles) {
  failed = true
  console.log(`  IMPORT CYCLE between files: ${comp.join(', ')}`)
}
const bindingEdgeCount = [...bindingEdges.values()].reduce((n, m) => n + m.size, 0)
const bindingCycles = [bindingEdges, bindingFileEdges].flatMap((graph) => cycles(graph).map((comp) => [comp, graph]))
console.log(`binding (src/): ${bindingModules.size - 1} modules, ${bindingEdgeCount} import edges between its top-level modules; cycles (top-level or file-level): ${bindingCycles.length === 0 ? 'none' : bindingCycles.length}`)
if (flag('--graph')) {
  for (const [from, to] of [...bindingEdges].sort()) console.log(`  src ${from} → ${[...to.keys()].sort().join(', ')}`)
}
for (const [comp, graph] of bindingCycles) {
  failed = true
  console.log(`  IMPORT CYCLE between binding modules: ${comp.join(', ')}`)
  const set = new Set(comp)
  for (const from of comp) for (const [to, where] of graph.get(from) ?? []) if (set.has(to)) console.log(`    ${from} → ${to}  (${where})`)
}
// goal/'s folders: an edge is a file of one folder importing from another. The tick asks the
// decision, reads and acts; a folder importing one above it in GOAL_FOLDERS (or two importing
// each other) is a back-and-forth a reader follows through the tick.
const goalRoot = join(root, 'goal')
const stageFolders = new Set(readdirSync(goalRoot).filter((name) => statSync(join(goalRoot, name)).isDirectory()))
const stageEdges = new Map() // folder → Map(folder → evidence)
for (const [from, to] of fileEdges) {
  const [top, folder] = from.split('::')
  if (top !== 'goal' || !stageFolders.has(folder)) continue
  for (const [target, where] of to) {
    const [targetTop, targetFolder] = target.split('::')
    if (targetTop !== 'goal' || !stageFolders.has(targetFolder) || targetFolder === folder) continue
    if (!stageEdges.has(folder)) stageEdges.set(folder, new Map())
    stageEdges.get(folder).set(targetFolder, where)
  }
}
const twoWay = []
for (const [a, to] of stageEdges) for (const b of to.keys()) if (a < b && stageEdges.get(b)?.has(a)) twoWay.push([a, b])
const rank = (folder) => GOAL_FOLDERS.indexOf(folder)
const upward = []
for (const [a, to] of stageEdges) for (const [b, where] of to) if (rank(a) < 0 || rank(b) < 0 || rank(b) > rank(a)) upward.push([a, b, where])
const stageEdgeCount = [...stageEdges.values()].reduce((n, m) => n + m.size, 0)
console.log(`goal/ folders: ${stageFolders.size} (${GOAL_FOLDERS.join(' ← ')}), ${stageEdgeCount} import edges; two-way: ${twoWay.length}; upward: ${upward.length}`)
if (flag('--graph')) {
  for (const [from, to] of [...stageEdges].sort()) console.log(`  goal/${from} → ${[...to.keys()].sort().join(', ')}`)
}
for (const [a, b] of twoWay) {
  failed = true
  console.log(`  TWO-WAY IMPORT between goal/${a} and goal/${b}: ${stageEdges.get(a).get(b)} | ${stageEdges.get(b).get(a)}`)
}
for (const [a, b, where] of upward) {
  failed = true
  console.log(`  UPWARD IMPORT goal/${a} → goal/${b} (${where}): ${rank(a) < 0 || rank(b) < 0 ? 'a folder missing from GOAL_FOLDERS' : 'only downward, ' + GOAL_FOLDERS.join(' ← ')}`)
}
// The decision is synchronous and imports nothing of tokio; the writer has few importers.
let asyncInDecision = 0
let writerImporters = []
for (const file of walk(goalRoot)) {
  const rel = relative(root, file)
  const text = strip(readFileSync(file, 'utf8'))
  const code = text.split(/#\[cfg\(test\)\]/)[0]
  if (rel.startsWith(`goal${sep}decide${sep}`) && !/(^|[\/])(tests?|[^\/]*_tests)\.rs$/.test(rel)) {
    for (const m of code.matchAll(/\basync\s+fn\b|\btokio::|\.await\b/g)) {
      failed = true
      asyncInDecision++
      console.log(`  THE DECISION MUST STAY SYNCHRONOUS: ${rel} uses \`${m[0]}\``)
    }
  }
  if (/\bio::writer\b/.test(code)) writerImporters.push(rel)
}
console.log(`goal/decide: async or tokio uses: ${asyncInDecision}; files under goal/ importing the writer: ${writerImporters.length} (at most ${MAX_WRITER_IMPORTERS}: ${writerImporters.join(', ')})`)
if (writerImporters.length > MAX_WRITER_IMPORTERS) failed = true

// Source files: every one is named in docs/layout.md (the core's by their path in
// crates/goal-core/src/, the others by their path from the repository's root), and none outside
// tests is longer than MAX_FILE_LINES (counted as the feature ledger counts: scripts/source-files.mjs).
const corePrefix = 'crates/goal-core/src/'
const layoutName = (path) => (path.startsWith(corePrefix) ? path.slice(corePrefix.length) : path)
const layoutDoc = readFileSync(join(repo, 'docs', 'layout.md'), 'utf8')
const allSources = sourceFiles(repo)
const unlisted = []
const tooBig = []
for (const path of allSources) {
  if (isTestFile(path)) continue
  if (!layoutDoc.includes('`' + layoutName(path) + '`')) unlisted.push(layoutName(path))
  const lines = GENERATED_FILES.includes(path) ? 0 : linesOutsideTests(repo, path)
  if (lines > MAX_FILE_LINES) tooBig.push([path, lines])
}
console.log(`source files: ${allSources.filter((f) => !isTestFile(f)).length} outside tests; not in docs/layout.md: ${unlisted.length}; over ${MAX_FILE_LINES} lines: ${tooBig.length}`)
for (const name of unlisted) {
  failed = true
  console.log(`  NOT IN docs/layout.md: \`${name}\` (name it, with what it holds, under its part)`)
}
for (const [path, lines] of tooBig) {
  failed = true
  console.log(`  ${lines} lines outside tests: ${path} (split it by job)`)
}
// The feature ledger (scripts/features.mjs): every source file in one feature, docs/features.md
// current (`--write` writes it).
const features = checkLedger(repo, { write: flag('--write') })
console.log(features.out.join('\n'))
if (!features.ok) failed = true
console.log(`goal record: ${extraAccesses} untyped \`.extra\` accesses outside tests`)
functions.sort((a, b) => b.lines - a.lines)
const tooLong = functions.filter((f) => f.lines > MAX_FUNCTION_LINES)
console.log(`functions: ${functions.length}; longest ${functions[0]?.lines ?? 0} lines; over ${MAX_FUNCTION_LINES}: ${tooLong.length}`)
for (const f of longestCount ? functions.slice(0, longestCount) : tooLong) {
  console.log(`  ${String(f.lines).padStart(4)}  ${f.file}:${f.line} ${f.name}`)
}
if (tooLong.length && !flag('--allow-long')) failed = true
if (failed && !flag('--no-fail')) process.exit(1)
