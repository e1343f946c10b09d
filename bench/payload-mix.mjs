// The replayed event mix of the intake benchmark, built from a real `GET /global/event` capture
// (bench/fixtures/sse-global-event-capture.txt: a session created, one normal turn, a second turn
// aborted mid-stream).
//
// One "copy" is the capture after its `server.connected`, with:
// - the session id rewritten to a per-copy id (so status, update and abort payloads hit many
//   sessions, each of which exists in the mock with an active goal);
// - goal metadata (`metadata.openchamber.goal`, an active goal on its third turn) in every
//   `session.updated` and its sync twin, as a host running goals sees them;
// - the captured reply's single `message.part.delta` (the capture's scripted model streamed its
//   whole text in one chunk) streamed as DELTAS_PER_TURN small chunks of 2–9 characters, as a real
//   model streams tokens. Deltas have no sync twin in the capture, so none are added.
// The stream is `server.connected` once, then copies until the payload count is reached.
import fs from 'node:fs'
import path from 'node:path'
import { benchDir } from './lib.mjs'

const CAPTURE = path.join(benchDir, 'fixtures', 'sse-global-event-capture.txt')
const SID_TOKEN = '@@SESSION_ID@@'

function goalFor(sessionId) {
  return {
    id: `goal-${sessionId}`,
    objective: 'Make the parser handle nested lists and keep every existing test green',
    objectiveFile: false,
    status: 'active',
    tokenBudget: 500000,
    tokensUsed: 42000,
    tokensBaseline: 0,
    tokensCommitted: 42000,
    turnsUsed: 2,
    blockedStreak: 0,
    auditFailStreak: 0,
    note: 'Lists parse; nesting deeper than two levels still fails.',
    statusReason: '',
    evaluationProviderID: 'mock',
    evaluationModelID: 'mock-model',
    lastAccountedMessageID: 'msg_228e54e5b001z2eVgQVivxyI3N',
    createdAt: 1795982445000,
    updatedAt: 1795982446000,
  }
}

/** Session id of copy `index` (sorts like OpenCode ids; accepted by the mock). */
export const sessionIdOf = (index) => `ses_bench${String(index).padStart(7, '0')}`

function deltaChunks(text, count) {
  let source = text
  while (source.length < count * 10) source += ' ' + text
  const chunks = []
  let seed = 12345
  let offset = 0
  for (let i = 0; i < count; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    const length = 2 + (seed % 8)
    chunks.push(source.slice(offset, offset + length))
    offset += length
  }
  return chunks
}

/**
 * Loads the capture and prepares copy templates.
 * @param {{deltasPerTurn: number}} options
 */
export function loadMix({ deltasPerTurn }) {
  const lines = fs
    .readFileSync(CAPTURE, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice(6))
  const events = lines.map((line) => JSON.parse(line))
  const connectedIndex = events.findIndex((e) => e.payload?.type === 'server.connected')
  const connectedLine = lines[connectedIndex]
  const body = events.filter((_, i) => i !== connectedIndex)
  const captureSessionId = body.find((e) => e.payload?.type === 'session.created').payload.properties.sessionID

  const parts = [] // {kind: 'line', pieces} | {kind: 'deltas', delta}
  for (const event of body) {
    const payload = event.payload
    if (payload?.type === 'message.part.delta') {
      parts.push({ kind: 'deltas', delta: payload, directory: event.directory, project: event.project })
      continue
    }
    if (payload?.type === 'session.updated') payload.properties.info.metadata = { openchamber: { goal: goalFor(SID_TOKEN) } }
    if (payload?.type === 'sync' && payload.syncEvent?.type === 'session.updated.1') {
      payload.syncEvent.data.info.metadata = { openchamber: { goal: goalFor(SID_TOKEN) } }
    }
    const text = JSON.stringify(event).split(captureSessionId).join(SID_TOKEN)
    parts.push({ kind: 'line', pieces: text.split(SID_TOKEN) })
  }
  const deltaPart = parts.find((p) => p.kind === 'deltas')
  const chunks = deltaChunks(deltaPart.delta.properties.delta, deltasPerTurn).map((c) => JSON.stringify(c))
  const { messageID, partID } = deltaPart.delta.properties
  const deltaPrefix = (sid, i) =>
    `{"directory":${JSON.stringify(deltaPart.directory)},"project":${JSON.stringify(deltaPart.project)},"payload":{"id":"evt_d${sid.slice(9)}${String(i).padStart(5, '0')}","type":"message.part.delta","properties":{"sessionID":"${sid}","messageID":"${messageID}","partID":"${partID}","field":"text","delta":`

  /** The JSON lines of copy `index`, in stream order. */
  function copyLines(index) {
    const sid = sessionIdOf(index)
    const out = []
    for (const part of parts) {
      if (part.kind === 'line') out.push(part.pieces.join(sid))
      else for (let i = 0; i < chunks.length; i++) out.push(deltaPrefix(sid, i) + chunks[i] + '}}}')
    }
    return out
  }

  const copySize = parts.reduce((n, p) => n + (p.kind === 'line' ? 1 : chunks.length), 0)
  return { connectedLine, copyLines, copySize, captureEvents: events.length }
}

/** The payload a host hands to processPayload, and its directory (OpenChamber's unwrap). */
export function unwrapType(envelope) {
  const payload = envelope.payload && typeof envelope.payload === 'object' ? envelope.payload : envelope
  return payload.type
}
