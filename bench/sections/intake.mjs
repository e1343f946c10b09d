// Section 1: main-thread cost per forwarded payload.
//
// A host reads each SSE `data:` line, JSON.parses it, unwraps the global envelope and calls
// processPayload(payload, directory). We replay the capture-based mix (payload-mix.mjs) through
// the package entry exactly like that, and time the same host loop with other handlers:
//   no-op       the floor the brief asks for: the handler does nothing;
//   type read   reads payload.type and nothing else: the least any prefilter can do;
//   runtime     runtime.processPayload from runtime.js (the package entry).
// Two ways of timing each:
//   pre-parsed  the loop over already parsed envelopes (unwrap + call): the strictest floor;
//   with parse  the loop from the SSE data line (JSON.parse + unwrap + call): what the host's main
//               thread pays per payload in fact.
// Every timed loop gets its own objects, parsed right before it (never ones another handler just
// touched, all equally fresh in the caches), a minor GC runs before every timed loop, and the
// order of the handlers rotates from batch to batch. Figures are medians over batches.
// Each batch is timed in stream order (the mix) and grouped by payload type (order kept within a
// type; per-type rows).
//
// The runtime talks to the mock OpenCode (its own process), where every replayed session exists
// with an active goal, so interesting payloads do real work: idle arms a timer, busy clears it,
// session.updated parses and records the goal, the aborted turn pauses the goal over HTTP (fresh
// GET + PATCH on the runtime's threads). Quiet windows are 60 s so no tick fires inside the timed
// loops (ticks are section 2).
import { createRequire } from 'node:module'
import { loadMix, sessionIdOf, unwrapType } from '../payload-mix.mjs'
import { benchGoalRuntime, hrMs, median, progress, rootDir, runSection, sleep, startMockProcess } from '../lib.mjs'

const require = createRequire(import.meta.url)

const TARGET_PAYLOADS = Number(process.env.BENCH_PAYLOADS ?? 1_000_000)
const DELTAS_PER_TURN = Number(process.env.BENCH_DELTAS_PER_TURN ?? 300)
const COPIES_PER_BATCH = 32
const WARMUP_COPIES = 40

const UNWRAP = `const payload = raw.payload && typeof raw.payload === 'object' ? raw.payload : raw
        const directory = typeof raw.directory === 'string' && raw.directory !== 'global' ? raw.directory : ''
        handler(payload, directory)`

/** A host's loop over parsed envelopes, compiled once per handler (own type feedback each). */
function parsedLoop(handler) {
  return new Function(
    'handler',
    `return function forwardParsed(envelopes) {
      for (let i = 0; i < envelopes.length; i++) {
        const raw = envelopes[i]
        ${UNWRAP}
      }
    }`,
  )(handler)
}

/** A host's loop from SSE data lines, compiled once per handler. */
function lineLoop(handler) {
  return new Function(
    'handler',
    `return function forwardLines(lines) {
      for (let i = 0; i < lines.length; i++) {
        const raw = JSON.parse(lines[i])
        ${UNWRAP}
      }
    }`,
  )(handler)
}

function minorGc() {
  if (typeof globalThis.gc === 'function') globalThis.gc({ type: 'minor' })
}

function parseAll(lines) {
  const out = new Array(lines.length)
  for (let i = 0; i < lines.length; i++) out[i] = JSON.parse(lines[i])
  return out
}

/** Runs `jobs` (functions returning elapsed ms) in an order rotated by `turn`. */
function rotated(jobs, turn) {
  const out = new Array(jobs.length)
  for (let k = 0; k < jobs.length; k++) {
    const index = (k + turn) % jobs.length
    out[index] = jobs[index]()
  }
  return out
}

function timed(loop, input) {
  const start = hrMs()
  loop(input)
  return hrMs() - start
}

/**
 * Parses `lines` for this handler alone right before timing it, so every handler starts with
 * objects equally fresh in the CPU caches; the minor GC in between moves them out of the nursery
 * so that a scavenge of the batch does not land inside the timed loop.
 */
function parsedThenTimed(loop, lines) {
  const input = parseAll(lines)
  minorGc()
  return timed(loop, input)
}

function gcThenTimed(loop, lines) {
  minorGc()
  return timed(loop, lines)
}

const HANDLERS = ['noop', 'typeRead', 'runtime']
const MIX = 'all, in stream order'
const LINE_HANDLERS = ['noop', 'runtime']

function emptyRow(type) {
  return {
    type,
    count: 0,
    parsedMs: { noop: 0, typeRead: 0, runtime: 0 },
    lineMs: { noop: 0, runtime: 0 },
  }
}

runSection(async () => {
  const pkg = require(rootDir + '/runtime.js')
  const mix = loadMix({ deltasPerTurn: DELTAS_PER_TURN })
  const copies = Math.ceil((TARGET_PAYLOADS - 1) / mix.copySize)
  const mock = await startMockProcess({ directory: '/workspace/demo' })
  progress(`intake: creating ${copies + WARMUP_COPIES} goal sessions in the mock`)
  const ids = Array.from({ length: copies + WARMUP_COPIES }, (_, i) => sessionIdOf(i))
  for (let start = 0; start < ids.length; start += 1000) {
    const slice = ids.slice(start, start + 1000)
    await mock.call('createGoalSessions', { count: slice.length, ids: slice, directory: '/workspace/demo' })
  }

  let auditCalls = 0
  const runtime = benchGoalRuntime(pkg, {
    quietMs: 60_000,
    openCode: { baseUrl: mock.url },
    generateSmallModelText: async () => {
      auditCalls++
      return { text: '{"verdict":"continue","note":"keep going"}', providerID: 'mock', modelID: 'mock-model' }
    },
  })
  let sink
  const handlers = {
    noop: function noop(payload, directory) {},
    typeRead: function typeRead(payload, directory) {
      sink = payload.type
    },
    runtime: runtime.processPayload,
  }
  // Separate compiled loops for the in-order and the per-type runs too, so that neither's type
  // feedback (all payload shapes vs one) leaks into the other.
  const loops = {}
  for (const use of ['mix', 'type']) {
    loops[use] = { parsed: {}, line: {} }
    for (const name of HANDLERS) loops[use].parsed[name] = parsedLoop(handlers[name])
    for (const name of LINE_HANDLERS) loops[use].line[name] = lineLoop(handlers[name])
  }

  // The connection event arrives once, first.
  runtime.processPayload(JSON.parse(mix.connectedLine).payload, '')

  // Warm-up: every loop sees every payload shape before timing starts.
  for (let i = 0; i < WARMUP_COPIES; i++) {
    const lines = mix.copyLines(copies + i)
    const byType = new Map()
    for (const line of lines) {
      const type = unwrapType(JSON.parse(line))
      if (!byType.has(type)) byType.set(type, [])
      byType.get(type).push(line)
    }
    for (const use of ['mix', 'type']) {
      const groups = use === 'mix' ? [lines] : [...byType.values()]
      for (const group of groups) {
        for (const name of HANDLERS) loops[use].parsed[name](parseAll(group))
        for (const name of LINE_HANDLERS) loops[use].line[name](group)
      }
    }
  }
  await sleep(500)

  progress(`intake: ${copies} copies × ${mix.copySize} payloads, ${COPIES_PER_BATCH} copies per batch`)
  // One record per batch: the in-order row and the per-type rows. Figures are medians over
  // batches (robust against the moments the main thread is descheduled on a busy machine).
  const batches = []
  let parseMs = 0
  let batch = 0
  for (let start = 0; start < copies; start += COPIES_PER_BATCH, batch++) {
    const lines = []
    for (let k = start; k < Math.min(copies, start + COPIES_PER_BATCH); k++) lines.push(...mix.copyLines(k))
    const record = { mix: emptyRow(MIX), types: new Map() }
    batches.push(record)

    // In stream order.
    const parseStart = hrMs()
    const typeOf = parseAll(lines).map(unwrapType)
    parseMs += hrMs() - parseStart
    rotated(HANDLERS.map((name) => () => (record.mix.parsedMs[name] += parsedThenTimed(loops.mix.parsed[name], lines))), batch)
    rotated(LINE_HANDLERS.map((name) => () => (record.mix.lineMs[name] += gcThenTimed(loops.mix.line[name], lines))), batch)
    record.mix.count = lines.length

    // Per type (order kept within a type).
    const groups = new Map()
    for (let i = 0; i < lines.length; i++) {
      let group = groups.get(typeOf[i])
      if (!group) groups.set(typeOf[i], (group = []))
      group.push(lines[i])
    }
    for (const [type, group] of groups) {
      const row = emptyRow(type)
      record.types.set(type, row)
      rotated(HANDLERS.map((name) => () => (row.parsedMs[name] += parsedThenTimed(loops.type.parsed[name], group))), batch)
      rotated(LINE_HANDLERS.map((name) => () => (row.lineMs[name] += gcThenTimed(loops.type.line[name], group))), batch)
      row.count = group.length
    }
  }

  // Let the background work the payloads caused (abort pauses over HTTP) finish, then look.
  await sleep(1000)
  const snapshot = runtime.snapshot()
  await runtime.stop()
  await mock.close()
  void sink

  /** Medians over batches of the rows `pick` selects (summed within a batch). */
  const summarize = (name, pick) => {
    const rows = batches.map((record) => {
      const row = emptyRow(name)
      for (const part of pick(record)) {
        row.count += part.count
        for (const key of HANDLERS) row.parsedMs[key] += part.parsedMs[key]
        for (const key of LINE_HANDLERS) row.lineMs[key] += part.lineMs[key]
      }
      return row
    }).filter((row) => row.count > 0)
    const nsOf = (get) => median(rows.map((row) => (get(row) * 1e6) / row.count))
    const ratioOf = (get, base) => median(rows.map((row) => get(row) / base(row)))
    return {
      type: name,
      count: rows.reduce((n, row) => n + row.count, 0),
      batches: rows.length,
      parsed: {
        noopNs: nsOf((r) => r.parsedMs.noop),
        typeReadNs: nsOf((r) => r.parsedMs.typeRead),
        runtimeNs: nsOf((r) => r.parsedMs.runtime),
        ratio: ratioOf((r) => r.parsedMs.runtime, (r) => r.parsedMs.noop),
        typeReadRatio: ratioOf((r) => r.parsedMs.typeRead, (r) => r.parsedMs.noop),
      },
      withParse: {
        noopNs: nsOf((r) => r.lineMs.noop),
        runtimeNs: nsOf((r) => r.lineMs.runtime),
        ratio: ratioOf((r) => r.lineMs.runtime, (r) => r.lineMs.noop),
      },
    }
  }
  const ofTypes = (types) => (record) => types.map((t) => record.types.get(t)).filter(Boolean)
  const allTypes = [...new Set(batches.flatMap((record) => [...record.types.keys()]))]
  const countOf = (type) => batches.reduce((n, record) => n + (record.types.get(type)?.count ?? 0), 0)
  // The payload types runtime.js forwards to native code (the binding's intake contract), for
  // the "dropped in JS" and "forwarded to native" rows.
  const interesting = new Set(require(rootDir + '/index.js').intakePayloadTypes())
  return {
    copies,
    copySize: mix.copySize,
    deltasPerTurn: DELTAS_PER_TURN,
    parseNs: (parseMs * 1e6) / batches.reduce((n, record) => n + record.mix.count, 0),
    mix: summarize(MIX, (record) => [record.mix]),
    partDeltas: summarize('part deltas (delta + part.updated)', ofTypes(['message.part.delta', 'message.part.updated'])),
    dropped: summarize('all dropped in JS', ofTypes(allTypes.filter((t) => !interesting.has(t)))),
    forwarded: summarize('all forwarded to native', ofTypes(allTypes.filter((t) => interesting.has(t)))),
    perType: allTypes.sort((a, b) => countOf(b) - countOf(a)).map((t) => summarize(t, ofTypes([t]))),
    afterReplay: {
      armedTimers: snapshot.armedTimers,
      activeGoals: snapshot.activeGoals,
      ticks: snapshot.ticks,
      auditCalls,
    },
  }
})
