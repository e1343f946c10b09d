// The drop-in check: the package called exactly as OpenChamber's server calls its JS runtime
// (OpenChamber option names, envelope unwrapped, processPayload(payload, directory)).
import { execFile } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

describe('OpenChamber drop-in', () => {
  it('drives a goal from active to complete with OpenChamber-style options', async () => {
    const { stdout } = await new Promise((resolve, reject) => {
      execFile(process.execPath, [path.join(root, 'examples', 'demo-mock.mjs')], { timeout: 30_000 }, (error, stdout, stderr) => {
        if (error) reject(Object.assign(error, { stdout, stderr }))
        else resolve({ stdout, stderr })
      })
    })
    expect(stdout).toMatch(/auditor \(mock\/mock-model, restricted=true\) → complete/)
    expect(stdout).toMatch(/notification: Goal complete — Make the parser handle nested lists/)
    expect(stdout).toMatch(/goal complete: turn 2, tokens 3400\/50000/)
    expect(stdout).toMatch(/continuations sent: 2/)
  })
})
