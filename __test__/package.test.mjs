// The package surface as OpenChamber's ESM server sees it: named ESM imports equal to the
// CommonJS exports, buildGoalIntroText, onWarning(message, error), the default console lines,
// and one clear error when the native binary is missing, corrupt or not built for the platform.
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createRequire } from 'node:module'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import * as esm from '../runtime.mjs'
import esmDefault from '../runtime.mjs'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep, tempDataDir, tempDir } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'

const require = createRequire(import.meta.url)
const cjs = require('../runtime.js')
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

let env
afterEach(async () => {
  vi.restoreAllMocks()
  await env?.cleanup()
  env = undefined
})

describe('ESM and CommonJS entries', () => {
  it('every CommonJS export is a named ESM export, the same value', () => {
    // The list itself is checked in exports.test.mjs; here, Node's own loader.
    const documented = Object.keys(cjs)
    expect(documented.length).toBeGreaterThanOrEqual(15)
    expect(Object.keys(esm).filter((name) => name !== 'default').sort()).toEqual([...documented].sort())
    for (const name of documented) expect(typeof esm[name], name).toBe(typeof cjs[name])
    expect(typeof esmDefault.createSessionGoal).toBe('function')
    // Identity under Node's own loader (vitest's module runner loads runtime.js a second time).
    const script = `
      import * as esm from ${JSON.stringify(pathToFileURL(path.join(root, 'runtime.mjs')).href)}
      import { createRequire } from 'node:module'
      const cjs = createRequire(import.meta.url)(${JSON.stringify(path.join(root, 'runtime.js'))})
      const names = Object.keys(cjs)
      console.log(JSON.stringify({ same: names.filter((n) => esm[n] === cjs[n]).length, names: names.length, defaultIsCjs: esm.default === cjs }))`
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }))
    expect(out).toEqual({ same: documented.length, names: documented.length, defaultIsCjs: true })
  })

  it('package.json routes import to the ESM entry and require to the CommonJS one, with types for both', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))
    const entry = manifest.exports['.']
    expect(entry.import.default).toBe('./runtime.mjs')
    expect(entry.require.default).toBe('./runtime.js')
    for (const file of [entry.import.types, entry.require.types, entry.import.default, entry.require.default]) {
      expect(fs.existsSync(path.join(root, file)), file).toBe(true)
      expect(manifest.files).toContain(file.slice(2))
    }
  })
})

describe('buildGoalIntroText', () => {
  it('is the goal-mode system reminder, with the budget sentence only for a positive budget', () => {
    const plain = esm.buildGoalIntroText()
    expect(plain.startsWith('<system-reminder>\n')).toBe(true)
    expect(plain.endsWith('\n</system-reminder>')).toBe(true)
    expect(plain).toMatch(/goal/i)
    expect(plain).not.toMatch(/token budget/)
    for (const none of [null, undefined, 0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(esm.buildGoalIntroText(none)).toBe(plain)
    }
    const budgeted = esm.buildGoalIntroText(250000)
    expect(budgeted).toContain('250000 tokens')
    expect(budgeted.length).toBeGreaterThan(plain.length)
    expect(esm.buildGoalIntroText(1500.7)).toContain('1500 tokens')
    // Budgets from JSON bodies: a numeric string counts; other values mean no budget, no throw.
    expect(esm.buildGoalIntroText('50000')).toBe(esm.buildGoalIntroText(50000))
    for (const odd of ['', 'lots', {}, [], true]) expect(esm.buildGoalIntroText(odd)).toBe(plain)
  })

  it('is the text a scheduled task stamp attaches', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
    try {
      const control = esm.createSessionGoalControl({ openCode: { baseUrl: mock.url }, dataDir: tempDataDir() })
      const session = mock.createSession({ directory: '/tmp/project' })
      const stamp = await control.stampScheduledGoal({ sessionId: session.id, directory: '/tmp/project', prompt: 'Write the nightly report', tokenBudget: 40000 })
      expect(stamp.introPart).toEqual({ type: 'text', text: esm.buildGoalIntroText(40000), synthetic: true })
    } finally {
      await mock.close()
    }
  })
})

describe('onWarning', () => {
  it('is called with (message, error) as the reference calls it', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
    try {
      const dataDir = tempDataDir()
      fs.writeFileSync(path.join(dataDir, 'goals'), 'a file where the goals directory belongs')
      const session = mock.createSession({ directory: '/tmp/project' })
      const calls = []
      const installed = await esm.createSessionGoal({
        baseUrl: mock.url,
        dataDir,
        sessionID: session.id,
        directory: '/tmp/project',
        objective: 'Objective stored inline',
        onWarning: (...args) => calls.push(args),
      })
      expect(installed.goal.status).toBe('active')
      expect(calls).toHaveLength(1)
      const [message, error] = calls[0]
      expect(typeof message).toBe('string')
      expect(message).toMatch(/inline/)
      expect(error).toBeInstanceOf(Error)
      expect(error.message.length).toBeGreaterThan(0)
      expect(message).toContain(error.message)
    } finally {
      await mock.close()
    }
  })
})

describe('default console lines (no logger option)', () => {
  it('prints settled, continuation turns and audit failures, never prompts, output or credentials', async () => {
    const printed = []
    vi.spyOn(console, 'log').mockImplementation((...args) => printed.push(['log', args.join(' ')]))
    vi.spyOn(console, 'warn').mockImplementation((...args) => printed.push(['warn', args.join(' ')]))
    const secretObjective = 'OBJECTIVE-CANARY-5d1e'
    const secretReply = 'REPLY-CANARY-8a0f'
    const secretNote = 'NOTE-CANARY-b7c2'
    const failing = Object.assign(new Error('provider down'), { statusCode: 500 })
    const auditor = scriptedAuditor([failing, { verdict: 'continue', note: secretNote }, { verdict: 'complete', note: secretNote }])
    env = await setup({ auditor })
    // setup() passes no `logger` key: the runtime prints the operator lines itself.
    const session = sessionWithReply(env.mock, { goal: { objective: secretObjective }, reply: { text: secretReply } })
    // Each turn says something new, so the no-progress breaker has no reason to stop the goal.
    env.mock.scriptReplies(session.id, [{ text: `${secretReply} first pass`, tokens: { input: 10 } }, { text: `${secretReply} tests written and passing`, tokens: { input: 10 } }])
    env.runtime.processPayload({ type: 'session.status', properties: { sessionID: session.id, status: { type: 'idle' } } }, '/tmp/project')
    await waitFor(() => goalOf(env.mock, session.id).status === 'complete', 15000)
    const settled = `[session-goal] ${session.id} settled as complete (verified by audit)`
    await waitFor(() => printed.some(([, line]) => line === settled), 3000)
    const lines = printed.map(([, line]) => line)
    expect(printed.find(([, line]) => line === settled)[0]).toBe('log')
    expect(lines.some((line) => new RegExp(`^\\[session-goal\\] continuing ${session.id} \\(turn 1/20, tokens \\d+\\)$`).test(line))).toBe(true)
    expect(printed).toContainEqual(['warn', '[session-goal] progress audit failed (status 500)'])
    for (const line of lines) {
      expect(line.startsWith('[session-goal] ')).toBe(true)
      for (const secret of [secretObjective, secretReply, secretNote, 'provider down']) expect(line).not.toContain(secret)
    }
  })

  it('an explicit logger: null keeps the runtime silent', async () => {
    // In a fresh process, so the console it watches is touched by this runtime alone (the same
    // case beside other logging runtimes in one process: log-routing.test.mjs). The run: an audit failure, two continuations, a settle; each a console line by default.
    const script = `
      import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep, removeTempDirs } from ${JSON.stringify(pathToFileURL(path.join(root, '__test__/helpers.mjs')).href)}
      const printed = []
      for (const m of ['log', 'warn', 'error', 'info']) console[m] = (...args) => printed.push(args.join(' '))
      const failing = Object.assign(new Error('provider down'), { statusCode: 500 })
      const env = await setup({ auditor: scriptedAuditor([failing, { verdict: 'continue', note: 'n' }, { verdict: 'complete', note: 'n' }]), runtimeOptions: process.argv[1] === 'null' ? { logger: null } : {} })
      const session = sessionWithReply(env.mock)
      env.mock.scriptReplies(session.id, [{ text: 'first pass', tokens: { input: 10 } }, { text: 'tests written and passing', tokens: { input: 10 } }])
      env.runtime.processPayload({ type: 'session.status', properties: { sessionID: session.id, status: { type: 'idle' } } }, '/tmp/project')
      await waitFor(() => goalOf(env.mock, session.id).status === 'complete', 15000)
      await sleep(500)
      const sends = env.mock.sends(session.id).length
      await env.cleanup()
      removeTempDirs()
      process.stdout.write(JSON.stringify({ printed, sends }) + '\\n')
      process.exit(0)
    `
    const run = (logger) => JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script, logger], { cwd: root, encoding: 'utf8' }).trim().split('\n').pop())
    const silent = run('null')
    expect(silent.sends).toBeGreaterThanOrEqual(2)
    expect(silent.printed).toEqual([])
    // The same run with no logger option at all prints its operator lines.
    const loud = run('none')
    expect(loud.printed.some((line) => line.includes('settled as complete'))).toBe(true)

    const printed = []
    vi.spyOn(console, 'log').mockImplementation((...args) => printed.push(args.join(' ')))
    vi.spyOn(console, 'warn').mockImplementation((...args) => printed.push(args.join(' ')))
    const { withDefaultLogger } = require('../lib/operator-console.js')
    const options = { logger: null, openCode: { baseUrl: 'http://127.0.0.1:9' } }
    expect(withDefaultLogger(options)).toBe(options)
    const { printOperatorLine } = require('../lib/operator-console.js')
    printOperatorLine('info', '[session_goal] goal written session=ses_1')
    printOperatorLine('info', '[session-goal] ses_1 settled as blocked (token budget reached)')
    expect(printed).toEqual(['[session-goal] ses_1 settled as blocked (token budget reached)'])
  })
})

describe('a binary that does not load', () => {
  // This host's platform (linux-x64-gnu, linux-arm64-gnu, linux-x64-musl, win32-x64-msvc, ...):
  // the suite also runs on the other platforms' own Node (npm run test:platforms).
  const platform = require('../lib/load-native.js').hostPlatform()
  const platformPackage = `session-goal-runtime-${platform}`

  // A copy of the package's JavaScript in a temporary directory, with or without a binary.
  function packageCopy({ binary } = {}) {
    const dir = tempDir('goal-pkg-')
    for (const file of ['package.json', 'runtime.js', 'runtime.mjs', 'index.js']) fs.copyFileSync(path.join(root, file), path.join(dir, file))
    fs.cpSync(path.join(root, 'lib'), path.join(dir, 'lib'), { recursive: true })
    if (binary !== undefined) fs.writeFileSync(path.join(dir, `session-goal-runtime.${platform}.node`), binary)
    return dir
  }

  function loadError(dir, prelude = '') {
    const script = `${prelude}; try { require(${JSON.stringify(path.join(dir, 'runtime.js'))}); console.log('LOADED') } catch (e) { console.log(JSON.stringify({ message: e.message, code: e.code, pkg: e.platformPackage })) }`
    const out = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: '' } })
    return JSON.parse(out.trim().split('\n').pop())
  }

  it('missing: names the platform package it looked for', () => {
    const error = loadError(packageCopy())
    expect(error.code).toBe('ERR_SESSION_GOAL_NATIVE')
    expect(error.pkg).toBe(platformPackage)
    expect(error.message).toContain(platformPackage)
    expect(error.message).toContain('not installed')
    expect(error.message).not.toMatch(/npm has a bug/)
  })

  it('corrupt: says the binary failed to load and why', () => {
    const error = loadError(packageCopy({ binary: 'not a shared library' }))
    expect(error.code).toBe('ERR_SESSION_GOAL_NATIVE')
    expect(error.message).toContain(platformPackage)
    // The system loader's own reason: glibc's ("invalid ELF header", "file too short"), musl's
    // ("Exec format error"), Windows' error 193 ("is not a valid Win32 application"; wine's
    // wording: "Bad EXE format").
    expect(error.message).toMatch(
      process.platform === 'win32'
        ? /failed to load \([\s\S]*(not a valid Win32 application|Bad EXE format)[\s\S]*\)/
        : /failed to load \(.*(ELF|too short|Exec format error).*\)/,
    )
  })

  it('unsupported platform: lists the prebuilt platforms', () => {
    const error = loadError(packageCopy(), "Object.defineProperty(process, 'platform', { value: 'freebsd' })")
    expect(error.code).toBe('ERR_SESSION_GOAL_NATIVE')
    expect(error.message).toMatch(/no prebuilt binary for this platform \(freebsd-/)
    expect(error.message).toContain('linux-x64-gnu')
  })
})
