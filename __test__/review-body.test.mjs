// The reviewer's prompt as it reaches OpenCode, byte for byte: the mock OpenCode keeps each
// request's body text as it arrived (mock.keepRawBodies), and the test compares that text, not a
// parsed object, so the order of the `tools` keys is checked too. OpenCode reads that map key by
// key and the last key that matches a tool wins: `"*": false` first closes every tool (MCP,
// plugin and custom ones included), the reading tools after it open again. See docs/review.md
// and docs/security.md.
import { afterEach, describe, expect, it } from 'vitest'
import { goalOf, scriptedAuditor, sessionWithReply, setup, waitFor } from './helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const DIR = '/tmp/review-body-project'
const TOOLS = '"tools":{"*":false,"read":true,"grep":true,"glob":true,"list":true}'
const criterion = { id: 'c1', text: 'The parser handles nested lists', source: 'user', state: 'unmet' }
const completeAudit = { verdict: 'complete', note: 'done', criteria: [{ id: 'c1', state: 'met', evidence: ['e1'] }] }
/** A finished `bash` tool part: the reply's evidence item e1. */
const ranTests = {
  type: 'tool',
  tool: 'bash',
  state: { status: 'completed', input: { command: 'npm test', description: 'run' }, output: '', title: 'npm test', metadata: { exit: 0, output: '', description: 'run' }, time: { start: 1, end: 2 } },
}
const approve = { text: JSON.stringify({ verdict: 'approve', note: 'ok', criteria: [{ id: 'c1', state: 'met', evidence: ['src/parse.js:1'] }], findings: [] }) }

/** The prompt_async requests to the goal's reviewer child sessions, as recorded at the wire. */
function reviewerPosts(mock, parentID) {
  const children = mock.sessions().filter((s) => s.parentID === parentID).map((s) => s.id)
  return mock.requests.filter((r) => r.method === 'POST' && children.some((id) => r.path === `/session/${id}/prompt_async`))
}

/** The body the runtime must send, its prompt text taken from the request (checked elsewhere). */
const expectedBody = (text) =>
  `{"model":{"modelID":"mock-model","providerID":"mock"},"agent":"build",${TOOLS},"parts":[{"text":${JSON.stringify(text)},"type":"text"}]}`

async function reviewed(children) {
  env = await setup({ auditor: scriptedAuditor([completeAudit]), runtimeOptions: { tunables: { reviewTimeoutMs: 400 } } })
  const { mock } = env
  mock.keepRawBodies = true
  mock.setFiles(DIR, ['src/parse.js'])
  mock.scriptChildren(children)
  const session = sessionWithReply(mock, { directory: DIR, goal: { criteria: [criterion], criteriaIssued: 1, review: true }, reply: { parts: [ranTests] } })
  mock.setStatus(session.id, 'idle')
  return { mock, session }
}

describe("the reviewer's prompt body at the wire", () => {
  it('is exactly model, agent, the tools map with the wildcard first, then the text part', async () => {
    const { mock, session } = await reviewed([approve])
    await waitFor(() => goalOf(mock, session.id)?.status === 'complete', 10000)
    expect(goalOf(mock, session.id).cause.code).toBe('reviewApproved')

    const posts = reviewerPosts(mock, session.id)
    expect(posts).toHaveLength(1)
    const [post] = posts
    expect(post.headers['content-type']).toBe('application/json')
    expect(typeof post.rawBody).toBe('string')
    expect(post.rawBody).toBe(expectedBody(post.body.parts[0].text))
    // The same check without the prompt text: the map's keys in this order, the wildcard first.
    expect(post.rawBody).toContain(TOOLS)
    expect(post.rawBody.indexOf('"*":false')).toBeLessThan(post.rawBody.indexOf('"read":true'))
    expect(post.body.parts[0].text).toContain('You are a reviewer.')
  })

  it('the retry after an unreadable answer carries the same tools map, in the same order', async () => {
    const { mock, session } = await reviewed([{ text: 'Looks good to me!' }])
    await waitFor(() => goalOf(mock, session.id)?.status === 'blocked', 10000)
    const posts = reviewerPosts(mock, session.id)
    expect(posts).toHaveLength(2)
    for (const post of posts) expect(post.rawBody).toBe(expectedBody(post.body.parts[0].text))
    expect(posts[1].body.parts[0].text).toContain('could not be read')
  })
})
