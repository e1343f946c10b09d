#!/usr/bin/env node
// The fault-injection suite: every fault class against the built addon and the mock OpenCode,
// one row per class. Exits non-zero when any row has a goal that did not end correctly (a fault
// or disturbance that never happened included), or a non-zero count in any column other than the
// same-id re-posts (shown, not gated: see RELIABILITY.md).
//
//   npm run faults                      all classes (two at a time, each in its own process)
//   node scripts/fault-suite.mjs --only 5xx,refused
//   node scripts/fault-suite.mjs --write  also puts the table into RELIABILITY.md
//   node scripts/fault-suite.mjs --list   the class names
//   FAULTS_DEBUG=1 node scripts/fault-suite.mjs --child <class>   one class in this process, with
//                                         a trace (messages, requests, runtimes) of each failing case
//   node scripts/fault-suite.mjs --mutate  the suite's own check: a few classes against a mock whose
//                                         faults never match; passes only if every one of them FAILS
//   node scripts/fault-suite.mjs --mutate --list   the names of those classes
//
// Each class runs in a child process, so a crash (a panic that escaped, an abort) is reported as
// a row with a panic instead of ending the suite.
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadedBinary } from './faults/binary.mjs'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '..')
// A class process gets this long (FAULTS_CHILD_TIMEOUT_MS for large measurements, e.g. two-hosts at 2,000 goals).
const CHILD_TIMEOUT_MS = Number(process.env.FAULTS_CHILD_TIMEOUT_MS ?? 90_000)
const RESULT_PREFIX = 'FAULT-ROW '
const TABLE_BEGIN = '<!-- fault-table:begin -->'
const TABLE_END = '<!-- fault-table:end -->'
const JUDGED_BEGIN = '<!-- fault-judging:begin -->'
const JUDGED_END = '<!-- fault-judging:end -->'

const args = process.argv.slice(2)
const flag = (name) => args.includes(name)
const option = (name) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}

async function runChild(name) {
  const { CLASSES, MEASUREMENTS } = await import('./faults/classes.mjs')
  const spec = [...CLASSES, ...MEASUREMENTS].find((c) => c.name === name)
  if (!spec) throw new Error('unknown fault class ' + name)
  const started = Date.now()
  const row = await spec.run()
  row.title = spec.title
  row.ms = Date.now() - started
  row.binary = loadedBinary()
  process.stdout.write(RESULT_PREFIX + JSON.stringify(row) + '\n')
  // Native handles (a dropped, never-stopped runtime) must not keep the child alive.
  setTimeout(() => process.exit(0), 100).unref()
}

function spawnClass(spec, extraEnv = {}) {
  return new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(process.execPath, [SELF, '--child', spec.name], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, RUST_BACKTRACE: '0', ...extraEnv },
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const killer = setTimeout(() => child.kill('SIGKILL'), CHILD_TIMEOUT_MS)
    child.on('exit', (code, signal) => {
      clearTimeout(killer)
      const line = out.split('\n').find((l) => l.startsWith(RESULT_PREFIX))
      if (line) {
        const row = JSON.parse(line.slice(RESULT_PREFIX.length))
        const panicLines = err.split('\n').filter((l) => l.includes('panicked at')).length
        if (panicLines > row.panics) row.failures.push(`${panicLines} panic message(s) on stderr`)
        row.panics = Math.max(row.panics, panicLines)
        resolve(row)
        return
      }
      const why = signal ? `killed by ${signal}` : `exited with code ${code}`
      resolve({
        name: spec.name,
        title: spec.title,
        total: 0,
        ended: 0,
        twice: 0,
        reposted: 0,
        postedTwice: 0,
        afterStop: 0,
        foreignLost: 0,
        panics: 1,
        stuck: 0,
        crashed: true,
        ms: Date.now() - started,
        notes: [],
        failures: [`the class process ${why} without a result`, ...err.trim().split('\n').slice(-12)],
      })
    })
  })
}

function failed(row) {
  if (row.measurement) return Boolean(row.crashed || row.panics)
  return row.crashed || row.ended !== row.total || row.twice || row.postedTwice || row.afterStop || row.foreignLost || row.panics || row.stuck || row.failures.length > 0
}

function table(rows) {
  const header = ['fault class', 'ended correctly', 'sent twice (messages)', 'posted twice (wire)', 'same-id re-posts (wire)', 'sent after stop', 'foreign keys lost', 'panics', 'stuck', 'time']
  const lines = rows.map((r) => [r.title, `${r.ended} / ${r.total}`, r.twice, r.postedTwice, r.reposted, r.afterStop, r.foreignLost, r.panics, r.stuck, `${(r.ms / 1000).toFixed(1)} s`].map(String))
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)))
  const fmt = (cells) => '| ' + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ') + ' |'
  const rule = '|' + widths.map((w, i) => (i === 0 ? ':' + '-'.repeat(w + 1) : '-'.repeat(w + 1) + ':')).join('|') + '|'
  return [fmt(header), rule, ...lines.map(fmt)].join('\n')
}

// The classes the mutation check runs: each injects faults on the HTTP side, so with a mock whose
// fault matcher matches nothing every one of them must fail (a fault that never fired).
const MUTATION_CLASSES = ['timeouts', 'malformed-json', 'html-200', '5xx', 'slow', 'held-past-timeout']

/** The suite's own honesty: every class of MUTATION_CLASSES must fail when its faults never fire. */
async function mutationCheck() {
  const { CLASSES } = await import('./faults/classes.mjs')
  const names = option('--only')?.split(',').map((n) => n.trim()).filter(Boolean) ?? MUTATION_CLASSES
  if (flag('--list')) {
    for (const name of names) console.log(name)
    return
  }
  let escaped = 0
  for (const name of names) {
    const spec = CLASSES.find((c) => c.name === name)
    if (!spec) throw new Error('unknown fault class ' + name)
    const row = await spawnClass(spec, { FAULTS_MUTATE: '1' })
    const unfired = row.failures.filter((f) => / fired 0 of /.test(f)).length
    const caught = failed(row) && !row.crashed
    if (!caught) escaped += 1
    console.log(`${caught ? 'caught ' : 'ESCAPED'} ${name}: faults never fired; the class ${caught ? `failed (${row.ended} / ${row.total} ended correctly, ${unfired} unfired-fault failure(s))` : row.crashed ? 'crashed instead of failing' : 'still passed'}`)
  }
  console.log(escaped ? `\n${escaped} class(es) passed with no fault firing: the suite cannot tell a fault from none` : `\nmutation check: all ${names.length} classes failed without their faults, as they must`)
  process.exitCode = escaped ? 1 : 0
}

async function main() {
  if (flag('--child')) return runChild(option('--child'))
  if (flag('--mutate')) return mutationCheck()
  const { CLASSES, MEASUREMENTS } = await import('./faults/classes.mjs')
  const everything = [...CLASSES, ...MEASUREMENTS.map((m) => ({ ...m, measurement: true }))]
  if (flag('--list')) {
    for (const c of everything) console.log(c.name.padEnd(24) + c.title)
    return
  }
  const only = option('--only')?.split(',').map((s) => s.trim()).filter(Boolean)
  const selected = only ? everything.filter((c) => only.includes(c.name)) : everything
  if (only && selected.length !== only.length) {
    console.error('unknown class in --only; known: ' + CLASSES.map((c) => c.name).join(', '))
    process.exit(2)
  }
  const jobs = Math.max(1, Number(option('--jobs') ?? Math.min(2, os.availableParallelism?.() ?? 2)))
  const started = Date.now()
  const rows = new Array(selected.length)
  let next = 0
  const worker = async () => {
    while (next < selected.length) {
      const index = next++
      const row = await spawnClass(selected[index])
      row.measurement = Boolean(selected[index].measurement)
      rows[index] = row
      console.error(`${failed(row) ? 'FAIL' : 'ok  '} ${row.name} (${(row.ms / 1000).toFixed(1)} s)`)
    }
  }
  await Promise.all(Array.from({ length: jobs }, worker))
  const totalSeconds = ((Date.now() - started) / 1000).toFixed(0)
  const classRows = rows.filter((r) => !r.measurement)
  const text = table(classRows)
  console.log('\n' + text)
  const notes = rows.flatMap((r) => r.notes ?? [])
  if (notes.length) console.log('\n' + notes.map((n) => '- ' + n).join('\n'))
  const bad = rows.filter(failed)
  for (const row of bad) {
    console.log(`\n${row.name}:`)
    for (const f of row.failures.slice(0, 20)) console.log('  - ' + f)
    if (row.ended !== row.total && !row.failures.length) console.log('  - goals that did not end correctly')
  }
  const goals = classRows.reduce((n, r) => n + r.total, 0)
  console.log(`\n${classRows.length} fault classes, ${goals} cases, ${totalSeconds} s; ${bad.length ? bad.length + ' FAILED' : 'all rows clean'}`)
  const binaries = [...new Set(rows.map((r) => r.binary).filter(Boolean))]
  if (flag('--write')) writeReliability(text, notes, CLASSES, { rows: classRows.length, goals, seconds: totalSeconds, binaries })
  process.exitCode = bad.length ? 1 : 0
}

/** Replaces the text between two markers of RELIABILITY.md. */
function replaceBetween(doc, begin, end, body) {
  const start = doc.indexOf(begin)
  const stop = doc.indexOf(end)
  if (start < 0 || stop < start) throw new Error(`RELIABILITY.md has no ${begin} … ${end} markers`)
  return doc.slice(0, start) + [begin, body, end].join('\n') + doc.slice(stop + end.length)
}

/** The commit the suite ran on; the table may only name a committed tree. */
function measuredCommit() {
  const git = (...args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim()
  if (git('status', '--porcelain')) throw new Error('--write needs a clean work tree: commit first')
  return git('rev-parse', '--short', 'HEAD')
}

function writeReliability(text, notes, classes, { rows, goals, seconds, binaries }) {
  const file = path.join(ROOT, 'RELIABILITY.md')
  let doc = fs.readFileSync(file, 'utf8')
  // The label names the binary the class processes loaded, as they reported it.
  if (binaries.length !== 1) throw new Error(`--write needs one binary across the classes; they loaded: ${binaries.join(', ') || 'none reported'}`)
  const stamp = `Latest run: commit ${measuredCommit()}, ${new Date().toISOString().slice(0, 10)}, ${rows} classes, ${goals} cases, ${seconds} s (\`npm run faults\`, ${binaries[0]}, ${os.cpus().length} cores).`
  doc = replaceBetween(doc, TABLE_BEGIN, TABLE_END, [stamp, '', text, '', ...notes.map((n) => '- ' + n)].join('\n'))
  doc = replaceBetween(doc, JUDGED_BEGIN, JUDGED_END, classes.map((c) => `- **${c.title}** (\`${c.name}\`). ${c.judged}`).join('\n'))
  fs.writeFileSync(file, doc)
  console.log('RELIABILITY.md updated')
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
