#!/usr/bin/env bash
# Runs every test: the linters first (workflows, rustfmt, clippy: cheap, fail fast), the core's
# unit tests, a build of the addon, then the integration suites against the built addon (mock
# OpenCode over loopback HTTP), the install test, the fault suite and the real-OpenCode suite.
# The simulator runs beside the stages from clippy on, at the lowest CPU priority, on the cores
# they leave idle; its line comes last but one.
#
# It prints one line per stage (its result, its time and a one-line summary). Each stage's whole
# output goes to target/test-logs/; a stage that fails prints the end of its log, and the run
# stops there. TEST_VERBOSE=1 streams every stage's output as it runs instead.
set -euo pipefail
cd "$(dirname "$0")/.."

LOG_DIR="target/test-logs"
rm -rf "$LOG_DIR"
mkdir -p "$LOG_DIR"
STAGES=14

# No test may write into the user's home directory. The suite runs with a HOME of its own, which
# must be empty at the end (the last stage), as each vitest run's temp directory must be: a test
# that writes under `~` (OpenChamber's data folder, say) fails the run instead of touching the
# user's files, and nothing else on the machine writing into the real home can make it fail.
# The toolchains keep their own state where it is: cargo and rustup (by their home variables),
# npm (its cache and the user's .npmrc).
real_home=$HOME
export CARGO_HOME="${CARGO_HOME:-$real_home/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$real_home/.rustup}"
npm_config_cache="${npm_config_cache:-$(npm config get cache)}"
export npm_config_cache npm_config_userconfig="${npm_config_userconfig:-$real_home/.npmrc}"
run_home=$(mktemp -d "${TMPDIR:-/tmp}/session-goal-test-home.XXXXXX")
# The stage running in the background (see `background`): its process group, title, summary
# pattern, log, the file its exit status is written to, and when it started.
bg_pid="" bg_title="" bg_pattern="" bg_log="" bg_status_file="" bg_started=0
on_exit() {
  # A run that stops early ends its background stage (all of its processes) with it.
  if [[ -n "$bg_pid" ]]; then kill -- "-$bg_pid" 2>/dev/null || true; fi
  rm -rf "$run_home"
}
trap on_exit EXIT
export HOME=$run_home
stage_number=0
run_started=$SECONDS

# stage "title" "summary-pattern" command...: runs one stage. The summary is the last log line
# matching the extended regex (ANSI colours removed); an empty pattern prints none.
stage() {
  local title=$1 pattern=$2
  shift 2
  check_background
  stage_number=$((stage_number + 1))
  local log
  log=$(stage_log "$title")
  local label="[$stage_number/$STAGES] $title"
  local started=$SECONDS status=0
  if [[ "${TEST_VERBOSE:-}" == 1 ]]; then
    echo "== $label"
    "$@" 2>&1 | tee "$log" || status=${PIPESTATUS[0]}
  else
    printf '%s ... ' "$label"
    "$@" >"$log" 2>&1 || status=$?
  fi
  stage_result "$label" "$title" "$pattern" "$log" "$status" "$((SECONDS - started)) s"
  check_background
}

# The log file of the stage numbered stage_number, titled $1.
stage_log() {
  echo "$LOG_DIR/$(printf '%02d' "$stage_number")-$(tr -c 'a-z0-9\n' '-' <<<"${1,,}" | cut -c1-40).log"
}

# stage_result label title pattern log status took: prints how a stage ended; a failed one prints
# the end of its log and stops the run.
stage_result() {
  local label=$1 title=$2 pattern=$3 log=$4 status=$5 took=$6
  local summary=""
  if [[ -n "$pattern" ]]; then
    summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E "$pattern" | tail -1 | sed 's/^[[:space:]]*//' || true)
  fi
  if [[ $status -eq 0 ]]; then
    [[ "${TEST_VERBOSE:-}" == 1 ]] && printf '%s ... ' "$label"
    echo "ok (${took})${summary:+ - $summary}"
    return 0
  fi
  echo "FAILED (exit $status after ${took})"
  if [[ "${TEST_VERBOSE:-}" != 1 ]]; then
    echo "---- last 200 lines of $log ----"
    tail -n 200 "$log"
    echo "---- end of $log ----"
  fi
  echo "npm test stopped at stage $stage_number of $STAGES: $title" >&2
  exit "$status"
}

# background "title" "summary-pattern" command...: starts a stage beside the stages that follow,
# at the lowest CPU priority (nice 19): a stage that wants a core gets it, and this one runs on
# what they leave idle (the integration suites mostly wait on timers and servers). Its line comes
# where `await_background` is called, in the order of the stages; if it fails before that, the
# run stops as soon as the stage then running has ended. TEST_VERBOSE=1 prints its output then.
background() {
  bg_title=$1 bg_pattern=$2
  shift 2
  bg_log="$LOG_DIR/background-$(tr -c 'a-z0-9\n' '-' <<<"${bg_title,,}" | cut -c1-40).log"
  bg_status_file="$bg_log.status"
  bg_started=$SECONDS
  # Job control for this one start: the stage gets a process group of its own, which on_exit ends
  # as a whole (cargo, rustc, the simulator's threads).
  set -m
  (
    renice -n 19 -p "$BASHPID" >/dev/null
    status=0
    "$@" || status=$?
    echo "$status" >"$bg_status_file"
  ) </dev/null >"$bg_log" 2>&1 &
  bg_pid=$!
  set +m
}

# Stops the run if the background stage has ended with a failure.
check_background() {
  [[ -n "$bg_pid" && -s "$bg_status_file" && "$(<"$bg_status_file")" != 0 ]] || return 0
  local label="[beside stage $stage_number of $STAGES] $bg_title"
  [[ "${TEST_VERBOSE:-}" == 1 ]] && cat "$bg_log"
  printf '%s ... ' "$label"
  await_result "$label"
}

# The background stage's line, in its place: waits for it to end.
await_background() {
  check_background
  stage_number=$((stage_number + 1))
  local label="[$stage_number/$STAGES] $bg_title"
  if [[ "${TEST_VERBOSE:-}" == 1 ]]; then
    echo "== $label (ran beside the stages since it started; its output:)"
    wait "$bg_pid" || true
    cat "$bg_log"
  else
    printf '%s ... ' "$label"
  fi
  await_result "$label"
}

# Waits for the background stage, then prints its result like any stage's.
await_result() {
  local label=$1 waited=$SECONDS
  wait "$bg_pid" || true
  local status log
  status=$(<"$bg_status_file")
  log=$(stage_log "$bg_title")
  mv "$bg_log" "$log"
  rm -f "$bg_status_file"
  bg_pid=""
  stage_result "$label" "$bg_title" "$bg_pattern" "$log" "$status" \
    "$((SECONDS - bg_started)) s beside the stages, $((SECONDS - waited)) s waited for at the end"
}

# A stage's function is called as `"$@" || status=$?`, where bash ignores `set -e` inside it: each
# step that can fail returns its status itself (`|| return`), or a later step would run on and
# decide the stage's result alone.

# The generated binding files must match what the build just wrote.
napi_build() {
  npx napi build --platform --target x86_64-unknown-linux-gnu || return
  git diff --exit-code -- index.js index.d.ts || {
    echo "index.js / index.d.ts changed after the build: regenerate and commit them" >&2
    return 1
  }
}

# cargo test, and one line that totals its suites.
cargo_test() {
  local out status=0
  out=$(mktemp)
  cargo test --workspace --target x86_64-unknown-linux-gnu 2>&1 | tee "$out" || status=${PIPESTATUS[0]}
  awk '/^test result:/ { passed += $4; failed += $6; suites++ }
    END { printf "cargo test: %d passed, %d failed in %d suites\n", passed, failed, suites }' "$out"
  rm -f "$out"
  return "$status"
}

# The simulator (crates/goal-sim, docs/simulator.md): the real loop over 10,000 random worlds on
# tokio's paused clock; two worlds replayed twice must print the same trace (a seed is a replay);
# then one planted defect per promise (a)-(h), each of which these seeds must catch.
simulator() {
  cargo build --quiet --profile sim -p goal-sim --target x86_64-unknown-linux-gnu || return
  local sim=target/x86_64-unknown-linux-gnu/sim/goal-sim seed
  "$sim" --seeds 10000 --from 1 || return
  for seed in 7 280; do
    cmp <("$sim" --seed "$seed" --no-shrink) <("$sim" --seed "$seed" --no-shrink) \
      || { echo "seed $seed ran differently twice: the simulator is not deterministic" >&2; return 1; }
  done
  echo "replays: seeds 7 and 280 ran the same twice"
  "$sim" --mutate --seeds 10000
}

install_test() {
  node scripts/sync-platform-packages.mjs --check || return
  bash scripts/install-test.sh
}

stage "structure (no import cycle, no two-way stage imports, pure modules import no I/O, no function over 100 lines, no file over 600, every file in docs/layout.md and in one feature of docs/features.md, current)" \
  'functions:' node scripts/module-graph.mjs
stage "workflow lint (actionlint; config .github/actionlint.yaml)" 'actionlint:' node scripts/lint-workflows.mjs
stage "rustfmt (check only; rustfmt.toml)" '' cargo fmt --all --check
# The simulator is CPU work (both cores, for minutes) and the stages after it mostly wait: it runs
# beside them from here, and its line comes before the home check's.
background "simulator (10,000 random worlds, replay determinism, one planted defect per promise caught)" \
  '^mutation check' simulator
stage "clippy, warnings are errors" 'Finished' \
  cargo clippy --workspace --all-targets --target x86_64-unknown-linux-gnu -- -D warnings
stage "cargo test (goal-core: pure decisions, accounting, prompts, parsing)" '^cargo test:' cargo_test
stage "napi build (debug), generated bindings unchanged" 'Finished' napi_build
# For the target every other build names, after the addon's: the packaged crate's dependencies
# are then the addon build's own (the same features), not built again for the host's directory.
stage "cargo package goal-core (the packaged crate builds on its own)" 'Packaged' \
  cargo package -p goal-core --allow-dirty --offline --target x86_64-unknown-linux-gnu
stage "vitest (built addon against the mock OpenCode)" '^ +Tests ' npx vitest run
stage "install test (packed packages, offline host without cargo: ESM, CJS, a goal, the CLI)" \
  'install test passed' install_test
# Four classes at a time (its default is two): each class process mostly waits on its faults'
# timers, and the longest class (5xx, about 37 s) bounds the stage either way.
stage "fault-injection suite (one row per fault class; RELIABILITY.md)" 'fault classes, ' \
  node scripts/fault-suite.mjs --jobs 4
# The mutation check runs the classes that inject faults on the HTTP side, not all of them.
mutated_classes=$(node scripts/fault-suite.mjs --mutate --list | wc -l)
fault_classes=$(node scripts/fault-suite.mjs --list | wc -l)
stage "fault suite mutation check ($mutated_classes of the $fault_classes classes, the HTTP-side ones: each must fail when its faults never fire)" \
  'mutation check|passed with no fault' node scripts/fault-suite.mjs --mutate
stage "vitest e2e (built addon against a real opencode serve, offline)" '^ +Tests ' \
  npx vitest run --config vitest.e2e.config.mjs

# What the suite wrote into its home. The install test's host runs npm in a clean environment
# (`env -i HOME=…`), which keeps npm's cache and logs under that home: npm's files, not a test's,
# so `.npm` alone is allowed (as the host's temp check allows Node's compile cache).
home_untouched() {
  local left
  left=$(cd "$run_home" && find . -mindepth 1 -not -path './.npm' -not -path './.npm/*' | head -20)
  if [[ -n "$left" ]]; then
    echo "the tests wrote into the home directory (a HOME of the run's own, $run_home):" >&2
    echo "$left" >&2
    echo "write into a temp directory (helpers.mjs tempDir / tempDataDir) or pass dataDir" >&2
    return 1
  fi
  echo "home directory: nothing written"
}
await_background
stage "home directory untouched (the suite ran with a HOME of its own)" '^home directory:' home_untouched

echo "all $STAGES stages passed in $((SECONDS - run_started)) s (logs in $LOG_DIR)"
