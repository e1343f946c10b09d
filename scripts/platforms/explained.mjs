// The root causes of the full-suite failures that PLATFORMS.md shows, found by looking into each
// (scripts/platforms/platforms-doc.mjs joins them with a run's failures). An entry names the
// platforms, the test file and a pattern of the test's full name. A run fails to write
// PLATFORMS.md when a failure has no entry here, or an entry matches no failure (so this list
// cannot outlive the failures it explains). `slow: true` says a failure is only emulation speed;
// the run then requires that the test passed when run again alone with longer timeouts.

// The checks' shell: the mock OpenCode runs every check in bash (__test__/mock/opencode/shell.mjs),
// as OpenCode's shell tool does on Linux and macOS.
const NO_BASH_UNDER_WINE =
  "the mock OpenCode runs each acceptance check in `bash` (`__test__/mock/opencode/shell.mjs`), as OpenCode's shell tool does. " +
  'Under wine the Windows Node finds no bash to start: the spawn fails with ENOENT, the check never runs, and the goal waiting on it ' +
  'never settles. A Windows machine has bash with Git for Windows (GitHub\'s windows-2022 runners do, where the release workflow runs ' +
  'this suite); wine has no Windows bash and does not start Linux programs from Windows ones. The addon is not involved: the same ' +
  'tests pass on the other platforms.'

export const EXPLAINED = [
  { platforms: ['win32-x64'], file: '__test__/checks.test.mjs', test: /^acceptance checks/, cause: NO_BASH_UNDER_WINE },
  { platforms: ['win32-x64'], file: '__test__/criteria.test.mjs', test: /^acceptance criteria all met: the checks run/, cause: NO_BASH_UNDER_WINE },
  { platforms: ['win32-x64'], file: '__test__/interleave.test.mjs', test: /check round/, cause: NO_BASH_UNDER_WINE },
  {
    platforms: ['win32-x64'],
    file: '__test__/mock-selftest.test.mjs',
    test: /^the mock OpenCode passes its self-test$/,
    cause: "the mock's self-test (`__test__/mock/opencode.selftest.mjs`) runs a shell command through the mock's shell route; " + NO_BASH_UNDER_WINE,
  },
]
