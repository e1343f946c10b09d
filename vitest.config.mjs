import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.mjs'],
    // The real-OpenCode suite has its own config (vitest.e2e.config.mjs): slower, run last.
    exclude: ['__test__/e2e/**', '**/node_modules/**'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
