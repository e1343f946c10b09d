// In-process mock of the OpenCode 1.18.33 HTTP server, for tests. Plain node:http, no dependencies.
// Shapes follow /work/shared/opencode/{FACTS.md, openapi-1.18.33.json, sse-global-event-capture.txt}.
//
//   import { startMockOpenCode } from './mock/opencode.mjs'
//   const mock = await startMockOpenCode({ heartbeatMs: 50 })
//   const s = mock.createSession({ directory: '/tmp/project' })
//   mock.scriptReplies(s.id, [{ text: 'done', tokens: { input: 1000, output: 50 } }])
//   ... point the runtime at mock.url ...
//   await mock.close()
//
// OPTIONS  startMockOpenCode({
//   directory='/tmp/project'  default directory for POST /session without ?directory=
//   projectID='global'        Session.projectID and the SSE envelope's "project"
//   heartbeatMs=10000         server.heartbeat period on every event stream
//   replyDelayMs=20           default delay of scripted replies
//   replies                   default reply script for sessions without their own (see scriptReplies)
//   autoUserMessage=true      every accepted prompt_async appends the user message (like the real server)
//   syncEvents=true           also emit the real server's {"payload":{"type":"sync",...}} twin after
//                             session.created/updated, message.updated, message.part.updated
//   commands                  GET /command list: [{name, description?, template, agent?, model?}]
//   config={}                 GET /config body
//   providers                 GET /provider "all": [{id, name?, options?, models?: {id: partialModel}}]
//                             (missing Provider/Model fields are filled in); default one provider
//                             "mock" with model "mock-model"
//   agents                    GET /agent list; default build + plan (primary), general (subagent)
//   now=Date.now })           clock used for every timestamp
//
// STATE HELPERS (synchronous; returned state is a deep copy; mutators throw on an unknown session)
//   mock.url                          'http://127.0.0.1:PORT'
//   await mock.close()                destroys every socket (SSE included), clears timers
//   mock.createSession({id?, directory?, parentID?, title?, metadata?, created?}) → Session
//                                     emits session.created + session.updated. Ids: 'ses_' + a
//                                     DESCENDING counter (newer sorts first, as in OpenCode).
//   mock.getSession(id) → Session|undefined        mock.sessions() → Session[] (newest first)
//   mock.deleteSession(id)                         (children too; emits session.deleted)
//   mock.setStatus(id, 'busy'|'retry'|'idle'|{type,...})   emits session.status (+ session.idle)
//   mock.status(id) → {type}                        ('idle' when absent from the map)
//   mock.addUserMessage(id, text | partInputs[], {created?, id?, agent='build',
//                       model={providerID:'mock', modelID:'mock-model'}, variant?, summary?}) → {info, parts}
//   mock.addAssistantMessage(id, {text='', parentID=<last user msg>, created?, completed=true|ms|false,
//                       tokens={input,output,reasoning,cache:{read,write}} (0s), finish='stop' (none by
//                       default when error is set), error?, summary?, providerID='mock',
//                       modelID='mock-model', agent='build', mode=agent, variant?, id?, structured?,
//                       parts? (extra parts: {type:'reasoning', text} | {type:'tool', tool, state?} ...),
//                       stepParts=true (step-start/step-finish parts)}) → {info, parts}
//   mock.completeAssistantMessage(id, messageID?, opts)  finish an unfinished reply (default: the last
//                       unfinished one) with the addAssistantMessage options → {info, parts}
//   Message ids are 'msg_' + an increasing sortable string; default time.created is now() (never
//   ahead of the clock; messages made in the same millisecond share it, as on OpenCode). Adding a message emits message.updated, then
//   message.part.updated per part.
//   mock.messages(id) → [{info, parts}] (all, oldest first; [] for an unknown session)
//   mock.setMetadata(id, metadata)    direct replace (null removes it); emits session.updated
//   mock.setPending(id, 'permission'|'question', requestID?, extra?) → request; emits
//                       permission.asked / question.asked; listed by GET /permission, GET /question
//   mock.clearPending(id?, kind?, requestID?)   emits permission.replied / question.replied
//   mock.emit(payload, directory?)    broadcast {directory, project, payload} (no directory → {payload});
//                                     payload.id is filled in. Returns the envelope.
//   mock.dropEventStreams({abrupt=false})  end (or destroy) every SSE connection
//   mock.eventStreams                 number of open event streams (getter)
//   await mock.waitFor(fn, {timeoutMs=2000, intervalMs=5})  resolves with fn()'s first truthy value
//
// RECORDING (append-only arrays; clear with `.length = 0`)
//   mock.requests  {method, path, query, body, headers, at} for every request (faulted ones too)
//   mock.prompts   {sessionId, directory, body, at, receivedAt, messageID} per accepted POST
//                  /session/:id/prompt_async (receivedAt: when the request arrived, before any
//                  injected delay; messageID: the user message it appended, or the body's
//                  messageID). A post whose messageID the session already holds (or was
//                  posted before) is not a prompt: no message, no turn, 204, recorded in
//   mock.repeatedPrompts  {sessionId, directory, body, at, receivedAt, messageID, route}
//   mock.syncPrompts {sessionId, directory, body, at} per POST /session/:id/message
//   mock.commands  {sessionId, directory, body, at} per POST /session/:id/command
//   mock.patches   {sessionId, directory, body, at} per applied PATCH /session/:id
//   mock.aborts    session ids, per POST /session/:id/abort
//   mock.events    every emitted envelope (sync twins and heartbeats excluded)
//   mock.errors    exceptions thrown by hooks / handlers (a handler exception answers 500)
//
// FAULTS  mock.fault({method?, path: '/exact/pathname' | RegExp, times=Infinity, status?, body?,
//                     contentType='application/json', delayMs?, html?, truncatedJson?, destroy?, hang?,
//                     apply?}) → {remove(), remaining}
//   Checked in order before routing; the first match is used and its `times` counts down.
//   delayMs alone: answer normally, late. status/body: answer that (status default 500, body default
//   an UnknownError). html: 200 text/html page. truncatedJson: the real answer, cut in half.
//   destroy: reset the socket, no answer. hang: never answer (until close).
//   apply: run the real handler first (side effects land, e.g. a prompt is accepted), then answer
//   with the fault. truncatedJson always applies. mock.clearFaults() removes all.
//   delayMs + apply: the handler runs at once, the answer leaves late (a slow answer, not a slow
//   request). trickleMs: the (real or faulted) answer's headers leave at once and its body in
//   eight slices spread over trickleMs. query: {name: value} — the fault only matches requests
//   with these query parameters (e.g. {directory: '/tmp/p2'}). action(request, mock): called when
//   the fault fires (after the handler when it applies), e.g. to take the server down.
//
// OUTAGES
//   mock.refuseConnections({forMs?}) closes the listener and destroys every socket (SSE and
//                     in-flight requests included): new connections are refused. With forMs the
//                     listener comes back on the same port after that long. → Promise
//   mock.acceptConnections()  listens again on the same port. → Promise
//   mock.listening    whether the listener is up (getter)
//
// BEHAVIOUR HOOKS
//   mock.onPrompt = async (sessionId, body, mock) => {}   after each accepted prompt_async
//   mock.onPatch = (sessionId, {before, after, body}, mock) => {}   synchronously after a PATCH
//                     /session/:id is applied and before it is answered (metadata before/after);
//                     state changes made here land between a writer's write and its next request
//   mock.scriptReplies(sessionId, replies, {replyDelayMs?})   (replies=null removes the script)
//     Each accepted prompt (async, sync /message, /command) then runs a turn, serialised per
//     session: status busy, an unfinished assistant reply (parentID = the prompt's user message,
//     model/agent from the prompt), after replyDelayMs it is completed from the next entry of
//     `replies` (addAssistantMessage options, or a function ({sessionId, body, mock}) => options;
//     the last entry repeats), session.error if the entry has an error, then status idle.
//     An entry with completed:false leaves the reply unfinished and the session busy.
//     POST /abort cancels the running and queued turns.
//
// HTTP API (JSON; every route takes ?directory=; unknown session → 404
//   {"name":"NotFoundError","data":{"message":...}}; bad JSON/params → 400
//   {"_tag":"InvalidRequestError","message":...,"kind":...})
//   GET  /global/health                  {healthy:true, version}
//   GET  /session?directory=&roots=&limit=&search=   newest first, filtered by directory
//   POST /session {title?, parentID?, metadata?}     → Session
//   GET  /session/status                 {[id]: {type}} for busy/retry only (directory-filtered)
//   GET|PATCH|DELETE /session/:id        PATCH {title?, metadata?, time?:{archived}}: metadata
//                                        REPLACES the whole object; null or absent keeps it
//   GET  /session/:id/children           direct children
//   GET  /session/:id/diff               session file changes (mock.setDiff; null → 404)
//   GET  /session/:id/todo               todo list (mock.setTodos; null → 404)
//   GET  /session/:id/message?limit=&before=   last N (limit 0/absent: all), oldest first
//   GET  /session/:id/message/:messageID
//   POST /session/:id/prompt_async       204; appends the user message; turn/onPrompt afterwards
//                                        (a repeated messageID: 204, nothing else)
//   POST /session/:id/message            sync prompt → {info, parts} of the reply (empty reply
//                                        without a script)
//   POST /session/:id/command {command, arguments, agent?, model?:'p/m'} → {info, parts}
//   POST /session/:id/fork {messageID?}  new session with copies of the messages BEFORE messageID
//                                        (all without it), as OpenCode does
//   POST /session/:id/abort              true; in a busy/retry session every unfinished reply gets
//                                        MessageAbortedError; session.error, status idle
//   GET  /command  GET /config  GET /provider  GET /config/providers  GET /agent
//   GET  /permission  GET /question  POST /permission/:id/reply  POST /question/:id/reply|reject
//   GET  /global/event   SSE: server.connected first, then {directory, project, payload} envelopes
//   GET  /event?directory=   SSE of bare payloads for one directory

import http from 'node:http';

const VERSION = '1.18.33';
const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SLUG_A = ['lucky', 'quiet', 'brave', 'shiny', 'gentle', 'swift', 'misty', 'calm'];
const SLUG_B = ['moon', 'river', 'forest', 'comet', 'meadow', 'harbor', 'canyon', 'breeze'];
const ABORTED = { name: 'MessageAbortedError', data: { message: 'Aborted' } };

const clone = (v) => (v === undefined ? undefined : structuredClone(v));
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const zeroTokens = () => ({ input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } });

class HttpError extends Error {
  constructor(status, body) {
    super(typeof body?.data?.message === 'string' ? body.data.message : body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}
const notFound = (message) => new HttpError(404, { name: 'NotFoundError', data: { message } });
const badRequest = (message, kind = 'Body', field) =>
  new HttpError(400, { _tag: 'InvalidRequestError', message, kind, ...(field ? { field } : {}) });

function defaultModel(providerID, id, partial = {}, baseURL = '') {
  return {
    id,
    providerID,
    api: { id, url: baseURL, npm: '@ai-sdk/openai-compatible' },
    name: id,
    family: '',
    status: 'active',
    options: {},
    headers: {},
    release_date: '2025-01-01',
    variants: {},
    ...partial,
    capabilities: {
      temperature: true, reasoning: false, attachment: false, toolcall: true,
      input: { text: true, audio: false, image: false, video: false, pdf: false },
      output: { text: true, audio: false, image: false, video: false, pdf: false },
      interleaved: false,
      ...partial.capabilities,
    },
    cost: { input: 0, output: 0, cache: { read: 0, write: 0 }, ...partial.cost },
    limit: { context: 64000, output: 4096, ...partial.limit },
  };
}

function normalizeProvider(p) {
  const options = clone(p.options) ?? {};
  const models = {};
  for (const [id, m] of Object.entries(p.models ?? { 'mock-model': { name: 'Mock Model' } })) {
    models[id] = defaultModel(p.id, id, m ?? {}, options.baseURL ?? '');
  }
  return { id: p.id, name: p.name ?? p.id, source: p.source ?? 'config', env: p.env ?? [], options, models };
}

function commandHints(template) {
  const hints = [];
  for (const m of String(template).matchAll(/\$(ARGUMENTS|\d+)/g)) if (!hints.includes(m[0])) hints.push(m[0]);
  return hints;
}

function expandTemplate(template, args) {
  const text = String(template ?? '');
  const argv = String(args ?? '').trim() ? String(args).trim().split(/\s+/) : [];
  if (text.includes('$ARGUMENTS')) return text.replaceAll('$ARGUMENTS', String(args ?? ''));
  const positions = [...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]));
  if (positions.length) {
    const max = Math.max(...positions);
    return text.replace(/\$(\d+)/g, (_, n) =>
      Number(n) === max ? argv.slice(n - 1).join(' ') : argv[n - 1] ?? '');
  }
  return argv.length ? `${text}\n\n${args}` : text;
}

export async function startMockOpenCode(options = {}) {
  const now = options.now ?? Date.now;
  const defaultDirectory = options.directory ?? '/tmp/project';
  const projectID = options.projectID ?? 'global';
  const heartbeatMs = options.heartbeatMs ?? 10000;
  const defaultDelayMs = options.replyDelayMs ?? 20;
  const syncEvents = options.syncEvents !== false;
  const autoUserMessage = options.autoUserMessage !== false;

  // ---- ids -------------------------------------------------------------------------------------
  let seq = 0;
  const suffix = (n) => {
    let x = Math.imul(n, 2654435761) >>> 0;
    let s = '';
    for (let i = 0; i < 14; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      s += B62[(x >>> 16) % 62];
    }
    return s;
  };
  const ascId = (prefix) => {
    const n = ++seq;
    return `${prefix}_${n.toString(16).padStart(12, '0')}${suffix(n)}`;
  };
  const descId = (prefix) => {
    const n = ++seq;
    return `${prefix}_${(0xffffffffffff - n).toString(16).padStart(12, '0')}${suffix(n)}`;
  };

  // ---- state -----------------------------------------------------------------------------------
  const sessions = new Map(); // id -> {info, messages: [{info, parts}], order, lastCreated}
  const diffs = new Map(); // id -> [{file, patch, additions, deletions, status}] | null (404)
  const todoLists = new Map(); // id -> [{content, status, priority}] | null (404)
  const statuses = new Map(); // id -> {type, ...} (busy/retry only)
  const turns = new Map(); // id -> {queue: Promise, gen}
  const scripts = new Map(); // id -> {replies, index, delayMs}
  const pending = []; // {kind, request}
  const faults = [];
  const streams = new Set(); // {res, filterDir, bare, timer}
  const sockets = new Set();
  const timers = new Set();
  let sessionOrder = 0;
  let closed = false;
  const defaultScript = options.replies ? { replies: options.replies, index: 0, delayMs: defaultDelayMs } : null;

  const mustSession = (id) => {
    const s = sessions.get(id);
    if (!s) throw notFound(`Session not found: ${id}`);
    return s;
  };
  const msgCopy = (m) => ({ info: clone(m.info), parts: clone(m.parts) });
  const nextCreated = (s, explicit) => {
    // Like OpenCode: stamped with the clock, never ahead of it, so two messages made in the same
    // millisecond share a time (readers order by time, then position).
    const t = explicit ?? now();
    s.lastCreated = Math.max(s.lastCreated, t);
    return t;
  };
  const touch = (s) => {
    s.info.time.updated = Math.max(now(), s.info.time.updated + 1);
  };
  // Resolves after ms, or early when `wake` (a Set of callbacks) is flushed.
  const sleep = (ms, wake) =>
    new Promise((resolve) => {
      if (!(ms > 0)) return setImmediate(resolve);
      const done = () => {
        clearTimeout(t);
        timers.delete(t);
        wake?.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      timers.add(t);
      wake?.add(done);
    });

  // ---- events ----------------------------------------------------------------------------------
  const write = (stream, obj) => {
    if (!stream.res.writableEnded && !stream.res.destroyed) stream.res.write(`data: ${JSON.stringify(obj)}\n\n`);
  };
  const broadcast = (envelope) => {
    for (const st of streams) {
      if (!st.bare) write(st, envelope);
      else if (envelope.directory !== undefined && envelope.directory === st.filterDir) write(st, envelope.payload);
    }
  };
  function emit(payload, directory) {
    const p = isObj(payload) ? payload : { type: String(payload) };
    const full = { id: p.id ?? ascId('evt'), type: p.type, properties: p.properties ?? {} };
    for (const [k, v] of Object.entries(p)) if (!(k in full)) full[k] = v;
    const envelope = directory === undefined ? { payload: full } : { directory, project: projectID, payload: full };
    mock.events.push(clone(envelope));
    broadcast(envelope);
    if (syncEvents && directory !== undefined && /^(session\.(created|updated)|message\.(updated|part\.updated))$/.test(full.type)) {
      broadcast({
        directory,
        project: projectID,
        payload: {
          type: 'sync',
          syncEvent: { id: full.id, type: `${full.type}.1`, seq: seq, aggregateID: full.properties.sessionID, data: full.properties },
          id: full.id,
        },
      });
    }
    return clone(envelope);
  }
  const emitSession = (type, s) =>
    emit({ type, properties: { sessionID: s.info.id, info: clone(s.info) } }, s.info.directory);
  const emitMessage = (s, m) => emit({ type: 'message.updated', properties: { sessionID: s.info.id, info: clone(m.info) } }, s.info.directory);
  const emitPart = (s, part) =>
    emit({ type: 'message.part.updated', properties: { sessionID: s.info.id, part: clone(part), time: now() } }, s.info.directory);

  // ---- sessions --------------------------------------------------------------------------------
  function createSession(opts = {}) {
    const created = opts.created ?? now();
    const id = opts.id ?? descId('ses');
    if (sessions.has(id)) throw new Error(`session ${id} already exists`);
    const n = sessionOrder++;
    const info = {
      id,
      slug: `${SLUG_A[n % SLUG_A.length]}-${SLUG_B[Math.floor(n / SLUG_A.length) % SLUG_B.length]}`,
      projectID,
      directory: opts.directory ?? defaultDirectory,
      path: '',
      ...(opts.parentID ? { parentID: opts.parentID } : {}),
      title: opts.title ?? `${opts.parentID ? 'Child session' : 'New session'} - ${new Date(created).toISOString()}`,
      version: VERSION,
      cost: 0,
      tokens: zeroTokens(),
      ...(opts.metadata !== undefined && opts.metadata !== null ? { metadata: clone(opts.metadata) } : {}),
      time: { created, updated: created },
    };
    const s = { info, messages: [], order: n, lastCreated: 0, promptIds: new Set() };
    sessions.set(id, s);
    emitSession('session.created', s);
    emitSession('session.updated', s);
    return clone(info);
  }

  const sortedSessions = () =>
    [...sessions.values()].sort((a, b) => b.info.time.created - a.info.time.created || b.order - a.order);

  function deleteSession(id) {
    const s = mustSession(id);
    for (const child of [...sessions.values()]) if (child.info.parentID === id) deleteSession(child.info.id);
    sessions.delete(id);
    statuses.delete(id);
    cancelTurns(id);
    emitSession('session.deleted', s);
    return true;
  }

  function setStatus(id, status) {
    const s = mustSession(id);
    let st = isObj(status) ? clone(status) : { type: String(status) };
    if (st.type === 'retry') st = { attempt: 1, message: 'Retrying', next: now() + 1000, ...st };
    if (!['busy', 'retry', 'idle'].includes(st.type)) throw new Error(`bad status ${st.type}`);
    if (st.type === 'idle') statuses.delete(id);
    else statuses.set(id, st);
    emit({ type: 'session.status', properties: { sessionID: id, status: clone(st) } }, s.info.directory);
    if (st.type === 'idle') emit({ type: 'session.idle', properties: { sessionID: id } }, s.info.directory);
  }

  function setMetadata(id, metadata) {
    const s = mustSession(id);
    if (metadata === null || metadata === undefined) delete s.info.metadata;
    else s.info.metadata = clone(metadata);
    touch(s);
    emitSession('session.updated', s);
    return clone(s.info);
  }

  // ---- messages --------------------------------------------------------------------------------
  function makePart(s, messageID, p) {
    const { id, sessionID: _s, messageID: _m, ...rest } = clone(p);
    const part = { id: id ?? ascId('prt'), sessionID: s.info.id, messageID, ...rest };
    const t = now();
    if (part.type === 'reasoning' && !part.time) part.time = { start: t, end: t };
    if (part.type === 'reasoning' && part.text === undefined) part.text = '';
    if (part.type === 'tool') {
      part.callID = part.callID ?? `call_${part.id.slice(4)}`;
      part.tool = part.tool ?? 'bash';
      part.state = part.state ?? { status: 'completed', input: {}, output: '', title: '', metadata: {}, time: { start: t, end: t } };
    }
    return part;
  }

  function addUserMessage(id, text, opts = {}) {
    const s = mustSession(id);
    const created = nextCreated(s, opts.created);
    const info = {
      id: opts.id ?? ascId('msg'),
      sessionID: id,
      role: 'user',
      time: { created },
      agent: opts.agent ?? 'build',
      model: { ...(opts.model ?? { providerID: 'mock', modelID: 'mock-model' }), ...(opts.variant ? { variant: opts.variant } : {}) },
    };
    // OpenCode records a finished turn's file changes here (`{diffs: [...]}`, see FACTS.md).
    if (opts.summary !== undefined) info.summary = clone(opts.summary);
    const inputs = Array.isArray(text) ? text : [{ type: 'text', text: String(text ?? '') }];
    const parts = inputs.filter(isObj).map((p) => makePart(s, info.id, p));
    const m = { info, parts };
    s.messages.push(m);
    touch(s);
    emitMessage(s, m);
    for (const p of parts) emitPart(s, p);
    return msgCopy(m);
  }

  // Applies addAssistantMessage options to an (unfinished) assistant message; returns new parts.
  function applyAssistant(s, m, opts) {
    const info = m.info;
    const t = now();
    for (const k of ['providerID', 'modelID', 'agent', 'variant', 'summary', 'structured']) if (opts[k] !== undefined) info[k] = clone(opts[k]);
    if (opts.mode !== undefined || opts.agent !== undefined) info.mode = opts.mode ?? opts.agent;
    if (opts.parentID !== undefined) info.parentID = opts.parentID;
    const tk = opts.tokens ?? {};
    info.tokens = {
      ...(tk.total !== undefined ? { total: tk.total } : {}),
      input: tk.input ?? 0,
      output: tk.output ?? 0,
      reasoning: tk.reasoning ?? 0,
      cache: { read: tk.cache?.read ?? 0, write: tk.cache?.write ?? 0 },
    };
    if (opts.cost !== undefined) info.cost = opts.cost;
    const completed = opts.completed ?? true;
    if (opts.error) info.error = clone(opts.error);
    const finish = opts.finish !== undefined ? opts.finish : opts.error ? undefined : 'stop';
    if (completed !== false) {
      info.time.completed = typeof completed === 'number' ? completed : Math.max(t, info.time.created);
      if (finish) info.finish = finish;
      if (!opts.error && tk.total === undefined) {
        const k = info.tokens;
        info.tokens = { total: k.input + k.output + k.reasoning + k.cache.read + k.cache.write, ...k };
      }
    }
    const stepParts = opts.stepParts !== false;
    const added = [];
    if (stepParts && !m.parts.some((p) => p.type === 'step-start')) added.push(makePart(s, info.id, { type: 'step-start' }));
    for (const p of opts.parts ?? []) if (isObj(p)) added.push(makePart(s, info.id, p));
    if (opts.text) added.push(makePart(s, info.id, { type: 'text', text: String(opts.text), time: { start: t, end: t } }));
    if (stepParts && completed !== false && !opts.error) {
      added.push(makePart(s, info.id, { type: 'step-finish', reason: finish ?? 'stop', cost: info.cost, tokens: clone(info.tokens) }));
    }
    m.parts.push(...added);
    return added;
  }

  function newAssistant(s, opts) {
    const lastUser = [...s.messages].reverse().find((m) => m.info.role === 'user');
    const parentID = opts.parentID ?? lastUser?.info.id;
    const agent = opts.agent ?? 'build';
    const info = {
      id: opts.id ?? ascId('msg'),
      ...(parentID ? { parentID } : {}),
      role: 'assistant',
      mode: opts.mode ?? agent,
      agent,
      path: { cwd: s.info.directory, root: s.info.directory },
      cost: 0,
      tokens: zeroTokens(),
      modelID: opts.modelID ?? 'mock-model',
      providerID: opts.providerID ?? 'mock',
      ...(opts.variant ? { variant: opts.variant } : {}),
      time: { created: nextCreated(s, opts.created) },
      sessionID: s.info.id,
    };
    const m = { info, parts: [] };
    s.messages.push(m);
    return m;
  }

  function addAssistantMessage(id, opts = {}) {
    const s = mustSession(id);
    const m = newAssistant(s, opts);
    const added = applyAssistant(s, m, opts);
    touch(s);
    emitMessage(s, m);
    for (const p of added) emitPart(s, p);
    return msgCopy(m);
  }

  function completeAssistantMessage(id, messageID, opts = {}) {
    const s = mustSession(id);
    const m = messageID
      ? s.messages.find((x) => x.info.id === messageID)
      : [...s.messages].reverse().find((x) => x.info.role === 'assistant' && !x.info.time.completed);
    if (!m || m.info.role !== 'assistant') throw new Error(`no assistant message ${messageID ?? '(unfinished)'} in ${id}`);
    const added = applyAssistant(s, m, { completed: true, ...opts, parentID: opts.parentID ?? m.info.parentID });
    for (const p of added) emitPart(s, p);
    emitMessage(s, m);
    return msgCopy(m);
  }

  // ---- scripted turns --------------------------------------------------------------------------
  const turnState = (id) => {
    if (!turns.has(id)) turns.set(id, { queue: Promise.resolve(), gen: 0, wake: new Set() });
    return turns.get(id);
  };
  function cancelTurns(id) {
    const t = turns.get(id);
    if (!t) return;
    t.gen++;
    for (const wake of [...t.wake]) wake();
  }
  function nextReply(id) {
    const sc = scripts.get(id) ?? defaultScript;
    if (!sc || !sc.replies.length) return undefined;
    const entry = sc.replies[Math.min(sc.index, sc.replies.length - 1)];
    sc.index++;
    return { entry, delayMs: sc.delayMs };
  }
  // Runs one turn after the queued ones; resolves with the reply {info, parts} (null if cancelled first).
  function runTurn(id, { userMessage, body, reply }) {
    const t = turnState(id);
    const gen = t.gen;
    const run = async () => {
      if (t.gen !== gen || closed || !sessions.has(id)) return null;
      const s = sessions.get(id);
      let entry = reply.entry ?? {};
      if (typeof entry === 'function') entry = (await entry({ sessionId: id, body: clone(body), mock })) ?? {};
      if (t.gen !== gen || closed || !sessions.has(id)) return null;
      setStatus(id, 'busy');
      const base = {
        parentID: userMessage?.info.id,
        agent: body?.agent ?? userMessage?.info.agent,
        providerID: body?.model?.providerID ?? userMessage?.info.model?.providerID,
        modelID: body?.model?.modelID ?? userMessage?.info.model?.modelID,
        variant: body?.variant,
      };
      for (const k of Object.keys(base)) if (base[k] === undefined) delete base[k];
      const opts = { ...base, ...entry };
      const m = newAssistant(s, opts);
      emitMessage(s, m);
      await sleep(reply.delayMs ?? defaultDelayMs, t.wake);
      if (t.gen !== gen || closed || !sessions.has(id)) return msgCopy(m);
      if (opts.completed === false) return msgCopy(m);
      const result = completeAssistantMessage(id, m.info.id, opts);
      if (opts.error) emit({ type: 'session.error', properties: { sessionID: id, error: clone(opts.error) } }, s.info.directory);
      setStatus(id, 'idle');
      return result;
    };
    const p = t.queue.then(run, run).catch((e) => {
      mock.errors.push(e);
      return null;
    });
    t.queue = p;
    return p;
  }

  function abortSession(id) {
    const s = sessions.get(id);
    mock.aborts.push(id);
    if (!s) return;
    cancelTurns(id);
    if (!statuses.has(id)) return;
    const dir = s.info.directory;
    emit({ type: 'session.error', properties: { sessionID: id, error: clone(ABORTED) } }, dir);
    for (const m of s.messages) {
      if (m.info.role !== 'assistant' || m.info.time.completed) continue;
      m.info.error = clone(ABORTED);
      m.info.time.completed = Math.max(now(), m.info.time.created);
      emitMessage(s, m);
    }
    setStatus(id, 'idle');
  }

  // ---- pending permission / question -----------------------------------------------------------
  function setPending(id, kind, requestID, extra = {}) {
    const s = mustSession(id);
    if (kind !== 'permission' && kind !== 'question') throw new Error(`bad pending kind ${kind}`);
    const request =
      kind === 'permission'
        ? { id: requestID ?? ascId('per'), sessionID: id, permission: 'bash', patterns: ['*'], metadata: {}, always: [], ...clone(extra) }
        : {
            id: requestID ?? ascId('que'),
            sessionID: id,
            questions: [{ question: 'Continue?', header: 'Continue', options: [{ label: 'Yes', description: 'Go on' }] }],
            ...clone(extra),
          };
    pending.push({ kind, request });
    emit({ type: `${kind}.asked`, properties: clone(request) }, s.info.directory);
    return clone(request);
  }
  function clearPending(id, kind, requestID, answer) {
    let n = 0;
    for (let i = pending.length - 1; i >= 0; i--) {
      const { kind: k, request } = pending[i];
      if ((id && request.sessionID !== id) || (kind && k !== kind) || (requestID && request.id !== requestID)) continue;
      pending.splice(i, 1);
      n++;
      const dir = sessions.get(request.sessionID)?.info.directory ?? defaultDirectory;
      const props = { sessionID: request.sessionID, requestID: request.id };
      if (k === 'permission') emit({ type: 'permission.replied', properties: { ...props, reply: answer ?? 'once' } }, dir);
      else if (answer === 'reject') emit({ type: 'question.rejected', properties: props }, dir);
      else emit({ type: 'question.replied', properties: { ...props, answers: clone(answer) ?? [] } }, dir);
    }
    return n;
  }

  // ---- static catalog --------------------------------------------------------------------------
  const commands = (options.commands ?? [
    { name: 'init', description: 'create/update AGENTS.md', template: 'Please analyze this codebase and create an AGENTS.md file. $ARGUMENTS' },
    { name: 'review', description: 'review changes', template: 'Review the current changes: $ARGUMENTS', agent: 'plan' },
  ]).map((c) => ({
    name: c.name,
    ...(c.description !== undefined ? { description: c.description } : {}),
    ...(c.agent !== undefined ? { agent: c.agent } : {}),
    ...(c.model !== undefined ? { model: c.model } : {}),
    source: c.source ?? 'command',
    template: c.template ?? '',
    ...(c.subtask !== undefined ? { subtask: c.subtask } : {}),
    hints: c.hints ?? commandHints(c.template ?? ''),
  }));
  const providers = (options.providers ?? [{ id: 'mock', name: 'Mock' }]).map(normalizeProvider);
  const providerDefaults = Object.fromEntries(
    providers.filter((p) => Object.keys(p.models).length).map((p) => [p.id, Object.keys(p.models)[0]]),
  );
  const agents = options.agents ?? [
    { name: 'build', description: 'The default agent.', mode: 'primary', native: true, permission: [], options: {} },
    { name: 'plan', description: 'Plan mode. Read-only.', mode: 'primary', native: true, permission: [], options: {} },
    { name: 'general', description: 'General-purpose subagent.', mode: 'subagent', native: true, permission: [], options: {} },
  ];

  // ---- routing ---------------------------------------------------------------------------------
  const json = (body, status = 200) => ({ status, body });
  const NO_CONTENT = { status: 204 };

  function parseModelString(m) {
    if (typeof m !== 'string' || !m.includes('/')) return undefined;
    const i = m.indexOf('/');
    return { providerID: m.slice(0, i), modelID: m.slice(i + 1) };
  }
  const bodyObject = (req) => {
    if (req.body === undefined) return {};
    if (!isObj(req.body)) throw badRequest('Expected a JSON object body');
    return req.body;
  };
  const userFromPrompt = (id, body) =>
    addUserMessage(id, Array.isArray(body.parts) ? body.parts : [], {
      id: body.messageID,
      agent: body.agent,
      model: isObj(body.model) ? body.model : undefined,
      variant: body.variant,
    });

  async function route(req, res) {
    const { method, path, query } = req;
    const seg = path.split('/').filter(Boolean).map(decodeURIComponent);
    const dir = query.directory;

    if (path === '/global/health' && method === 'GET') return json({ healthy: true, version: VERSION });
    if ((path === '/global/event' || path === '/event') && method === 'GET') return { sse: path === '/event' ? 'bare' : 'global' };
    if (path === '/command' && method === 'GET') return json(clone(commands));
    if (path === '/config' && method === 'GET') return json(clone(options.config ?? {}));
    if (path === '/provider' && method === 'GET')
      return json({ all: clone(providers), default: clone(providerDefaults), connected: options.connected ?? providers.map((p) => p.id) });
    if (path === '/config/providers' && method === 'GET') return json({ providers: clone(providers), default: clone(providerDefaults) });
    if (path === '/agent' && method === 'GET') return json(clone(agents));
    if ((path === '/permission' || path === '/question') && method === 'GET')
      return json(pending.filter((p) => `/${p.kind}` === path).map((p) => clone(p.request)));
    if ((seg[0] === 'permission' || seg[0] === 'question') && seg.length === 3 && method === 'POST') {
      const kind = seg[0];
      if (!pending.some((p) => p.kind === kind && p.request.id === seg[1]))
        throw new HttpError(404, { name: kind === 'permission' ? 'PermissionNotFoundError' : 'QuestionNotFoundError', data: { message: `${kind} not found: ${seg[1]}` } });
      const body = bodyObject(req);
      if (seg[2] === 'reject') clearPending(undefined, kind, seg[1], 'reject');
      else if (seg[2] === 'reply') clearPending(undefined, kind, seg[1], kind === 'permission' ? body.reply : body.answers);
      else throw notFound(`Route not found: ${method} ${path}`);
      return json(true);
    }

    if (seg[0] !== 'session') throw notFound(`Route not found: ${method} ${path}`);

    if (seg.length === 1 && method === 'GET') {
      let list = sortedSessions().filter((s) => !dir || s.info.directory === dir);
      if (query.roots === 'true') list = list.filter((s) => !s.info.parentID);
      if (query.search) list = list.filter((s) => s.info.title.toLowerCase().includes(String(query.search).toLowerCase()));
      if (query.limit !== undefined) {
        const n = Number(query.limit);
        if (!Number.isFinite(n) || n < 0) throw badRequest('limit must be a number', 'Query', 'limit');
        list = list.slice(0, n);
      }
      return json(list.map((s) => clone(s.info)));
    }
    if (seg.length === 1 && method === 'POST') {
      const body = bodyObject(req);
      if (body.metadata !== undefined && body.metadata !== null && !isObj(body.metadata)) throw badRequest('metadata must be an object', 'Body', 'metadata');
      return json(createSession({ directory: dir ?? defaultDirectory, title: body.title, parentID: body.parentID, metadata: body.metadata }));
    }
    if (seg.length === 2 && seg[1] === 'status' && method === 'GET') {
      const out = {};
      for (const [id, st] of statuses) {
        const s = sessions.get(id);
        if (s && (!dir || s.info.directory === dir)) out[id] = clone(st);
      }
      return json(out);
    }

    const id = seg[1];
    if (!/^ses/.test(id ?? '')) throw badRequest(`Invalid sessionID: ${id}`, 'Params', 'sessionID');

    if (seg.length === 3 && seg[2] === 'abort' && method === 'POST') {
      abortSession(id);
      return json(true);
    }
    const s = mustSession(id);

    if (seg.length === 2) {
      if (method === 'GET') return json(clone(s.info));
      if (method === 'DELETE') return json(deleteSession(id));
      if (method === 'PATCH') {
        const body = bodyObject(req);
        if (body.title !== undefined && typeof body.title !== 'string') throw badRequest('title must be a string', 'Body', 'title');
        if (body.metadata !== undefined && body.metadata !== null && !isObj(body.metadata)) throw badRequest('metadata must be an object', 'Body', 'metadata');
        if (body.time !== undefined && !isObj(body.time)) throw badRequest('time must be an object', 'Body', 'time');
        const before = clone(s.info.metadata);
        if (body.title !== undefined) s.info.title = body.title;
        if (isObj(body.metadata)) s.info.metadata = clone(body.metadata);
        if (body.time?.archived !== undefined) s.info.time.archived = body.time.archived;
        touch(s);
        mock.patches.push({ sessionId: id, directory: dir, body: clone(body), at: now() });
        emitSession('session.updated', s);
        if (typeof mock.onPatch === 'function') {
          try {
            mock.onPatch(id, { before, after: clone(s.info.metadata), body: clone(body) }, mock);
          } catch (e) {
            mock.errors.push(e);
          }
        }
        return json(clone(s.info));
      }
    }
    // Evidence routes (FACTS.md "Evidence the loop can read"): the session diff and todo list.
    // mock.setDiff(id, null) makes /diff answer 404, like a server without the route.
    if (seg.length === 3 && (seg[2] === 'diff' || seg[2] === 'todo') && method === 'GET') {
      const store = seg[2] === 'diff' ? diffs : todoLists;
      if (store.has(id) && store.get(id) === null) throw notFound(`Route not found: ${method} ${path}`);
      return json(clone(store.get(id) ?? []));
    }
    if (seg.length === 3 && seg[2] === 'children' && method === 'GET') {
      return json(sortedSessions().filter((c) => c.info.parentID === id).map((c) => clone(c.info)));
    }
    if (seg.length === 3 && seg[2] === 'message' && method === 'GET') {
      let list = s.messages;
      if (query.before !== undefined) {
        const i = list.findIndex((m) => m.info.id === query.before);
        if (i >= 0) list = list.slice(0, i);
      }
      if (query.limit !== undefined) {
        const n = Number(query.limit);
        if (!Number.isInteger(n) || n < 0) throw badRequest('limit must be a non-negative integer', 'Query', 'limit');
        if (n > 0) list = list.slice(-n);
      }
      return json(list.map(msgCopy));
    }
    if (seg.length === 4 && seg[2] === 'message' && method === 'GET') {
      const m = s.messages.find((x) => x.info.id === seg[3]);
      if (!m) throw notFound(`Message not found: ${seg[3]}`);
      return json(msgCopy(m));
    }
    if (seg.length === 3 && (seg[2] === 'prompt_async' || seg[2] === 'message') && method === 'POST') {
      const body = bodyObject(req);
      if (!Array.isArray(body.parts)) throw badRequest('parts is required', 'Body', 'parts');
      if (body.model !== undefined && !(isObj(body.model) && typeof body.model.providerID === 'string' && typeof body.model.modelID === 'string'))
        throw badRequest('model must be {providerID, modelID}', 'Body', 'model');
      if (body.messageID !== undefined && !(typeof body.messageID === 'string' && body.messageID.startsWith('msg')))
        throw badRequest('messageID must match ^msg', 'Body', 'messageID');
      const record = { sessionId: id, directory: dir, body: clone(body), at: now() };
      // Like OpenCode: a messageID seen before in this session (at once, mid-turn or later) makes
      // no second message and no second turn; the post is answered as accepted.
      if (typeof body.messageID === 'string') {
        if (s.promptIds.has(body.messageID) || s.messages.some((m) => m.info.id === body.messageID)) {
          mock.repeatedPrompts.push({ ...record, route: seg[2], messageID: body.messageID, receivedAt: req.receivedAt ?? record.at });
          if (seg[2] === 'message') {
            const stored = s.messages.find((m) => m.info.id === body.messageID);
            return json(stored ? msgCopy(stored) : {});
          }
          return NO_CONTENT;
        }
        s.promptIds.add(body.messageID);
      }
      if (body.model) {
        s.info.agent = body.agent ?? s.info.agent ?? 'build';
        s.info.model = { id: body.model.modelID, providerID: body.model.providerID, ...(body.variant ? { variant: body.variant } : {}) };
      }
      if (seg[2] === 'message') {
        mock.syncPrompts.push(record);
        const user = userFromPrompt(id, body);
        if (body.noReply) return json(user);
        return json((await runTurn(id, { userMessage: user, body, reply: nextReply(id) ?? {} })) ?? user);
      }
      mock.prompts.push(record);
      const user = autoUserMessage || scripts.has(id) || defaultScript ? userFromPrompt(id, body) : undefined;
      record.receivedAt = req.receivedAt ?? record.at;
      if (user) record.messageID = user.info.id;
      else if (typeof body.messageID === 'string') record.messageID = body.messageID;
      const reply = body.noReply ? undefined : nextReply(id);
      if (reply) runTurn(id, { userMessage: user, body, reply });
      if (typeof mock.onPrompt === 'function') {
        setImmediate(() =>
          Promise.resolve()
            .then(() => mock.onPrompt(id, clone(body), mock))
            .catch((e) => mock.errors.push(e)),
        );
      }
      return NO_CONTENT;
    }
    if (seg.length === 3 && seg[2] === 'command' && method === 'POST') {
      const body = bodyObject(req);
      if (typeof body.command !== 'string' || typeof body.arguments !== 'string') throw badRequest('command and arguments are required');
      mock.commands.push({ sessionId: id, directory: dir, body: clone(body), at: now() });
      const cmd = commands.find((c) => c.name === body.command);
      const text = cmd ? expandTemplate(cmd.template, body.arguments) : `/${body.command} ${body.arguments}`.trim();
      const model = parseModelString(body.model) ?? parseModelString(cmd?.model);
      const agent = body.agent ?? cmd?.agent;
      const user = addUserMessage(id, text, { id: body.messageID, agent, model, variant: body.variant });
      const promptLike = { agent: agent ?? 'build', model, variant: body.variant };
      return json((await runTurn(id, { userMessage: user, body: promptLike, reply: nextReply(id) ?? {} })) ?? user);
    }
    if (seg.length === 3 && seg[2] === 'fork' && method === 'POST') {
      const body = bodyObject(req);
      const forks = sortedSessions().filter((x) => x.info.title.startsWith(`${s.info.title} (fork #`)).length;
      const info = createSession({ directory: s.info.directory, title: `${s.info.title} (fork #${forks + 1})` });
      const target = sessions.get(info.id);
      const idMap = new Map();
      for (const m of s.messages) {
        if (body.messageID && m.info.id === body.messageID) break;
        const copy = msgCopy(m);
        const newId = ascId('msg');
        idMap.set(m.info.id, newId);
        copy.info.id = newId;
        copy.info.sessionID = info.id;
        if (copy.info.parentID) copy.info.parentID = idMap.get(copy.info.parentID) ?? copy.info.parentID;
        for (const p of copy.parts) {
          p.id = ascId('prt');
          p.sessionID = info.id;
          p.messageID = newId;
        }
        target.messages.push(copy);
        target.lastCreated = Math.max(target.lastCreated, copy.info.time.created);
      }
      return json(clone(target.info));
    }
    throw notFound(`Route not found: ${method} ${path}`);
  }

  // ---- HTTP plumbing ---------------------------------------------------------------------------
  function openStream(req, res, kind) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const st = { res, bare: kind === 'bare', filterDir: req.query.directory ?? defaultDirectory, timer: null };
    streams.add(st);
    const connected = { id: ascId('evt'), type: 'server.connected', properties: {} };
    write(st, st.bare ? connected : { payload: connected });
    st.timer = setInterval(() => {
      const hb = { id: ascId('evt'), type: 'server.heartbeat', properties: {} };
      write(st, st.bare ? hb : { payload: hb });
    }, heartbeatMs);
    st.timer.unref?.();
    const done = () => {
      clearInterval(st.timer);
      streams.delete(st);
    };
    res.on('close', done);
    res.on('error', done);
  }

  function send(res, result) {
    if (res.destroyed || res.writableEnded) return;
    if (result.status === 204 || result.body === undefined) {
      res.writeHead(result.status ?? 204);
      return res.end();
    }
    const text = typeof result.body === 'string' ? result.body : JSON.stringify(result.body);
    res.writeHead(result.status ?? 200, { 'content-type': result.contentType ?? 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  const htmlPage =
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>OpenCode</title></head>' +
    '<body><div id="root"></div><script type="module" src="/assets/index.js"></script></body></html>\n';

  async function runHandler(req, res) {
    try {
      return await route(req, res);
    } catch (e) {
      if (e instanceof HttpError) return json(e.body, e.status);
      mock.errors.push(e);
      return json({ name: 'UnknownError', data: { message: String(e?.message ?? e) } }, 500);
    }
  }

  async function handle(req, res) {
    const url = new URL(req.url, 'http://127.0.0.1');
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body;
    let badJson = false;
    if (raw.length) {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
        badJson = true;
      }
    }
    const r = {
      method: req.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body,
      headers: { ...req.headers },
      receivedAt: now(),
    };
    mock.requests.push({ ...clone({ method: r.method, path: r.path, query: r.query, body: r.body, headers: r.headers }), at: r.receivedAt });

    const queryMatches = (f) => !isObj(f.query) || Object.entries(f.query).every(([k, v]) => r.query[k] === String(v));
    const fault = faults.find((f) => f.remaining > 0 && (!f.method || f.method.toUpperCase() === r.method) && (f.path instanceof RegExp ? f.path.test(r.path) : f.path === r.path) && queryMatches(f));
    if (fault) {
      fault.remaining--;
      if (fault.remaining <= 0) faults.splice(faults.indexOf(fault), 1);
    }
    const kind = fault
      ? fault.hang ? 'hang' : fault.destroy ? 'destroy' : fault.html ? 'html' : fault.truncatedJson ? 'truncated' : fault.status !== undefined || fault.body !== undefined ? 'status' : 'delay'
      : 'none';
    // A late answer (delay + apply) runs the handler first; a slow request waits before it.
    const lateAnswer = fault?.apply && kind === 'delay';
    if (fault?.delayMs > 0 && !lateAnswer) {
      await sleep(fault.delayMs);
      if (closed || !listening) return req.socket.destroy();
    }
    const applyFirst = kind === 'truncated' || (kind !== 'delay' && kind !== 'none' && fault.apply);
    const reply = (result) => (fault?.trickleMs > 0 ? trickle(res, result, fault.trickleMs) : send(res, result));
    const fire = () => {
      if (typeof fault?.action !== 'function') return;
      try {
        fault.action(clone({ method: r.method, path: r.path, query: r.query, body: r.body }), mock);
      } catch (e) {
        mock.errors.push(e);
      }
    };

    let result;
    if (kind === 'none' || kind === 'delay' || applyFirst) {
      result = badJson ? json({ _tag: 'InvalidRequestError', message: 'Malformed JSON in request body', kind: 'Body' }, 400) : await runHandler(r, res);
      if (result.sse && (kind === 'none' || kind === 'delay')) return openStream(r, res, result.sse);
      if (kind === 'none') return send(res, result);
      if (kind === 'delay') {
        fire();
        if (lateAnswer && fault.delayMs > 0) await sleep(fault.delayMs);
        if (closed || !listening) return req.socket.destroy();
        return reply(result);
      }
    }
    fire();
    switch (kind) {
      case 'hang':
        return; // the socket is destroyed by close()
      case 'destroy':
        return req.socket.destroy();
      case 'html':
        return reply({ status: fault.status ?? 200, body: fault.body ?? htmlPage, contentType: fault.contentType ?? 'text/html; charset=utf-8' });
      case 'truncated': {
        const full = result?.body === undefined ? '{"name":"UnknownError","data":{"message":"truncated"}}' : JSON.stringify(result.body);
        return reply({ status: fault.status ?? (result?.sse ? 200 : result?.status === 204 ? 200 : result?.status ?? 200), body: full.slice(0, Math.max(1, Math.floor(full.length / 2))), contentType: fault.contentType });
      }
      default:
        return reply({
          status: fault.status ?? 500,
          body: fault.body ?? { name: 'UnknownError', data: { message: 'Injected fault' } },
          contentType: fault.contentType,
        });
    }
  }

  // Sends the headers at once and the body in eight slices over `ms` (a slow answer).
  async function trickle(res, result, ms) {
    if (res.destroyed || res.writableEnded) return;
    const text = result.status === 204 || result.body === undefined ? '' : typeof result.body === 'string' ? result.body : JSON.stringify(result.body);
    const bytes = Buffer.from(text);
    const headers = text ? { 'content-type': result.contentType ?? 'application/json', 'content-length': bytes.length } : {};
    res.writeHead(result.status ?? (text ? 200 : 204), headers);
    const slices = 8;
    for (let i = 0; i < slices; i++) {
      await sleep(ms / slices);
      if (res.destroyed || closed) return;
      const chunk = bytes.subarray(Math.floor((i * bytes.length) / slices), Math.floor(((i + 1) * bytes.length) / slices));
      if (chunk.length) res.write(chunk);
    }
    res.end();
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((e) => {
      mock.errors.push(e);
      try {
        send(res, json({ name: 'UnknownError', data: { message: String(e?.message ?? e) } }, 500));
      } catch {
        res.destroy();
      }
    });
  });
  server.requestTimeout = 0;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('clientError', (_err, socket) => socket.destroy());

  let listening = false;
  let reopenTimer = null;
  const listenOn = (port) =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        listening = true;
        resolve();
      });
    });
  await listenOn(0);
  const port = server.address().port;

  const mock = {
    url: `http://127.0.0.1:${port}`,
    requests: [],
    prompts: [],
    repeatedPrompts: [],
    syncPrompts: [],
    commands: [],
    patches: [],
    aborts: [],
    events: [],
    errors: [],
    onPrompt: null,
    onPatch: null,

    createSession,
    getSession: (id) => clone(sessions.get(id)?.info),
    sessions: () => sortedSessions().map((s) => clone(s.info)),
    deleteSession,
    setStatus,
    status: (id) => clone(statuses.get(id) ?? { type: 'idle' }),
    addUserMessage,
    addAssistantMessage,
    completeAssistantMessage,
    messages: (id) => (sessions.get(id)?.messages ?? []).map(msgCopy),
    setMetadata,
    setPending,
    /** Sets the session diff (`GET /session/:id/diff`) and emits `session.diff`; null → 404. */
    setDiff(id, diff) {
      diffs.set(id, clone(diff));
      if (diff) emit({ type: 'session.diff', properties: { sessionID: id, diff: clone(diff) } }, sessions.get(id)?.info.directory);
    },
    /** Sets the todo list (`GET /session/:id/todo`) and emits `todo.updated`; null → 404. */
    setTodos(id, todos) {
      todoLists.set(id, clone(todos));
      if (todos) emit({ type: 'todo.updated', properties: { sessionID: id, todos: clone(todos) } }, sessions.get(id)?.info.directory);
    },
    clearPending: (id, kind, requestID) => clearPending(id, kind, requestID),
    emit: (payload, directory) => emit(clone(payload), directory),

    scriptReplies(sessionId, replies, { replyDelayMs } = {}) {
      if (replies === null || replies === undefined) scripts.delete(sessionId);
      else scripts.set(sessionId, { replies: [...replies], index: 0, delayMs: replyDelayMs ?? defaultDelayMs });
    },

    fault(spec = {}) {
      const f = { ...spec, remaining: spec.times ?? Infinity };
      faults.push(f);
      return {
        remove: () => {
          const i = faults.indexOf(f);
          if (i >= 0) faults.splice(i, 1);
        },
        get remaining() {
          return f.remaining;
        },
      };
    },
    clearFaults: () => {
      faults.length = 0;
    },

    dropEventStreams({ abrupt = false } = {}) {
      for (const st of [...streams]) {
        clearInterval(st.timer);
        streams.delete(st);
        if (abrupt) st.res.destroy();
        else st.res.end();
      }
    },
    get eventStreams() {
      return streams.size;
    },

    async refuseConnections({ forMs } = {}) {
      if (closed) return;
      clearTimeout(reopenTimer);
      reopenTimer = null;
      if (listening) {
        listening = false;
        for (const st of [...streams]) clearInterval(st.timer);
        streams.clear();
        const stopped = new Promise((resolve) => server.close(() => resolve()));
        for (const sock of sockets) sock.destroy();
        await stopped;
      }
      if (forMs > 0) {
        reopenTimer = setTimeout(() => {
          reopenTimer = null;
          mock.acceptConnections().catch((e) => mock.errors.push(e));
        }, forMs);
      }
    },
    async acceptConnections() {
      clearTimeout(reopenTimer);
      reopenTimer = null;
      if (closed || listening) return;
      await listenOn(port);
    },
    get listening() {
      return listening;
    },

    async waitFor(fn, { timeoutMs = 2000, intervalMs = 5 } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const v = await fn();
        if (v) return v;
        if (Date.now() > deadline) throw new Error(`mock.waitFor timed out after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    },

    async close() {
      if (closed) return;
      closed = true;
      clearTimeout(reopenTimer);
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const st of streams) clearInterval(st.timer);
      streams.clear();
      for (const s of sockets) s.destroy();
      if (listening) {
        listening = false;
        await new Promise((resolve) => server.close(() => resolve()));
      }
    },
  };
  return mock;
}
