// The HTTP API of OpenCode 1.18.33 as a route table: one small handler per endpoint, taking the
// context {state, turns, catalog, mock, now, defaultDirectory, autoUserMessage}, the request
// {method, path, query, body, receivedAt} and the path parameters. A handler returns a result
// ({status, body}, or {sse: 'global'|'bare'} for an event stream) or throws an HttpError.
import { HttpError, NO_CONTENT, VERSION, badRequest, clone, isObj, json, notFound } from './common.mjs';
import { expandTemplate, parseModelString } from './catalog.mjs';
import { messageCopy } from './messages.mjs';

const routeNotFound = (req) => notFound(`Route not found: ${req.method} ${req.path}`);

// The body as an object ({} when absent); anything else is a 400.
const bodyObject = (req) => {
  if (req.body === undefined) return {};
  if (!isObj(req.body)) throw badRequest('Expected a JSON object body');
  return req.body;
};

// A non-negative number from the query (`integer`: whole numbers only), or undefined when absent.
function queryCount(req, name, { integer }) {
  if (req.query[name] === undefined) return undefined;
  const n = Number(req.query[name]);
  if (integer ? !Number.isInteger(n) || n < 0 : !Number.isFinite(n) || n < 0) {
    throw badRequest(integer ? `${name} must be a non-negative integer` : `${name} must be a number`, 'Query', name);
  }
  return n;
}

const metadataOk = (body) => body.metadata === undefined || body.metadata === null || isObj(body.metadata);

// ---- catalog and pending requests ---------------------------------------------------------------
// POST /permission/:id/reply|reject and /question/:id/reply|reject.
const answerPending = (kind) => ({ state }, req, { requestID, action }) => {
  if (!state.hasPending(kind, requestID)) {
    const name = kind === 'permission' ? 'PermissionNotFoundError' : 'QuestionNotFoundError';
    throw new HttpError(404, { name, data: { message: `${kind} not found: ${requestID}` } });
  }
  const body = bodyObject(req);
  if (action === 'reject') state.clearPending(undefined, kind, requestID, 'reject');
  else if (action === 'reply') state.clearPending(undefined, kind, requestID, kind === 'permission' ? body.reply : body.answers);
  else throw routeNotFound(req);
  return json(true);
};

// ---- sessions -----------------------------------------------------------------------------------
// OpenCode answers a session list with its 100 most recently updated sessions unless `limit` says
// otherwise (docs/opencode.md, "Finding every goal").
const DEFAULT_LIST_LIMIT = 100;

// The sessions a list query keeps, newest update first: one directory (or all), top-level only
// (`roots`), updated at or after `start`, strictly before `cursor`, matching `search`, `limit` of them.
function sessionList({ state }, req) {
  const { directory: dir, roots, search } = req.query;
  let list = state.sortedSessions().filter((s) => !dir || s.info.directory === dir);
  list.sort((a, b) => b.info.time.updated - a.info.time.updated || b.order - a.order);
  if (roots === 'true') list = list.filter((s) => !s.info.parentID);
  const start = queryCount(req, 'start', { integer: false });
  if (start !== undefined) list = list.filter((s) => s.info.time.updated >= start);
  const cursor = queryCount(req, 'cursor', { integer: false });
  if (cursor !== undefined) list = list.filter((s) => s.info.time.updated < cursor);
  if (search) list = list.filter((s) => s.info.title.toLowerCase().includes(String(search).toLowerCase()));
  return list.slice(0, queryCount(req, 'limit', { integer: false }) ?? DEFAULT_LIST_LIMIT);
}

// GET /session: the sessions of one directory (as the real server, `cursor` is not a parameter).
function listSessions(ctx, req) {
  const { cursor, ...query } = req.query;
  return json(sessionList(ctx, { ...req, query }).map((s) => clone(s.info)));
}

// GET /experimental/session: the sessions of every directory (one with ?directory=), each with its
// project; a mock started with `globalSessionList: false` is an older OpenCode without the route.
function listSessionsEverywhere(ctx, req) {
  if (!ctx.globalSessionList) throw routeNotFound(req);
  return json(sessionList(ctx, req).map((s) => ({ ...clone(s.info), project: projectOf(s.info.directory) })));
}

// GET /project: each directory a session lives in, as a git project whose worktree it is.
function listProjects({ state }) {
  const directories = [...new Set(state.sortedSessions().map((s) => s.info.directory))];
  return json(directories.map((directory) => ({ ...projectOf(directory), vcs: 'git', time: { created: 0, updated: 0 }, sandboxes: [] })));
}

const projectOf = (directory) => ({ id: `prj_${Buffer.from(directory).toString('hex').slice(0, 24)}`, worktree: directory });

function createSessionRoute({ state, defaultDirectory }, req) {
  const body = bodyObject(req);
  if (!metadataOk(body)) throw badRequest('metadata must be an object', 'Body', 'metadata');
  const directory = req.query.directory ?? defaultDirectory;
  return json(state.createSession({ directory, title: body.title, parentID: body.parentID, metadata: body.metadata }));
}

// Busy and retry sessions only (idle ones are absent), filtered by ?directory=.
function sessionStatuses({ state }, req) {
  const dir = req.query.directory;
  const out = {};
  for (const [id, st] of state.statuses) {
    const s = state.sessions.get(id);
    if (s && (!dir || s.info.directory === dir)) out[id] = clone(st);
  }
  return json(out);
}

function patchSession({ state, mock, now }, req, { sessionID: id, session: s }) {
  const body = bodyObject(req);
  if (body.title !== undefined && typeof body.title !== 'string') throw badRequest('title must be a string', 'Body', 'title');
  if (!metadataOk(body)) throw badRequest('metadata must be an object', 'Body', 'metadata');
  if (body.time !== undefined && !isObj(body.time)) throw badRequest('time must be an object', 'Body', 'time');
  const before = state.applyPatch(s, body);
  mock.patches.push({ sessionId: id, directory: req.query.directory, body: clone(body), at: now() });
  state.emitSession('session.updated', s);
  if (typeof mock.onPatch === 'function') {
    try {
      mock.onPatch(id, { before, after: clone(s.info.metadata), body: clone(body) }, mock);
    } catch (e) {
      mock.errors.push(e);
    }
  }
  return json(clone(s.info));
}

// GET /session/:id/diff and /todo; a list set to null answers 404, like a server without the route.
const evidenceRoute = (kind) => ({ state }, req, { sessionID }) => {
  const list = state.readEvidence(kind, sessionID);
  if (list === null) throw routeNotFound(req);
  return json(list);
};

// ---- messages -----------------------------------------------------------------------------------
// The last ?limit= messages (0 or absent: all) before ?before=, oldest first.
function listMessages(_ctx, req, { session: s }) {
  let list = s.messages;
  if (req.query.before !== undefined) {
    const i = list.findIndex((m) => m.info.id === req.query.before);
    if (i >= 0) list = list.slice(0, i);
  }
  const limit = queryCount(req, 'limit', { integer: true });
  if (limit > 0) list = list.slice(-limit);
  return json(list.map(messageCopy));
}

function getMessage(_ctx, _req, { session: s, messageID }) {
  const m = s.messages.find((x) => x.info.id === messageID);
  if (!m) throw notFound(`Message not found: ${messageID}`);
  return json(messageCopy(m));
}

function validatePrompt(body) {
  if (!Array.isArray(body.parts)) throw badRequest('parts is required', 'Body', 'parts');
  if (body.model !== undefined && !(isObj(body.model) && typeof body.model.providerID === 'string' && typeof body.model.modelID === 'string'))
    throw badRequest('model must be {providerID, modelID}', 'Body', 'model');
  if (body.messageID !== undefined && !(typeof body.messageID === 'string' && body.messageID.startsWith('msg')))
    throw badRequest('messageID must match ^msg', 'Body', 'messageID');
}

const userFromPrompt = (state, id, body) =>
  state.addUserMessage(id, Array.isArray(body.parts) ? body.parts : [], {
    id: body.messageID,
    agent: body.agent,
    model: isObj(body.model) ? body.model : undefined,
    variant: body.variant,
  });

/**
 * The shared start of both prompt routes. Like OpenCode, a messageID seen before in this session
 * (at once, mid-turn or later) makes no second message and no second turn: the post is recorded
 * in mock.repeatedPrompts and `repeated` is set, and its parts are appended to the stored
 * message, each replacing a part of the same id instead. Otherwise the prompt's model becomes the session's.
 */
function acceptPrompt({ state, mock, now }, req, { sessionID: id, session: s }, route) {
  const body = bodyObject(req);
  validatePrompt(body);
  const record = { sessionId: id, directory: req.query.directory, body: clone(body), at: now() };
  if (typeof body.messageID === 'string') {
    if (s.promptIds.has(body.messageID) || s.messages.some((m) => m.info.id === body.messageID)) {
      mock.repeatedPrompts.push({ ...record, route, messageID: body.messageID, receivedAt: req.receivedAt ?? record.at });
      // The stored message keeps its id and its one turn, but takes the repeated post's parts.
      state.repostParts(id, body.messageID, body.parts);
      return { body, record, repeated: true };
    }
    s.promptIds.add(body.messageID);
  }
  if (body.model) {
    s.info.agent = body.agent ?? s.info.agent ?? 'build';
    s.info.model = { id: body.model.modelID, providerID: body.model.providerID, ...(body.variant ? { variant: body.variant } : {}) };
  }
  return { body, record, repeated: false };
}

// POST /session/:id/prompt_async: 204 at once; the user message, the turn and onPrompt follow.
function promptAsync(ctx, req, params) {
  const { state, turns, mock, autoUserMessage } = ctx;
  const { body, record, repeated } = acceptPrompt(ctx, req, params, 'prompt_async');
  if (repeated) {
    answerStranded(ctx, params, body);
    return NO_CONTENT;
  }
  const id = params.sessionID;
  // A noReply post stores a message and asks for no turn (a check run's claim): kept apart.
  (body.noReply === true ? mock.noReplyPrompts : mock.prompts).push(record);
  const user = autoUserMessage || turns.hasScript(id) || body.noReply === true ? userFromPrompt(state, id, body) : undefined;
  record.receivedAt = req.receivedAt ?? record.at;
  if (user) record.messageID = user.info.id;
  else if (typeof body.messageID === 'string') record.messageID = body.messageID;
  if (!body.noReply && user) startTurn(ctx, params.session, user, body);
  else if (!body.noReply) {
    const reply = turns.nextReply(id);
    if (reply) turns.run(id, { userMessage: user, body, reply });
  }
  if (typeof mock.onPrompt === 'function') {
    setImmediate(() =>
      Promise.resolve()
        .then(() => mock.onPrompt(id, clone(body), mock))
        .catch((e) => mock.errors.push(e)),
    );
  }
  return NO_CONTENT;
}

/**
 * Starts the turn of stored user message `user` (its scripted reply), unless the session is set
 * to strand its prompts (mock.strandPrompts: stored, no turn, as when the server is killed
 * between the two). A turn started or stranded is never started again by a later post.
 */
function startTurn({ turns, mock }, s, user, body) {
  const id = s.info.id;
  if (turns.takeStrand(id)) {
    mock.strandedPrompts.push({ sessionId: id, messageID: user.info.id, at: Date.now() });
    return;
  }
  const reply = turns.nextReply(id);
  if (!reply) return;
  s.turnIds.add(user.info.id);
  turns.run(id, { userMessage: user, body, reply });
}

/**
 * A repeated post of a stored user message that nothing answers and whose turn never began (a
 * `noReply` post, or one the server stored before it was killed) starts that message's turn, as
 * OpenCode 1.18.33 does (docs/opencode.md, "Idempotent prompts"). A `noReply` repeat does not.
 */
function answerStranded(ctx, { sessionID: id, session: s }, body) {
  if (body.noReply === true) return;
  const stored = s.messages.find((m) => m.info.id === body.messageID && m.info.role === 'user');
  if (!stored || s.turnIds.has(stored.info.id)) return;
  if (s.messages.some((m) => m.info.role === 'assistant' && m.info.parentID === stored.info.id)) return;
  ctx.mock.repeatedPrompts.at(-1).startedTurn = true;
  startTurn(ctx, s, messageCopy(stored), body);
}

// POST /session/:id/message: the synchronous prompt, answered with the reply (or the user message).
async function promptSync(ctx, req, params) {
  const { state, turns, mock } = ctx;
  const { body, record, repeated } = acceptPrompt(ctx, req, params, 'message');
  const id = params.sessionID;
  if (repeated) {
    const stored = params.session.messages.find((m) => m.info.id === body.messageID);
    return json(stored ? messageCopy(stored) : {});
  }
  mock.syncPrompts.push(record);
  const user = userFromPrompt(state, id, body);
  if (body.noReply) return json(user);
  params.session.turnIds.add(user.info.id);
  return json((await turns.run(id, { userMessage: user, body, reply: turns.nextReply(id) ?? {} })) ?? user);
}

// POST /session/:id/command: the command's template expanded into a user message, then a turn.
async function runCommand({ state, turns, catalog, mock, now }, req, { sessionID: id }) {
  const body = bodyObject(req);
  if (typeof body.command !== 'string' || typeof body.arguments !== 'string') throw badRequest('command and arguments are required');
  mock.commands.push({ sessionId: id, directory: req.query.directory, body: clone(body), at: now() });
  const cmd = catalog.command(body.command);
  const text = cmd ? expandTemplate(cmd.template, body.arguments) : `/${body.command} ${body.arguments}`.trim();
  const model = parseModelString(body.model) ?? parseModelString(cmd?.model);
  const agent = body.agent ?? cmd?.agent;
  const user = state.addUserMessage(id, text, { id: body.messageID, agent, model, variant: body.variant });
  const promptLike = { agent: agent ?? 'build', model, variant: body.variant };
  return json((await turns.run(id, { userMessage: user, body: promptLike, reply: turns.nextReply(id) ?? {} })) ?? user);
}

// ---- the table ----------------------------------------------------------------------------------
// `:sessionID` must look like a session id (else 400) and, unless `anySession`, name a stored
// session (else 404; the record is passed as params.session). Literal paths come before the
// parameterised ones they overlap.
const ROUTES = [
  ['GET', '/global/health', () => json({ healthy: true, version: VERSION })],
  ['GET', '/global/event', () => ({ sse: 'global' })],
  ['GET', '/event', () => ({ sse: 'bare' })],
  ['GET', '/command', ({ catalog }) => json(catalog.commandList())],
  ['GET', '/config', ({ catalog }) => json(catalog.config())],
  ['GET', '/provider', ({ catalog }) => json(catalog.providerList())],
  ['GET', '/config/providers', ({ catalog }) => json(catalog.configProviders())],
  ['GET', '/agent', ({ catalog }) => json(catalog.agents())],
  ['GET', '/permission', ({ state }) => json(state.pendingOf('permission'))],
  ['GET', '/question', ({ state }) => json(state.pendingOf('question'))],
  ['POST', '/permission/:requestID/:action', answerPending('permission')],
  ['POST', '/question/:requestID/:action', answerPending('question')],
  ['GET', '/session', listSessions],
  ['GET', '/experimental/session', listSessionsEverywhere],
  ['GET', '/project', listProjects],
  ['POST', '/session', createSessionRoute],
  ['GET', '/session/status', sessionStatuses],
  ['POST', '/session/:sessionID/abort', ({ turns, shell }, _req, { sessionID }) => (shell.abort(sessionID), turns.abort(sessionID), json(true)), { anySession: true }],
  ['GET', '/session/:sessionID', (_ctx, _req, { session }) => json(clone(session.info))],
  ['DELETE', '/session/:sessionID', ({ state }, _req, { sessionID }) => json(state.deleteSession(sessionID))],
  ['PATCH', '/session/:sessionID', patchSession],
  ['GET', '/session/:sessionID/diff', evidenceRoute('diff')],
  ['GET', '/session/:sessionID/todo', evidenceRoute('todo')],
  ['GET', '/session/:sessionID/children', ({ state }, _req, { sessionID }) =>
    json(state.sortedSessions().filter((c) => c.info.parentID === sessionID).map((c) => clone(c.info)))],
  ['GET', '/session/:sessionID/message', listMessages],
  ['GET', '/session/:sessionID/message/:messageID', getMessage],
  ['POST', '/session/:sessionID/prompt_async', promptAsync],
  ['POST', '/session/:sessionID/message', promptSync],
  ['POST', '/session/:sessionID/command', runCommand],
  ['POST', '/session/:sessionID/shell', (ctx, req, params) => ctx.shell.route(ctx, req, params)],
  ['GET', '/file', ({ files, defaultDirectory }, req) => {
    if (typeof req.query.path !== 'string') throw badRequest('path is required', 'Query', 'path');
    return json(files.list(req.query.directory ?? defaultDirectory, req.query.path));
  }],
  ['POST', '/session/:sessionID/fork', ({ state }, req, { session }) => json(state.forkSession(session, bodyObject(req).messageID))],
].map(([method, pattern, handler, flags = {}]) => ({ method, pattern, segments: pattern.split('/').filter(Boolean), handler, ...flags }));

/** The route table's [method, pattern] pairs, in matching order (for tests and docs). */
export const ROUTE_LIST = ROUTES.map((r) => [r.method, r.pattern]);

// The path parameters when `segments` fit the pattern, else null.
function matchSegments(pattern, segments) {
  if (pattern.length !== segments.length) return null;
  const params = {};
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i].startsWith(':')) params[pattern[i].slice(1)] = segments[i];
    else if (pattern[i] !== segments[i]) return null;
  }
  return params;
}

/** The route for `method` and the decoded path `segments`: {route, params}, or undefined. */
export function matchRoute(method, segments) {
  for (const route of ROUTES) {
    if (route.method !== method) continue;
    const params = matchSegments(route.segments, segments);
    if (params) return { route, params };
  }
  return undefined;
}

const checkSessionId = (id) => {
  if (!/^ses/.test(id ?? '')) throw badRequest(`Invalid sessionID: ${id}`, 'Params', 'sessionID');
};

/**
 * Serves one request. Anything under /session/ that no route takes is checked like a session
 * route (400 for a malformed id, 404 for an unknown session) before the 404 "Route not found".
 */
export async function dispatch(ctx, req) {
  const segments = req.path.split('/').filter(Boolean).map(decodeURIComponent);
  const found = matchRoute(req.method, segments);
  if (!found) {
    if (segments[0] !== 'session') throw routeNotFound(req);
    checkSessionId(segments[1]);
    ctx.state.mustSession(segments[1]);
    throw routeNotFound(req);
  }
  const { route, params } = found;
  if ('sessionID' in params) {
    checkSessionId(params.sessionID);
    if (!route.anySession) params.session = ctx.state.mustSession(params.sessionID);
  }
  return route.handler(ctx, req, params);
}
