import os from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.mjs'],
    // The real-OpenCode suite has its own config (vitest.e2e.config.mjs): slower, run last.
    exclude: ['__test__/e2e/**', '**/node_modules/**'],
    pool: 'forks',
    // Test files run in processes of their own, side by side. Their tests mostly wait (quiet
    // windows, backoffs, the mock's timers) rather than compute, so four run at once even on two
    // cores: vitest's default (one fewer than the cores) ran them one at a time there, ~400 s
    // instead of ~90 s.
    maxWorkers: Math.max(4, os.availableParallelism() - 1),
    // A temp directory per run, which must be empty at the end (__test__/setup/temp-root.mjs).
    globalSetup: ['__test__/setup/temp-root.mjs'],
    // Directories made with helpers.mjs tempDir are removed after each file.
    setupFiles: ['__test__/setup/temp-dirs.mjs'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
