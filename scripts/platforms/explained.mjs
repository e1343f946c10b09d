// The root causes of the full-suite failures that PLATFORMS.md shows, found by looking into each
// (scripts/platforms/platforms-doc.mjs joins them with a run's failures). An entry names the
// platforms, the test file and a pattern of the test's full name. A run fails to write
// PLATFORMS.md when a failure has no entry here, or an entry matches no failure (so this list
// cannot outlive the failures it explains), unless `optional: true` (a failure that depends on
// the machine's speed, and may not happen). `slow: true` says a failure is only emulation speed:
// the run then requires that the test passed when run again alone with longer timeouts.

// The checks' shell: the mock OpenCode runs every check in bash (__test__/mock/opencode/shell.mjs),
// as OpenCode's shell tool does on Linux and macOS.
const NO_BASH_UNDER_WINE =
  "the mock OpenCode runs each shell command and acceptance check in `bash` (`__test__/mock/opencode/shell.mjs`), as OpenCode's shell tool does. " +
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
    cause: "its shell step (`__test__/mock/opencode.selftest.mjs`) records `spawn bash ENOENT` instead of `[exit 0]`: " + NO_BASH_UNDER_WINE,
  },
  {
    platforms: ['linux-arm64-gnu'],
    file: '__test__/failing-routes.test.mjs',
    test: /^fifty goals waiting on one directory whose list always fails/,
    slow: true,
    optional: true,
    cause:
      'emulation speed. After the list recovers (its next look is 10 s later, by the backoff the test checks), driving the fifty goals ' +
      '(their reads, audits and posts, and the mock answering them, all in one emulated process) took about 12 s under qemu, past the ' +
      '15 s the test allows from recovery on real hardware; with that allowance ×4 (`SESSION_GOAL_TEST_TIME_SCALE`) all fifty are ' +
      'driven, each under one message id, about 22 s after recovery. Every other assertion of the test (requests at the wire, the ' +
      'shared list and its backoff) held.',
  },
]
