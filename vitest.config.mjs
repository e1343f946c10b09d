import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.mjs'],
    // The real-OpenCode suite has its own config (vitest.e2e.config.mjs): slower, run last.
    exclude: ['__test__/e2e/**', '**/node_modules/**'],
    pool: 'forks',
    // A temp directory per run, which must be empty at the end (__test__/setup/temp-root.mjs).
    globalSetup: ['__test__/setup/temp-root.mjs'],
    // Directories made with helpers.mjs tempDir are removed after each file.
    setupFiles: ['__test__/setup/temp-dirs.mjs'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
