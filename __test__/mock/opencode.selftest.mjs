// Self-test of the mock OpenCode server over real HTTP.
// Run: node __test__/mock/opencode.selftest.mjs   (exit 0 = ok)
import assert from 'node:assert/strict';
import { startMockOpenCode } from './opencode.mjs';
import { ROUTE_LIST, matchRoute } from './opencode/routes.mjs';
import { faultAnswer, planFault } from './opencode/faults.mjs';

const DIR = '/tmp/selftest-project';
const q = `?directory=${encodeURIComponent(DIR)}`;

// Reads `data:` JSON lines from a fetch SSE response into `events` until aborted.
function readSse(res, events) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  return (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          for (const line of block.split('\n')) if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)));
        }
      }
    } catch {
      // aborted / closed
    }
  })();
}

async function main() {
  const mock = await startMockOpenCode({ heartbeatMs: 30 });
  const api = (path, init = {}) =>
    fetch(mock.url + path, {
      ...init,
      headers: { 'content-type': 'application/json', ...init.headers },
      body: init.body === undefined || typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
    });
  const step = async (name, fn) => {
    try {
      await fn();
      console.log(`ok   ${name}`);
    } catch (e) {
      e.message = `${name}: ${e.message}`;
      throw e;
    }
  };

  const sseAbort = new AbortController();
  try {
    const parent = mock.createSession({ directory: DIR, metadata: { a: 1, openchamber: { goal: { id: 'g1' } } } });

    // SSE first, so the PATCH below is observed live.
    const events = [];
    const sseRes = await fetch(`${mock.url}/global/event`, { signal: sseAbort.signal });
    assert.equal(sseRes.status, 200);
    assert.match(sseRes.headers.get('content-type'), /^text\/event-stream/);
    const sseDone = readSse(sseRes, events);
    await mock.waitFor(() => events.length >= 1);

    await step('SSE: server.connected first', () => {
      assert.equal(events[0].payload.type, 'server.connected');
      assert.equal(events[0].directory, undefined);
    });

    await step('PATCH replaces metadata; null / absent keep it', async () => {
      let r = await api(`/session/${parent.id}${q}`, { method: 'PATCH', body: { metadata: { b: 2 } } });
      assert.equal(r.status, 200);
      assert.deepEqual((await r.json()).metadata, { b: 2 });
      r = await api(`/session/${parent.id}${q}`, { method: 'PATCH', body: { metadata: null } });
      assert.deepEqual((await r.json()).metadata, { b: 2 });
      r = await api(`/session/${parent.id}${q}`, { method: 'PATCH', body: { title: 'renamed' } });
      const info = await r.json();
      assert.equal(info.title, 'renamed');
      assert.deepEqual(info.metadata, { b: 2 });
      assert.deepEqual(mock.getSession(parent.id).metadata, { b: 2 });
      assert.equal(mock.patches.length, 3);
      assert.equal(mock.patches[0].sessionId, parent.id);
    });

    await step('SSE delivers session.updated after PATCH', async () => {
      const ev = await mock.waitFor(() =>
        events.find((e) => e.payload?.type === 'session.updated' && e.payload.properties.info.title === 'renamed'),
      );
      assert.equal(ev.directory, DIR);
      assert.equal(ev.project, 'global');
      assert.match(ev.payload.id, /^evt_/);
      assert.equal(ev.payload.properties.sessionID, parent.id);
      assert.deepEqual(ev.payload.properties.info.metadata, { b: 2 });
      await mock.waitFor(() => events.some((e) => e.payload?.type === 'server.heartbeat'));
    });

    const childA = mock.createSession({ directory: DIR, parentID: parent.id });
    const childB = mock.createSession({ directory: DIR, parentID: parent.id });
    mock.createSession({ directory: DIR, parentID: childA.id }); // grandchild: not a direct child

    await step('status map omits idle sessions', async () => {
      mock.setStatus(childA.id, 'busy');
      mock.setStatus(childB.id, 'retry');
      mock.setStatus(parent.id, 'busy');
      mock.setStatus(parent.id, 'idle');
      const map = await (await api(`/session/status${q}`)).json();
      assert.deepEqual(Object.keys(map).sort(), [childA.id, childB.id].sort());
      assert.equal(map[childA.id].type, 'busy');
      assert.equal(map[childB.id].type, 'retry');
      mock.setStatus(childA.id, 'idle');
      mock.setStatus(childB.id, 'idle');
      assert.deepEqual(await (await api(`/session/status${q}`)).json(), {});
    });

    await step('children lists direct children only', async () => {
      const kids = await (await api(`/session/${parent.id}/children${q}`)).json();
      assert.deepEqual(kids.map((k) => k.id).sort(), [childA.id, childB.id].sort());
      assert.ok(kids.every((k) => k.parentID === parent.id));
    });

    await step('message?limit=N returns the last N, oldest first', async () => {
      const s = mock.createSession({ directory: DIR });
      const ids = [];
      for (let i = 0; i < 3; i++) {
        ids.push(mock.addUserMessage(s.id, `u${i}`).info.id);
        ids.push(mock.addAssistantMessage(s.id, { text: `a${i}`, tokens: { input: 10, output: 5 } }).info.id);
      }
      const all = mock.messages(s.id);
      // Stamped with the clock: messages made in the same millisecond share a time (docs/opencode.md),
      // so times never go backwards but may tie.
      for (let i = 1; i < all.length; i++) assert.ok(all[i].info.time.created >= all[i - 1].info.time.created);
      assert.deepEqual([...ids].sort(), ids, 'ids sort in creation order');
      const last = await (await api(`/session/${s.id}/message${q}&limit=3`)).json();
      assert.deepEqual(last.map((m) => m.info.id), ids.slice(-3));
      assert.equal(last[2].info.role, 'assistant');
      assert.equal(last[2].info.parentID, ids[4]);
      assert.equal(last[2].info.finish, 'stop');
      assert.equal(last[2].info.tokens.input, 10);
      assert.ok(last[2].parts.some((p) => p.type === 'text' && p.text === 'a2'));
      const r = await api(`/session/ses_missing/message${q}`);
      assert.equal(r.status, 404);
      assert.equal((await r.json()).name, 'NotFoundError');
    });

    await step('prompt_async: 204, recorded, scripted reply', async () => {
      const s = mock.createSession({ directory: DIR });
      mock.scriptReplies(s.id, [{ text: 'first', tokens: { input: 100, output: 7 } }, { text: 'again' }], { replyDelayMs: 5 });
      const prompted = [];
      mock.onPrompt = async (id, body) => prompted.push([id, body.parts[0].text]);
      const body = { model: { providerID: 'mock', modelID: 'mock-model' }, agent: 'build', parts: [{ type: 'text', text: 'do it' }] };
      const r = await api(`/session/${s.id}/prompt_async${q}`, { method: 'POST', body });
      assert.equal(r.status, 204);
      assert.equal(await r.text(), '');
      assert.equal(mock.prompts.length, 1);
      assert.equal(mock.prompts[0].sessionId, s.id);
      assert.equal(mock.prompts[0].directory, DIR);
      assert.deepEqual(mock.prompts[0].body, body);
      await mock.waitFor(() => mock.messages(s.id).some((m) => m.info.role === 'assistant' && m.info.time.completed));
      await mock.waitFor(() => mock.status(s.id).type === 'idle');
      const msgs = mock.messages(s.id);
      assert.equal(msgs[0].info.role, 'user');
      assert.equal(msgs[0].parts[0].text, 'do it');
      assert.equal(msgs[1].info.parentID, msgs[0].info.id);
      assert.equal(msgs[1].info.tokens.input, 100);
      await mock.waitFor(() => prompted.length === 1);
      assert.deepEqual(prompted[0], [s.id, 'do it']);
      // SSE delivery is asynchronous: wait for the event instead of racing it.
      await mock.waitFor(() => events.some((e) => e.payload?.type === 'session.idle' && e.payload.properties.sessionID === s.id));
      mock.onPrompt = null;
    });

    await step('abort completes the running reply with MessageAbortedError', async () => {
      const s = mock.createSession({ directory: DIR });
      mock.scriptReplies(s.id, [{ text: 'slow' }], { replyDelayMs: 5000 });
      await api(`/session/${s.id}/prompt_async${q}`, { method: 'POST', body: { parts: [{ type: 'text', text: 'slow turn' }] } });
      await mock.waitFor(() => mock.status(s.id).type === 'busy' && mock.messages(s.id).length === 2);
      const r = await api(`/session/${s.id}/abort${q}`, { method: 'POST' });
      assert.equal(await r.json(), true);
      const reply = mock.messages(s.id)[1].info;
      assert.equal(reply.error.name, 'MessageAbortedError');
      assert.ok(reply.time.completed);
      assert.equal(mock.status(s.id).type, 'idle');
      assert.deepEqual(mock.aborts, [s.id]);
    });

    await step('fault: 500 once, then normal', async () => {
      mock.fault({ method: 'GET', path: `/session/${parent.id}`, times: 1, status: 500 });
      const r1 = await api(`/session/${parent.id}${q}`);
      assert.equal(r1.status, 500);
      assert.equal((await r1.json()).name, 'UnknownError');
      const r2 = await api(`/session/${parent.id}${q}`);
      assert.equal(r2.status, 200);
      assert.equal((await r2.json()).id, parent.id);
    });

    await step('fault: HTML 200, truncated JSON, destroy, delay', async () => {
      const h = mock.fault({ path: /^\/session\/status$/, html: true });
      const r = await api(`/session/status${q}`);
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type'), /text\/html/);
      assert.match(await r.text(), /<html/);
      h.remove();
      assert.equal((await api(`/session/status${q}`)).status, 200);

      mock.fault({ path: `/session/${parent.id}`, times: 1, truncatedJson: true });
      const t = await api(`/session/${parent.id}${q}`);
      await assert.rejects(t.json());

      mock.fault({ path: '/config', times: 1, destroy: true });
      await assert.rejects(api('/config'));

      mock.fault({ path: '/config', times: 1, delayMs: 60 });
      const t0 = Date.now();
      assert.equal((await api('/config')).status, 200);
      assert.ok(Date.now() - t0 >= 50);
    });

    await step('malformed JSON → 400; catalog routes', async () => {
      const r = await api(`/session/${parent.id}${q}`, { method: 'PATCH', body: '{"metadata": {' });
      assert.equal(r.status, 400);
      assert.deepEqual(mock.getSession(parent.id).metadata, { b: 2 });
      const prov = await (await api('/provider')).json();
      assert.equal(prov.all[0].id, 'mock');
      assert.ok(prov.all[0].models['mock-model']);
      const agents = await (await api('/agent')).json();
      assert.deepEqual(agents.map((a) => a.name), ['build', 'plan', 'general']);
      assert.ok(Array.isArray(await (await api('/command')).json()));
    });

    await step('fault: late answer, trickle, query match, action; onPatch; receivedAt', async () => {
      const s = mock.createSession({ directory: DIR, metadata: { keep: 1 } });
      let fired = 0;
      mock.fault({ method: 'PATCH', path: `/session/${s.id}`, times: 1, delayMs: 80, apply: true, action: () => fired++ });
      const seen = [];
      mock.onPatch = (id, change) => seen.push([id, change.before, change.after]);
      let t = Date.now();
      const patch = api(`/session/${s.id}${q}`, { method: 'PATCH', body: { metadata: { keep: 2 } } });
      await mock.waitFor(() => mock.getSession(s.id).metadata.keep === 2, { timeoutMs: 60 });
      assert.equal((await patch).status, 200);
      assert.ok(Date.now() - t >= 75, 'answered late');
      assert.equal(fired, 1);
      assert.deepEqual(seen, [[s.id, { keep: 1 }, { keep: 2 }]]);
      mock.onPatch = null;
      mock.fault({ method: 'GET', path: '/session/status', query: { directory: '/elsewhere' }, times: 1, status: 503 });
      assert.equal((await api(`/session/status${q}`)).status, 200);
      assert.equal((await api('/session/status?directory=%2Felsewhere')).status, 503);
      mock.fault({ method: 'GET', path: `/session/${s.id}`, times: 1, trickleMs: 80 });
      t = Date.now();
      assert.equal((await (await api(`/session/${s.id}${q}`)).json()).id, s.id);
      assert.ok(Date.now() - t >= 70, 'trickled');
      mock.fault({ method: 'POST', path: `/session/${s.id}/prompt_async`, times: 1, delayMs: 50 });
      const sent = Date.now();
      await api(`/session/${s.id}/prompt_async${q}`, { method: 'POST', body: { parts: [{ type: 'text', text: 'late' }] } });
      const record = mock.prompts.at(-1);
      assert.ok(record.receivedAt < record.at && record.receivedAt >= sent - 5);
      assert.equal(record.messageID, mock.messages(s.id).at(-1).info.id);
    });

    await step('holdEvents: a lagging stream gets its events late, in order', async () => {
      const host = new URL(mock.url).hostname;
      const lag = mock.holdEvents(host);
      const before = events.length;
      mock.emit({ type: 'selftest.one' }, DIR);
      mock.emit({ type: 'selftest.two' }, DIR);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const ours = () => events.slice(before).map((e) => e.payload.type).filter((t) => t.startsWith('selftest.'));
      assert.deepEqual(ours(), [], 'nothing delivered while held');
      assert.ok(lag.held >= 2);
      lag.release();
      await mock.waitFor(() => events.some((e) => e.payload.type === 'selftest.two'));
      assert.deepEqual(ours(), ['selftest.one', 'selftest.two']);
    });

    await step('dropEventStreams ends the SSE connection', async () => {
      assert.equal(mock.eventStreams, 1);
      mock.dropEventStreams();
      await sseDone;
      assert.equal(mock.eventStreams, 0);
    });

    await step('refuseConnections, then back on the same port', async () => {
      await mock.refuseConnections();
      assert.equal(mock.listening, false);
      await assert.rejects(fetch(`${mock.url}/global/health`));
      await mock.acceptConnections();
      assert.equal((await api('/global/health')).status, 200);
      await mock.refuseConnections({ forMs: 50 });
      await assert.rejects(fetch(`${mock.url}/global/health`));
      await mock.waitFor(() => mock.listening, { timeoutMs: 1000 });
      assert.equal((await api('/global/health')).status, 200);
    });

    await step('route table: literal paths win, parameters bind, unknown paths fall through', async () => {
      const at = (method, path) => matchRoute(method, path.split('/').filter(Boolean));
      for (const [method, pattern] of ROUTE_LIST) {
        const concrete = pattern.replace(/:(\w+)/g, (_, name) => (name === 'sessionID' ? 'ses_x' : `${name}_1`));
        assert.equal(at(method, concrete)?.route.pattern, pattern, `${method} ${pattern}`);
      }
      assert.equal(at('GET', '/session/status').route.pattern, '/session/status');
      assert.deepEqual(at('GET', '/session/ses_a/message/msg_b').params, { sessionID: 'ses_a', messageID: 'msg_b' });
      assert.equal(at('PUT', '/session/ses_a'), undefined);
      assert.equal(at('GET', '/session/ses_a/message/msg_b/extra'), undefined);
      // Over HTTP, an unknown path under /session/ is checked like a session route first.
      assert.equal((await (await api('/session/nope/whatever')).json()).kind, 'Params');
      assert.match((await (await api('/session/ses_missing/whatever')).json()).data.message, /^Session not found/);
      assert.match((await (await api(`/session/${parent.id}/whatever`)).json()).data.message, /^Route not found/);
    });

    await step('fault plans: what runs, what waits, what answers', async () => {
      assert.deepEqual(planFault(undefined), { kind: 'none', waitBeforeMs: 0, waitAfterMs: 0, runHandler: true, realAnswer: true });
      assert.deepEqual(planFault({ delayMs: 30 }), { kind: 'delay', waitBeforeMs: 30, waitAfterMs: 0, runHandler: true, realAnswer: true });
      assert.deepEqual(planFault({ delayMs: 30, apply: true }), { kind: 'delay', waitBeforeMs: 0, waitAfterMs: 30, runHandler: true, realAnswer: true });
      assert.deepEqual(planFault({ status: 503 }), { kind: 'status', waitBeforeMs: 0, waitAfterMs: 0, runHandler: false, realAnswer: false });
      assert.equal(planFault({ status: 503, apply: true }).runHandler, true);
      assert.equal(planFault({ truncatedJson: true }).runHandler, true);
      assert.equal(planFault({ hang: true, destroy: true, html: true }).kind, 'hang');
      assert.equal(faultAnswer('destroy', { destroy: true }), 'destroy');
      // Truncated JSON: the real answer's first half, its status kept (204 and streams become 200).
      assert.deepEqual(faultAnswer('truncated', { truncatedJson: true }, { status: 201, body: { a: 'bcdef' } }), { status: 201, body: '{"a":"', contentType: undefined });
      assert.equal(faultAnswer('truncated', { truncatedJson: true }, { status: 204 }).status, 200);
      assert.equal(faultAnswer('status', { body: 'x' }).status, 500);
      // A held request answers nothing until the mock closes; others pass meanwhile.
      const held = mock.fault({ path: '/agent', times: 1, hang: true });
      const hanging = api('/agent').then(() => 'answered', () => 'reset');
      await mock.waitFor(() => held.remaining === 0);
      assert.equal((await api('/config')).status, 200);
      assert.equal(await Promise.race([hanging, new Promise((r) => setTimeout(() => r('still held'), 50))]), 'still held');
      await mock.refuseConnections();
      assert.equal(await hanging, 'reset');
      await mock.acceptConnections();
    });

    await step('POST /session/:id/shell: runs inside eval "<JSON>", no exit code, not idempotent, 409 busy, abort', async () => {
      const s = mock.createSession({ directory: '/tmp' });
      const shell = (body) => api(`/session/${s.id}/shell`, { method: 'POST', body: { agent: 'build', ...body } });
      const id = 'msg_000000000001shellSelftest';
      let res = await shell({ command: 'echo "[exit $?]"; false', messageID: id });
      assert.equal(res.status, 200);
      let reply = await res.json();
      const tool = reply.parts.find((p) => p.type === 'tool');
      // `$?` expanded before the command ran; the failure shows nowhere but in the output.
      assert.equal(tool.tool, 'bash');
      assert.equal(tool.state.status, 'completed');
      assert.equal(tool.state.output, '[exit 0]\n');
      assert.deepEqual(tool.state.metadata, { output: '[exit 0]\n' });
      assert.equal(reply.info.parentID, id);
      assert.equal(reply.info.finish, undefined);
      // The same id runs again: a second reply under the same user message.
      res = await shell({ command: 'echo again', messageID: id });
      assert.equal(res.status, 200);
      const under = mock.messages(s.id).filter((m) => m.info.parentID === id);
      assert.equal(under.length, 2);
      assert.equal(mock.messages(s.id).filter((m) => m.info.id === id).length, 1);
      assert.equal(mock.shells.filter((r) => r.sessionId === s.id).length, 2);
      // A newline arrives as the letter n.
      res = await shell({ command: 'echo a\necho b' });
      reply = await res.json();
      assert.match(reply.parts[0].state.output, /necho/);
      // Busy while it runs (409 to another shell); an abort ends it with OpenCode's note.
      const running = shell({ command: 'sleep 5; echo late' });
      await mock.waitFor(() => mock.status(s.id).type === 'busy');
      assert.equal((await shell({ command: 'true' })).status, 409);
      await api(`/session/${s.id}/abort`, { method: 'POST' });
      reply = await (await running).json();
      assert.match(reply.parts[0].state.output, /<metadata>\nUser aborted the command\n<\/metadata>$/);
      assert.equal(reply.info.error, undefined);
      assert.equal(mock.status(s.id).type, 'idle');
      assert.equal((await shell({ command: 1 })).status, 400);
    });

    await step('repeated messageID: parts appended unless a part id matches (then replaced), noReply parts in arrival order', async () => {
      const s = mock.createSession({ directory: DIR });
      const post = (body) => api(`/session/${s.id}/prompt_async${q}`, { method: 'POST', body: { noReply: true, ...body } });
      const id = 'msg_000000000002repostSelftes';
      const text = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text);
      const stored = (mid) => mock.messages(s.id).filter((m) => m.info.id === mid);
      for (let i = 0; i < 3; i++) assert.equal((await post({ messageID: id, parts: [{ type: 'text', text: 'same' }] })).status, 204);
      assert.equal(stored(id).length, 1);
      assert.deepEqual(text(stored(id)[0]), ['same', 'same', 'same'], 'without part ids every post appends');
      const pid = 'msg_000000000003repostSelftes';
      const part = { id: 'prt_000000000003repostSelftes', type: 'text', text: 'once' };
      for (let i = 0; i < 3; i++) await post({ messageID: pid, parts: [{ ...part, text: `once ${i}` }] });
      assert.equal(stored(pid)[0].parts.length, 1, 'a fixed part id is replaced');
      assert.deepEqual(stored(pid)[0].parts.map((p) => [p.id, p.text]), [[part.id, 'once 2']]);
      assert.equal(mock.repeatedPrompts.filter((r) => r.messageID === pid).length, 2);
      const cid = 'msg_000000000004repostSelftes';
      await Promise.all(['first', 'second'].map((who) => post({ messageID: cid, parts: [{ type: 'text', text: who, synthetic: true, ignored: true }] })));
      assert.equal(stored(cid)[0].parts.length, 2);
      assert.deepEqual(text(stored(cid)[0]), mock.requests.filter((r) => r.body?.messageID === cid).map((r) => r.body.parts[0].text), 'arrival order');
    });

    await step('a stranded message (stored, no turn) gets its one turn from a re-post of its id; strandPrompts strands new prompts and re-posts', async () => {
      const s = mock.createSession({ directory: DIR });
      mock.scriptReplies(s.id, [{ text: 'answered' }], { replyDelayMs: 5 });
      const post = (body) => api(`/session/${s.id}/prompt_async${q}`, { method: 'POST', body });
      const replies = () => mock.messages(s.id).filter((m) => m.info.role === 'assistant');
      const id = 'msg_000000000005strandSelftes';
      const part = { id: 'prt_000000000005strandSelftes', type: 'text', text: 'go on' };
      // Stored with noReply: no turn. The same id and part posted again: its turn, one part kept.
      assert.equal((await post({ messageID: id, parts: [part], noReply: true })).status, 204);
      await new Promise((r) => setTimeout(r, 30));
      assert.equal(replies().length, 0);
      assert.equal((await post({ messageID: id, parts: [part] })).status, 204);
      await mock.waitFor(() => replies().length === 1 && replies()[0].info.time.completed);
      assert.equal(replies()[0].info.parentID, id);
      const stored = mock.messages(s.id).find((m) => m.info.id === id);
      assert.deepEqual(stored.parts.map((p) => [p.id, p.text]), [[part.id, 'go on']]);
      assert.equal(mock.repeatedPrompts.filter((r) => r.messageID === id && r.startedTurn).length, 1);
      // Answered: a further post of it starts nothing.
      await post({ messageID: id, parts: [part] });
      await new Promise((r) => setTimeout(r, 30));
      assert.equal(replies().length, 1);
      // strandPrompts: a new prompt is stored without its turn, and so are re-posts while it lasts.
      const sid = 'msg_000000000006strandSelftes';
      mock.strandPrompts(s.id, { times: 2 });
      await post({ messageID: sid, parts: [{ ...part, id: 'prt_000000000006strandSelftes' }] });
      await post({ messageID: sid, parts: [{ ...part, id: 'prt_000000000006strandSelftes' }] });
      await new Promise((r) => setTimeout(r, 30));
      assert.equal(replies().length, 1);
      assert.deepEqual(mock.strandedPrompts.filter((r) => r.sessionId === s.id).map((r) => r.messageID), [sid, sid]);
      // The strand used up, the third post of it gets its turn.
      await post({ messageID: sid, parts: [{ ...part, id: 'prt_000000000006strandSelftes' }] });
      await mock.waitFor(() => replies().length === 2 && replies()[1].info.time.completed);
      assert.equal(replies()[1].info.parentID, sid);
      assert.equal(mock.messages(s.id).find((m) => m.info.id === sid).parts.length, 1);
      // A turn that is queued or running is not started twice by a repeat.
      const rid = 'msg_000000000007strandSelftes';
      await Promise.all([post({ messageID: rid, parts: [{ type: 'text', text: 'a' }] }), post({ messageID: rid, parts: [{ type: 'text', text: 'b' }] })]);
      await mock.waitFor(() => replies().length === 3 && replies()[2].info.time.completed);
      await new Promise((r) => setTimeout(r, 30));
      assert.equal(replies().length, 3);
    });

    await step('gates: hold a request until a signal, another request answered, an event, or a manual release (one or all)', async () => {
      const s = mock.createSession({ directory: DIR });
      const order = [];
      const timed = (label, p) => p.then((res) => (order.push(label), res.status));
      // Until a signal: the held request waits while another passes.
      const bySignal = mock.gate({ method: 'GET', path: `/session/${s.id}`, until: 'go' });
      const first = timed('held', api(`/session/${s.id}${q}`));
      await bySignal.arrived();
      assert.equal(bySignal.held, 1);
      assert.equal(await timed('free', api(`/session/${s.id}/message${q}`)), 200);
      assert.deepEqual(order, ['free']);
      mock.signal('go');
      assert.equal(await first, 200);
      assert.deepEqual(order, ['free', 'held']);
      assert.equal(mock.requests.filter((r) => r.gated).length, 1);
      // Until another request (caught by another gate) was answered.
      order.length = 0;
      const patchGate = mock.gate({ method: 'PATCH', path: `/session/${s.id}`, until: 'patch' });
      const readGate = mock.gate({ method: 'GET', path: `/session/${s.id}`, until: { answered: patchGate } });
      const read = timed('read', api(`/session/${s.id}${q}`));
      const patch = timed('patch', api(`/session/${s.id}${q}`, { method: 'PATCH', body: { title: 'gated' } }));
      await Promise.all([readGate.arrived(), patchGate.arrived()]);
      mock.signal('patch');
      await Promise.all([read, patch]);
      assert.deepEqual(order, ['patch', 'read']);
      // Until an event: the message list waits for the status event.
      order.length = 0;
      const eventGate = mock.gate({ path: `/session/${s.id}/message`, until: { event: (p) => p.type === 'session.status' && p.properties.sessionID === s.id } });
      const list = timed('list', api(`/session/${s.id}/message${q}`));
      await eventGate.arrived();
      assert.equal(eventGate.open, false);
      mock.setStatus(s.id, 'busy');
      assert.equal(await list, 200);
      mock.setStatus(s.id, 'idle');
      // Manual: the test releases held requests one at a time, in the order it chooses.
      order.length = 0;
      const manual = mock.gate({ path: /^\/session\/[^/]+\/(todo|diff)$/, times: 2, until: 'manual' });
      const todo = timed('todo', api(`/session/${s.id}/todo${q}`));
      const diff = timed('diff', api(`/session/${s.id}/diff${q}`));
      await manual.arrived(2);
      assert.equal(manual.releaseNext((e) => e.path.endsWith('/diff')).path, `/session/${s.id}/diff`);
      await diff;
      assert.equal(manual.releaseNext().path, `/session/${s.id}/todo`);
      await todo;
      assert.deepEqual(order, ['diff', 'todo']);
      assert.equal(manual.releaseNext(), null);
      // A gate's `times` is spent: later requests pass.
      assert.equal((await api(`/session/${s.id}/todo${q}`)).status, 200);
      // Every matching request until released (`times: Infinity`); mock.releaseGates() lets every
      // held request go, and later ones pass.
      const every = mock.gate({ method: 'GET', path: `/session/${s.id}/todo`, times: Infinity, until: 'manual' });
      const todos = [api(`/session/${s.id}/todo${q}`), api(`/session/${s.id}/todo${q}`)].map((p) => p.then((res) => res.status));
      await every.arrived(2);
      assert.equal(every.held, 2);
      mock.releaseGates();
      assert.deepEqual(await Promise.all(todos), [200, 200]);
      assert.equal(every.held, 0);
      assert.equal((await api(`/session/${s.id}/todo${q}`)).status, 200);
      every.remove();
    });

    await step('child sessions: POST /session with parentID, one shared child script, per-prompt tools and model recorded', async () => {
      const parent = mock.createSession({ directory: DIR });
      const res = await api(`/session${q}`, { method: 'POST', body: { title: 'Goal review x', parentID: parent.id } });
      assert.equal(res.status, 200);
      const child = await res.json();
      assert.equal(child.parentID, parent.id);
      assert.equal(child.title, 'Goal review x');
      const listed = await (await api(`/session/${parent.id}/children${q}`)).json();
      assert.deepEqual(listed.map((c) => c.id), [child.id]);
      // The parent has no script: only children follow the child script, entries shared in order.
      mock.scriptChildren([{ text: 'first', cost: 0.5 }, ({ body }) => ({ text: `tools off: ${Object.keys(body.tools ?? {}).join(',')}` })], { replyDelayMs: 5 });
      const second = await (await api(`/session${q}`, { method: 'POST', body: { parentID: parent.id } })).json();
      const body = { model: { providerID: 'mock', modelID: 'big' }, agent: 'plan', tools: { write: false, bash: false }, parts: [{ type: 'text', text: 'review' }] };
      assert.equal((await api(`/session/${child.id}/prompt_async${q}`, { method: 'POST', body })).status, 204);
      await mock.waitFor(() => mock.messages(child.id).find((m) => m.info.role === 'assistant' && m.info.time.completed));
      assert.equal((await api(`/session/${second.id}/prompt_async${q}`, { method: 'POST', body })).status, 204);
      await mock.waitFor(() => mock.messages(second.id).find((m) => m.info.role === 'assistant' && m.info.time.completed));
      const text = (id) => mock.messages(id).filter((m) => m.info.role === 'assistant').flatMap((m) => m.parts).filter((p) => p.type === 'text').map((p) => p.text).join('');
      assert.equal(text(child.id), 'first');
      assert.equal(text(second.id), 'tools off: write,bash');
      assert.equal(mock.messages(child.id).find((m) => m.info.role === 'assistant').info.cost, 0.5);
      const recorded = mock.prompts.filter((p) => p.sessionId === child.id);
      assert.deepEqual(recorded[0].body.tools, { write: false, bash: false });
      assert.deepEqual(recorded[0].body.model, { providerID: 'mock', modelID: 'big' });
      const reply = mock.messages(child.id).find((m) => m.info.role === 'assistant').info;
      assert.equal(reply.modelID, 'big');
      assert.equal(reply.agent, 'plan');
      // A session without a parent still has no script: a prompt to it runs no turn.
      assert.equal((await api(`/session/${parent.id}/prompt_async${q}`, { method: 'POST', body })).status, 204);
      await new Promise((r) => setTimeout(r, 30));
      assert.equal(mock.messages(parent.id).filter((m) => m.info.role === 'assistant').length, 0);
      mock.scriptChildren(null);
    });

    await step('GET /file?path=: one directory of the project, 500 for a path that is none', async () => {
      mock.setFiles(DIR, ['README.md', 'src/a.js', 'src/lib/b.js']);
      const list = async (path) => {
        const res = await api(`/file${q}&path=${encodeURIComponent(path)}`);
        return { status: res.status, body: await res.json() };
      };
      const root = await list('.');
      assert.equal(root.status, 200);
      assert.deepEqual(root.body.map((e) => [e.name, e.type, e.path]), [['src', 'directory', 'src/'], ['README.md', 'file', 'README.md']]);
      assert.deepEqual(root.body[1], { name: 'README.md', path: 'README.md', absolute: `${DIR}/README.md`, type: 'file', ignored: false });
      assert.deepEqual((await list('')).body, root.body);
      assert.deepEqual((await list('src')).body.map((e) => e.name), ['lib', 'a.js']);
      assert.deepEqual((await list(`${DIR}/src/lib`)).body.map((e) => e.path), ['src/lib/b.js']);
      for (const missing of ['nope', 'src/a.js', '/etc', '../x']) assert.equal((await list(missing)).status, 500, missing);
      assert.equal((await api(`/file${q}`)).status, 400);
      mock.setFiles(DIR, null);
      assert.deepEqual((await list('.')).body, []);
    });

    assert.deepEqual(mock.errors, []);
    assert.ok(mock.requests.length > 20);
  } finally {
    sseAbort.abort();
    await mock.close();
  }
  console.log('mock OpenCode selftest: all passed');
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`mock OpenCode selftest FAILED: ${e.stack ?? e}`);
    process.exit(1);
  },
);
