#!/usr/bin/env node
// The platform test: each platform built on this machine (scripts/build-platform.sh), tested on
// that platform's own Node (scripts/platforms/node.sh: qemu-user for arm64, musl's loader for
// musl, wine for Windows).
//
//   npm run test:platforms [-- [<platform>...] [--build] [--full] [--write]]
//     <platform>   linux-arm64-gnu, linux-x64-musl, win32-x64 (default: all three)
//     --build      build each platform first (npm run build:<platform>); otherwise its binary
//                  must be in npm/<package>/ already
//     --cold       with --build: build in an empty cargo target directory (removed afterwards),
//                  so that the build times recorded are those of a new machine
//     --full       also run the whole vitest suite (the addon against the mock OpenCode) on that
//                  Node; a test that fails is run again alone with timeouts ×4 (vitest's, and
//                  the tests' own allowance for CPU-bound work: SESSION_GOAL_TEST_TIME_SCALE),
//                  and the result says whether it then passed
//     --only <f>   with --full: only the test files whose path contains <f> (repeatable), to look
//                  into a failure; not with --write
//     --write      write PLATFORMS.md (needs --full and all three platforms, a clean tree, and
//                  builds made from this commit: --build); never edit PLATFORMS.md by hand
//
// Per platform, always: the install test (scripts/install-test.sh --platform --node): both
// packages packed and installed offline by npm on that Node, require, ESM import and typeof of
// every export, a goal driven to complete against the mock, the CLI's doctor, --version, --help.
// Exit 1 when any step of any platform fails.
//
// Nothing is written outside the temp directories it makes (removed at the end; the suite's own
// temp directory must be left empty) and the cache of scripts/platforms/node.sh: every Node it
// starts gets a HOME of its own.
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const ALL = ['linux-arm64-gnu', 'linux-x64-musl', 'win32-x64']
const PACKAGE = { 'linux-arm64-gnu': 'linux-arm64-gnu', 'linux-x64-musl': 'linux-x64-musl', 'win32-x64': 'win32-x64-msvc' }
const HOW = {
  'linux-arm64-gnu': 'qemu-user',
  'linux-x64-musl': 'musl 1.2.5 loader, private mount namespace',
  'win32-x64': 'wine',
}
const RETRY_TIMEOUT_SCALE = 4
const DEFAULT_TIMEOUT_MS = 30_000 // vitest.config.mjs

const args = process.argv.slice(2)
const only = []
for (let i = args.indexOf('--only'); i >= 0; i = args.indexOf('--only')) {
  if (!args[i + 1]) usage('--only needs a file filter')
  only.push(...args.splice(i, 2).slice(1))
}
const flags = new Set(args.filter((a) => a.startsWith('--')))
for (const flag of flags) {
  if (!['--build', '--cold', '--full', '--write'].includes(flag)) usage(`unknown option ${flag}`)
}
if (only.length && (flags.has('--write') || !flags.has('--full'))) usage('--only goes with --full, not with --write')
if (flags.has('--cold') && !flags.has('--build')) usage('--cold goes with --build')
const platforms = args.filter((a) => !a.startsWith('--'))
for (const p of platforms) if (!ALL.includes(p)) usage(`unknown platform ${p}`)
if (platforms.length === 0) platforms.push(...ALL)
if (flags.has('--write') && (!flags.has('--full') || platforms.length !== ALL.length)) {
  usage('--write needs --full and all three platforms')
}

function usage(message) {
  console.error(`test:platforms: ${message}\nusage: npm run test:platforms -- [${ALL.join('|')}...] [--build] [--full] [--write]`)
  process.exit(2)
}

const git = (...a) => execFileSync('git', a, { cwd: repo, encoding: 'utf8' }).trim()
const commit = git('rev-parse', 'HEAD')
if (flags.has('--write') && git('status', '--porcelain') !== '') {
  console.error('test:platforms --write: the tree has changes; PLATFORMS.md names the commit it ran on, so commit first')
  process.exit(1)
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'session-goal-platforms-'))
let interrupted = false
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    interrupted = true
    fs.rmSync(scratch, { recursive: true, force: true })
    process.exit(130)
  })
}

const groupMembers = (pgid) => {
  try {
    return execFileSync('pgrep', ['-g', String(pgid)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).length
  } catch {
    return 0
  }
}

/**
 * Runs a command in a process group of its own; resolves { status, output, seconds, leftover }.
 * What of the group still runs 10 s after the command exited (wine's wineserver stays 3 s after
 * its last client, by design) is counted as left behind, and killed.
 */
function run(command, commandArgs, { cwd = repo, env = process.env, log } = {}) {
  return new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(command, commandArgs, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const take = (chunk) => {
      output += chunk
      if (log) fs.appendFileSync(log, chunk)
    }
    child.stdout.on('data', take)
    child.stderr.on('data', take)
    child.on('close', async (status, signal) => {
      const seconds = (Date.now() - started) / 1000
      let leftover = groupMembers(child.pid)
      for (let waited = 0; leftover > 0 && waited < 10_000; waited += 500) {
        await new Promise((r) => setTimeout(r, 500))
        leftover = groupMembers(child.pid)
      }
      if (leftover) {
        try {
          process.kill(-child.pid, 'SIGKILL')
        } catch {}
      }
      resolve({ status: status ?? (signal ? 128 : 1), output, seconds, leftover })
    })
  })
}

/** A private HOME and TMPDIR for one run; check() lists what was left in the TMPDIR. */
function privateDirs(name) {
  const base = fs.mkdtempSync(path.join(scratch, `${name}-`))
  const home = path.join(base, 'home')
  const tmp = path.join(base, 'tmp')
  fs.mkdirSync(home)
  fs.mkdirSync(tmp)
  return { home, tmp, left: () => fs.readdirSync(tmp).filter((e) => e !== 'node-compile-cache') }
}

function runnerFor(platform) {
  return execFileSync('bash', [path.join(repo, 'scripts/platforms/node.sh'), platform], { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim()
}

function describeNode(platform, runner, home) {
  const env = { ...process.env, HOME: home }
  const version = execFileSync(runner, ['-p', 'process.version + " " + process.platform + "-" + process.arch'], { env, encoding: 'utf8' }).trim()
  const engine = {
    'linux-arm64-gnu': () => execFileSync('qemu-aarch64-static', ['--version'], { encoding: 'utf8' }).split('\n')[0].replace(/ Copyright.*/, ''),
    'linux-x64-musl': () => 'musl 1.2.5 (Debian 13 package)',
    'win32-x64': () => execFileSync('wine', ['--version'], { encoding: 'utf8' }).trim(),
  }[platform]()
  const source = fs.readFileSync(runner, 'utf8').match(/^# Node \S+ \(([^)]+)\)/m)?.[1]
  return { version, engine, source }
}

/** A copy of the repository for the suite on another platform: its binary beside index.js. */
async function suiteCopy(platform) {
  const dir = fs.mkdtempSync(path.join(scratch, `suite-${platform}-`))
  for (const file of git('ls-files', '-z').split('\0').filter(Boolean)) {
    const from = path.join(repo, file)
    if (!fs.existsSync(from)) continue
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
    fs.cpSync(from, path.join(dir, file), { verbatimSymlinks: true })
  }
  // The real-OpenCode suite's binary (opencode-*) is not used by this suite.
  fs.cpSync(path.join(repo, 'node_modules'), path.join(dir, 'node_modules'), {
    recursive: true,
    verbatimSymlinks: true,
    filter: (from) => !/[\\/]node_modules[\\/](opencode-ai|opencode-linux-[^\\/]+)$/.test(from),
  })
  // The dev dependencies' native parts for this platform (vite's rolldown and lightningcss): the
  // optional packages npm chose for this machine are of no use to another platform's Node.
  const pkg = PACKAGE[platform]
  const cache = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'session-goal-runtime', 'platforms', 'npm-packages')
  for (const owner of fs.readdirSync(path.join(dir, 'node_modules')).flatMap((e) => (e.startsWith('@') ? fs.readdirSync(path.join(dir, 'node_modules', e)).map((n) => `${e}/${n}`) : [e]))) {
    const manifestFile = path.join(dir, 'node_modules', owner, 'package.json')
    if (!fs.existsSync(manifestFile)) continue
    const optional = JSON.parse(fs.readFileSync(manifestFile, 'utf8')).optionalDependencies || {}
    for (const [name, version] of Object.entries(optional)) {
      if (!name.endsWith(pkg) || fs.existsSync(path.join(dir, 'node_modules', name))) continue
      const unpacked = path.join(cache, `${name.replace('/', '+')}@${version}`)
      if (!fs.existsSync(path.join(unpacked, 'package.json'))) {
        fs.mkdirSync(cache, { recursive: true })
        const packed = execFileSync('npm', ['pack', '--silent', '--cache', path.join(cache, '..', 'npm-cache'), `${name}@${version}`], { cwd: cache, encoding: 'utf8' }).trim().split('\n').pop()
        fs.mkdirSync(`${unpacked}.tmp`, { recursive: true })
        execFileSync('tar', ['-xzf', path.join(cache, packed), '-C', `${unpacked}.tmp`, '--strip-components=1'])
        fs.rmSync(path.join(cache, packed))
        fs.renameSync(`${unpacked}.tmp`, unpacked)
      }
      fs.cpSync(unpacked, path.join(dir, 'node_modules', name), { recursive: true })
    }
  }
  const binary = `session-goal-runtime.${pkg}.node`
  fs.copyFileSync(path.join(repo, 'npm', pkg, binary), path.join(dir, binary))
  return dir
}

/** The vitest JSON report, reduced to counts and the tests that did not pass. */
function readReport(file) {
  const report = JSON.parse(fs.readFileSync(file, 'utf8'))
  const failed = []
  const skipped = []
  let fileErrors = 0
  for (const result of report.testResults) {
    const name = result.name.replace(/\\/g, '/').replace(/^.*__test__\//, '__test__/')
    for (const test of result.assertionResults) {
      if (test.status === 'failed') failed.push({ file: name, title: test.fullName, message: (test.failureMessages || []).join('\n').split('\n')[0] })
      else if (test.status === 'skipped' || test.status === 'pending' || test.status === 'todo') skipped.push({ file: name, title: test.fullName })
    }
    if (result.status === 'failed' && result.assertionResults.length === 0) {
      fileErrors += 1
      failed.push({ file: name, title: '(the file did not load)', message: (result.message || '').split('\n')[0] })
    }
  }
  return { total: report.numTotalTests, passed: report.numPassedTests, failed: report.numFailedTests, skipped: report.numPendingTests + report.numTodoTests, fileErrors, failures: failed, skips: skipped }
}

async function runSuite(platform, runner, copy, logDir, { single, timeoutScale = 1 } = {}) {
  const dirs = privateDirs(`suite-${platform}`)
  const reportFile = `platform-suite-${Date.now()}.json`
  const timeout = String(DEFAULT_TIMEOUT_MS * timeoutScale)
  const vitestArgs = ['node_modules/vitest/vitest.mjs', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${reportFile}`]
  if (timeoutScale !== 1) vitestArgs.push(`--testTimeout=${timeout}`, `--hookTimeout=${timeout}`)
  // Under emulation every file is CPU-bound: one file per core but one, vitest's own default, not
  // the four at once of vitest.config.mjs (made for files that mostly wait on timers).
  vitestArgs.push(`--maxWorkers=${Math.max(1, os.availableParallelism() - 1)}`)
  if (single) vitestArgs.push(single.file, '-t', `^${single.title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`)
  else vitestArgs.push(...only)
  const env = { PATH: `${path.dirname(runner)}:/usr/bin:/bin`, HOME: dirs.home, TMPDIR: dirs.tmp, LANG: 'C.UTF-8', CI: '1' }
  // The test's own allowance for CPU-bound work (__test__/helpers.mjs TIME_SCALE) grows too.
  if (timeoutScale !== 1) env.SESSION_GOAL_TEST_TIME_SCALE = String(timeoutScale)
  const log = path.join(logDir, single ? `${platform}-retry.log` : `${platform}-suite.log`)
  const result = await run(runner, vitestArgs, { cwd: copy, env, log })
  const reportPath = path.join(copy, reportFile)
  const report = fs.existsSync(reportPath) ? readReport(reportPath) : null
  fs.rmSync(reportPath, { force: true })
  return { ...result, report, left: dirs.left() }
}

async function testPlatform(platform, logDir) {
  const pkg = PACKAGE[platform]
  const row = { platform, package: pkg }
  if (flags.has('--build')) {
    const buildArgs = [path.join(repo, 'scripts/build-platform.sh'), platform]
    const coldDir = flags.has('--cold') ? fs.mkdtempSync(path.join(scratch, `cargo-target-${platform}-`)) : null
    if (coldDir) buildArgs.push('--target-dir', coldDir)
    const build = await run('bash', buildArgs, { log: path.join(logDir, `${platform}-build.log`) })
    if (coldDir) fs.rmSync(coldDir, { recursive: true, force: true })
    if (build.status !== 0) return { ...row, error: `build failed (exit ${build.status}): ${build.output.trim().split('\n').slice(-3).join(' / ')}` }
  }
  const binary = path.join(repo, 'npm', pkg, `session-goal-runtime.${pkg}.node`)
  if (!fs.existsSync(binary)) return { ...row, error: `npm/${pkg}/session-goal-runtime.${pkg}.node is not built (npm run build:${platform}, or --build)` }
  const recordFile = path.join(repo, 'target', 'platforms', `${platform}.json`)
  row.build = fs.existsSync(recordFile) ? JSON.parse(fs.readFileSync(recordFile, 'utf8')) : null
  row.bytes = fs.statSync(binary).size

  const runner = runnerFor(platform)
  const dirs = privateDirs(`node-${platform}`)
  row.node = describeNode(platform, runner, dirs.home)
  console.log(`== ${platform}: node ${row.node.version} (${row.node.source}; ${row.node.engine})`)

  const install = await run('bash', [path.join(repo, 'scripts/install-test.sh'), '--platform', pkg, '--node', runner], {
    env: { ...process.env, HOME: dirs.home, TMPDIR: dirs.tmp },
    log: path.join(logDir, `${platform}-install.log`),
  })
  row.install = { passed: install.status === 0 && install.leftover === 0, seconds: install.seconds, lines: install.output.trim().split('\n'), leftover: install.leftover }
  console.log(install.output.trim().replace(/^/gm, '   '))
  console.log(`   install test: ${row.install.passed ? 'passed' : `FAILED (exit ${install.status}${install.leftover ? `, ${install.leftover} processes left running` : ''})`} in ${install.seconds.toFixed(0)} s`)

  if (flags.has('--full')) {
    const copy = await suiteCopy(platform)
    console.log(`   full suite on ${row.node.version} ... (log: ${path.join(logDir, `${platform}-suite.log`)})`)
    const suite = await runSuite(platform, runner, copy, logDir)
    row.suite = { seconds: suite.seconds, status: suite.status, leftover: suite.leftover, left: suite.left, report: suite.report }
    if (suite.report) {
      const r = suite.report
      console.log(`   full suite: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped of ${r.total}${r.fileErrors ? `, ${r.fileErrors} files did not load` : ''} in ${suite.seconds.toFixed(0)} s`)
      for (const failure of r.failures) {
        if (failure.title === '(the file did not load)') continue
        const retry = await runSuite(platform, runner, copy, logDir, { single: failure, timeoutScale: RETRY_TIMEOUT_SCALE })
        const rr = retry.report
        failure.retry = rr ? { passed: rr.failed === 0 && rr.passed > 0, passedCount: rr.passed, seconds: retry.seconds } : { passed: false, seconds: retry.seconds }
        console.log(`   FAILED ${failure.file} > ${failure.title}: ${failure.message}\n     alone with timeouts ×${RETRY_TIMEOUT_SCALE}: ${failure.retry.passed ? 'passed' : 'failed again'}`)
      }
      for (const skip of r.skips) console.log(`   skipped ${skip.file} > ${skip.title}`)
    } else {
      console.log(`   full suite: no report (exit ${suite.status}); see the log`)
    }
    if (suite.left.length) console.log(`   the suite left ${suite.left.length} entries in its temp directory: ${suite.left.slice(0, 10).join(', ')}`)
    fs.rmSync(copy, { recursive: true, force: true })
  }
  if (platform === 'win32-x64') {
    // wineserver outlives the last Windows process by a few seconds; end it with the test.
    try {
      execFileSync('wineserver', ['-k'], { env: { ...process.env, WINEPREFIX: fs.readFileSync(runner, 'utf8').match(/WINEPREFIX='([^']+)'/)[1] } })
    } catch {}
  }
  return row
}

const logDir = path.join(repo, 'target', 'platforms', 'logs')
fs.rmSync(logDir, { recursive: true, force: true })
fs.mkdirSync(logDir, { recursive: true })
const rows = []
try {
  for (const platform of platforms) rows.push(await testPlatform(platform, logDir))
} finally {
  if (!interrupted) fs.rmSync(scratch, { recursive: true, force: true })
}

let failed = false
console.log('== platforms')
for (const row of rows) {
  if (row.error) {
    failed = true
    console.log(`  ${row.platform}: ${row.error}`)
    continue
  }
  const parts = [`install test ${row.install.passed ? 'passed' : 'FAILED'}`]
  if (!row.install.passed) failed = true
  if (row.suite) {
    const r = row.suite.report
    parts.push(r ? `suite ${r.passed}/${r.total} passed, ${r.failed} failed, ${r.skipped} skipped` : 'suite gave no report')
    if (!r || r.failed > 0 || row.suite.left.length || row.suite.leftover) failed = true
  }
  console.log(`  ${row.platform} (${row.node.version}): ${parts.join('; ')}`)
}

if (flags.has('--write')) {
  const { writePlatformsDoc } = await import('./platforms/platforms-doc.mjs')
  const problems = writePlatformsDoc({ repo, rows, commit, retryScale: RETRY_TIMEOUT_SCALE })
  if (problems.length) {
    console.error(`PLATFORMS.md written, with problems:\n  ${problems.join('\n  ')}`)
    failed = true
  } else console.log('PLATFORMS.md written')
}
process.exit(failed ? 1 : 0)
