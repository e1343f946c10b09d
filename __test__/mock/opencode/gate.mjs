// A request gate for tests that force an order of events: a held request waits, before the mock
// reads or changes anything for it, until the test releases it. Orders are decided by gates,
// never by sleeps.
//
//   const gate = createRequestGate(mock)
//   const read = gate.hold({ method: 'GET', path: `/session/${id}` })
//   await read.arrived      // the request is here and held
//   read.release()          // now it is served
//   gate.close()            // releases anything still held and removes the hook
import { isObj } from './common.mjs';

const queryMatches = (want, query) => !isObj(want) || Object.entries(want).every(([k, v]) => query?.[k] === String(v));

/**
 * Installs a gate on `mock` (through its `holdRequest` hook). `hold({method, path, query, every})`
 * (path: a string or a RegExp) holds the next matching request, or with `every` each matching
 * request until the release (later ones then pass); it returns {arrived: Promise<request> (the
 * first one held), release(), held (how many were held)}.
 */
export function createRequestGate(mock) {
  const holds = [];
  const previous = mock.holdRequest;
  mock.holdRequest = async (request) => {
    if (previous) await previous(request);
    const hold = holds.find((h) => !h.done && h.matches(request));
    if (!hold) return;
    hold.held++;
    if (!hold.every) hold.done = true;
    hold.arrive(request);
    await hold.released;
  };
  return {
    hold({ method, path, query, every = false } = {}) {
      let arrive;
      let release;
      const arrived = new Promise((resolve) => (arrive = resolve));
      const released = new Promise((resolve) => (release = resolve));
      const hold = {
        done: false,
        held: 0,
        every,
        arrive,
        release,
        released,
        matches: (r) =>
          (!method || method.toUpperCase() === r.method) &&
          (path instanceof RegExp ? path.test(r.path) : path === r.path) &&
          queryMatches(query, r.query),
      };
      holds.push(hold);
      return {
        arrived,
        release: () => {
          hold.done = true;
          release();
        },
        get held() {
          return hold.held;
        },
      };
    },
    /** Releases every hold (taken or not) and removes the hook. */
    close() {
      for (const hold of holds) {
        hold.done = true;
        hold.arrive(undefined);
        hold.release();
      }
      holds.length = 0;
      mock.holdRequest = previous;
    },
  };
}
