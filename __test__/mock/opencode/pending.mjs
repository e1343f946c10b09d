// Pending permission and question requests: what GET /permission and GET /question list, and the
// replies that clear them (each emits the event the real server would).
import { clone } from './common.mjs';

/**
 * Options: `ids` (createIds), `emit(payload, directory)`, `mustSession(id)` (the session record,
 * or a 404) and `directoryOf(id)` (a session's directory, or the default one once it is gone).
 */
export function createPending({ ids, emit, mustSession, directoryOf }) {
  const pending = []; // {kind: 'permission'|'question', request}

  /** Adds a request for session `id` and emits `<kind>.asked`; returns the request. */
  function add(id, kind, requestID, extra = {}) {
    const s = mustSession(id);
    if (kind !== 'permission' && kind !== 'question') throw new Error(`bad pending kind ${kind}`);
    const request =
      kind === 'permission'
        ? { id: requestID ?? ids.ascending('per'), sessionID: id, permission: 'bash', patterns: ['*'], metadata: {}, always: [], ...clone(extra) }
        : {
            id: requestID ?? ids.ascending('que'),
            sessionID: id,
            questions: [{ question: 'Continue?', header: 'Continue', options: [{ label: 'Yes', description: 'Go on' }] }],
            ...clone(extra),
          };
    pending.push({ kind, request });
    emit({ type: `${kind}.asked`, properties: clone(request) }, s.info.directory);
    return clone(request);
  }

  /** Removes the matching requests (every filter optional) and emits their replies; returns how many. */
  function clear(id, kind, requestID, answer) {
    let n = 0;
    for (let i = pending.length - 1; i >= 0; i--) {
      const { kind: k, request } = pending[i];
      if ((id && request.sessionID !== id) || (kind && k !== kind) || (requestID && request.id !== requestID)) continue;
      pending.splice(i, 1);
      n++;
      const dir = directoryOf(request.sessionID);
      const props = { sessionID: request.sessionID, requestID: request.id };
      if (k === 'permission') emit({ type: 'permission.replied', properties: { ...props, reply: answer ?? 'once' } }, dir);
      else if (answer === 'reject') emit({ type: 'question.rejected', properties: props }, dir);
      else emit({ type: 'question.replied', properties: { ...props, answers: clone(answer) ?? [] } }, dir);
    }
    return n;
  }

  return {
    add,
    clear,
    /** Copies of the open requests of one kind, oldest first. */
    list: (kind) => pending.filter((p) => p.kind === kind).map((p) => clone(p.request)),
    /** Whether request `requestID` of `kind` is open. */
    has: (kind, requestID) => pending.some((p) => p.kind === kind && p.request.id === requestID),
  };
}
