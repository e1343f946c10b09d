// Injected failures: the fault list (checked in order before routing, each with a countdown), and
// the decisions of what a matched fault does to one request. The HTTP layer carries them out.
import { isObj } from './common.mjs';

/** The 200 text/html page an `html` fault answers (what a proxy or a web UI would serve). */
export const HTML_PAGE =
  '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>OpenCode</title></head>' +
  '<body><div id="root"></div><script type="module" src="/assets/index.js"></script></body></html>\n';

const INJECTED = { name: 'UnknownError', data: { message: 'Injected fault' } };
const TRUNCATED_FALLBACK = '{"name":"UnknownError","data":{"message":"truncated"}}';

/**
 * The fault list: `add(spec)` → {remove(), remaining, fired}, `clear()`, `take(request)`.
 * `neverMatch`: no fault ever matches (a mutation that test suites must notice).
 */
export function createFaults({ neverMatch = false } = {}) {
  const faults = [];
  const queryMatches = (f, query) => !isObj(f.query) || Object.entries(f.query).every(([k, v]) => query[k] === String(v));
  const matches = (f, r) =>
    !neverMatch &&
    f.remaining > 0 &&
    (!f.method || f.method.toUpperCase() === r.method) &&
    (f.path instanceof RegExp ? f.path.test(r.path) : f.path === r.path) &&
    queryMatches(f, r.query);

  return {
    add(spec = {}) {
      const f = { ...spec, remaining: spec.times ?? Infinity, fired: 0 };
      faults.push(f);
      return {
        remove: () => {
          const i = faults.indexOf(f);
          if (i >= 0) faults.splice(i, 1);
        },
        get remaining() {
          return f.remaining;
        },
        /** How many requests this fault has matched so far. */
        get fired() {
          return f.fired;
        },
      };
    },
    clear() {
      faults.length = 0;
    },
    /** The first fault matching request {method, path, query}, counted down (and dropped at 0). */
    take(r) {
      const fault = faults.find((f) => matches(f, r));
      if (fault) {
        fault.fired++;
        fault.remaining--;
        if (fault.remaining <= 0) faults.splice(faults.indexOf(fault), 1);
      }
      return fault;
    },
  };
}

/** What a fault does: 'hang' | 'destroy' | 'html' | 'truncated' | 'status' | 'delay' ('none' without one). */
export function faultKind(fault) {
  if (!fault) return 'none';
  if (fault.hang) return 'hang';
  if (fault.destroy) return 'destroy';
  if (fault.html) return 'html';
  if (fault.truncatedJson) return 'truncated';
  if (fault.status !== undefined || fault.body !== undefined) return 'status';
  return 'delay';
}

/**
 * How the request is served under `fault`:
 * - kind: faultKind(fault);
 * - waitBeforeMs: a slow request, waited before the handler runs;
 * - waitAfterMs: a late answer (delay + apply), waited after the handler ran;
 * - runHandler: the real handler runs (no fault, a delay, truncated JSON, or `apply`);
 * - realAnswer: the handler's result is the answer (no fault or a delay only).
 */
export function planFault(fault) {
  const kind = faultKind(fault);
  const lateAnswer = Boolean(fault?.apply) && kind === 'delay';
  const delayMs = fault?.delayMs > 0 ? fault.delayMs : 0;
  const realAnswer = kind === 'none' || kind === 'delay';
  return {
    kind,
    waitBeforeMs: lateAnswer ? 0 : delayMs,
    waitAfterMs: lateAnswer ? delayMs : 0,
    runHandler: realAnswer || kind === 'truncated' || Boolean(fault?.apply),
    realAnswer,
  };
}

/**
 * The answer a fault gives in place of the real one: a result {status, body, contentType}, or
 * 'hang' (never answer) or 'destroy' (reset the socket). `result` is the handler's result when it
 * ran (truncated JSON cuts it in half).
 */
export function faultAnswer(kind, fault, result) {
  switch (kind) {
    case 'hang':
    case 'destroy':
      return kind;
    case 'html':
      return { status: fault.status ?? 200, body: fault.body ?? HTML_PAGE, contentType: fault.contentType ?? 'text/html; charset=utf-8' };
    case 'truncated': {
      const full = result?.body === undefined ? TRUNCATED_FALLBACK : JSON.stringify(result.body);
      const status = fault.status ?? (result?.sse || result?.status === 204 ? 200 : result?.status ?? 200);
      return { status, body: full.slice(0, Math.max(1, Math.floor(full.length / 2))), contentType: fault.contentType };
    }
    default:
      return { status: fault.status ?? 500, body: fault.body ?? structuredClone(INJECTED), contentType: fault.contentType };
  }
}
