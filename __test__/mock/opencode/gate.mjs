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
 * Installs a gate on `mock` (through its `holdRequest` hook). `hold({method, path, query})`
 * (path: a string or a RegExp) holds the next matching request only; it returns
 * {arrived: Promise<request>, release(), held}.
 */
export function createRequestGate(mock) {
  const holds = [];
  const previous = mock.holdRequest;
  mock.holdRequest = async (request) => {
    if (previous) await previous(request);
    const hold = holds.find((h) => !h.taken && h.matches(request));
    if (!hold) return;
    hold.taken = true;
    hold.arrive(request);
    await hold.released;
  };
  return {
    hold({ method, path, query } = {}) {
      let arrive;
      let release;
      const arrived = new Promise((resolve) => (arrive = resolve));
      const released = new Promise((resolve) => (release = resolve));
      const hold = {
        taken: false,
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
        release,
        get held() {
          return hold.taken;
        },
      };
    },
    /** Releases every hold (taken or not) and removes the hook. */
    close() {
      for (const hold of holds) {
        hold.taken = true;
        hold.arrive(undefined);
        hold.release();
      }
      holds.length = 0;
      mock.holdRequest = previous;
    },
  };
}
