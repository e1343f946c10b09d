#!/usr/bin/env node
// npm run demo — the goal loop on a real OpenCode server, with no API key and no network.
//
// Starts a scripted OpenAI-compatible model on loopback (the test suite's), a real `opencode
// serve` (devDependency opencode-ai) whose provider points at it, and the goal runtime with its
// built-in small model (OpenCode's `small_model`). Then it creates a session with a goal the way a
// host does (goal metadata through a fresh-read merge, then the first prompt) and prints the
// goal's progress until it settles. The first audit derives acceptance criteria, which later
// audits grade one by one against evidence; a `complete` verdict is not taken while one is open.
// The goal also carries an acceptance check: with every criterion met, the check still runs —
// it fails, a fix turn follows, and once the check passes a reviewer (a child session of the
// goal's session that can only read) opens report.json and signs off before the goal settles.
// Exits 0 when the goal completes.
'use strict'

const path = require('node:path')
const os = require('node:os')
const fs = require('node:fs')
const { createGoalProgress, elapsed } = require('./progress.js')

const root = path.resolve(__dirname, '..')
const OBJECTIVE = 'Add a --json flag to the CLI that writes the report as valid JSON to report.json.'
const BUDGET = 20_000
// The user's proof: the report must parse as JSON (run by OpenCode's shell endpoint).
const CHECK = `node -e 'JSON.parse(require("fs").readFileSync("report.json", "utf8"))' && echo "report.json is valid JSON"`
const TIMEOUT_MS = 180_000

// What the scripted agent and auditor say, turn by turn (usage becomes OpenCode's real tokens).
// The goal has no acceptance criteria: the first audit derives two, in that same call. Each
// later audit grades them against the turn's numbered evidence ([e1] is the turn's tool call),
// so they are met one by one and the continuations name the one still open. The third turn
// writes a report with an unquoted date and claims success; the auditor believes it and grades
// both criteria met; the acceptance check does not. The fix turn (the continuation quotes the
// check's failure) repairs it, and only once the check passes does the goal settle.
const SCRIPT = {
  turns: [
    { text: '', toolCalls: [{ name: 'write', arguments: { filePath: 'cli.js', content: "const json = process.argv.includes('--json')\n" } }], usage: { prompt_tokens: 1500, completion_tokens: 60 } },
    { text: 'Started: the --json flag is parsed in cli.js. Remaining: write the report.', usage: { prompt_tokens: 1700, completion_tokens: 80 } },
    { text: '', toolCalls: [{ name: 'write', arguments: { filePath: 'report.json', content: '{"title": "weekly", "date": 2026-12-01}\n' } }], usage: { prompt_tokens: 1900, completion_tokens: 60 } },
    { text: 'Done: --json writes the report to report.json. Remaining: nothing.', usage: { prompt_tokens: 2100, completion_tokens: 90 } },
    { text: '', toolCalls: [{ name: 'read', arguments: { filePath: 'report.json' } }], usage: { prompt_tokens: 2300, completion_tokens: 40 } },
    { text: 'Verified: report.json holds the report. Remaining: nothing.', usage: { prompt_tokens: 2500, completion_tokens: 70 } },
    { text: '', toolCalls: [{ name: 'write', arguments: { filePath: 'report.json', content: '{"title": "weekly", "date": "2026-12-01T00:00:00Z"}\n' } }], usage: { prompt_tokens: 2700, completion_tokens: 70 } },
    { text: 'Fixed: dates are written as ISO 8601 strings, so report.json parses. Remaining: nothing.', usage: { prompt_tokens: 2900, completion_tokens: 110 } },
  ],
  audits: [
    {
      verdict: 'continue',
      note: 'flag parsed; no report yet',
      derivedCriteria: ['The --json flag writes the report to report.json', 'report.json parses as valid JSON'],
    },
    { verdict: 'complete', note: 'the --json flag writes report.json', criteria: [{ id: 'c1', state: 'met', evidence: ['e1'] }] },
    { verdict: 'complete', note: 'report.json read back', criteria: [{ id: 'c2', state: 'met', evidence: ['e1'] }] },
    { verdict: 'complete', note: 'report.json is written with ISO dates', criteria: [{ id: 'c2', state: 'met', evidence: ['e1'] }] },
  ],
  // The reviewer (docs/review.md): it reads report.json with OpenCode's `read` tool (its only
  // tools read), then answers with one JSON object citing the files it looked at.
  reviews: [
    { text: '', toolCalls: [{ name: 'read', arguments: { filePath: 'report.json' } }], usage: { prompt_tokens: 1200, completion_tokens: 40 } },
    {
      text: JSON.stringify({
        verdict: 'approve',
        note: 'cli.js parses --json and report.json holds valid JSON',
        criteria: [
          { id: 'c1', state: 'met', evidence: ['cli.js:1'] },
          { id: 'c2', state: 'met', evidence: ['report.json:1'] },
        ],
        findings: [],
      }),
      usage: { prompt_tokens: 1400, completion_tokens: 90 },
    },
  ],
}

async function main() {
  const start = Date.now()
  const say = (line) => console.log(`${elapsed(start)} ${line}`)
  const cleanups = []
  const cleanup = async () => {
    while (cleanups.length) {
      try {
        await cleanups.pop()()
      } catch {
        // best effort
      }
    }
  }
  let exitCode = 1
  process.once('SIGINT', () => cleanup().then(() => process.exit(130)))

  try {
    const pkg = require(path.join(root, 'runtime.js'))
    const { startScriptedModel } = await import(path.join(root, '__test__', 'mock', 'model.mjs'))
    const { startOpenCode, createGoalSession } = await import(path.join(root, '__test__', 'e2e', 'opencode-server.mjs'))

    const model = await startScriptedModel({ defaultScenario: 'demo', title: 'Add --json flag' })
    model.scenario('demo', SCRIPT)
    cleanups.push(() => model.close())
    say(`scripted model listening at ${model.baseURL} (no API key, no network)`)

    say('starting opencode serve (the first start takes a few seconds)…')
    const oc = await startOpenCode({ modelBaseURL: model.baseURL })
    cleanups.push(() => oc.close())
    say(`OpenCode ready at ${oc.url} after ${(oc.startMs / 1000).toFixed(1)} s; project ${oc.directory}`)

    let settledGoal = null
    const progress = createGoalProgress({
      print: (line) => say(line),
      onSettled: (_sessionId, goal) => {
        settledGoal = goal
      },
    })
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'goal-demo-data-'))
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }))
    const notifications = []
    const runtime = pkg.createSessionGoalRuntime({
      openCode: { baseUrl: oc.url },
      settings: { dataDir },
      tunables: { idleQuietMs: 1000, kickoffQuietMs: 1000 },
      emitGoalNotification: (event) => notifications.push(event),
      logger: (level, message) => {
        if (level === 'warn' || level === 'error') say(`runtime ${level}: ${message}`)
        // The operator lines of the check stage, the review and each continuation, as a host prints them.
        else if (/acceptance check|review|continuing/.test(message)) say(message)
      },
    })
    cleanups.push(() => runtime.stop())
    let connected = false
    // The package's event follower delivers each event to the runtime and hands each payload to
    // the progress lines.
    const stream = pkg.createEventFollower({
      openCode: { baseUrl: oc.url },
      onPayload: (payload) => progress.onPayload(payload),
      onStatus: ({ state }) => {
        connected = connected || state === 'connected'
      },
    })
    cleanups.push(() => stream.close())
    while (!connected) await new Promise((resolve) => setTimeout(resolve, 20))

    const checks = [{ command: CHECK, timeoutMs: 60_000 }]
    const goalFields = { review: true }
    const { sessionId } = await createGoalSession(oc.api, { objective: OBJECTIVE, tokenBudget: BUDGET, title: 'Demo goal', checks, goalFields })
    say(`session ${sessionId}: goal written with 1 acceptance check and review, first prompt sent`)

    const deadline = Date.now() + TIMEOUT_MS
    while (!settledGoal && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
    if (!settledGoal) {
      say(`the goal did not settle within ${TIMEOUT_MS / 1000} s`)
    } else {
      const waitUntil = Date.now() + 2000
      while (!notifications.length && Date.now() < waitUntil) await new Promise((resolve) => setTimeout(resolve, 20))
      if (notifications.length) say(`notification: ${notifications[0].title} — ${notifications[0].body}`)
      for (const record of await runtime.history(sessionId)) {
        if (record.action !== 'check') continue
        const run = record.check
        const lines = run.outputTail.split('\n')
        const telling = lines.find((line) => /Error/.test(line)) ?? lines.at(-1)
        say(`check run: ${run.result} (exit ${run.exitStatus ?? '?'}, ${Math.round(run.durationMs)} ms) — ${telling.trim()}`)
      }
      for (const criterion of settledGoal.criteria ?? []) {
        say(`criterion ${criterion.id} (${criterion.source}): ${criterion.state}, evidence ${criterion.evidence?.join(', ') || 'none'} — ${criterion.text}`)
      }
      const { lastReview } = await runtime.explain(sessionId)
      if (lastReview) {
        const cited = lastReview.cited.map((c) => `${c.path}${c.exists ? '' : ' (not found)'}`).join(', ')
        say(`review: ${lastReview.verdict} by child session ${lastReview.sessionId}, cited ${cited || 'nothing'}`)
      }
      if (settledGoal.cause) say(`cause: ${settledGoal.cause.code}${settledGoal.cause.detail ? ` (${settledGoal.cause.detail})` : ''}`)
      const audits = model.requests.filter((r) => r.kind === 'audit').length
      const turns = model.requests.filter((r) => r.kind === 'agent').length
      const reviews = model.requests.filter((r) => r.kind === 'review').length
      say(`${turns} agent turns, ${audits} audits by the built-in small model (${settledGoal.evaluationProviderID}/${settledGoal.evaluationModelID}), ${reviews} reviewer requests`)
      exitCode = settledGoal.status === 'complete' ? 0 : 1
    }
  } catch (error) {
    console.error(`demo failed: ${error && error.message ? error.message : error}`)
    if (/Cannot find (module|native binding)|session-goal-runtime\..*\.node/.test(String(error && error.message))) {
      console.error('Build the addon first: npm run build (or npm run build:debug).')
    }
  }
  await cleanup()
  process.exit(exitCode)
}

main()
