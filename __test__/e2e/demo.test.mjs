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
  // The progress, in order: goal set, turns, continuations with the auditor's notes, the end.
  const order = [
    'goal active: "Add a --json flag',
    'agent turn finished (1,960 tokens',
    'continuation 1/20 sent — auditor: "flag works; no tests yet" · 1,960 tokens of 20,000 budget',
    'continuation 2/20 sent — auditor: "tests exist; date test failing"',
    'goal COMPLETE: verified by audit — auditor: "--json verified by 3 passing tests" (2 continuations, 4,480 tokens of 20,000 budget)',
    'notification: Goal complete',
    '3 agent turns, 3 audits by the built-in small model (mock/mock-small)',
  ].map(index)
  expect(order.every((i) => i >= 0), output).toBe(true)
  expect([...order].sort((a, b) => a - b)).toEqual(order)
}, 150_000)
