import { defineConfig } from 'vitest/config'

// End-to-end suite against a real `opencode serve` (devDependency opencode-ai). One OpenCode
// server per file, scenarios in sequence; two files at a time: each file's OpenCode mostly waits
// on the scripted model and the runtime's quiet windows (a file alone used under one core of two),
// and more than two would have the OpenCode servers compete for the cores.
export default defineConfig({
  test: {
    include: ['__test__/e2e/**/*.test.mjs'],
    pool: 'forks',
    // A temp directory per run, which must be empty at the end (__test__/setup/temp-root.mjs).
    globalSetup: ['__test__/setup/temp-root.mjs'],
    // Directories made with helpers.mjs tempDir are removed after each file.
    setupFiles: ['__test__/setup/temp-dirs.mjs'],
    maxWorkers: 2,
    testTimeout: 90_000,
    hookTimeout: 120_000,
  },
})
