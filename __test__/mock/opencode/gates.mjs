// Gates, the mock's one way to hold a request: on arrival (after it is recorded, before any
// fault or handler) a request waits until a named condition holds, so a test decides the order
// of two clients' requests without sleeping. Conditions: a test's signal (`mock.signal(name)`),
// another request answered, an event emitted (delivered to every open stream), or `manual` (the
// test releases held requests one by one, or all at once). Tests reach it as `mock.gate(spec)`;
// the API is documented in ../opencode.mjs (GATES).
import { isObj } from './common.mjs';

const queryMatches = (want, query) => !isObj(want) || Object.entries(want).every(([k, v]) => query[k] === String(v));

/** Whether gate spec `g` takes request `r` ({method, path, query, headers}). */
function takes(g, r) {
  if (g.method && g.method.toUpperCase() !== r.method) return false;
  if (g.path !== undefined && !(g.path instanceof RegExp ? g.path.test(r.path) : g.path === r.path)) return false;
  if (g.host !== undefined && !String(r.headers?.host ?? '').startsWith(`${g.host}:`)) return false;
  if (!queryMatches(g.query, r.query)) return false;
  return typeof g.match !== 'function' || Boolean(g.match(r));
}

/**
 * The gate list. `add(spec)` → gate; `hold(request, entry)` → a promise that resolves when the
 * request may go on; `answered(entry)` and `emitted(envelope)` feed the conditions; `signal(name)`
 * fires a test's signal; `releaseAll()` lets everything through (`mock.releaseGates()`, closing the
 * server).
 */
export function createGates() {
  const gates = [];
  const signals = new Set();

  // Makes condition `until` of a gate: {satisfied, onAnswered(entry), onEvent(envelope), onSignal(name)}.
  function condition(until) {
    if (until === 'manual') return { manual: true };
    if (typeof until === 'string') return { signal: until };
    if (isObj(until) && typeof until.signal === 'string') return { signal: until.signal };
    if (isObj(until) && typeof until.answered === 'function') return { answered: until.answered };
    if (isObj(until) && isObj(until.answered) && typeof until.answered.caught === 'function') {
      // Another gate: the first request it caught has been answered.
      const other = until.answered;
      return { answered: (entry) => other.caught().includes(entry) };
    }
    if (isObj(until) && typeof until.event === 'function') return { event: until.event };
    throw new Error('gate: `until` must be "manual", a signal name, {signal}, {answered}, or {event}');
  }

  function add(spec = {}) {
    const cond = condition(spec.until);
    const g = { ...spec, cond, remaining: spec.times ?? 1, open: false, caught: [], waiting: [], arrivals: [] };
    if (cond.signal && signals.has(cond.signal)) g.open = true;
    gates.push(g);
    const letGo = (w) => {
      g.waiting.splice(g.waiting.indexOf(w), 1);
      w.resolve();
    };
    return {
      /** Requests this gate caught so far (their request-log entries), in arrival order. */
      caught: () => g.caught.map((w) => w.entry),
      /** How many requests it holds right now. */
      get held() {
        return g.waiting.length;
      },
      /** Whether its condition held (a manual gate never opens by itself). */
      get open() {
        return g.open;
      },
      /** Resolves with the n-th caught request's entry (1-based) once it has arrived. */
      arrived(n = 1) {
        if (g.caught.length >= n) return Promise.resolve(g.caught[n - 1].entry);
        return new Promise((resolve) => g.arrivals.push({ n, resolve }));
      },
      /** Manual gates: lets the oldest held request (matching `pick(entry)`) go on; its entry, or null. */
      releaseNext(pick = () => true) {
        const w = g.waiting.find((x) => pick(x.entry));
        if (!w) return null;
        letGo(w);
        return w.entry;
      },
      /** Lets every held request go on, and stops catching new ones. */
      release() {
        g.open = true;
        g.remaining = 0;
        for (const w of [...g.waiting]) letGo(w);
      },
      remove() {
        this.release();
        const i = gates.indexOf(g);
        if (i >= 0) gates.splice(i, 1);
      },
    };
  }

  function openGate(g) {
    g.open = true;
    for (const w of g.waiting.splice(0)) w.resolve();
  }

  return {
    add,
    hold(r, entry) {
      const g = gates.find((x) => x.remaining > 0 && takes(x, r));
      if (!g) return null;
      g.remaining -= 1;
      const w = { entry };
      const passed = g.open ? Promise.resolve() : new Promise((resolve) => (w.resolve = resolve));
      g.caught.push(w);
      if (!g.open) g.waiting.push(w);
      entry.gated = true;
      for (const a of g.arrivals.filter((x) => g.caught.length >= x.n)) {
        g.arrivals.splice(g.arrivals.indexOf(a), 1);
        a.resolve(g.caught[a.n - 1].entry);
      }
      return passed;
    },
    answered(entry) {
      for (const g of gates) if (!g.open && g.cond.answered?.(entry)) openGate(g);
    },
    emitted(envelope) {
      for (const g of gates) if (!g.open && g.cond.event?.(envelope.payload ?? envelope)) openGate(g);
    },
    signal(name) {
      signals.add(name);
      for (const g of gates) if (!g.open && g.cond.signal === name) openGate(g);
    },
    /** Opens every gate: what it holds goes on and later requests pass (a test's cleanup, closing the server). */
    releaseAll() {
      for (const g of gates) openGate(g);
    },
  };
}
