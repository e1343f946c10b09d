// Scripted turns: what the mock "model" answers to an accepted prompt. Turns run one at a time
// per session: status busy, an unfinished reply, the scripted entry after a delay, status idle.
// Abort and delete cancel the running and queued turns.
import { clone } from './common.mjs';
import { messageCopy } from './messages.mjs';

/**
 * Options: `state` (createState), `emit`, `sleep` (createTimers), `mock` (the public object: its
 * `errors` list and the argument of reply functions), `defaultDelayMs`, `defaultReplies` (the
 * script of sessions without their own) and `isClosed()`.
 */
export function createTurns({ state, emit, sleep, mock, defaultDelayMs, defaultReplies, isClosed }) {
  const scripts = new Map(); // id -> {replies, index, delayMs}
  const strands = new Map(); // id -> prompts left to strand
  const turns = new Map(); // id -> {queue: Promise, gen, wake: Set}
  const defaultScript = defaultReplies ? { replies: defaultReplies, index: 0, delayMs: defaultDelayMs } : null;
  // One script shared by every child session (parentID) without its own: a reviewer's answers.
  let childScript = null;
  const isChild = (id) => Boolean(state.sessions.get(id)?.info.parentID);
  const scriptOf = (id) => scripts.get(id) ?? (childScript && isChild(id) ? childScript : null) ?? defaultScript;

  const turnState = (id) => {
    if (!turns.has(id)) turns.set(id, { queue: Promise.resolve(), gen: 0, wake: new Set() });
    return turns.get(id);
  };

  /** Sets (or with null removes) the reply script of a session. */
  function script(sessionId, replies, { replyDelayMs } = {}) {
    if (replies === null || replies === undefined) scripts.delete(sessionId);
    else scripts.set(sessionId, { replies: [...replies], index: 0, delayMs: replyDelayMs ?? defaultDelayMs });
  }

  /**
   * The next `times` prompts to the session (new ones, and re-posts of an unanswered message) are
   * stored but start no turn, as when the server is killed between the two; 0 stops it.
   */
  function strand(sessionId, times = 1) {
    if (times > 0) strands.set(sessionId, times);
    else strands.delete(sessionId);
  }

  /** Whether this prompt to the session is stranded (one of the `times` is used). */
  function takeStrand(id) {
    const left = strands.get(id) ?? 0;
    if (left <= 0) return false;
    if (left === 1) strands.delete(id);
    else strands.set(id, left - 1);
    return true;
  }

  /**
   * Sets (or with null removes) the script every child session without its own follows, one
   * entry per prompt to any of them, in order (the last entry repeats).
   */
  function scriptChildren(replies, { replyDelayMs } = {}) {
    childScript = replies === null || replies === undefined ? null : { replies: [...replies], index: 0, delayMs: replyDelayMs ?? defaultDelayMs };
  }

  /** Whether prompts to the session get scripted replies. */
  const hasScript = (id) => Boolean(scriptOf(id));

  /** Takes the session's next script entry ({entry, delayMs}; the last entry repeats), if any. */
  function nextReply(id) {
    const sc = scriptOf(id);
    if (!sc || !sc.replies.length) return undefined;
    const entry = sc.replies[Math.min(sc.index, sc.replies.length - 1)];
    sc.index++;
    return { entry, delayMs: sc.delayMs };
  }

  /** Cancels the running and queued turns of a session (a sleeping turn wakes at once). */
  function cancel(id) {
    const t = turns.get(id);
    if (!t) return;
    t.gen++;
    for (const wake of [...t.wake]) wake();
  }

  // The reply's addAssistantMessage options: the prompt's agent/model under the script entry.
  function replyOptions(userMessage, body, entry) {
    const base = {
      parentID: userMessage?.info.id,
      agent: body?.agent ?? userMessage?.info.agent,
      providerID: body?.model?.providerID ?? userMessage?.info.model?.providerID,
      modelID: body?.model?.modelID ?? userMessage?.info.model?.modelID,
      variant: body?.variant,
    };
    for (const k of Object.keys(base)) if (base[k] === undefined) delete base[k];
    return { ...base, ...entry };
  }

  /**
   * Runs one turn after the queued ones; resolves with the reply {info, parts}, or null when the
   * turn was cancelled before it started.
   */
  function run(id, { userMessage, body, reply }) {
    const t = turnState(id);
    const gen = t.gen;
    const live = () => t.gen === gen && !isClosed() && state.sessions.has(id);
    const turn = async () => {
      if (!live()) return null;
      const s = state.sessions.get(id);
      let entry = reply.entry ?? {};
      if (typeof entry === 'function') entry = (await entry({ sessionId: id, body: clone(body), mock })) ?? {};
      if (!live()) return null;
      state.setStatus(id, 'busy');
      const { retry, idleEvent = true, ...rest } = entry;
      const opts = replyOptions(userMessage, body, rest);
      const m = state.newAssistant(s, opts);
      state.emitMessage(s, m);
      await sleep(reply.delayMs ?? defaultDelayMs, t.wake);
      // OpenCode retrying a limited provider itself: status `retry` for a while, then the entry.
      if (retry && live()) {
        const forMs = retry.forMs ?? 100;
        state.setStatus(id, { type: 'retry', attempt: retry.attempt ?? 1, message: retry.message ?? 'Rate limited', next: Date.now() + forMs });
        mock.retries.push({ sessionId: id, messageID: m.info.id, at: Date.now(), forMs });
        await sleep(forMs, t.wake);
      }
      if (!live() || opts.completed === false) return messageCopy(m);
      const result = state.completeAssistantMessage(id, m.info.id, opts);
      if (opts.error) emit({ type: 'session.error', properties: { sessionID: id, error: clone(opts.error) } }, s.info.directory);
      // idleEvent: false — the turn ends and the session is idle, but the idle never reaches a
      // stream (lost, or the stream was down).
      state.setStatus(id, 'idle', { silent: !idleEvent });
      return result;
    };
    const p = t.queue.then(turn, turn).catch((e) => {
      mock.errors.push(e);
      return null;
    });
    t.queue = p;
    return p;
  }

  /** POST /session/:id/abort: recorded, turns cancelled, unfinished replies aborted. */
  function abort(id) {
    mock.aborts.push(id);
    if (!state.sessions.has(id)) return;
    cancel(id);
    state.abortReplies(id);
  }

  /**
   * A server restart in the middle of turns (docs/opencode.md, "A turn cut by a server restart"): every
   * running turn stops where it is (its reply keeps no completion, finish or error) and the
   * session is idle, with no event announcing any of it. Returns the sessions that were cut.
   */
  function cutAll() {
    const cut = [];
    for (const [id] of turns) {
      if (!state.statuses.has(id)) continue;
      cancel(id);
      state.statuses.delete(id);
      cut.push(id);
    }
    return cut;
  }

  return { script, scriptChildren, hasScript, nextReply, cancel, run, abort, cutAll, strand, takeStrand };
}
