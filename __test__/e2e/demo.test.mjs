// `npm run demo` as a user runs it: a fresh OpenCode, the scripted model, the goal printed live
// until it completes, exit 0.
import { expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

it('npm run demo drives a goal to completion on a real OpenCode and exits 0', async () => {
  const script = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples', 'demo.js')
  const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  const code = await new Promise((resolve) => child.on('exit', (exitCode) => resolve(exitCode)))
  expect(code, output).toBe(0)
  const lines = output.split('\n')
  const index = (text) => lines.findIndex((line) => line.includes(text))
  // The progress, in order: goal set, the first turn, criteria derived by the first audit and
  // met one by one, the auditor's "complete" with both met refuted by the acceptance check, the
  // fix turn, the check passing, the reviewer (a child session) approving, the end.
  const order = [
    'goal active: "Add a --json flag',
    'goal written with 1 acceptance check and review',
    'agent turn finished (1,780 tokens, finish stop)',
    'continuation 1/20 sent — auditor: "0/2 criteria met — flag parsed; no report yet"',
    'continuing ses_',
    'continuation 2/20 sent — auditor: "1/2 criteria met — the --json flag writes report.json"',
    'acceptance check 1/1 failed',
    'continuation 3/20 sent — auditor: "acceptance check 1 of 1 did not pass" · 2,570 tokens of 20,000 budget',
    'acceptance check 1/1 passed',
    'review started in ses_',
    'review approved',
    'goal COMPLETE: approved by review — auditor: "2/2 criteria met · review: approved" (3 continuations, 3,010 tokens of 20,000 budget)',
    'notification: Goal complete',
    'all 2 criteria met',
    'check run: failed (exit 1',
    'check run: passed (exit 0',
    'criterion c1 (derived): met, evidence e1',
    'criterion c2 (derived): met, evidence e1',
    'review: approved by child session ses_',
    'cited cli.js, report.json',
    'cause: reviewApproved (ses_',
    '8 agent turns, 4 audits by the built-in small model (mock/mock-small), 2 reviewer requests',
  ].map(index)
  expect(order.every((i) => i >= 0), output).toBe(true)
  expect([...order].sort((a, b) => a - b)).toEqual(order)
}, 150_000)
