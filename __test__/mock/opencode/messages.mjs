// Message and part shapes as OpenCode 1.18.33 stores them. Builders only: they take the session
// record, the clock and the id factory, and leave storing and events to the state.
import { clone, isObj, zeroTokens } from './common.mjs';

/** A copy of a stored message, {info, parts}. */
export const messageCopy = (m) => ({ info: clone(m.info), parts: clone(m.parts) });

/**
 * A part of message `messageID` from a part input; fills what OpenCode would (ids, the
 * reasoning part's time, the tool part's call id and a completed state).
 */
export function makePart({ now, ids }, sessionID, messageID, input) {
  const { id, sessionID: _s, messageID: _m, ...rest } = clone(input);
  const part = { id: id ?? ids.ascending('prt'), sessionID, messageID, ...rest };
  const t = now();
  if (part.type === 'reasoning' && !part.time) part.time = { start: t, end: t };
  if (part.type === 'reasoning' && part.text === undefined) part.text = '';
  if (part.type === 'tool') {
    part.callID = part.callID ?? `call_${part.id.slice(4)}`;
    part.tool = part.tool ?? 'bash';
    part.state = part.state ?? { status: 'completed', input: {}, output: '', title: '', metadata: {}, time: { start: t, end: t } };
  }
  return part;
}

/** A user message's info (opts: id?, agent='build', model={mock, mock-model}, variant?). */
export function userInfo({ ids }, sessionID, created, opts = {}) {
  return {
    id: opts.id ?? ids.ascending('msg'),
    sessionID,
    role: 'user',
    time: { created },
    agent: opts.agent ?? 'build',
    model: { ...(opts.model ?? { providerID: 'mock', modelID: 'mock-model' }), ...(opts.variant ? { variant: opts.variant } : {}) },
    // OpenCode records a finished turn's file changes here (`{diffs: [...]}`, see docs/opencode.md).
    ...(opts.summary !== undefined ? { summary: clone(opts.summary) } : {}),
  };
}

/** An unfinished assistant message's info in session record `s` (parentID: the last user message). */
export function assistantInfo({ ids }, s, created, opts = {}) {
  const lastUser = [...s.messages].reverse().find((m) => m.info.role === 'user');
  const parentID = opts.parentID ?? lastUser?.info.id;
  const agent = opts.agent ?? 'build';
  return {
    id: opts.id ?? ids.ascending('msg'),
    ...(parentID ? { parentID } : {}),
    role: 'assistant',
    mode: opts.mode ?? agent,
    agent,
    path: { cwd: s.info.directory, root: s.info.directory },
    cost: 0,
    tokens: zeroTokens(),
    modelID: opts.modelID ?? 'mock-model',
    providerID: opts.providerID ?? 'mock',
    ...(opts.variant ? { variant: opts.variant } : {}),
    time: { created },
    sessionID: s.info.id,
  };
}

// The reply's token counts; a completed reply without an error also gets a total, as OpenCode's.
function replyTokens(tk, withTotal) {
  const tokens = {
    ...(tk.total !== undefined ? { total: tk.total } : {}),
    input: tk.input ?? 0,
    output: tk.output ?? 0,
    reasoning: tk.reasoning ?? 0,
    cache: { read: tk.cache?.read ?? 0, write: tk.cache?.write ?? 0 },
  };
  if (!withTotal || tk.total !== undefined) return tokens;
  return { total: tokens.input + tokens.output + tokens.reasoning + tokens.cache.read + tokens.cache.write, ...tokens };
}

/**
 * Applies addAssistantMessage options to assistant message `m` of session `sessionID` (fields,
 * tokens, completion, error, parts); returns the parts it added, in order.
 */
export function applyAssistant(ctx, sessionID, m, opts) {
  const info = m.info;
  const t = ctx.now();
  for (const k of ['providerID', 'modelID', 'agent', 'variant', 'summary', 'structured']) if (opts[k] !== undefined) info[k] = clone(opts[k]);
  if (opts.mode !== undefined || opts.agent !== undefined) info.mode = opts.mode ?? opts.agent;
  if (opts.parentID !== undefined) info.parentID = opts.parentID;
  if (opts.cost !== undefined) info.cost = opts.cost;
  const completed = opts.completed ?? true;
  if (opts.error) info.error = clone(opts.error);
  const finish = opts.finish !== undefined ? opts.finish : opts.error ? undefined : 'stop';
  info.tokens = replyTokens(opts.tokens ?? {}, completed !== false && !opts.error);
  if (completed !== false) {
    info.time.completed = typeof completed === 'number' ? completed : Math.max(t, info.time.created);
    if (finish) info.finish = finish;
  }
  const stepParts = opts.stepParts !== false;
  const part = (input) => makePart(ctx, sessionID, info.id, input);
  const added = [];
  if (stepParts && !m.parts.some((p) => p.type === 'step-start')) added.push(part({ type: 'step-start' }));
  for (const p of opts.parts ?? []) if (isObj(p)) added.push(part(p));
  if (opts.text) added.push(part({ type: 'text', text: String(opts.text), time: { start: t, end: t } }));
  if (stepParts && completed !== false && !opts.error) {
    added.push(part({ type: 'step-finish', reason: finish ?? 'stop', cost: info.cost, tokens: clone(info.tokens) }));
  }
  m.parts.push(...added);
  return added;
}
