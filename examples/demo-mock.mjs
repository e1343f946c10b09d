// Drives one goal from active to complete against the in-process mock OpenCode, calling the
// package exactly as OpenChamber's server calls its JavaScript runtime: the same option names,
// the global SSE envelope unwrapped, `processPayload(payload, directory)` for every event (the
// stream read by the package's event follower, which hands each payload over and delivers
// nothing itself: `deliver: false`).
// Prints each step of the goal's life. Exit code 0 when the goal completed. Its data directory
// (objective files, audit trail) is a temporary one, removed at the end: nothing is written
// into the home directory.
import { createRequire } from 'node:module'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startMockOpenCode } from '../__test__/mock/opencode.mjs'

const require = createRequire(import.meta.url)
const { createEventFollower, createSessionGoalRuntime } = require('../runtime.js')

const mock = await startMockOpenCode({ heartbeatMs: 60_000, replyDelayMs: 40 })
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'goal-demo-mock-data-'))
const directory = '/tmp/demo-project'
const started = Date.now()
const log = (line) => console.log(`[${String(Date.now() - started).padStart(5)} ms] ${line}`)

// OpenChamber's small-model module, reduced to a scripted auditor.
let audits = 0
const smallModelModule = {
  async generateSmallModelText(request) {
    audits += 1
    const verdict = audits < 3 ? { verdict: 'continue', note: `step ${audits} verified; more remains` } : { verdict: 'complete', note: 'parser handles nested lists; tests pass' }
    log(`auditor (${request.preferredProviderID}/${request.preferredModelID}, restricted=${request.restrictToPreferredProvider}) → ${verdict.verdict}`)
    return { text: JSON.stringify(verdict), providerID: 'mock', modelID: 'mock-small' }
  },
}

// The settle's notification follows its metadata write: the demo waits for it before stopping.
let notified = false
const sessionGoalRuntime = createSessionGoalRuntime({
  buildOpenCodeUrl: (path, prefix = '') => `${mock.url}${prefix}${path}`,
  getOpenCodeAuthHeaders: () => ({ authorization: 'Basic ' + Buffer.from('opencode:demo').toString('base64') }),
  getSmallModelService: async () => smallModelModule,
  emitGoalNotification: (event) => {
    notified = true
    log(`notification: ${event.title} — ${event.body}`)
  },
  idleQuietMs: 200,
  kickoffQuietMs: 100,
  maxAutoTurns: 20,
  // OpenChamber's server leaves this out and uses its own data folder (~/.config/openchamber);
  // the demo is not OpenChamber, so it keeps its files to itself.
  settings: { dataDir },
})

// The global event hub: each payload of OpenCode's global stream, forwarded by the host.
const stream = createEventFollower({
  buildOpenCodeUrl: (path, prefix = '') => `${mock.url}${prefix}${path}`,
  deliver: false,
  onPayload: (payload, dir) => sessionGoalRuntime.processPayload(payload, dir),
})

const session = mock.createSession({ directory, title: 'Nested lists' })
mock.addUserMessage(session.id, 'Make the parser handle nested lists')
mock.addAssistantMessage(session.id, { text: 'Done: skeleton. Verified: unit tests compile. Remaining: nesting.', tokens: { input: 4000, output: 300 } })
let turn = 0
mock.scriptReplies(session.id, [
  () => {
    turn += 1
    return { text: `Done: step ${turn}. Verified: tests. Remaining: ${turn < 3 ? 'more' : 'nothing'}.`, tokens: { input: 4000 + turn * 1500, output: 200, cache: { read: 500 } } }
  },
])
await mock.waitFor(() => mock.eventStreams > 0, { timeoutMs: 3000 })
const goal = {
  id: Date.now().toString(36) + 'demo01',
  objective: 'Make the parser handle nested lists',
  objectiveFile: false,
  status: 'active',
  tokenBudget: 50_000,
  tokensUsed: 0,
  turnsUsed: 0,
  blockedStreak: 0,
  auditFailStreak: 0,
  note: '',
  statusReason: '',
  lastAccountedMessageID: '',
  createdAt: Date.now(),
  updatedAt: Date.now(),
}
log(`session ${session.id}: goal set — "${goal.objective}" (budget ${goal.tokenBudget} tokens)`)
mock.setMetadata(session.id, { openchamber: { goal } })

let last = ''
const deadline = Date.now() + 20_000
for (;;) {
  const current = mock.getSession(session.id).metadata?.openchamber?.goal
  const line = `goal ${current.status}: turn ${current.turnsUsed}, tokens ${current.tokensUsed}/${current.tokenBudget}${current.note ? `, note "${current.note}"` : ''}${current.statusReason ? ` (${current.statusReason})` : ''}`
  if (line !== last) {
    log(line)
    last = line
  }
  if (current.status !== 'active' || Date.now() > deadline) break
  await new Promise((resolve) => setTimeout(resolve, 20))
}
log(`continuations sent: ${mock.prompts.length}`)
const final = mock.getSession(session.id).metadata.openchamber.goal
while (final.status !== 'active' && !notified && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
stream.close()
await sessionGoalRuntime.stop()
await mock.close()
fs.rmSync(dataDir, { recursive: true, force: true })
process.exitCode = final.status === 'complete' ? 0 : 1
