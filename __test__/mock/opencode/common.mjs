// Shared pieces of the mock OpenCode: the version it imitates, copying helpers, the error
// answers OpenCode gives, handler results, ids and timers. No state of its own but the count of
// id factories made in the process (createIds).

/** The OpenCode version the mock imitates (Session.version, GET /global/health). */
export const VERSION = '1.18.33';

/** The error OpenCode stores on a reply cut short by POST /session/:id/abort. */
export const ABORTED = { name: 'MessageAbortedError', data: { message: 'Aborted' } };

/** A deep copy (undefined stays undefined): callers never share the mock's own objects. */
export const clone = (v) => (v === undefined ? undefined : structuredClone(v));

/** Whether `v` is a plain JSON object (not null, not an array). */
export const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** An all-zero token count in OpenCode's shape. */
export const zeroTokens = () => ({ input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } });

/** An error a route handler throws to answer with `status` and the JSON `body`. */
export class HttpError extends Error {
  constructor(status, body) {
    super(typeof body?.data?.message === 'string' ? body.data.message : body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** OpenCode's 404 answer: {"name":"NotFoundError","data":{"message":...}}. */
export const notFound = (message) => new HttpError(404, { name: 'NotFoundError', data: { message } });

/** OpenCode's 400 answer for bad JSON, params or query: {"_tag":"InvalidRequestError",...}. */
export const badRequest = (message, kind = 'Body', field) =>
  new HttpError(400, { _tag: 'InvalidRequestError', message, kind, ...(field ? { field } : {}) });

/** A handler result: answer `body` as JSON with `status`. */
export const json = (body, status = 200) => ({ status, body });

/** A handler result: 204, no body. */
export const NO_CONTENT = Object.freeze({ status: 204 });

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Id factories made in this process so far (each mock server makes one). */
let factories = 0;

/**
 * Id factory shared by every kind of object, like OpenCode's: a 12-hex-digit counter then a
 * 14-character pseudo-random tail. `ascending` ids sort in creation order (messages, parts,
 * events); `descending` ones sort newest first (sessions). `count` is the last counter value.
 *
 * Each factory of the process draws its tails from a stream of its own (the first one's is the
 * same as ever), so two mock servers of one process never hand out the same id: the addon's
 * runtimes of one process share per-session state keyed by id alone (write slots, dispatch
 * claims), and tests of one file that run at the same time, each on its own mock, must not meet
 * there. The counters, and with them the ids' order, are the same in every factory.
 */
export function createIds() {
  let seq = 0;
  const stream = Math.imul(factories++, 0x9e3779b9) >>> 0;
  const tail = (n) => {
    let x = (Math.imul(n, 2654435761) ^ stream) >>> 0;
    let s = '';
    for (let i = 0; i < 14; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      s += B62[(x >>> 16) % 62];
    }
    return s;
  };
  return {
    ascending(prefix) {
      const n = ++seq;
      return `${prefix}_${n.toString(16).padStart(12, '0')}${tail(n)}`;
    },
    descending(prefix) {
      const n = ++seq;
      return `${prefix}_${(0xffffffffffff - n).toString(16).padStart(12, '0')}${tail(n)}`;
    },
    get count() {
      return seq;
    },
  };
}

/**
 * Timers the mock can cancel all at once on close. `sleep(ms, wake?)` resolves after `ms` (on the
 * next turn of the loop when ms is not positive), or early when a callback of the `wake` Set is
 * called.
 */
export function createTimers() {
  const pending = new Set();
  const sleep = (ms, wake) =>
    new Promise((resolve) => {
      if (!(ms > 0)) return setImmediate(resolve);
      const done = () => {
        clearTimeout(timer);
        pending.delete(timer);
        wake?.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      pending.add(timer);
      wake?.add(done);
    });
  const clearAll = () => {
    for (const t of pending) clearTimeout(t);
    pending.clear();
  };
  return { sleep, clearAll };
}
