// A scripted model server for tests and the demo: answers the OpenAI chat-completions API
// (`POST /v1/chat/completions`, streaming or not) and the Anthropic messages API
// (`POST /v1/messages`, non-streaming) from per-scenario scripts. Plain node:http, no
// dependencies, loopback only.
//
//   import { startScriptedModel, scenarioTag } from './mock/model.mjs'
//   const model = await startScriptedModel()
//   model.scenario('done-in-two', {
//     turns:  [{ text: 'Step 1 done.', usage: { prompt_tokens: 3000, completion_tokens: 200 } }],
//     audits: [{ verdict: 'continue', note: 'step 2 left' }, { verdict: 'complete', note: 'all done' }],
//   })
//   // any prompt that contains scenarioTag('done-in-two') is answered from that script
//
// ROUTING. A request belongs to the scenario whose tag (`[scenario:NAME]`) appears anywhere in
// its messages: the first user prompt of a session carries it into every later turn, and the
// progress audit quotes the objective, which carries it too. Untagged requests go to
// `defaultScenario` when one is given (the demo has a single conversation). A request is classified as
//   'audit'  its system prompt is the goal auditor's (contains AUDIT_SYSTEM_MARK),
//   'assist' its system prompt is session assist's (contains ASSIST_SYSTEM_MARK), answered from
//            the script's `assists: [{ recap, suggestion }]`,
//   'title'  OpenCode's session-title generator (system prompt about a title), answered with a
//            fixed short title,
//   'review' a goal reviewer's turn (a user message of the conversation holds REVIEW_MARK: the
//            reviewer's prompt, crates/goal-core/src/goal/decide/review_rules.rs), answered from
//            the script's `reviews` (entries as turn entries: text, toolCalls, usage),
//   'agent'  anything else (a working turn of the session's agent).
//
// SCRIPTS. `scenario(name, { turns, audits })`; each request of a kind takes the next entry, the
// last one repeats. Turn entries: `{ text, usage: {prompt_tokens, completion_tokens}, delayMs?,
// stall?, toolCalls? }` — `toolCalls: [{ name, arguments }]` makes the model call OpenCode's tools
// (finish `tool_calls`); OpenCode runs them and asks again, which takes the next turn entry — `stall: true` streams the first words, then holds the response open until the
// client goes away (an abort) or the server closes. Audit entries: `{ verdict, note, criteria?,
// derivedCriteria?, blocker? }` (answered as the JSON object; see docs/criteria.md), `{ text }` (raw content), `{ status, body?, headers? }` (an HTTP error,
// e.g. a 429 with `retry-after`), `{ content: '',
// finish: 'length' }` (output exhausted), `{ reasoning, content: '' }` (reasoning only).
//
// RECORDING. `model.requests`: `{ kind, scenario, api: 'openai'|'anthropic', path, model, stream,
// system, prompt, body, auth: {bearer, xApiKey, anthropicVersion}, at }` per request. The key
// values are kept so tests can check which key was sent; never print them.

import http from 'node:http'

/** A phrase of the goal auditor's system prompt (crates/goal-core/src/text/prompts.rs). */
export const AUDIT_SYSTEM_MARK = 'You review how far a coding agent has come toward a goal'
/** A phrase of the session-assist system prompt (crates/goal-core/src/text/prompts.rs). */
export const ASSIST_SYSTEM_MARK = 'You read the latest exchange between a user and a coding agent'

/** A phrase of the goal reviewer's prompt (crates/goal-core/src/goal/decide/review_rules.rs). */
export const REVIEW_MARK = 'You are a reviewer. Another agent says it achieved the objective below.'

/** The marker that routes a conversation to a scenario script. */
export const scenarioTag = (name) => `[scenario:${name}]`

const TAG_PATTERN = /\[scenario:([A-Za-z0-9_.-]+)\]/

function textOf(content) {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === 'string' ? part : typeof part?.text === 'string' ? part.text : ''))
      .join('\n')
  }
  return ''
}

function readBody(req) {
  return new Promise((resolve) => {
    const chunks = []
    req.on('data', (chunk) => chunks.push(chunk))
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null'))
      } catch {
        resolve(undefined)
      }
    })
    req.on('error', () => resolve(undefined))
  })
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Starts the server on 127.0.0.1 (port 0 = any free port unless given).
 * @param {{ port?: number, title?: string, defaultScenario?: string, defaultTurn?: object, defaultAudit?: object }} options
 */
export async function startScriptedModel(options = {}) {
  const scenarios = new Map() // name -> { turns, audits, used: {agent, audit} }
  const requests = []
  const openResponses = new Set()
  const stalls = new Map() // scenario -> number of turns held open so far
  const title = options.title ?? 'Scripted session'
  const defaultTurn = options.defaultTurn ?? { text: 'Nothing scripted for this conversation.', usage: { prompt_tokens: 100, completion_tokens: 10 } }
  const defaultAudit = options.defaultAudit ?? { verdict: 'continue', note: 'no script' }
  const defaultAssist = options.defaultAssist ?? { recap: 'No script for this recap.', suggestion: 'Continue.' }
  let sequence = 0

  const nextEntry = (scenario, kind) => {
    const script = scenarios.get(scenario)
    const list = kind === 'audit' ? script?.audits : kind === 'assist' ? script?.assists : kind === 'review' ? script?.reviews : script?.turns
    if (!script || !Array.isArray(list) || list.length === 0) {
      return kind === 'audit' ? defaultAudit : kind === 'assist' ? defaultAssist : defaultTurn
    }
    const index = script.used[kind]++
    return list[Math.min(index, list.length - 1)]
  }

  const classify = (system, userText) => {
    if (system.includes(AUDIT_SYSTEM_MARK)) return 'audit'
    if (system.includes(ASSIST_SYSTEM_MARK)) return 'assist'
    if (/\btitle\b/i.test(system) && /generat|summar/i.test(system)) return 'title'
    if (userText.includes(REVIEW_MARK)) return 'review'
    return 'agent'
  }

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1')
    const api = url.pathname.endsWith('/chat/completions') ? 'openai' : url.pathname.endsWith('/messages') ? 'anthropic' : null
    if (req.method !== 'POST' || !api) {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: 'not found', type: 'not_found' } }))
      return
    }
    const body = await readBody(req)
    if (!body || typeof body !== 'object') {
      res.writeHead(400, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: 'invalid JSON', type: 'invalid_request_error' } }))
      return
    }
    const messages = Array.isArray(body.messages) ? body.messages : []
    const system =
      api === 'anthropic'
        ? textOf(body.system)
        : messages.filter((m) => m?.role === 'system' || m?.role === 'developer').map((m) => textOf(m.content)).join('\n')
    const conversation = messages.map((m) => textOf(m?.content)).join('\n')
    const prompt = textOf(messages.filter((m) => m?.role === 'user').at(-1)?.content)
    const scenario = (conversation.match(TAG_PATTERN) ?? system.match(TAG_PATTERN))?.[1] ?? options.defaultScenario ?? ''
    const kind = classify(system, messages.filter((m) => m?.role === 'user').map((m) => textOf(m.content)).join('\n'))
    const authorization = String(req.headers.authorization ?? '')
    requests.push({
      kind,
      scenario,
      api,
      path: url.pathname,
      model: body.model,
      stream: body.stream === true,
      system,
      prompt,
      body,
      auth: {
        bearer: authorization.startsWith('Bearer ') ? authorization.slice(7) : '',
        xApiKey: String(req.headers['x-api-key'] ?? ''),
        anthropicVersion: String(req.headers['anthropic-version'] ?? ''),
      },
      at: Date.now(),
    })

    let entry
    if (kind === 'title') entry = { text: title, usage: { prompt_tokens: 50, completion_tokens: 5 } }
    else if (kind === 'audit' || kind === 'assist' || kind === 'review') entry = nextEntry(scenario, kind)
    else entry = nextEntry(scenario, 'agent')
    if (typeof entry === 'function') entry = entry({ kind, scenario, body })
    if (entry?.delayMs) await sleep(entry.delayMs)

    if (entry?.status) {
      res.writeHead(entry.status, { 'content-type': 'application/json', ...(entry.headers ?? {}) })
      res.end(JSON.stringify(entry.body ?? { error: { message: `scripted ${entry.status}`, type: 'scripted_error' } }))
      return
    }
    const reply = replyOf(entry)
    const id = `scripted-${++sequence}`
    if (api === 'anthropic') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(anthropicMessage(id, body.model, reply)))
      return
    }
    if (body.stream === true) {
      streamCompletion(req, res, id, body.model, reply, entry?.stall === true, () => {
        stalls.set(scenario, (stalls.get(scenario) ?? 0) + 1)
      })
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(chatCompletion(id, body.model, reply)))
  })

  // A stalled stream is tracked so close() can end it.
  server.on('request', (req, res) => {
    openResponses.add(res)
    res.on('close', () => openResponses.delete(res))
  })

  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', resolve)
  })
  const port = server.address().port
  const url = `http://127.0.0.1:${port}`

  return {
    url,
    /** Base URL for provider options (OpenAI-compatible and Anthropic clients append their paths). */
    baseURL: `${url}/v1`,
    requests,
    /** Registers (or replaces) the script of one scenario. */
    scenario(name, script) {
      scenarios.set(name, { turns: script.turns ?? [], audits: script.audits ?? [], assists: script.assists ?? [], reviews: script.reviews ?? [], used: { agent: 0, audit: 0, assist: 0, review: 0 } })
      return scenarioTag(name)
    },
    /** Resolves once `count` `stall: true` turns of the scenario have been held open. */
    async waitForStall(name, { count = 1, timeoutMs = 20_000 } = {}) {
      const deadline = Date.now() + timeoutMs
      while ((stalls.get(name) ?? 0) < count) {
        if (Date.now() > deadline) throw new Error(`no stalled turn for scenario ${name}`)
        await sleep(10)
      }
    },
    /** Requests of one scenario and kind. */
    requestsOf(name, kind) {
      return requests.filter((r) => r.scenario === name && (!kind || r.kind === kind))
    },
    async close() {
      for (const res of openResponses) res.destroy()
      await new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

/** The auditor's JSON object of an audit entry: verdict and note, plus the graded-completion
 * keys (`criteria`, `derivedCriteria`, `blocker`) when the script gives them. */
function auditAnswer(entry) {
  const answer = { verdict: entry.verdict, note: entry.note ?? '' }
  for (const key of ['criteria', 'derivedCriteria', 'blocker']) if (entry[key] !== undefined) answer[key] = entry[key]
  return answer
}

/** Normalizes a script entry into `{content, reasoning, finish, usage}`. */
function replyOf(entry) {
  const usage = {
    prompt_tokens: entry?.usage?.prompt_tokens ?? 100,
    completion_tokens: entry?.usage?.completion_tokens ?? 10,
  }
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens
  let content
  if (typeof entry?.content === 'string') content = entry.content
  else if (typeof entry?.text === 'string') content = entry.text
  else if (entry && typeof entry.verdict === 'string') content = JSON.stringify(auditAnswer(entry))
  else if (entry && ('recap' in entry || 'suggestion' in entry)) content = JSON.stringify({ recap: entry.recap, suggestion: entry.suggestion })
  else content = ''
  const toolCalls = Array.isArray(entry?.toolCalls) ? entry.toolCalls : []
  return { content, reasoning: entry?.reasoning ?? '', finish: entry?.finish ?? (toolCalls.length ? 'tool_calls' : 'stop'), usage, toolCalls }
}

function chatCompletion(id, model, reply) {
  const message = { role: 'assistant', content: reply.content }
  if (reply.reasoning) message.reasoning_content = reply.reasoning
  if (reply.toolCalls.length) message.tool_calls = reply.toolCalls.map((call, index) => toolCallOf(id, call, index))
  return {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message, finish_reason: reply.finish }],
    usage: reply.usage,
  }
}

function anthropicMessage(id, model, reply) {
  const content = []
  if (reply.reasoning) content.push({ type: 'thinking', thinking: reply.reasoning, signature: 'scripted' })
  if (reply.content) content.push({ type: 'text', text: reply.content })
  return {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: reply.finish === 'length' ? 'max_tokens' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: reply.usage.prompt_tokens, output_tokens: reply.usage.completion_tokens },
  }
}

/** One OpenAI tool call of a reply: `{ name, arguments }` from the script. */
function toolCallOf(id, call, index) {
  return { id: `call_${id}_${index}`, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.arguments ?? {}) } }
}

/** Streams a chat completion as SSE chunks, usage on the final chunk, then `[DONE]`. */
function streamCompletion(req, res, id, model, reply, stall, onStalled) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
  const created = Math.floor(Date.now() / 1000)
  const chunk = (delta, finish = null, usage) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`
  const words = reply.content.split(/(?<=\s)/)
  res.write(chunk({ role: 'assistant', content: '' }))
  if (stall) {
    res.write(chunk({ content: words[0] ?? '' }))
    onStalled()
    // Held open: the client's abort (or the server's close) ends it.
    return
  }
  for (const word of words) if (word) res.write(chunk({ content: word }))
  reply.toolCalls.forEach((call, index) => res.write(chunk({ tool_calls: [{ index, ...toolCallOf(id, call, index) }] })))
  res.write(chunk({}, reply.finish, reply.usage))
  res.write('data: [DONE]\n\n')
  res.end()
}
