// Global setup of the vitest runs: every run gets a temp directory of its own (TMPDIR, which
// os.tmpdir(), mktemp and Rust's temp_dir all read; TEMP and TMP on Windows; set before the test
// processes start), and the run fails when a test left anything in it. Other processes on the
// machine may write to the temp directory at the same time, so only this run's own directory is
// judged.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/** Creates the run's temp directory; the returned teardown removes it and fails on leftovers. */
export default function useRunTempDir() {
  // os.tmpdir() reads TMPDIR on POSIX systems and TEMP (then TMP) on Windows.
  const names = process.platform === 'win32' ? ['TEMP', 'TMP'] : ['TMPDIR']
  const outer = names.map((name) => process.env[name])
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'session-goal-test-run-'))
  for (const name of names) process.env[name] = root
  return () => {
    names.forEach((name, i) => {
      if (outer[i] === undefined) delete process.env[name]
      else process.env[name] = outer[i]
    })
    const left = fs.readdirSync(root)
    fs.rmSync(root, { recursive: true, force: true })
    if (left.length > 0) {
      const shown = left.slice(0, 20).join(', ')
      // vitest reports an error thrown here but still exits 0: set the exit code as well.
      process.exitCode = 1
      throw new Error(`tests left ${left.length} entries in the temp directory (${shown}${left.length > 20 ? ', …' : ''}): remove them where they are made`)
    }
  }
}
