// POST /session/:id/shell as OpenCode 1.18.33 runs it (docs/opencode.md, "Acceptance checks
// through the shell endpoint"): the command really runs, through bash, placed inside
// `eval <JSON string>` in the session's directory, so `$…` expands before the command runs and a
// newline arrives as the letter n. The answer comes only when the command finished: {info, parts}
// of a new assistant message holding one `bash` tool part, `completed` even when the command
// failed, `output` = stdout and stderr interleaved, `metadata = {output}`, no exit code. The user
// message gets the messageID when one is given; posting the same id again runs the command again
// (a second reply under the same user message). 409 while the session is busy. An abort ends a
// running shell at once; its output then ends with OpenCode's "User aborted the command" note.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { HttpError, badRequest, clone, isObj, json } from './common.mjs';
import { makePart } from './messages.mjs';

const SHELL_USER_TEXT = 'The following tool was executed by the user';
const ABORT_NOTE = '\n\n<metadata>\nUser aborted the command\n</metadata>';

// The script OpenCode hands to bash -c (its login-shell and ~/.bashrc lines left out, so tests
// stay hermetic): $1 is the directory.
const scriptFor = (command) => `\n  shopt -s expand_aliases\n  cd -- "$1"\n  eval ${JSON.stringify(command)}\n`;

/** Options: `state`, `mock` (records `shells`), `now`, `ids`. Returns {route, abort(id), running(id)}. */
export function createShell({ state, mock, now, ids }) {
  const running = new Map(); // sessionId -> {finish(note)}

  function validate(body) {
    if (typeof body.command !== 'string') throw badRequest('command is required', 'Body', 'command');
    if (typeof body.agent !== 'string') throw badRequest('agent is required', 'Body', 'agent');
    if (body.model !== undefined && !(isObj(body.model) && typeof body.model.providerID === 'string' && typeof body.model.modelID === 'string'))
      throw badRequest('model must be {providerID, modelID}', 'Body', 'model');
    if (body.messageID !== undefined && !(typeof body.messageID === 'string' && body.messageID.startsWith('msg')))
      throw badRequest('messageID must match ^msg', 'Body', 'messageID');
  }

  // The user message (kept when the id is posted again) and a running reply with its tool part.
  function begin(s, id, body) {
    const existing = body.messageID && s.messages.find((m) => m.info.id === body.messageID);
    const user = existing ?? state.addUserMessage(id, [{ type: 'text', text: SHELL_USER_TEXT, synthetic: true }], {
      id: body.messageID,
      agent: body.agent,
      model: body.model,
    });
    state.setStatus(id, 'busy');
    const m = state.newAssistant(s, {
      parentID: user.info.id,
      agent: body.agent,
      providerID: body.model?.providerID,
      modelID: body.model?.modelID,
    });
    const start = now();
    const part = makePart({ now, ids }, id, m.info.id, {
      type: 'tool',
      tool: 'bash',
      state: { status: 'running', input: { command: body.command }, time: { start } },
    });
    m.parts.push(part);
    state.emitMessage(s, m);
    return { m, part, start };
  }

  async function route(_ctx, req, { sessionID: id, session: s }) {
    const body = isObj(req.body) ? req.body : {};
    validate(body);
    const status = state.statuses.get(id);
    if (status && status.type !== 'idle') {
      throw new HttpError(409, { name: 'BusyError', data: { message: `Session ${id} is busy` } });
    }
    mock.shells.push({ sessionId: id, directory: req.query.directory, body: clone(body), at: now(), receivedAt: req.receivedAt ?? now() });
    const { m, part, start } = begin(s, id, body);
    const cwd = fs.existsSync(s.info.directory) ? s.info.directory : os.tmpdir();
    // Finished synchronously when the command ends (or is aborted), so an abort that follows
    // finds the session idle and the reply complete, as on OpenCode.
    const cut = await runBash(id, body.command, cwd, (output) => {
      part.state = { status: 'completed', input: { command: body.command }, output, title: '', metadata: { output }, time: { start, end: now() } };
      m.info.time.completed = Math.max(now(), m.info.time.created);
      if (!state.sessions.has(id)) return;
      state.emitMessage(s, m);
      state.setStatus(id, 'idle');
    });
    if (cut) {
      // A server killed mid-run: the reply stays unfinished, no status remains, the call dies.
      state.statuses.delete(id);
      req.socket.destroy();
    }
    return json({ info: clone(m.info), parts: clone(m.parts) });
  }

  // Runs the script; hands stdout and stderr in arrival order (with the abort note when
  // aborted) to onDone, synchronously. The process gets its own group so an abort ends the whole command.
  function runBash(id, command, cwd, onDone) {
    return new Promise((resolve) => {
      const child = spawn('bash', ['-c', scriptFor(command), 'opencode', cwd], { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      const chunks = [];
      let done = false;
      const finish = (note = '') => {
        if (done) return;
        done = true;
        running.delete(id);
        onDone(Buffer.concat(chunks).toString('utf8') + note);
        resolve();
      };
      child.stdout.on('data', (c) => chunks.push(c));
      child.stderr.on('data', (c) => chunks.push(c));
      child.on('error', (e) => {
        chunks.push(Buffer.from(String(e.message)));
        finish();
      });
      child.on('close', () => finish());
      running.set(id, {
        // The server killed while the command runs: nothing more is recorded (resolves true).
        cut: () => {
          if (done) return;
          done = true;
          running.delete(id);
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            child.kill('SIGKILL');
          }
          resolve(true);
        },
        abort: () => {
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            child.kill('SIGKILL');
          }
          finish(ABORT_NOTE);
        },
      });
    });
  }

  /** POST /session/:id/abort while a shell runs: ended at once (true when one was running). */
  function abort(id) {
    const run = running.get(id);
    if (!run) return false;
    run.abort();
    return true;
  }

  /** A server restart while shells run: every running shell is cut (see `cut` above). */
  function cutAll() {
    const cut = [...running.keys()];
    for (const id of cut) running.get(id).cut();
    return cut;
  }

  return { route, abort, cutAll, running: (id) => running.has(id) };
}
