// Event delivery: envelopes built like the real server's, broadcast to every open event stream
// (GET /global/event: {directory, project, payload}; GET /event?directory=: bare payloads of one
// directory), heartbeats, and the streams' lifecycle.
import { clone, isObj } from './common.mjs';

// Event types the real server also sends as a {"type":"sync"} twin.
const SYNCED_TYPES = /^(session\.(created|updated)|message\.(updated|part\.updated))$/;

/**
 * The event hub. Options: `ids` (createIds), `projectID`, `defaultDirectory` (a bare stream's
 * directory when ?directory= is absent), `heartbeatMs`, `syncEvents` (send sync twins) and
 * `record(envelope)` (called with a copy of every emitted envelope; twins and heartbeats are not
 * recorded).
 */
export function createEventHub({ ids, projectID, defaultDirectory, heartbeatMs, syncEvents, record }) {
  const streams = new Set(); // {res, bare, filterDir, timer, host}
  const holds = new Set(); // {host, queue: [[stream, obj]]}

  const send = (stream, obj) => {
    if (!stream.res.writableEnded && !stream.res.destroyed) stream.res.write(`data: ${JSON.stringify(obj)}\n\n`);
  };
  const write = (stream, obj) => {
    const hold = [...holds].find((h) => stream.host.startsWith(h.host));
    if (hold) hold.queue.push([stream, obj]);
    else send(stream, obj);
  };
  const broadcast = (envelope) => {
    for (const st of streams) {
      if (!st.bare) write(st, envelope);
      else if (envelope.directory !== undefined && envelope.directory === st.filterDir) write(st, envelope.payload);
    }
  };
  const syncTwin = (directory, full) => ({
    directory,
    project: projectID,
    payload: {
      type: 'sync',
      syncEvent: { id: full.id, type: `${full.type}.1`, seq: ids.count, aggregateID: full.properties.sessionID, data: full.properties },
      id: full.id,
    },
  });

  /** Broadcasts `payload` (a missing id is filled in) for `directory`; returns the envelope. */
  function emit(payload, directory) {
    const p = isObj(payload) ? payload : { type: String(payload) };
    const full = { id: p.id ?? ids.ascending('evt'), type: p.type, properties: p.properties ?? {} };
    for (const [k, v] of Object.entries(p)) if (!(k in full)) full[k] = v;
    const envelope = directory === undefined ? { payload: full } : { directory, project: projectID, payload: full };
    record(clone(envelope));
    broadcast(envelope);
    if (syncEvents && directory !== undefined && SYNCED_TYPES.test(full.type)) broadcast(syncTwin(directory, full));
    return clone(envelope);
  }

  const stop = (st) => {
    clearInterval(st.timer);
    streams.delete(st);
  };

  /** Answers `req` with an event stream ('global' or 'bare'): server.connected, then events. */
  function open(req, res, kind) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const st = { res, bare: kind === 'bare', filterDir: req.query.directory ?? defaultDirectory, timer: null, host: String(req.headers.host ?? '') };
    streams.add(st);
    const framed = (type) => {
      const event = { id: ids.ascending('evt'), type, properties: {} };
      return st.bare ? event : { payload: event };
    };
    write(st, framed('server.connected'));
    st.timer = setInterval(() => write(st, framed('server.heartbeat')), heartbeatMs);
    st.timer.unref?.();
    res.on('close', () => stop(st));
    res.on('error', () => stop(st));
  }

  /** Ends every stream (destroys the connection when `abrupt`). */
  function drop({ abrupt = false } = {}) {
    for (const st of [...streams]) {
      stop(st);
      if (abrupt) st.res.destroy();
      else st.res.end();
    }
  }

  /** Forgets every stream without writing to it (its socket is destroyed by the server). */
  function forgetAll() {
    for (const st of streams) clearInterval(st.timer);
    streams.clear();
  }

  /**
   * Holds every event (heartbeats included) bound for the streams opened with a Host header that
   * starts with `host` ('localhost' or '127.0.0.1'): a host whose event stream lags. Returns
   * {held, release()}: release() sends what was held, in order, and stops holding.
   */
  function hold(host) {
    const entry = { host, queue: [] };
    holds.add(entry);
    return {
      get held() {
        return entry.queue.length;
      },
      release() {
        holds.delete(entry);
        for (const [stream, obj] of entry.queue.splice(0)) send(stream, obj);
      },
    };
  }

  return {
    emit,
    open,
    hold,
    drop,
    forgetAll,
    get count() {
      return streams.size;
    },
  };
}
