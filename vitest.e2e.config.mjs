import { defineConfig } from 'vitest/config'

// End-to-end suite against a real `opencode serve` (devDependency opencode-ai). One OpenCode
// server per file, scenarios in sequence: the machine has 2 cores and OpenCode itself uses them.
export default defineConfig({
  test: {
    include: ['__test__/e2e/**/*.test.mjs'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 90_000,
    hookTimeout: 120_000,
  },
})
