#!/usr/bin/env node
// Runs the vitest suite (the mock-OpenCode suites, not e2e) N times and reports every test that
// failed at least once, with how often. Exits non-zero when any did: a test that fails once in
// N runs is a defect to fix at its root, not noise.
//
//   npm run test:repeat -- 20            (default 10)
//   npm run test:repeat -- 5 __test__/assist.test.mjs   (extra arguments go to vitest)
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const [countArg, ...vitestArgs] = process.argv.slice(2)
const runs = countArg === undefined ? 10 : Number.parseInt(countArg, 10)
if (!Number.isInteger(runs) || runs < 1) {
  console.error(`usage: npm run test:repeat -- <runs ≥ 1> [vitest arguments]; got ${JSON.stringify(countArg)}`)
  process.exit(2)
}

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const vitest = path.join(root, 'node_modules', 'vitest', 'vitest.mjs')
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'test-repeat-'))
const failures = new Map() // "file › test" → { count, firstMessage }
let brokenRuns = 0

for (let run = 1; run <= runs; run++) {
  const report = path.join(scratch, `run-${run}.json`)
  const started = Date.now()
  const child = spawnSync(process.execPath, [vitest, 'run', '--reporter=json', `--outputFile=${report}`, ...vitestArgs], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
  })
  let parsed = null
  try {
    parsed = JSON.parse(fs.readFileSync(report, 'utf8'))
  } catch {
    parsed = null
  }
  if (!parsed) {
    // vitest itself failed (no report): count it as a failure of the run, with its stderr tail.
    brokenRuns++
    const key = '(vitest produced no report)'
    const entry = failures.get(key) ?? { count: 0, firstMessage: String(child.stderr ?? '').trim().split('\n').slice(-5).join('\n') }
    entry.count++
    failures.set(key, entry)
    console.log(`run ${run}/${runs}: no report (exit ${child.status})`)
    continue
  }
  let failedHere = 0
  for (const file of parsed.testResults ?? []) {
    const relative = path.relative(root, file.name)
    const tests = file.assertionResults ?? []
    if (file.status === 'failed' && tests.every((t) => t.status !== 'failed')) {
      // A file that failed outside any test (import error, hook failure).
      const key = `${relative} › (file)`
      const entry = failures.get(key) ?? { count: 0, firstMessage: String(file.message ?? '').split('\n')[0] }
      entry.count++
      failures.set(key, entry)
      failedHere++
    }
    for (const test of tests) {
      if (test.status !== 'failed') continue
      const key = `${relative} › ${test.fullName ?? test.title}`
      const entry = failures.get(key) ?? { count: 0, firstMessage: String(test.failureMessages?.[0] ?? '').split('\n')[0] }
      entry.count++
      failures.set(key, entry)
      failedHere++
    }
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  console.log(`run ${run}/${runs}: ${parsed.numPassedTests} passed, ${parsed.numFailedTests} failed${failedHere ? ` (${failedHere} failure rows)` : ''} in ${seconds} s`)
}

fs.rmSync(scratch, { recursive: true, force: true })
if (failures.size === 0) {
  console.log(`\n${runs} run(s): no test failed.`)
  process.exit(0)
}
console.log(`\n${runs} run(s): ${failures.size} test(s) failed at least once${brokenRuns ? ` (${brokenRuns} run(s) without a report)` : ''}:`)
for (const [key, { count, firstMessage }] of [...failures].sort((a, b) => b[1].count - a[1].count)) {
  console.log(`  ${count}/${runs}  ${key}\n         ${firstMessage}`)
}
process.exit(1)
