#!/usr/bin/env node
// Two hosts in two processes against a real `opencode serve` (offline, scripted model): every goal
// needs exactly one continuation (first turn "Started…", second "FINISHED…"), and both hosts watch
// every session through their own event follower, so both tick, audit, reserve and post each turn
// at nearly the same instant. Counts continuations sent twice for one tail (must be 0).
//
//   node scripts/two-hosts-real.mjs [goals=50]
// Needs the built addon (npm run build:debug) and `npm ci` (the opencode-ai devDependency).
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { startScriptedModel, scenarioTag } from '../__test__/mock/model.mjs'
import { createGoalSession, readGoal, startOpenCode } from '../__test__/e2e/opencode-server.mjs'
import { defaultAuditor } from './faults/harness.mjs'

const require = createRequire(import.meta.url)
const here = path.dirname(fileURLToPath(import.meta.url))
const pkg = require('../runtime.js')

const GOALS = Math.max(1, Number(process.argv[2] ?? 50))
const QUIET_MS = 400
const CONTINUATION_PREFIX = 'Keep working toward the session goal'
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const model = await startScriptedModel()
for (let i = 0; i < GOALS; i++) {
  model.scenario(`two-hosts-${i}`, {
    turns: [{ text: 'Started: the parser skeleton is in place. Remaining: nesting.' }, { text: 'FINISHED: nested lists parse; tests pass.' }],
  })
}
const oc = await startOpenCode({ modelBaseURL: model.baseURL })
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'two-hosts-real-'))
let exitCode = 1
let second
let stream
let runtime
try {
  runtime = pkg.createSessionGoalRuntime({
    openCode: { baseUrl: oc.url },
    settings: { dataDir },
    idleQuietMs: QUIET_MS,
    kickoffQuietMs: 100,
    resumeKickoffMs: 50,
    generateSmallModelText: defaultAuditor,
  })
  let connected = false
  // The package's event follower delivers each event to this process's runtime.
  stream = pkg.createEventFollower({
    openCode: { baseUrl: oc.url },
    onStatus: ({ state }) => {
      if (state === 'connected') connected = true
    },
  })
  second = spawn(process.execPath, [path.join(here, 'faults', 'second-host.mjs'), oc.url, dataDir, String(QUIET_MS)], { stdio: ['pipe', 'pipe', 'inherit'] })
  let out = ''
  second.stdout.on('data', (d) => (out += d))
  const ready = Date.now() + 20_000
  while ((!connected || !out.includes('ready')) && Date.now() < ready) await sleep(50)
  if (!connected || !out.includes('ready')) throw new Error('hosts did not connect')

  const started = Date.now()
  const sessions = []
  for (let i = 0; i < GOALS; i++) {
    const objective = `Make the parser handle nested lists ${scenarioTag(`two-hosts-${i}`)}`
    sessions.push((await createGoalSession(oc.api, { objective })).sessionId)
  }
  const deadline = Date.now() + Math.max(180_000, GOALS * 4_000)
  let settled = 0
  while (Date.now() < deadline) {
    const goals = await Promise.all(sessions.map((id) => readGoal(oc.api, id).catch(() => null)))
    settled = goals.filter((g) => g && g.status !== 'active').length
    if (settled === GOALS) break
    await sleep(500)
  }
  // Let any late post land before counting.
  await sleep(QUIET_MS * 3)

  let twice = 0
  let continuations = 0
  let complete = 0
  for (const id of sessions) {
    const messages = await oc.api('GET', `/session/${id}/message`)
    const perTail = new Map()
    let tail = null
    for (const m of messages) {
      if (m.info.role === 'assistant') tail = m.info.id
      else if (m.parts.some((p) => p.type === 'text' && p.text.startsWith(CONTINUATION_PREFIX))) {
        continuations++
        perTail.set(tail, (perTail.get(tail) ?? 0) + 1)
      }
    }
    for (const n of perTail.values()) if (n > 1) twice += n - 1
    if ((await readGoal(oc.api, id))?.status === 'complete') complete++
  }
  second.stdin.end()
  const report = await new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), 5000)
    second.on('exit', () => {
      clearTimeout(timer)
      resolve(out.split('\n').find((line) => line.startsWith('{')) ?? null)
    })
  })
  const secondHost = report ? JSON.parse(report) : null
  const first = runtime.snapshot()
  const summary = {
    goals: GOALS,
    complete,
    settled,
    continuations,
    sentTwice: twice,
    firstHostContinuations: first.continuations,
    secondHostContinuations: secondHost?.continuations ?? null,
    panics: first.panics + (secondHost?.panics ?? 0),
    seconds: Math.round((Date.now() - started) / 1000),
  }
  console.log(JSON.stringify(summary))
  exitCode = twice === 0 && complete === GOALS && summary.panics === 0 ? 0 : 1
} finally {
  stream?.close()
  await runtime?.stop()
  if (second && second.exitCode === null) second.kill('SIGKILL')
  await oc.close()
  await model.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
}
process.exit(exitCode)
