// Drives the Tauri example (examples/tauri-goals) against the project's mock OpenCode and the
// scripted model server, from inside an X display (scripts/tauri-test.sh runs it under xvfb-run):
//   1. the page runs under the app's content security policy (tauri.conf.json), as a refused eval
//      in the page reports it; two goals are set on two sessions once the app follows the event stream;
//   2. goal "done" reaches `complete` (the app's built-in small model audits on the scripted model);
//   3. goal "long" is paused, then resumed, by clicking the page's buttons (test hooks of
//      src/test_control.rs), and both reach the goal record on the mock;
//   4. the page's text is read back and printed; a screenshot of the screen, which is the
//      window's size, is checked for size and content, printed and deleted.
// Usage: node scripts/tauri-test/drive.mjs <path to the tauri-goals binary>. Exit code 0 on success.
import { spawn, execFileSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, mkdirSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { startMockOpenCode } from '../../__test__/mock/opencode.mjs'
import { startScriptedModel } from '../../__test__/mock/model.mjs'

const binary = process.argv[2]
if (!binary || !existsSync(binary)) throw new Error(`usage: drive.mjs <tauri-goals binary> (got ${binary})`)

const started = Date.now()
const log = (line) => console.log(`[${String(Date.now() - started).padStart(6)} ms] ${line}`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
async function waitFor(what, fn, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await fn()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(50)
  }
}

const scratch = mkdtempSync(join(tmpdir(), 'tauri-goals-'))
const directory = join(scratch, 'project')
mkdirSync(directory)

// An evidence item for the auditor to cite (e1): a passing test run in the session's reply.
const testRun = {
  type: 'tool',
  tool: 'bash',
  state: { status: 'completed', input: { command: 'npm test', description: 'run the tests' }, output: 'ok', title: 'npm test', metadata: { exit: 0, output: 'ok', description: 'run the tests' }, time: { start: 1, end: 2 } },
}
const met = (id) => ({ id, state: 'met', evidence: ['e1'] })
const criteria = (...texts) => texts.map((text, i) => ({ id: `c${i + 1}`, text, source: 'user', state: 'unmet' }))

let model, mock, app
const cleanups = []
try {
  model = await startScriptedModel()
  const doneTag = model.scenario('tauri-done', {
    audits: [{ verdict: 'complete', note: 'greeting printed and checked', criteria: [met('c1'), met('c2')] }],
  })
  const longTag = model.scenario('tauri-long', {
    audits: [{ verdict: 'continue', note: 'step 1 verified; step 2 left' }],
  })
  mock = await startMockOpenCode({
    directory,
    heartbeatMs: 2000,
    config: { small_model: 'mock/mock-small' },
    providers: [{ id: 'mock', options: { baseURL: model.baseURL, apiKey: 'mock-key' }, models: { 'mock-model': {}, 'mock-small': {} } }],
  })
  log(`mock OpenCode at ${mock.url}, scripted model at ${model.baseURL}, directory ${directory}`)

  // Everything the app and its web view write goes under the scratch directory.
  const home = join(scratch, 'home')
  mkdirSync(home)
  app = spawn(binary, [], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: {
      ...process.env,
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      XDG_CACHE_HOME: join(home, '.cache'),
      XDG_DATA_HOME: join(home, '.local/share'),
      OPENCODE_URL: mock.url,
      GOALS_DIRECTORY: directory,
      OPENCHAMBER_DATA_DIR: join(scratch, 'data'),
      GOALS_IDLE_QUIET_MS: '300',
      GOALS_KICKOFF_QUIET_MS: '200',
      TAURI_GOALS_TEST_CONTROL: '1',
    },
  })
  const exited = new Promise((resolve) => app.once('exit', (code, signal) => resolve({ code, signal })))
  cleanups.push(async () => {
    if (app.exitCode === null && app.signalCode === null) {
      app.stdin.end('quit\n')
      const timer = setTimeout(() => app.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(timer)
    }
  })

  // The app's answers, one line each (see src/test_control.rs).
  const answers = []
  createInterface({ input: app.stdout }).on('line', (line) => answers.push(line))
  const ask = async (command, matches, what, timeoutMs = 15_000) => {
    const from = answers.length
    app.stdin.write(command + '\n')
    return waitFor(what ?? command, () => {
      const answer = answers.slice(from).find((line) => matches(line) || line.startsWith('error '))
      if (answer?.startsWith('error ')) throw new Error(`the app answered ${answer}`)
      return answer
    }, timeoutMs)
  }
  let reads = 0
  const readPage = async (timeoutMs) => {
    const tag = `r${++reads}`
    const answer = await ask(`read ${tag}`, (line) => line.startsWith(`page ${tag} `), 'the page text', timeoutMs)
    return JSON.parse(answer.slice(`page ${tag} `.length))
  }
  const rowOf = (text, title) => text.split('\n').find((line) => line.startsWith(title)) ?? ''
  const pageShows = async (title, ...words) => {
    let text = ''
    try {
      await waitFor(`the page to show ${title}: ${words.join(', ')}`, async () => {
        text = await readPage()
        const line = rowOf(text, title)
        return words.every((word) => line.includes(word))
      }, 30_000)
    } catch (error) {
      throw new Error(`${error.message}; the page read:\n${text}`)
    }
    return text
  }

  await waitFor('the app to follow the event stream', () => mock.eventStreams > 0, 60_000)
  log('the app follows /global/event')
  // An event sent before the page has registered its listeners is lost: ask until it answers.
  await waitFor('the page to answer', () => readPage(2000).catch(() => null), 60_000)
  log('the page answers')
  // The policy the web view enforces (tauri.conf.json's, with Tauri's own script hashes added),
  // as the page's refused eval reports it: empty when nothing was refused.
  const policyAnswer = await ask('policy p1', (line) => line.startsWith('page p1 '), 'the page policy')
  const policy = JSON.parse(policyAnswer.slice('page p1 '.length))
  for (const part of ["default-src 'self'", "script-src 'self'", "object-src 'none'", 'connect-src ipc: http://ipc.localhost']) {
    if (!policy.includes(part)) throw new Error(`the page's enforced content security policy lacks ${part}: ${JSON.stringify(policy)}`)
  }
  log('the page runs under its content security policy')

  const goal = (objective, criteriaList) => ({
    id: `goal-${Math.random().toString(36).slice(2, 8)}`, objective, objectiveFile: false, status: 'active', tokenBudget: null,
    tokensUsed: 0, turnsUsed: 0, blockedStreak: 0, auditFailStreak: 0, note: '', statusReason: '', lastAccountedMessageID: '',
    createdAt: Date.now(), updatedAt: Date.now(), criteria: criteriaList,
  })
  const session = (title, objective) => {
    const s = mock.createSession({ directory, title })
    mock.addUserMessage(s.id, objective)
    mock.addAssistantMessage(s.id, { text: 'Done: first step. Verified: npm test passes.', tokens: { input: 1200, output: 90 }, parts: [testRun] })
    return s
  }
  const done = session('Greeting', `Print a greeting and check it ${doneTag}`)
  const long = session('Two steps', `Do two steps ${longTag}`)
  mock.scriptReplies(done.id, [{ text: 'Done: greeting printed. Verified: npm test passes.', parts: [testRun] }])
  // The long goal's turns run for minutes: it is mid-turn when the page pauses it.
  mock.scriptReplies(long.id, [{ text: 'Step 2 in progress.', parts: [testRun] }], { replyDelayMs: 600_000 })
  mock.setMetadata(done.id, { openchamber: { goal: goal(`Print a greeting and check it ${doneTag}`, criteria('Greeting printed', 'Greeting checked')) } })
  mock.setMetadata(long.id, { openchamber: { goal: goal(`Do two steps ${longTag}`, criteria('Step 1 done', 'Step 2 done')) } })
  const stored = (id) => mock.getSession(id)?.metadata?.openchamber?.goal

  await waitFor('goal "done" to complete on the record', () => stored(done.id)?.status === 'complete')
  log(`goal "done" on the record: ${stored(done.id).status} (${stored(done.id).statusReason}), note "${stored(done.id).note}"`)
  await pageShows('Greeting', 'complete', '2/2 criteria met', 'greeting printed and checked')

  await waitFor('goal "long" to be mid-turn', () => stored(long.id)?.turnsUsed >= 1 && mock.status(long.id).type === 'busy')
  await pageShows('Two steps', 'active', '/2 criteria met', 'step 1 verified', 'Pause')
  log('goal "long" is active and mid-turn; clicking Pause in the window')
  const patchesBefore = mock.patches.length
  await ask(`click pause ${long.id}`, (line) => line === `clicked pause ${long.id}`)
  await waitFor('the pause to reach the record', () => stored(long.id)?.status === 'paused')
  await waitFor('the running turn to be aborted', () => mock.aborts.includes(long.id))
  const pausedPage = await pageShows('Two steps', 'paused', 'userPaused', 'Resume')
  console.log('--- page text read back from the window, goal "long" paused ---')
  console.log(pausedPage)
  console.log('--- end of page text ---')
  log(`paused on the record: status ${stored(long.id).status}, cause ${stored(long.id).cause?.code}; turn aborted`)

  await ask(`click resume ${long.id}`, (line) => line === `clicked resume ${long.id}`)
  await waitFor('the resume to reach the record', () => stored(long.id)?.status === 'active')
  const writes = mock.patches.slice(patchesBefore).filter((p) => p.sessionId === long.id).map((p) => p.body?.metadata?.openchamber?.goal)
  const pausedWrite = writes.findIndex((g) => g?.status === 'paused')
  const resumedWrite = writes.findIndex((g) => g?.status === 'active' && g?.statusReason === 'resumed')
  if (pausedWrite < 0 || resumedWrite < pausedWrite) throw new Error(`expected a paused write, then a resumed one; saw ${JSON.stringify(writes.map((g) => [g?.status, g?.statusReason]))}`)
  await pageShows('Two steps', 'active', 'Pause')
  log(`resumed on the record: PATCH #${pausedWrite + 1} paused, PATCH #${resumedWrite + 1} active (resumed)`)

  const text = await readPage()
  console.log('--- page text read back from the window, at the end ---')
  console.log(text)
  console.log('--- end of page text ---')
  for (const [title, words] of [['Greeting', ['complete', '2/2 criteria met', 'greeting printed and checked']], ['Two steps', ['active']]]) {
    const line = rowOf(text, title)
    if (!words.every((word) => line.includes(word))) throw new Error(`the page's row ${title} lacks ${words}: ${line}`)
  }

  // The screenshot: the X screen is the window's size (scripts/tauri-test.sh), so the root
  // window's image is the window's.
  const sizeAnswer = await ask('size', (line) => line.startsWith('size '))
  const [width, height] = sizeAnswer.split(' ').slice(1).map(Number)
  const shot = join(scratch, 'window.png')
  execFileSync('import', ['-window', 'root', shot])
  const [shotWidth, shotHeight, deviation, colours] = execFileSync('identify', ['-format', '%w %h %[fx:standard_deviation] %k', shot], { encoding: 'utf8' }).trim().split(' ').map(Number)
  // To look at it: TAURI_TEST_SCREENSHOT_COPY=/some/file.png (outside the temp directory).
  if (process.env.TAURI_TEST_SCREENSHOT_COPY) copyFileSync(shot, process.env.TAURI_TEST_SCREENSHOT_COPY)
  rmSync(shot)
  console.log(`screenshot: ${shotWidth}x${shotHeight} (window ${width}x${height}), ${colours} colours, standard deviation ${deviation.toFixed(4)}; deleted`)
  if (shotWidth !== width || shotHeight !== height) throw new Error(`the screenshot is ${shotWidth}x${shotHeight}, the window ${width}x${height}`)
  if (!(colours >= 16 && deviation > 0.02)) throw new Error(`the screenshot looks blank (${colours} colours, deviation ${deviation})`)
  log('the Tauri app drove a goal to complete and paused and resumed another from its window')
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch((error) => console.error(`cleanup: ${error.message}`))
  await mock?.close()
  await model?.close()
  rmSync(scratch, { recursive: true, force: true })
}
