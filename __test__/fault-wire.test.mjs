// The fault suite's wire counter (scripts/faults/wire.mjs) against real request logs: a mock
// OpenCode receives the posts over HTTP, with and without faults, and the counter judges them.
import { afterEach, describe, expect, it } from 'vitest'
import { startMockOpenCode } from './mock/opencode.mjs'
import { wireReport } from '../scripts/faults/wire.mjs'

let mock
afterEach(async () => {
  await mock?.close()
  mock = undefined
})

const post = (session, messageID, { timeoutMs = 2000 } = {}) =>
  fetch(`${mock.url}/session/${session.id}/prompt_async`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messageID, parts: [{ type: 'text', text: 'Keep working' }] }),
    signal: AbortSignal.timeout(timeoutMs),
  }).then((r) => r.status, () => 'no answer')

/** The counter over everything the session received; every post answers the one tail. */
function report(session, allowedBecause) {
  return wireReport({ sends: mock.sends(session.id), admitted: mock.prompts.filter((p) => p.sessionId === session.id), tailAt: () => 'tail', allowedBecause })
}

async function start() {
  mock = await startMockOpenCode({ heartbeatMs: 60_000 })
  return mock.createSession({})
}

describe('the wire counter of the fault suite', () => {
  it('the same id again after a clean 204 is posted twice', async () => {
    const s = await start()
    expect(await post(s, 'msg_a')).toBe(204)
    expect(await post(s, 'msg_a')).toBe(204)
    expect(mock.repeatedPrompts).toHaveLength(1)
    expect(report(s)).toMatchObject({ posts: 2, reposted: 0, postedTwice: 1 })
    // Unless the case says why a second poster is expected (a second host).
    expect(report(s, 'a second host')).toMatchObject({ reposted: 1, postedTwice: 0 })
  })

  it('another id after an admitted post is posted twice, whatever the answer', async () => {
    const s = await start()
    mock.fault({ method: 'POST', path: `/session/${s.id}/prompt_async`, times: 1, status: 502, apply: true })
    expect(await post(s, 'msg_a')).toBe(502)
    expect(await post(s, 'msg_b')).toBe(204)
    expect(report(s, 'a second host')).toMatchObject({ posts: 2, postedTwice: 1 })
  })

  it('the same id after an unclear answer (502 after admission, or no answer at all) is a safe re-post', async () => {
    const s = await start()
    mock.fault({ method: 'POST', path: `/session/${s.id}/prompt_async`, times: 1, status: 502, apply: true })
    expect(await post(s, 'msg_a')).toBe(502)
    mock.fault({ method: 'POST', path: `/session/${s.id}/prompt_async`, times: 1, hang: true })
    expect(await post(s, 'msg_a', { timeoutMs: 200 })).toBe('no answer')
    await mock.waitFor(() => mock.sends(s.id)[1].answered === null)
    expect(await post(s, 'msg_a')).toBe(204)
    expect(mock.prompts).toHaveLength(1)
    expect(report(s)).toMatchObject({ posts: 3, reposted: 2, postedTwice: 0 })
  })

  it('retries before anything was admitted are no re-posts', async () => {
    const s = await start()
    mock.fault({ method: 'POST', path: `/session/${s.id}/prompt_async`, times: 2, status: 503 })
    expect(await post(s, 'msg_a')).toBe(503)
    expect(await post(s, 'msg_a')).toBe(503)
    expect(await post(s, 'msg_a')).toBe(204)
    expect(report(s)).toMatchObject({ posts: 3, reposted: 0, postedTwice: 0 })
  })
})
