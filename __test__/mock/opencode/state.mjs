// What the mock server holds: sessions (info with metadata, messages, accepted prompt ids),
// statuses, the evidence lists (diff, todos) and, through pending.mjs, the open permission and
// question requests. Every change stamps the clock and emits the event the real server would.
import { ABORTED, VERSION, clone, isObj, notFound, zeroTokens } from './common.mjs';
import { applyAssistant, assistantInfo, makePart, messageCopy, userInfo } from './messages.mjs';
import { createPending } from './pending.mjs';

const SLUG_A = ['lucky', 'quiet', 'brave', 'shiny', 'gentle', 'swift', 'misty', 'calm'];
const SLUG_B = ['moon', 'river', 'forest', 'comet', 'meadow', 'harbor', 'canyon', 'breeze'];

/**
 * The store. Options: `now` (clock), `ids` (createIds), `emit(payload, directory)` (the event
 * hub's), `projectID`, `defaultDirectory`, and `onSessionGone(id)` (called for each deleted
 * session, children first, so running turns can stop).
 */
export function createState({ now, ids, emit, projectID, defaultDirectory, onSessionGone = () => {} }) {
  const sessions = new Map(); // id -> {info, messages: [{info, parts}], order, lastCreated, promptIds, turnIds}
  const statuses = new Map(); // id -> {type, ...} (busy/retry only; idle is absence)
  const evidence = { diff: new Map(), todo: new Map() }; // id -> list | null (null: route answers 404)
  const build = { now, ids };
  let sessionOrder = 0;

  const mustSession = (id) => {
    const s = sessions.get(id);
    if (!s) throw notFound(`Session not found: ${id}`);
    return s;
  };
  // Like OpenCode: stamped with the clock, never ahead of it, so two messages made in the same
  // millisecond share a time (readers order by time, then position).
  const nextCreated = (s, explicit) => {
    const t = explicit ?? now();
    s.lastCreated = Math.max(s.lastCreated, t);
    return t;
  };
  const touch = (s) => {
    s.info.time.updated = Math.max(now(), s.info.time.updated + 1);
  };
  const emitSession = (type, s) => emit({ type, properties: { sessionID: s.info.id, info: clone(s.info) } }, s.info.directory);
  const emitMessage = (s, m) => emit({ type: 'message.updated', properties: { sessionID: s.info.id, info: clone(m.info) } }, s.info.directory);
  const emitPart = (s, part) =>
    emit({ type: 'message.part.updated', properties: { sessionID: s.info.id, part: clone(part), time: now() } }, s.info.directory);

  // ---- sessions --------------------------------------------------------------------------------
  function createSession(opts = {}) {
    const created = opts.created ?? now();
    const id = opts.id ?? ids.descending('ses');
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
    const s = { info, messages: [], order: n, lastCreated: 0, promptIds: new Set(), turnIds: new Set() };
    sessions.set(id, s);
    emitSession('session.created', s);
    emitSession('session.updated', s);
    return clone(info);
  }

  // Newest first, as GET /session lists them.
  const sortedSessions = () =>
    [...sessions.values()].sort((a, b) => b.info.time.created - a.info.time.created || b.order - a.order);

  function deleteSession(id) {
    const s = mustSession(id);
    for (const child of [...sessions.values()]) if (child.info.parentID === id) deleteSession(child.info.id);
    sessions.delete(id);
    statuses.delete(id);
    onSessionGone(id);
    emitSession('session.deleted', s);
    return true;
  }

  // `silent`: the server's status changes and no event says so (an event lost on its way, or a
  // server restart that forgot a turn).
  function setStatus(id, status, { silent = false } = {}) {
    const s = mustSession(id);
    let st = isObj(status) ? clone(status) : { type: String(status) };
    if (st.type === 'retry') st = { attempt: 1, message: 'Retrying', next: now() + 1000, ...st };
    if (!['busy', 'retry', 'idle'].includes(st.type)) throw new Error(`bad status ${st.type}`);
    if (st.type === 'idle') statuses.delete(id);
    else statuses.set(id, st);
    if (silent) return;
    emit({ type: 'session.status', properties: { sessionID: id, status: clone(st) } }, s.info.directory);
    if (st.type === 'idle') emit({ type: 'session.idle', properties: { sessionID: id } }, s.info.directory);
  }

  // Direct replace (a test helper): null or undefined removes the metadata.
  function setMetadata(id, metadata) {
    const s = mustSession(id);
    if (metadata === null || metadata === undefined) delete s.info.metadata;
    else s.info.metadata = clone(metadata);
    touch(s);
    emitSession('session.updated', s);
    return clone(s.info);
  }

  // PATCH /session/:id on a validated body: metadata REPLACES the whole object (docs/opencode.md); null
  // or absent metadata keeps it. Returns the metadata before; the caller records and announces.
  function applyPatch(s, body) {
    const before = clone(s.info.metadata);
    if (body.title !== undefined) s.info.title = body.title;
    if (isObj(body.metadata)) s.info.metadata = clone(body.metadata);
    if (body.time?.archived !== undefined) s.info.time.archived = body.time.archived;
    touch(s);
    return before;
  }

  // A new session with copies of the messages before `messageID` (all of them without it).
  function forkSession(s, messageID) {
    const forks = sortedSessions().filter((x) => x.info.title.startsWith(`${s.info.title} (fork #`)).length;
    // The whole metadata is copied, an active goal included, and the fork has no parentID
    // (docs/opencode.md, "Forks").
    const info = createSession({ directory: s.info.directory, title: `${s.info.title} (fork #${forks + 1})`, metadata: s.info.metadata });
    const target = sessions.get(info.id);
    const idMap = new Map();
    for (const m of s.messages) {
      if (messageID && m.info.id === messageID) break;
      const copy = messageCopy(m);
      const newId = ids.ascending('msg');
      idMap.set(m.info.id, newId);
      copy.info.id = newId;
      copy.info.sessionID = info.id;
      if (copy.info.parentID) copy.info.parentID = idMap.get(copy.info.parentID) ?? copy.info.parentID;
      for (const p of copy.parts) Object.assign(p, { id: ids.ascending('prt'), sessionID: info.id, messageID: newId });
      target.messages.push(copy);
      target.lastCreated = Math.max(target.lastCreated, copy.info.time.created);
    }
    return clone(target.info);
  }

  // ---- messages --------------------------------------------------------------------------------
  function addUserMessage(id, text, opts = {}) {
    const s = mustSession(id);
    const info = userInfo(build, id, nextCreated(s, opts.created), opts);
    const inputs = Array.isArray(text) ? text : [{ type: 'text', text: String(text ?? '') }];
    const m = { info, parts: inputs.filter(isObj).map((p) => makePart(build, id, info.id, p)) };
    s.messages.push(m);
    touch(s);
    emitMessage(s, m);
    for (const p of m.parts) emitPart(s, p);
    return messageCopy(m);
  }

  // A repeated post of a stored message's id (OpenCode 1.18.33, docs/opencode.md "Idempotent
  // prompts"): each posted part whose id the message already holds replaces that part in place;
  // every other part (no id, or a new one) is appended. Returns the message, or undefined when
  // no message is stored under that id.
  function repostParts(id, messageID, inputs) {
    const s = mustSession(id);
    const m = s.messages.find((x) => x.info.id === messageID);
    if (!m) return undefined;
    for (const input of (Array.isArray(inputs) ? inputs : []).filter(isObj)) {
      const part = makePart(build, id, messageID, input);
      const at = typeof input.id === 'string' ? m.parts.findIndex((p) => p.id === input.id) : -1;
      if (at >= 0) m.parts[at] = part;
      else m.parts.push(part);
      emitPart(s, part);
    }
    touch(s);
    return messageCopy(m);
  }

  // Stores an unfinished assistant message (no event: the caller announces it).
  function newAssistant(s, opts) {
    const m = { info: assistantInfo(build, s, nextCreated(s, opts.created), opts), parts: [] };
    s.messages.push(m);
    return m;
  }

  function addAssistantMessage(id, opts = {}) {
    const s = mustSession(id);
    const m = newAssistant(s, opts);
    const added = applyAssistant(build, id, m, opts);
    touch(s);
    emitMessage(s, m);
    for (const p of added) emitPart(s, p);
    return messageCopy(m);
  }

  function completeAssistantMessage(id, messageID, opts = {}) {
    const s = mustSession(id);
    const m = messageID
      ? s.messages.find((x) => x.info.id === messageID)
      : [...s.messages].reverse().find((x) => x.info.role === 'assistant' && !x.info.time.completed);
    if (!m || m.info.role !== 'assistant') throw new Error(`no assistant message ${messageID ?? '(unfinished)'} in ${id}`);
    const added = applyAssistant(build, id, m, { completed: true, ...opts, parentID: opts.parentID ?? m.info.parentID });
    for (const p of added) emitPart(s, p);
    emitMessage(s, m);
    return messageCopy(m);
  }

  // POST /abort on a busy/retry session: every unfinished reply gets MessageAbortedError.
  function abortReplies(id) {
    const s = sessions.get(id);
    if (!s || !statuses.has(id)) return;
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

  // ---- evidence (docs/opencode.md, "Evidence of a turn") -----------------------------------------
  // Sets the diff or todo list of a session and emits its event; null makes the route answer 404.
  function setEvidence(kind, id, list) {
    evidence[kind].set(id, clone(list));
    if (!list) return;
    const properties = kind === 'diff' ? { sessionID: id, diff: clone(list) } : { sessionID: id, todos: clone(list) };
    emit({ type: kind === 'diff' ? 'session.diff' : 'todo.updated', properties }, sessions.get(id)?.info.directory);
  }
  // The stored list (a copy; [] when never set), or null when set to null.
  const readEvidence = (kind, id) => {
    const list = evidence[kind].get(id);
    return list === null ? null : clone(list ?? []);
  };

  const requests = createPending({
    ids,
    emit,
    mustSession,
    directoryOf: (id) => sessions.get(id)?.info.directory ?? defaultDirectory,
  });

  return {
    sessions,
    statuses,
    mustSession,
    sortedSessions,
    touch,
    emitSession,
    emitMessage,
    createSession,
    deleteSession,
    setStatus,
    setMetadata,
    applyPatch,
    forkSession,
    addUserMessage,
    repostParts,
    newAssistant,
    addAssistantMessage,
    completeAssistantMessage,
    abortReplies,
    setPending: requests.add,
    clearPending: requests.clear,
    pendingOf: requests.list,
    hasPending: requests.has,
    setEvidence,
    readEvidence,
  };
}
