// Ownership of goals that name no session (OpenChamber's UI writes them without `sessionId`):
// the owner list's shape and timing, and every order of the source's tick, the copy's tick, the
// fork and the owner list, forced by request gates. Against the mock OpenCode over real HTTP.
// docs/ownership.md states the rule these tests hold the runtime to.
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor } from './helpers.mjs'

let env
afterEach(async () => {
  // Held requests go first: the runtime's stop waits for its in-flight requests.
  env?.mock.releaseGates()
  await env?.cleanup()
  env = undefined
})

const continueVerdict = { verdict: 'continue', note: 'more to do' }
const ownerLists = (mock) => mock.requests.filter((r) => r.method === 'GET' && r.path === '/session')

describe('the mock lists sessions as OpenCode does', () => {
  it('start keeps sessions updated at or after it; roots=true leaves out children', async () => {
    env = await setup({ forward: false })
    const { mock } = env
    const older = mock.createSession({ directory: '/tmp/project' })
    await waitFor(() => Date.now() > older.time.updated + 5, 1000)
    const newer = mock.createSession({ directory: '/tmp/project' })
    const child = mock.createSession({ directory: '/tmp/project', parentID: newer.id })
    const list = async (query) => {
      const r = await fetch(`${mock.url}/session?directory=/tmp/project&${query}`)
      return { status: r.status, ids: r.ok ? (await r.json()).map((s) => s.id) : null }
    }
    expect((await list(`start=${newer.time.updated}`)).ids.sort()).toEqual([newer.id, child.id].sort())
    expect((await list(`start=${newer.time.updated}&roots=true`)).ids).toEqual([newer.id])
    expect((await list('roots=true')).ids.sort()).toEqual([older.id, newer.id].sort())
    expect((await list('start=soon')).status).toBe(400)
  })
})

describe('owner lists', () => {
  it('ask for top-level sessions updated since the goal began, and start when an event shows the goal', async () => {
    // Quiet windows of a minute: nothing ticks during this test.
    // Events are handed over one by one (no stream, so no recovery scan lists the directory).
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), forward: false, runtimeOptions: { idleQuietMs: 60_000, kickoffQuietMs: 60_000 } })
    const { mock, runtime } = env
    const source = sessionWithReply(mock)
    const goal = goalOf(mock, source.id)
    expect(goal.sessionId).toBeUndefined()
    expect(ownerLists(mock)).toHaveLength(0)
    const shown = mock.events.find((e) => e.payload.type === 'session.updated' && e.payload.properties.sessionID === source.id)
    runtime.processPayload(shown.payload, shown.directory)
    await waitFor(() => ownerLists(mock).length === 1, 5000)
    const [list] = ownerLists(mock)
    expect(list.query.roots).toBe('true')
    const start = Number(list.query.start)
    expect(Number.isInteger(start)).toBe(true)
    expect(start).toBeLessThanOrEqual(goal.createdAt - 10 * 60_000)
    expect(start).toBeGreaterThan(goal.createdAt - 20 * 60_000)
    // Started by the event alone: no tick has read the session.
    expect(mock.requests.some((r) => r.path === `/session/${source.id}`)).toBe(false)
    expect(ownerLists(mock)).toHaveLength(1)
  })
})

describe('an owner list that cannot be read', () => {
  it('leaves a goal that names no session undriven and waiting, without reads of its own, until a list shows its owner', async () => {
    env = await setup({ auditor: scriptedAuditor([continueVerdict]), runtimeOptions: { idleQuietMs: 50, kickoffQuietMs: 60_000 } })
    const { mock } = env
    // Both lists fail: the directory's and the server-wide one (whose carriers would tell the owner).
    const failing = mock.fault({ method: 'GET', path: /^\/(experimental\/)?session$/, status: 500 })
    const source = sessionWithReply(mock)
    mock.setStatus(source.id, 'idle')
    // The goal waits with a cause that says why, and the owner list is retried after the
    // directory's backoff (2.5 s).
    await waitFor(() => goalOf(mock, source.id)?.cause?.code === 'waitingForOpenCode', 8000)
    await waitFor(() => ownerLists(mock).filter((r) => r.query.roots === 'true').length >= 2, 15_000)
    expect(failing.fired).toBeGreaterThanOrEqual(2)
    const reads = mock.requests.filter((r) => r.method === 'GET' && r.path === `/session/${source.id}`).length
    // The first tick, its waiting-cause write, one follow-up the write's echo queued: no polling.
    expect(reads).toBeLessThanOrEqual(4)
    expect(mock.sends(source.id)).toHaveLength(0)
    const waiting = goalOf(mock, source.id)
    expect(waiting.sessionId).toBeUndefined()
    expect(waiting.cause).toMatchObject({ code: 'waitingForOpenCode', detail: 'GET /session → 500' })
    failing.remove()
    await waitFor(() => mock.sends(source.id).length === 1, 15_000)
    expect(goalOf(mock, source.id)).toMatchObject({ status: 'active', sessionId: source.id })
    expect(goalOf(mock, source.id).cause).toBeUndefined()
  }, 45_000)
})

describe('a settled goal', () => {
  it('is forgotten, and a copy of it announced later is listed again and adopted paused', async () => {
    const completeVerdict = { verdict: 'complete', note: 'done' }
    env = await setup({ auditor: scriptedAuditor([completeVerdict]), runtimeOptions: { idleQuietMs: 50, kickoffQuietMs: 60_000 } })
    const { mock } = env
    const source = sessionWithReply(mock)
    // Forked before the runtime ever wrote the goal; the copy stays quiet until the source settled.
    const copy = mock.forkSession(source.id)
    mock.setStatus(source.id, 'idle')
    await waitFor(() => goalOf(mock, source.id)?.status === 'complete', 5000)
    const listsBefore = ownerLists(mock).filter((r) => r.query.roots === 'true').length
    mock.setStatus(copy.id, 'idle')
    await waitFor(() => goalOf(mock, copy.id)?.status === 'paused', 5000)
    expect(goalOf(mock, copy.id).cause).toMatchObject({ code: 'inherited', detail: source.id })
    expect(mock.sends(copy.id)).toHaveLength(0)
    // The runtime forgot the settled goal's carriers: the copy's owner came from a new list.
    expect(ownerLists(mock).filter((r) => r.query.roots === 'true').length).toBeGreaterThan(listsBefore)
  })
})

/** The orders of the fork (F), the owner list's answer (L), the source's tick read (S) and the
 * copy's tick read (C); the copy's tick needs the copy, so F comes before C. */
function ownershipOrders() {
  const steps = ['F', 'L', 'S', 'C']
  const orders = []
  const permute = (done, rest) => {
    if (!rest.length) return orders.push(done)
    for (const step of rest) permute([...done, step], rest.filter((s) => s !== step))
  }
  permute([], steps)
  return orders.filter((order) => order.indexOf('F') < order.indexOf('C'))
}

/**
 * One order: a goal without `sessionId` on the source, forked before the runtime ever wrote it
 * (the source's first write is held until every step has happened).
 */
async function runOrder(order) {
  env = await setup({
    auditor: scriptedAuditor([continueVerdict, continueVerdict, continueVerdict]),
    runtimeOptions: { idleQuietMs: 50, kickoffQuietMs: 60_000, resumeKickoffMs: 60_000 },
  })
  const { mock } = env
  const held = (method, path, times = 1) => mock.gate({ method, path, times, until: 'manual' })
  // Every list of the directory (the owner list, and a recovery scan when the stream connects)
  // waits for step L.
  const list = held('GET', '/session', Infinity)
  const source = sessionWithReply(mock)
  const readSource = held('GET', `/session/${source.id}`)
  const firstWrite = held('PATCH', `/session/${source.id}`)
  let copy = null
  let readCopy = null
  const steps = {
    F: async () => {
      copy = mock.forkSession(source.id)
      readCopy = held('GET', `/session/${copy.id}`)
      // The copy is announced (idle) as soon as it exists: before its source in most orders.
      mock.setStatus(copy.id, 'idle')
    },
    L: async () => {
      await list.arrived()
      list.release()
    },
    S: async () => {
      mock.setStatus(source.id, 'idle')
      await readSource.arrived()
      readSource.release()
    },
    C: async () => {
      await readCopy.arrived()
      readCopy.release()
    },
  }
  for (const step of order) await steps[step]()
  expect(mock.sends().length, 'nothing is sent before the source writes').toBe(0)
  firstWrite.release()
  await waitFor(() => goalOf(mock, copy.id)?.status === 'paused' && mock.sends(source.id).length >= 1, 8000)
  const adopted = goalOf(mock, copy.id)
  expect(adopted).toMatchObject({ statusReason: 'copied from another session', sessionId: copy.id })
  expect(adopted.cause).toMatchObject({ code: 'inherited', detail: source.id })
  expect(goalOf(mock, source.id)).toMatchObject({ status: 'active', sessionId: source.id })
  // Counted at the wire: the source got its continuation, the copy nothing.
  expect(mock.sends(copy.id)).toHaveLength(0)
  expect(list.caught().length > 0 && readSource.caught().length === 1 && readCopy.caught().length === 1).toBe(true)
  return ownerLists(mock).filter((r) => r.query.roots === 'true').length
}

describe('ownership under every interleaving', () => {
  const orders = ownershipOrders()
  it(`a copy forked before its source's first write is adopted paused, and the source driven, in all ${orders.length} orders`, async () => {
    const listCounts = []
    for (const order of orders) {
      try {
        listCounts.push(await runOrder(order))
      } catch (error) {
        error.message = `order ${order.join(' ')}: ${error.message}`
        throw error
      } finally {
        env?.mock.releaseGates()
        await env?.cleanup()
        env = undefined
      }
    }
    console.log(`ownership interleavings covered: ${orders.length} (${orders.map((o) => o.join('')).join(', ')}); owner lists per order: ${listCounts.join(' ')}`)
    expect(orders).toHaveLength(12)
  }, 120_000)
})
