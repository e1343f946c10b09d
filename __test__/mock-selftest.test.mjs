// The mock OpenCode's own self-test (over real HTTP), run with the suites that depend on the mock,
// so a change to the mock that breaks its contract fails `npm test`, not only a later suite.
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

const selftest = path.join(path.dirname(fileURLToPath(import.meta.url)), 'mock', 'opencode.selftest.mjs')

it('the mock OpenCode passes its self-test', async () => {
  const { code, out } = await new Promise((resolve) => {
    const proc = spawn(process.execPath, [selftest], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    proc.stdout.on('data', (d) => (out += d))
    proc.stderr.on('data', (d) => (out += d))
    proc.on('close', (code) => resolve({ code, out }))
  })
  expect(out).toContain('mock OpenCode selftest: all passed')
  expect(code).toBe(0)
})
