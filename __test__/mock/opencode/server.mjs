// The HTTP side of the mock: reading a request, recording it, applying a matched fault around the
// route handler, writing the answer (whole or trickled), and the listener's lifecycle (outages on
// the same port, close).
import http from 'node:http';
import { HttpError, clone, json } from './common.mjs';
import { faultAnswer, faultKind, planFault } from './faults.mjs';

const MALFORMED_JSON = { _tag: 'InvalidRequestError', message: 'Malformed JSON in request body', kind: 'Body' };
const TRICKLE_SLICES = 8;

const unknownError = (e) => json({ name: 'UnknownError', data: { message: String(e?.message ?? e) } }, 500);

const bodyText = (result) =>
  result.status === 204 || result.body === undefined ? '' : typeof result.body === 'string' ? result.body : JSON.stringify(result.body);

/** Writes a handler result (204 or no body: empty answer). */
export function send(res, result) {
  if (res.destroyed || res.writableEnded) return;
  if (result.status === 204 || result.body === undefined) {
    res.writeHead(result.status ?? 204);
    return res.end();
  }
  const text = bodyText(result);
  res.writeHead(result.status ?? 200, { 'content-type': result.contentType ?? 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

// A slow answer: the headers at once, the body in slices spread over `ms`.
async function trickle(res, result, ms, { sleep, isClosed }) {
  if (res.destroyed || res.writableEnded) return;
  const bytes = Buffer.from(bodyText(result));
  const headers = bytes.length ? { 'content-type': result.contentType ?? 'application/json', 'content-length': bytes.length } : {};
  res.writeHead(result.status ?? (bytes.length ? 200 : 204), headers);
  for (let i = 0; i < TRICKLE_SLICES; i++) {
    await sleep(ms / TRICKLE_SLICES);
    if (res.destroyed || isClosed()) return;
    const chunk = bytes.subarray(Math.floor((i * bytes.length) / TRICKLE_SLICES), Math.floor(((i + 1) * bytes.length) / TRICKLE_SLICES));
    if (chunk.length) res.write(chunk);
  }
  res.end();
}

// The request as handlers see it; a body that is not JSON is kept as text and flagged.
async function readRequest(req, now) {
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
  const r = { method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), body, headers: { ...req.headers }, receivedAt: now() };
  return { r, badJson, raw };
}

/**
 * Notes on the request's log entry what became of it: `fault` (the matched fault's kind, and
 * `apply` when the real handler ran too), then `answered` {status, at} once the whole answer
 * left, or `answered: null` when the connection closed first (the client never had an answer).
 */
function recordAnswer(entry, fault, res, now, gates) {
  if (fault) entry.fault = { kind: faultKind(fault), apply: Boolean(fault.apply || fault.truncatedJson), ...(fault.name ? { name: fault.name } : {}) };
  res.once('finish', () => {
    entry.answered = { status: res.statusCode, at: now() };
    gates?.answered(entry);
  });
  res.once('close', () => {
    if (!('answered' in entry)) entry.answered = null;
  });
}

/**
 * The HTTP server. Options: `route(request)` (the route dispatcher), `faults` (createFaults),
 * `gates` (createGates: a request is held there after it is recorded, before anything else),
 * `events` (the event hub: opens streams), `mock` (requests, errors, fault actions), `now`,
 * `sleep`. Returns {listen(port), refuse({forMs}), accept(), close(), port, listening}.
 */
export function createHttpServer({ route, faults, gates, events, mock, now, sleep }) {
  const sockets = new Set();
  let listening = false;
  let closed = false;
  let port = 0;
  let reopenTimer = null;
  const isClosed = () => closed;
  const down = () => closed || !listening;

  async function runHandler(r) {
    try {
      return await route(r);
    } catch (e) {
      if (e instanceof HttpError) return json(e.body, e.status);
      mock.errors.push(e);
      return unknownError(e);
    }
  }

  // Runs the fault's action hook (when it has one) with a copy of the request.
  function fireAction(fault, r) {
    if (typeof fault?.action !== 'function') return;
    try {
      fault.action(clone({ method: r.method, path: r.path, query: r.query, body: r.body }), mock);
    } catch (e) {
      mock.errors.push(e);
    }
  }

  async function handle(req, res) {
    const { r, badJson, raw } = await readRequest(req, now);
    const entry = { ...clone({ method: r.method, path: r.path, query: r.query, body: r.body, headers: r.headers }), at: r.receivedAt };
    // The body's text as it arrived (key order and all), for tests that check the bytes.
    if (mock.keepRawBodies) entry.rawBody = raw;
    mock.requests.push(entry);
    // A test's gate (gates.mjs) may hold the request here, before anything is read for it.
    const held = gates?.hold(r, entry);
    if (held) {
      await held;
      if (down()) return req.socket.destroy();
    }
    const fault = faults.take(r);
    recordAnswer(entry, fault, res, now, gates);
    // An actionFirst fault's action runs on arrival, and only there.
    const actionNow = fault?.actionFirst ? () => {} : () => fireAction(fault, r);
    if (fault?.actionFirst) fireAction(fault, r);
    const plan = planFault(fault);
    if (plan.waitBeforeMs > 0) {
      await sleep(plan.waitBeforeMs);
      if (down()) return req.socket.destroy();
    }
    const reply = (result) => (fault?.trickleMs > 0 ? trickle(res, result, fault.trickleMs, { sleep, isClosed }) : send(res, result));
    let result;
    if (plan.runHandler) {
      result = badJson ? json(MALFORMED_JSON, 400) : await runHandler(r);
      if (plan.realAnswer) {
        if (result.sse) return events.open(r, res, result.sse);
        if (plan.kind === 'none') return send(res, result);
        actionNow();
        if (plan.waitAfterMs > 0) await sleep(plan.waitAfterMs);
        if (down()) return req.socket.destroy();
        return reply(result);
      }
    }
    actionNow();
    const answer = faultAnswer(plan.kind, fault, result);
    if (answer === 'hang') return; // the socket is destroyed by close()
    if (answer === 'destroy') return req.socket.destroy();
    return reply(answer);
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((e) => {
      mock.errors.push(e);
      try {
        send(res, unknownError(e));
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

  const listen = (onPort) =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(onPort, '127.0.0.1', () => {
        server.off('error', reject);
        listening = true;
        port = server.address().port;
        resolve();
      });
    });

  // Stops listening and destroys every socket (event streams and in-flight requests included).
  async function stopListening() {
    listening = false;
    events.forgetAll();
    const stopped = new Promise((resolve) => server.close(() => resolve()));
    for (const sock of sockets) sock.destroy();
    await stopped;
  }

  /** Listens again on the same port (no-op when closed or already listening). */
  async function accept() {
    clearTimeout(reopenTimer);
    reopenTimer = null;
    if (closed || listening) return;
    await listen(port);
  }

  /** Refuses connections; with forMs, listens again on the same port after that long. */
  async function refuse({ forMs } = {}) {
    if (closed) return;
    clearTimeout(reopenTimer);
    reopenTimer = null;
    if (listening) await stopListening();
    if (forMs > 0) {
      reopenTimer = setTimeout(() => {
        reopenTimer = null;
        accept().catch((e) => mock.errors.push(e));
      }, forMs);
    }
  }

  /** Closes for good: every socket destroyed, the listener closed. */
  async function close() {
    if (closed) return;
    closed = true;
    gates?.releaseAll();
    clearTimeout(reopenTimer);
    events.forgetAll();
    for (const s of sockets) s.destroy();
    if (listening) {
      listening = false;
      await new Promise((resolve) => server.close(() => resolve()));
    }
  }

  return {
    listen,
    accept,
    refuse,
    close,
    get port() {
      return port;
    },
    get listening() {
      return listening;
    },
    isClosed,
  };
}
