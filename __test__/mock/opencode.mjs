// In-process mock of the OpenCode 1.18.33 HTTP server, for tests. Plain node:http, no dependencies.
// Shapes follow docs/opencode.md (OpenCode 1.18.33's behaviour as the runtime relies on it).
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
//   now=Date.now              clock used for every timestamp
//   globalSessionList=true    GET /experimental/session (every directory's sessions) is served;
//                             false: an older OpenCode without it (404)
//   faultsNeverMatch=false })  mutation check of a test suite: no fault ever matches, so every
//                             check that an injected fault fired must fail
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
//                       tokens={input,output,reasoning,cache:{read,write}} (0s), cost=0 (info.cost: this
//                       reply's price in US dollars, as OpenCode computes it from the model's
//                       configured price; 0 for a model without one), finish='stop' (none by
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
//   mock.holdEvents(host) → {held, release()}  hold the events of the streams opened with that Host
//                           header prefix ('localhost' | '127.0.0.1') until release(), then send
//                           them in order: an event stream that lags
//   mock.eventStreams                 number of open event streams (getter)
//   await mock.waitFor(fn, {timeoutMs=2000, intervalMs=5})  resolves with fn()'s first truthy value
//
// RECORDING (append-only arrays; clear with `.length = 0`)
//   mock.requests  {method, path, query, body, headers, at} for every request (faulted ones too);
//                  `fault` {kind, apply} when a fault matched it; `answered` {status, at} once the
//                  whole answer left, null when the connection closed before it did; with
//                  `mock.keepRawBodies = true`, also `rawBody`: the body's text as it arrived
//   mock.sends(sessionId?)  the POSTs on the wire that ask a session for a turn (SEND_ROUTES:
//                  prompt_async without noReply, shell), faulted and repeated ones included: "never twice" is
//                  counted here, before the server's de-duplication
//   mock.prompts   {sessionId, directory, body, at, receivedAt, messageID} per accepted POST
//                  /session/:id/prompt_async (receivedAt: when the request arrived, before any
//                  injected delay; messageID: the user message it appended, or the body's
//                  messageID). A post whose messageID the session already holds (or was
//                  posted before) is not a prompt: no message, no turn, 204, recorded in
//   mock.repeatedPrompts  {sessionId, directory, body, at, receivedAt, messageID, route}
//   mock.noReplyPrompts  the same record per accepted `noReply: true` prompt_async (a message stored,
//                  no turn; not in mock.prompts, not in mock.sends)
//   mock.strandedPrompts  {sessionId, messageID, at} per prompt stored without its turn because of
//                  mock.strandPrompts (a new prompt or a re-post of an unanswered message)
//   mock.syncPrompts {sessionId, directory, body, at} per POST /session/:id/message
//   mock.commands  {sessionId, directory, body, at} per POST /session/:id/command
//   mock.patches   {sessionId, directory, body, at} per applied PATCH /session/:id
//   mock.aborts    session ids, per POST /session/:id/abort
//   mock.shells    {sessionId, directory, body, at, receivedAt} per POST /session/:id/shell that ran
//                  (not idempotent: a repeated messageID runs again and is recorded again)
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
//   actionFirst: the action runs on arrival, before anything else (another writer landing just
//   before this request is applied).
//
// GATES  mock.gate({method?, path?: string | RegExp, query?, host?: 'localhost' | '127.0.0.1', match?(request),
//                    times=1, until}) → gate
//   Holds each matching request (up to `times`) on arrival, after it is recorded in mock.requests
//   (its entry gets `gated: true`) and before faults and handler, until `until` holds:
//   'name' or {signal: 'name'}  mock.signal('name') was called (before or after the gate was made);
//   {answered: fn(entry) | gate}  a request whose log entry fn accepts (or the other gate's first
//                     caught request) has been answered since the gate was made;
//   {event: fn(payload)}  an event fn accepts has been emitted since the gate was made;
//   'manual'          the test lets held requests go one at a time: gate.releaseNext(pick?) → entry.
//   gate.arrived(n=1) → Promise of the n-th caught request's entry; gate.caught() → entries;
//   gate.held; gate.open; gate.release() (all held go on, nothing more is caught); gate.remove().
//   mock.releaseGates() lets every held request of every gate go, and later ones pass (a test's
//   cleanup, before it stops a runtime that waits for its requests); mock.close() does it too
//   (and then destroys them with the server). All of it lives in opencode/gates.mjs.
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
//   mock.forkSession(id, messageID?) → Session   the fork route's effect: messages copied, the WHOLE
//                     metadata copied (an active goal included), no parentID
//   mock.strandPrompts(sessionId, {times=1})  the next `times` prompts to the session (new ones and
//                     re-posts of an unanswered message) are stored but start no turn: the server
//                     killed between storing a prompt and starting its turn. Infinity: never answers
//   mock.cutShells() → [sessionId]  a server restart while shells run: their replies stay unfinished
//                                    (tool part running), the shell calls die, no status remains
//   mock.cutTurns() → [sessionId]   a server restart mid-turn: running turns stop, their replies keep
//                     no time.completed/finish/error, sessions go idle, and no event says so
//   mock.retries   {sessionId, messageID, at, forMs} per `retry` status a scripted turn showed
//   mock.scriptReplies(sessionId, replies, {replyDelayMs?})   (replies=null removes the script)
//     Each accepted prompt (async, sync /message, /command) then runs a turn, serialised per
//     session: status busy, an unfinished assistant reply (parentID = the prompt's user message,
//     model/agent from the prompt), after replyDelayMs it is completed from the next entry of
//     `replies` (addAssistantMessage options, or a function ({sessionId, body, mock}) => options;
//     the last entry repeats), session.error if the entry has an error, then status idle.
//     An entry with completed:false leaves the reply unfinished and the session busy. An entry
//     with retry: {forMs, attempt?, message?} first shows status `retry` for forMs (OpenCode
//     retrying a limited provider), then completes; a provider failure is an entry with
//     `error: {name: 'APIError', data: {statusCode: 429, isRetryable, responseHeaders}}` and no text.
//     POST /abort cancels the running and queued turns.
//   mock.scriptChildren(replies, {replyDelayMs?})   one script shared by every child session
//     (created with parentID, e.g. a goal's reviewer) that has no script of its own: each prompt to
//     any of them takes the next entry, in order (the last repeats); null removes it. Entries as
//     in scriptReplies (a function entry sees the prompt's body: its `tools`, model and agent).
//   mock.setFiles(directory, ['src/a.js', ...])   the project's files, for GET /file (null removes)
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
//   GET  /file?path=<dir>                one directory of the project (mock.setFiles): [{name, path,
//                                        absolute, type: 'file'|'directory', ignored}]; '.' or '' is
//                                        the root; a path that is no directory of it → 500
//   GET  /session/:id/diff               session file changes (mock.setDiff; null → 404)
//   GET  /session/:id/todo               todo list (mock.setTodos; null → 404)
//   GET  /session/:id/message?limit=&before=   last N (limit 0/absent: all), oldest first
//   GET  /session/:id/message/:messageID
//   POST /session/:id/prompt_async       204; appends the user message; turn/onPrompt afterwards
//                                        (a repeated messageID: 204, its parts replace or append;
//                                        the message's turn starts only when it is a stored user
//                                        message no reply answers and no turn began for: a
//                                        stranded message, answered by its re-post, as OpenCode does)
//   POST /session/:id/message            sync prompt → {info, parts} of the reply (empty reply
//                                        without a script)
//   POST /session/:id/command {command, arguments, agent?, model?:'p/m'} → {info, parts}
//   POST /session/:id/fork {messageID?}  new session with copies of the messages BEFORE messageID
//                                        (all without it) and of the whole metadata, as OpenCode does
//   POST /session/:id/shell {agent, command, model?, messageID?} runs the command for real (bash,
//                                        inside eval "<JSON string>", in the session directory)
//                                        and answers when it ends: {info, parts} of a reply with one
//                                        completed bash tool part (output, metadata {output}, no exit
//                                        code); 409 while busy; a repeated messageID runs again
//   POST /session/:id/abort              true; a running shell ends at once (output + the "User
//                                        aborted the command" note); in a busy/retry session every
//                                        unfinished reply gets MessageAbortedError; session.error,
//                                        status idle
//   GET  /command  GET /config  GET /provider  GET /config/providers  GET /agent
//   GET  /permission  GET /question  POST /permission/:id/reply  POST /question/:id/reply|reject
//   GET  /global/event   SSE: server.connected first, then {directory, project, payload} envelopes
//   GET  /event?directory=   SSE of bare payloads for one directory
//
// LAYOUT (one concern per module under ./opencode/)
//   common.mjs    version, copies, OpenCode's error answers, ids, cancellable timers
//   catalog.mjs   GET /command /config /provider /agent data and command template expansion
//   sse.mjs       event envelopes, sync twins, event streams and heartbeats
//   messages.mjs  message and part shapes (builders)
//   state.mjs     sessions, messages, metadata, statuses, diff/todo evidence
//   pending.mjs   open permission and question requests and their replies
//   turns.mjs     scripted replies, one turn at a time per session; abort
//   shell.mjs     POST /session/:id/shell: real bash runs, abort
//   files.mjs     the project's files for GET /file (directory listings)
//   routes.mjs    the route table: one handler per endpoint
//   faults.mjs    the fault list and what a matched fault does to a request
//   server.mjs    node:http plumbing: recording, faults around handlers, trickle, outages
// This file composes them and keeps the public API above.

import { clone, createIds, createTimers } from './opencode/common.mjs';
import { createCatalog } from './opencode/catalog.mjs';
import { createEventHub } from './opencode/sse.mjs';
import { messageCopy } from './opencode/messages.mjs';
import { createState } from './opencode/state.mjs';
import { createTurns } from './opencode/turns.mjs';
import { createShell } from './opencode/shell.mjs';
import { dispatch } from './opencode/routes.mjs';
import { createFaults } from './opencode/faults.mjs';
import { createGates } from './opencode/gates.mjs';
import { createFiles } from './opencode/files.mjs';
import { createHttpServer } from './opencode/server.mjs';

/** The routes that ask a session for a turn: every POST to one is counted by `mock.sends()`. */
export const SEND_ROUTES = ['prompt_async', 'shell'];
const SEND_PATH = new RegExp(`^/session/([^/]+)/(${SEND_ROUTES.join('|')})$`);

/**
 * The session a send request addresses (its path segment decoded), or null for other requests. A
 * `noReply` post asks for no turn (it only stores a message, e.g. a check run's claim): not a send.
 */
export function sendTarget(request) {
  const m = request.method === 'POST' ? SEND_PATH.exec(request.path) : null;
  if (!m || request.body?.noReply === true) return null;
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return m[1];
  }
}

/** Starts the mock OpenCode server on a free loopback port; see the header for options and API. */
export async function startMockOpenCode(options = {}) {
  const now = options.now ?? Date.now;
  const defaultDirectory = options.directory ?? '/tmp/project';
  const projectID = options.projectID ?? 'global';
  const defaultDelayMs = options.replyDelayMs ?? 20;

  // Recordings and hooks live on the public object; the modules read them from it on each use,
  // so a caller may swap a hook or wrap a list's push at any time.
  const mock = {
    url: '',
    keepRawBodies: false,
    requests: [],
    prompts: [],
    repeatedPrompts: [],
    noReplyPrompts: [],
    strandedPrompts: [],
    syncPrompts: [],
    commands: [],
    patches: [],
    aborts: [],
    shells: [],
    events: [],
    errors: [],
    retries: [],
    onPrompt: null,
    onPatch: null,
  };

  const ids = createIds();
  const gates = createGates();
  const timers = createTimers();
  const events = createEventHub({
    ids,
    projectID,
    defaultDirectory,
    heartbeatMs: options.heartbeatMs ?? 10000,
    syncEvents: options.syncEvents !== false,
    record: (envelope) => {
      mock.events.push(envelope);
      gates.emitted(envelope);
    },
  });
  const faults = createFaults({ neverMatch: options.faultsNeverMatch === true });
  // State and turns refer to each other (a deleted session stops its turns; a turn writes
  // replies), and turns stop once the server closes: the late bindings below are only called
  // after startup.
  let http = null;
  let turns = null;
  const state = createState({ now, ids, emit: events.emit, projectID, defaultDirectory, onSessionGone: (id) => turns.cancel(id) });
  turns = createTurns({
    state,
    emit: events.emit,
    sleep: timers.sleep,
    mock,
    defaultDelayMs,
    defaultReplies: options.replies,
    isClosed: () => http.isClosed(),
  });
  const files = createFiles();
  const routeContext = {
    files,
    state,
    turns,
    shell: createShell({ state, mock, now, ids }),
    catalog: createCatalog(options),
    mock,
    now,
    defaultDirectory,
    autoUserMessage: options.autoUserMessage !== false,
    globalSessionList: options.globalSessionList !== false,
  };
  http = createHttpServer({ route: (request) => dispatch(routeContext, request), faults, gates, events, mock, now, sleep: timers.sleep });
  await http.listen(0);
  mock.url = `http://127.0.0.1:${http.port}`;

  return Object.defineProperties(mock, Object.getOwnPropertyDescriptors({
    createSession: state.createSession,
    getSession: (id) => clone(state.sessions.get(id)?.info),
    sessions: () => state.sortedSessions().map((s) => clone(s.info)),
    deleteSession: state.deleteSession,
    setStatus: state.setStatus,
    status: (id) => clone(state.statuses.get(id) ?? { type: 'idle' }),
    addUserMessage: state.addUserMessage,
    addAssistantMessage: state.addAssistantMessage,
    completeAssistantMessage: state.completeAssistantMessage,
    messages: (id) => (state.sessions.get(id)?.messages ?? []).map(messageCopy),
    setMetadata: state.setMetadata,
    setPending: state.setPending,
    /** Sets the session diff (`GET /session/:id/diff`) and emits `session.diff`; null → 404. */
    setDiff: (id, diff) => state.setEvidence('diff', id, diff),
    /** Sets the todo list (`GET /session/:id/todo`) and emits `todo.updated`; null → 404. */
    setTodos: (id, todos) => state.setEvidence('todo', id, todos),
    clearPending: (id, kind, requestID) => state.clearPending(id, kind, requestID),
    emit: (payload, directory) => events.emit(clone(payload), directory),
    scriptReplies: turns.script,
    /** One reply script for every child session without its own (see the header). */
    scriptChildren: turns.scriptChildren,
    /** The files of a project directory, as GET /file lists them (see the header). */
    setFiles: files.set,
    /** POST /session/:id/fork as OpenCode does it (metadata copied, no parentID) → Session. */
    forkSession: (id, messageID) => state.forkSession(state.mustSession(id), messageID),
    /** Cuts every running turn as a server restart does (no event; replies stay unfinished). */
    cutTurns: () => turns.cutAll(),
    cutShells: () => routeContext.shell.cutAll(),
    /** The next `times` prompts to the session are stored with no turn (a kill between the two). */
    strandPrompts: (sessionId, { times = 1 } = {}) => turns.strand(sessionId, times),

    fault: faults.add,
    clearFaults: faults.clear,
    gate: gates.add,
    signal: gates.signal,
    releaseGates: gates.releaseAll,
    sends: (sessionId) => mock.requests.filter((r) => {
      const target = sendTarget(r);
      return target !== null && (sessionId === undefined || target === sessionId);
    }),

    dropEventStreams: events.drop,
    holdEvents: events.hold,
    get eventStreams() {
      return events.count;
    },

    refuseConnections: http.refuse,
    acceptConnections: http.accept,
    get listening() {
      return http.listening;
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
      const closing = http.close();
      timers.clearAll();
      await closing;
    },
  }));
}
