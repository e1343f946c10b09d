#!/usr/bin/env node
// The feature ledger: every source file of the package (the set scripts/module-graph.mjs checks
// against docs/layout.md) belongs to exactly one feature below, and docs/features.md is the table
// of each feature's files and its lines outside tests (scripts/source-files.mjs counts them). Whoever
// asks "what would it save to drop X" reads the answer there.
//
// A new source file goes into one feature's `files` list: one line, here. A path ending in `/`
// gives a feature every source file under that folder.
//
// Usage: node scripts/features.mjs [--write]
//   (no flag)  fail when a file belongs to no feature or to two, or docs/features.md is stale
//   --write    write docs/features.md afresh
// scripts/module-graph.mjs (the structure stage of `npm test`) runs the same check, and takes
// --write too.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { GENERATED_FILES, isTestFile, linesOutsideTests, sourceFiles } from './source-files.mjs'

const CORE = 'crates/goal-core/src/'
/** The goal-core figure this ledger started from (issue 54's starting commit), counted the same way. */
export const BEFORE = { commit: '718b195', coreLines: 24027 }

/** Each feature: its name, what it is, and its files (a path ending in `/`: a whole folder). */
export const FEATURES = [
  {
    name: 'goal loop core',
    about: 'one tick as gather → decide → act, the audit and its evidence, the goal record, the settings, OpenCode I/O, the scheduler, the runtime and the Rust embedding API',
    files: [
      `${CORE}lib.rs`,
      `${CORE}error.rs`,
      `${CORE}wire.rs`,
      `${CORE}embed.rs`,
      `${CORE}intake.rs`,
      `${CORE}config/mod.rs`,
      `${CORE}config/settings_file.rs`,
      `${CORE}config/tunables.rs`,
      `${CORE}record/mod.rs`,
      `${CORE}record/fields.rs`,
      `${CORE}record/cause.rs`,
      `${CORE}record/continuation_id.rs`,
      `${CORE}record/part_id.rs`,
      `${CORE}record/guard_read.rs`,
      `${CORE}record/session.rs`,
      `${CORE}record/small_model_call.rs`,
      `${CORE}record/test_goal.rs`,
      `${CORE}text/mod.rs`,
      `${CORE}text/prompts.rs`,
      `${CORE}text/jsonx.rs`,
      `${CORE}time/mod.rs`,
      `${CORE}time/clock.rs`,
      `${CORE}time/active.rs`,
      `${CORE}time/backoff.rs`,
      `${CORE}evidence/`,
      `${CORE}io/mod.rs`,
      `${CORE}io/transport.rs`,
      `${CORE}io/http.rs`,
      `${CORE}io/opencode.rs`,
      `${CORE}io/prompt_outcome.rs`,
      `${CORE}io/writer.rs`,
      `${CORE}io/locks.rs`,
      `${CORE}io/objectives.rs`,
      `${CORE}io/trail_file.rs`,
      `${CORE}io/file_io.rs`,
      `${CORE}io/services.rs`,
      `${CORE}io/shared.rs`,
      `${CORE}sched/`,
      `${CORE}runtime/mod.rs`,
      `${CORE}runtime/sweep.rs`,
      `${CORE}runtime/watch.rs`,
      `${CORE}goal/mod.rs`,
      `${CORE}goal/tick.rs`,
      `${CORE}goal/context.rs`,
      `${CORE}goal/gather/mod.rs`,
      `${CORE}goal/act/mod.rs`,
      `${CORE}goal/act/runs.rs`,
      `${CORE}goal/act/own_posts.rs`,
      `${CORE}goal/act/operator.rs`,
      `${CORE}goal/decide/mod.rs`,
      `${CORE}goal/decide/decision.rs`,
      `${CORE}goal/decide/seen.rs`,
      `${CORE}goal/decide/observation.rs`,
      `${CORE}goal/decide/change.rs`,
      `${CORE}goal/decide/start.rs`,
      `${CORE}goal/decide/planning.rs`,
      `${CORE}goal/decide/plan_rules.rs`,
      `${CORE}goal/decide/verdict.rs`,
      `${CORE}goal/decide/delivery.rs`,
      `${CORE}goal/decide/dispatch_rules.rs`,
      `${CORE}goal/decide/gates.rs`,
      `${CORE}goal/decide/accounting.rs`,
      `${CORE}goal/decide/guard_rules.rs`,
      `${CORE}goal/decide/causes.rs`,
      `${CORE}goal/decide/wait_rules.rs`,
      `${CORE}goal/decide/notify.rs`,
      `${CORE}goal/decide/stages.rs`,
      `${CORE}goal/decide/proof.rs`,
    ],
  },
  {
    name: 'criteria',
    about: "a goal's acceptance criteria, graded by the auditor and the reviewer",
    files: [`${CORE}record/criteria.rs`, `${CORE}goal/decide/grading.rs`],
  },
  {
    name: 'checks',
    about: 'acceptance checks run through OpenCode’s shell before `complete`',
    files: [`${CORE}record/check_id.rs`, `${CORE}goal/decide/check_rules.rs`, `${CORE}goal/decide/acceptance.rs`],
  },
  {
    name: 'the reviewer',
    about: 'a second model’s review in a child session after the checks',
    files: [`${CORE}record/review.rs`, `${CORE}goal/decide/review.rs`, `${CORE}goal/decide/review_rules.rs`],
  },
  {
    name: 'budgets',
    about: 'token, cost and time budgets',
    files: [
      `${CORE}goal/decide/budgets/mod.rs`,
      `${CORE}goal/decide/budgets/tokens.rs`,
      `${CORE}goal/decide/budgets/cost.rs`,
      `${CORE}goal/decide/budgets/time.rs`,
    ],
  },
  {
    name: 'wrap-up',
    about: 'near a limit, one last turn that hands off (done, verified, left, next step) inside it, forecast from the goal’s own turns',
    files: [`${CORE}goal/decide/wrap_up.rs`, `${CORE}goal/decide/budgets/forecast.rs`, `${CORE}goal/gather/changed_files.rs`],
  },
  {
    name: 'provider limits',
    about: 'rate and usage limits parked until their reset, cut turns',
    files: [
      `${CORE}record/provider_error.rs`,
      `${CORE}time/stamp.rs`,
      `${CORE}goal/decide/provider.rs`,
      `${CORE}goal/decide/limit_rules.rs`,
      `${CORE}goal/decide/limit_rules/`,
    ],
  },
  {
    name: 'host restarts',
    about: 'every goal on the server found by a census of its sessions, and the host’s identity kept in its data directory, so a host started again knows its goals and its leases',
    files: [`${CORE}runtime/census.rs`, `${CORE}io/session_lists.rs`, `${CORE}io/host_identity.rs`],
  },
  {
    name: 'owner lists and forks',
    about: 'whose goal a fork’s copy is, from the directory’s session lists',
    files: [
      `${CORE}goal/decide/lineage.rs`,
      `${CORE}goal/decide/list_rules.rs`,
      `${CORE}goal/gather/owners.rs`,
      `${CORE}goal/gather/holders.rs`,
      `${CORE}goal/gather/list_gate.rs`,
    ],
  },
  {
    name: 'several writers',
    about: 'the multi-host lease, and lost updates repaired from a write’s echo',
    files: [`${CORE}record/lease.rs`, `${CORE}record/metadata.rs`, `${CORE}goal/act/echo.rs`, `${CORE}goal/act/echo_watch.rs`],
  },
  {
    name: 'working hours',
    about: 'a goal that works only inside its hours',
    files: [`${CORE}time/hours.rs`],
  },
  {
    name: 'stranded messages',
    about: 'a user message OpenCode stored but never ran, posted again',
    files: [`${CORE}goal/decide/strand_rules.rs`],
  },
  {
    name: 'small model',
    about: 'the built-in small model (catalog, provider wire formats, the writing-system guard)',
    files: [`${CORE}small_model/`, `${CORE}text/script_guard.rs`],
  },
  {
    name: 'session assist',
    about: 'recap and suggestion for a session',
    files: [`${CORE}assist/`, 'src/assist.rs'],
  },
  {
    name: 'control API and CLI',
    about: 'goal creation and control, `explain`, `history`, the `session-goal` CLI',
    files: [
      `${CORE}control/`,
      `${CORE}text/commands.rs`,
      'src/control/',
      'src/goal_reads.rs',
      'src/validate.rs',
      'src/types/answers.rs',
      'src/types/explanation.rs',
      'lib/goals.js',
      'bin/',
    ],
  },
  {
    name: 'event follower',
    about: 'OpenCode’s event stream followed, for a Rust host and for a Node host',
    files: [`${CORE}io/event_follower.rs`, 'src/event_follower.rs', 'src/types/stream_status.rs'],
  },
  {
    name: 'the binding',
    about: 'the napi addon and the package’s JavaScript (OpenChamber’s drop-in); `index.js` is generated and not counted',
    files: [
      'src/lib.rs',
      'src/options/',
      'src/goal_settings.rs',
      'src/types/mod.rs',
      'src/types/goal_parts.rs',
      'src/types/notification.rs',
      'src/types/small_model.rs',
      'src/types/snapshot.rs',
      'src/types/nullable.rs',
      'src/types/stored_fields.rs',
      'src/callbacks.rs',
      'src/host_return.rs',
      'src/payload.rs',
      'src/js_helpers.rs',
      'src/env_context.rs',
      'src/failure.rs',
      'src/logging.rs',
      'src/metadata.rs',
      'src/intro.rs',
      'runtime.js',
      'runtime.mjs',
      'index.js',
      'build.rs',
      'lib/drop-in.js',
      'lib/errors.js',
      'lib/load-native.js',
      'lib/objects.js',
      'lib/operator-console.js',
      'lib/option-names.js',
      'lib/option-types.js',
    ],
  },
  {
    name: 'the simulator',
    about: 'the real loop against a simulated OpenCode on a paused clock',
    files: ['crates/goal-sim/src/', `${CORE}io/memory_dir.rs`],
  },
  {
    name: 'examples',
    about: 'demos, the Tauri app, the Rust embedding example',
    files: ['examples/', 'crates/goal-core/examples/'],
  },
  {
    name: 'test and release scripts',
    about: '`npm test`’s stages (the fault suite counts as tests), platform builds, chaos, soak',
    files: ['scripts/'],
  },
  {
    name: 'benchmarks',
    about: '`npm run bench`',
    files: ['bench/'],
  },
]

/**
 * Each feature's files and lines outside tests in the repository at `repo`, the goal-core total,
 * and what does not fit: files of no feature, files of two, entries that name no file.
 */
export function ledger(repo, features = FEATURES) {
  const files = sourceFiles(repo).filter((path) => !isTestFile(path))
  const owners = new Map(files.map((path) => [path, []]))
  const idle = []
  for (const feature of features) {
    for (const entry of feature.files) {
      const matched = files.filter((path) => (entry.endsWith('/') ? path.startsWith(entry) : path === entry))
      if (matched.length === 0) idle.push(`${feature.name}: ${entry}`)
      for (const path of matched) owners.get(path).push(feature.name)
    }
  }
  const counted = (path) => (GENERATED_FILES.includes(path) ? 0 : linesOutsideTests(repo, path))
  const rows = features.map((feature) => {
    const mine = files.filter((path) => owners.get(path)[0] === feature.name)
    const lines = mine.reduce((sum, path) => sum + counted(path), 0)
    const core = mine.filter((path) => path.startsWith(CORE)).reduce((sum, path) => sum + counted(path), 0)
    return { name: feature.name, about: feature.about, files: mine.length, lines, core }
  })
  return {
    rows,
    coreLines: files.filter((path) => path.startsWith(CORE)).reduce((sum, path) => sum + counted(path), 0),
    unassigned: files.filter((path) => owners.get(path).length === 0),
    twice: files.filter((path) => owners.get(path).length > 1).map((path) => `${path} (${owners.get(path).join(', ')})`),
    idle,
  }
}

/** docs/features.md for `figures` (a `ledger`). */
export function render(figures) {
  const total = (key) => figures.rows.reduce((sum, row) => sum + row[key], 0)
  const table = figures.rows.map((row) => `| ${row.name} | ${row.files} | ${row.lines} | ${row.core} | ${row.about} |`)
  const change = figures.coreLines - BEFORE.coreLines
  return `# Features and what each costs

Written by \`node scripts/features.mjs --write\`; \`npm test\`'s structure stage fails when it is
stale, and when a source file belongs to no feature or to two. Which file belongs to which
feature is the \`FEATURES\` table of [scripts/features.mjs](../scripts/features.mjs) (see
[layout.md](layout.md#features)).

Lines are counted outside tests, the same way every time: a Rust file up to its
\`#[cfg(test)] mod tests\` block, any other source file whole; \`tests.rs\`, \`*_tests.rs\`,
\`tests/\`, \`__test__/\` and the fault suite (\`scripts/faults/\`) are tests and not counted, nor
is the generated \`index.js\`. "goal-core" is the share in \`crates/goal-core/src/\`. Dropping a
feature saves about its lines, less the few lines of the core that call it.

| Feature | Files | Lines | goal-core | What it is |
| --- | ---: | ---: | ---: | --- |
${table.join('\n')}
| **total** | ${total('files')} | ${total('lines')} | ${total('core')} | |

goal-core outside tests: ${BEFORE.coreLines} lines at ${BEFORE.commit} (before issue 54), ${figures.coreLines} now (${change > 0 ? '+' : ''}${change}).
`
}

/** Checks the ledger of `repo` (or writes docs/features.md afresh): the lines to print, and whether it passed. */
export function checkLedger(repo, { write = false, features = FEATURES } = {}) {
  const figures = ledger(repo, features)
  const out = []
  for (const path of figures.unassigned) out.push(`  IN NO FEATURE: ${path} (add it to one feature's files in scripts/features.mjs)`)
  for (const path of figures.twice) out.push(`  IN TWO FEATURES: ${path} (keep it in one)`)
  for (const entry of figures.idle) out.push(`  NAMES NO SOURCE FILE: ${entry} (scripts/features.mjs)`)
  const docPath = join(repo, 'docs', 'features.md')
  const wanted = render(figures)
  let stale = false
  if (write) writeFileSync(docPath, wanted)
  else {
    let current = ''
    try {
      current = readFileSync(docPath, 'utf8')
    } catch {}
    stale = current !== wanted
    if (stale) out.push('  docs/features.md IS STALE: run `node scripts/features.mjs --write` and commit it')
  }
  const ok = out.length === 0
  const wrote = write ? ' (written)' : stale ? ' STALE' : ''
  out.unshift(`feature ledger: ${figures.rows.length} features, goal-core ${figures.coreLines} lines outside tests (${BEFORE.coreLines} at ${BEFORE.commit}); docs/features.md${wrote}`)
  return { ok, out }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const repo = process.env.MODULE_GRAPH_REPO ?? join(fileURLToPath(new URL('.', import.meta.url)), '..')
  const { ok, out } = checkLedger(repo, { write: process.argv.includes('--write') })
  console.log(out.join('\n'))
  if (!ok) process.exit(1)
}
