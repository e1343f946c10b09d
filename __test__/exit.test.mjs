// Exit behaviour in a child process: the runtime, and the event follower, never keep Node alive.
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMockOpenCode } from './mock/opencode.mjs'
import { goalMetadata, tempDataDir } from './helpers.mjs'

const child = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'exit-child.cjs')
let mock
beforeAll(async () => {
  mock = await startMockOpenCode({ heartbeatMs: 60_000 })
})
afterAll(async () => mock?.close())

function run(args) {
  return new Promise((resolve) => {
    // The child's runtime keeps its host identity in its data directory: a temp one, never the home's.
    const env = { ...process.env, OPENCHAMBER_DATA_DIR: tempDataDir() }
    const proc = spawn(process.execPath, [child, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env })
    let out = ''
    let err = ''
    let markAt = 0
    proc.stdout.on('data', (d) => {
      out += d
      if (!markAt && /(stopped|idle) \d+/.test(out)) markAt = Date.now()
    })
    proc.stderr.on('data', (d) => (err += d))
    const killer = setTimeout(() => proc.kill('SIGKILL'), 15_000)
    proc.on('exit', (code, signal) => {
      clearTimeout(killer)
      resolve({ code, signal, out, err, exitAfterMarkMs: markAt ? Date.now() - markAt : Infinity })
    })
  })
}

describe('process exit', () => {
  it('after stop() Node exits within 2 s', async () => {
    const result = await run([mock.url, 'stop'])
    expect(result.signal).toBeNull()
    expect(result.code).toBe(0)
    expect(JSON.parse(result.out.split('\n')[0]).armed).toBe(50)
    expect(result.exitAfterMarkMs).toBeLessThan(2000)
  })

  it('without stop() armed timers do not keep Node alive', async () => {
    const result = await run([mock.url, 'idle'])
    expect(result.code).toBe(0)
    expect(result.exitAfterMarkMs).toBeLessThan(2000)
  })

  it('an event follower, connected and never closed, does not keep Node alive either', async () => {
    const streams = mock.requests.filter((r) => r.path === '/global/event').length
    const result = await run([mock.url, 'follow'])
    expect(result.code).toBe(0)
    expect(JSON.parse(result.out.split('\n')[0]).connected).toBe(true)
    expect(mock.requests.filter((r) => r.path === '/global/event').length).toBe(streams + 1)
    expect(result.exitAfterMarkMs).toBeLessThan(2000)
  })

  it('stop() with a tick in flight (auditor that never answers) still exits within 2 s', async () => {
    const session = mock.createSession({ metadata: goalMetadata() })
    mock.addUserMessage(session.id, 'go')
    mock.addAssistantMessage(session.id, { text: 'step' })
    const result = await run([mock.url, 'inflight', session.id])
    expect(result.code).toBe(0)
    expect(JSON.parse(result.out.split('\n')[0]).inFlight).toBe(1)
    expect(result.exitAfterMarkMs).toBeLessThan(2000)
  })
})
