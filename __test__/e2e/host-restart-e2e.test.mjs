// A goal outlives its host, on a real `opencode serve` (docs/forks-and-restarts.md, "A host
// started again"). The host runs as OpenChamber's server does, in a process of its own
// (__test__/host-process.mjs: OpenChamber's option names only, so no directories, no sweep
// interval and no quiet windows are passed; every payload of OpenCode's global stream forwarded;
// the data directory from OPENCHAMBER_DATA_DIR), and reaches OpenCode through the counting proxy
// of scripts/chaos-real/proxy.mjs, so posts are counted at the wire. It is killed with SIGKILL and
// started again on the same data directory, knowing nothing. OpenCode's project is a git
// repository, and a second goal lives in a plain directory beside it: both are found again.
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { tempDataDir, waitFor } from '../helpers.mjs'
import { startHostProcess } from '../host-process.mjs'
import { startProxy } from '../../scripts/chaos-real/proxy.mjs'
import { createGoalSession, readGoal } from './opencode-server.mjs'
import { useOpenCode } from './forwarding-host.mjs'

const BOUND_MS = 60_000
const CUT_NOTE = 'The last turn was cut: it ended with no finish (OpenCode restarted or its stream broke), so it was continued without an audit.'
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const usage = (prompt, completion) => ({ prompt_tokens: prompt, completion_tokens: completion })

const env = useOpenCode({ git: true })
let model
let oc
let proxy
/** A plain directory (no git) beside the project, with the same scripted provider. */
let plain
const hosts = []

beforeAll(async () => {
  ;({ model, oc } = env)
  proxy = await startProxy(oc.url)
  plain = oc.besideProject('plain')
})
// Each case is a scenario of its own: the hosts of an earlier one are gone (a live host left
// over would act on this case's goal too, with its own data directory and trail).
const stopHosts = async () => {
  for (const host of hosts.splice(0)) await host.stop()
}
beforeEach(stopHosts)
afterAll(async () => {
  await stopHosts()
  await proxy?.close()
})

/** OpenCode's API in `directory`. */
const apiIn = (directory) => oc.apiIn(directory)

async function startHost(dataDir, options = {}) {
  const host = await startHostProcess({ url: proxy.url, dataDir, ...options })
  hosts.push(host)
  return host
}

const messagesOf = (sessionId, directory) => apiIn(directory)('GET', `/session/${sessionId}/message`)
const goalOf = (sessionId, directory) => readGoal(apiIn(directory), sessionId)
const isCut = (m) => m.info.role === 'assistant' && !m.info.time?.completed && !m.info.finish && !m.info.error
/** The continuations posted to the session, counted at the wire (the proxy), by message id. */
const continuationIds = (sessionId) => new Set(proxy.sends.filter((s) => s.sessionId === sessionId && s.continuation).map((s) => s.messageID))

/** Waits for the session's first continuation at the wire after `since`, within the bound. */
async function expectContinuedWithinBound(sessionId, since, name) {
  const first = await waitFor(() => proxy.sends.find((s) => s.sessionId === sessionId && s.continuation && s.at >= since && !s.lost), BOUND_MS + 10_000, 200)
  const ms = first.at - since
  console.log(`[host-restart-e2e] ${name}: continued ${(ms / 1000).toFixed(1)} s after the host and OpenCode were both up`)
  expect(ms).toBeLessThanOrEqual(BOUND_MS)
  return first
}

/** The goal completes with one continuation: one message id at the wire, one in the transcript. */
async function expectCompleteOnce(sessionId, directory) {
  const done = await waitFor(async () => ((await goalOf(sessionId, directory))?.status === 'complete' ? true : null), 90_000, 500)
  expect(done).toBe(true)
  expect(continuationIds(sessionId).size).toBe(1)
  const users = (await messagesOf(sessionId, directory)).filter((m) => m.info.role === 'user')
  expect(users).toHaveLength(2)
}

describe('a goal outlives its host, on a real OpenCode at OpenChamber settings', () => {
  it('a. the host killed mid-turn, the turns finishing while it is down: both goals (a git project, a plain directory) continued once within 60 s of its restart', async () => {
    const dataDir = tempDataDir()
    await startHost(dataDir)
    const goals = []
    for (const directory of [oc.directory, plain]) {
      const name = `restart-a-${goals.length}`
      const tag = model.scenario(name, {
        turns: [
          { text: 'Started: the parser skeleton is in place. Remaining: nesting.', usage: usage(800, 40), delayMs: 3000 },
          { text: 'FINISHED: nested lists parse; tests pass.', usage: usage(900, 60) },
        ],
      })
      const { sessionId } = await createGoalSession(apiIn(directory), { objective: `Make the parser handle nested lists ${tag}` })
      goals.push({ sessionId, directory })
    }
    // One second into the first turns the host is killed; the turns finish while it is down.
    await sleep(1000)
    await hosts.at(-1).kill()
    for (const { sessionId, directory } of goals) {
      await waitFor(async () => (await messagesOf(sessionId, directory)).some((m) => m.info.role === 'assistant' && m.info.time?.completed), 30_000, 200)
    }
    await sleep(5000)
    const restarted = await startHost(dataDir)
    for (const { sessionId } of goals) await expectContinuedWithinBound(sessionId, restarted.startedAt, 'a. killed mid-turn')
    for (const { sessionId, directory } of goals) await expectCompleteOnce(sessionId, directory)
  }, 240_000)

  it('b. the host killed right after its reservation, its post lost on the way: its successor takes up its lease and posts that continuation once', async () => {
    const dataDir = tempDataDir()
    const tag = model.scenario('restart-b', {
      turns: [
        { text: 'Started: the parser skeleton is in place. Remaining: nesting.', usage: usage(800, 40) },
        { text: 'FINISHED: nested lists parse; tests pass.', usage: usage(900, 60) },
      ],
    })
    await startHost(dataDir)
    const { sessionId } = await createGoalSession(apiIn(oc.directory), { objective: `Make the parser handle nested lists ${tag}` })
    proxy.loseSend(sessionId)
    const lost = await waitFor(() => proxy.sends.find((s) => s.sessionId === sessionId && s.lost), BOUND_MS, 200)
    await hosts.at(-1).kill()
    const reserved = await goalOf(sessionId, oc.directory)
    expect(reserved.lease.expiresAt).toBeGreaterThan(Date.now())
    const restarted = await startHost(dataDir)
    const posted = await expectContinuedWithinBound(sessionId, restarted.startedAt, 'b. killed after its reservation')
    // The same host by its data directory: the dead process's lease did not hold it back.
    expect(posted.at).toBeLessThan(reserved.lease.expiresAt)
    expect(posted.messageID).toBe(lost.messageID)
    await expectCompleteOnce(sessionId, oc.directory)
  }, 240_000)

  it('c. the host and OpenCode killed together mid-turn and started again: the cut turn is continued once within 60 s of both being up', async () => {
    const dataDir = tempDataDir()
    const tag = model.scenario('restart-c', {
      turns: [
        { text: 'Working on the parser', stall: true },
        { text: 'FINISHED: nested lists parse; tests pass.', usage: usage(900, 60) },
      ],
    })
    await startHost(dataDir)
    const { sessionId } = await createGoalSession(apiIn(oc.directory), { objective: `Make the parser handle nested lists ${tag}` })
    await model.waitForStall('restart-c', { timeoutMs: 60_000 })
    // The machine restarts: the host and OpenCode are killed; the host comes back first.
    await hosts.at(-1).kill()
    proxy.setDown(true)
    oc.child.kill('SIGKILL')
    await startHost(dataDir, { ready: false })
    await oc.restart()
    proxy.setDown(false)
    const bothUp = Date.now()
    const cut = (await messagesOf(sessionId, oc.directory)).filter((m) => m.info.role === 'assistant').at(-1)
    expect(isCut(cut)).toBe(true)
    await expectContinuedWithinBound(sessionId, bothUp, 'c. host and OpenCode killed together')
    const during = await goalOf(sessionId, oc.directory)
    expect(during.cutTurns).toBe(1)
    await expectCompleteOnce(sessionId, oc.directory)
    const trail = fs.readFileSync(path.join(dataDir, 'goals', `${sessionId}.history.jsonl`), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
    expect(trail.filter((line) => line.action === 'continue (turn cut)')).toMatchObject([{ cut: 1, tail: cut.info.id, reason: CUT_NOTE }])
  }, 240_000)
})
