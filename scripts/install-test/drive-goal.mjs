// Installed package: one goal from active to complete against the mock OpenCode, wired the way
// OpenChamber's server wires its runtime (its option names, the global event stream unwrapped,
// processPayload(payload, directory)), the stream read by the package's event follower with the
// same flat connection (`deliver: false`: the host forwards), the goal installed with the
// reference's createSessionGoal.
// Then `session-goal doctor` (the installed CLI, on the same Node) reads that goal back.
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { createEventFollower, createSessionGoal, createSessionGoalRuntime } from 'session-goal-runtime'

const mockPath = process.argv[2]
const { startMockOpenCode } = await import(pathToFileURL(mockPath).href)
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'install-test-data-'))
process.env.OPENCHAMBER_DATA_DIR = dataDir

const mock = await startMockOpenCode({ heartbeatMs: 60_000, replyDelayMs: 20 })
const directory = '/tmp/install-test-project'
const authHeaders = { authorization: 'Basic ' + Buffer.from('opencode:install-test').toString('base64') }
let audits = 0
const smallModelService = {
  async generateSmallModelText() {
    audits += 1
    const verdict = audits < 2 ? { verdict: 'continue', note: 'one step left' } : { verdict: 'complete', note: 'all steps verified' }
    return { text: JSON.stringify(verdict), providerID: 'mock', modelID: 'small' }
  },
}
const notifications = []
const sessionGoalRuntime = createSessionGoalRuntime({
  buildOpenCodeUrl: (apiPath, prefix = '') => `${mock.url}${prefix}${apiPath}`,
  getOpenCodeAuthHeaders: () => authHeaders,
  getSmallModelService: async () => smallModelService,
  emitGoalNotification: (event) => notifications.push(event),
  idleQuietMs: 150,
  kickoffQuietMs: 100,
  maxAutoTurns: 5,
  logger: () => {},
})

const statuses = []
const events = createEventFollower({
  buildOpenCodeUrl: (apiPath, prefix = '') => `${mock.url}${prefix}${apiPath}`,
  getOpenCodeAuthHeaders: () => authHeaders,
  deliver: false,
  onStatus: (status) => statuses.push(status.state),
  onPayload: (payload, payloadDirectory) => sessionGoalRuntime.processPayload(payload, payloadDirectory),
})
await mock.waitFor(() => mock.eventStreams > 0 && statuses.includes('connected'), { timeoutMs: 5000 })

const session = mock.createSession({ directory, title: 'install test' })
mock.addUserMessage(session.id, 'Add the CSV export')
mock.addAssistantMessage(session.id, { text: 'Done: writer. Verified: unit test. Remaining: the header row.', tokens: { input: 2000, output: 100 } })
mock.scriptReplies(session.id, [{ text: 'Done: header row. Verified: export test. Remaining: nothing.', tokens: { input: 2600, output: 120 } }])
const warnings = []
const installed = await createSessionGoal({
  baseUrl: mock.url,
  authHeaders,
  sessionID: session.id,
  directory,
  objective: 'Add the CSV export with a header row',
  tokenBudget: 50000,
  onWarning: (message, error) => warnings.push([message, error]),
})
const goalOf = () => mock.getSession(session.id)?.metadata?.openchamber?.goal
const seen = [goalOf().status]
const deadline = Date.now() + 20000
while (goalOf().status !== 'complete') {
  if (!seen.includes(goalOf().status)) seen.push(goalOf().status)
  if (Date.now() > deadline) throw new Error(`goal still ${goalOf().status} after 20 s`)
  await new Promise((resolve) => setTimeout(resolve, 20))
}
seen.push('complete')
const goal = goalOf()

// The CLI's doctor on the finished goal, in a child process on this same Node (process.execPath),
// while the mock still answers (so asynchronously: this process serves the mock).
const cliPath = path.join(path.dirname(createRequire(import.meta.url).resolve('session-goal-runtime/package.json')), 'bin', 'session-goal.js')
const doctorArgs = [cliPath, 'doctor', session.id, '--json', '--url', mock.url, '--directory', directory, '--data-dir', dataDir]
const doctor = await new Promise((resolve, reject) => {
  execFile(process.execPath, doctorArgs, { timeout: 60_000 }, (error, stdout, stderr) =>
    error ? reject(new Error(`session-goal doctor failed: ${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
  )
})
if (doctor.status !== 'complete' || doctor.goalId !== goal.id || doctor.cause?.code !== 'verified') throw new Error(`session-goal doctor: ${JSON.stringify(doctor).slice(0, 400)}`)

const unauthenticated = mock.requests.filter((r) => r.headers.authorization !== authHeaders.authorization)
events.close()
await sessionGoalRuntime.stop()
await mock.close()
fs.rmSync(dataDir, { recursive: true, force: true })
if (installed.goal.id !== goal.id) throw new Error('goal replaced')
if (goal.turnsUsed < 1) throw new Error(`no continuation: ${JSON.stringify(goal)}`)
if (unauthenticated.length) throw new Error(`${unauthenticated.length} request(s) without the host's auth header`)
console.log(`goal: ${seen.join(' → ')} (${goal.statusReason}; ${goal.turnsUsed} continuation, ${audits} audits, objectiveFile=${goal.objectiveFile}, ${warnings.length} warnings)`)
console.log(`cli: session-goal doctor ${session.id} → ${doctor.status} (cause ${doctor.cause.code}, fix ${doctor.fixAction})`)
