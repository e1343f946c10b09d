#!/usr/bin/env bash
# Install test: the package as a user gets it. Packs the root package and this machine's
# platform package (with the built .node), installs both into a temporary host directory offline
# with no Rust toolchain on PATH, then from that host: every documented export by name from ESM
# and through require, a goal driven from active to complete against the mock OpenCode with
# OpenChamber's option names, and `session-goal --version` / `--help`.
#   scripts/install-test.sh [--node <path to a node binary>]   (default: the node on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

node_bin=$(command -v node)
while [ $# -gt 0 ]; do
  case "$1" in
    --node) node_bin=$2; shift 2 ;;
    *) echo "usage: $0 [--node <node binary>]" >&2; exit 2 ;;
  esac
done

platform=$(node -p "require('./lib/load-native.js').hostPlatform()")
binary="session-goal-runtime.$platform.node"
if [ ! -f "$binary" ]; then
  echo "install test: $binary not built (run npm run build or npm run build:debug first)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/session-goal-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$(node -p "Date.now()")

# Pack: the root package (prepack adds optionalDependencies) and the platform package.
npm pack --silent --pack-destination "$work" >/dev/null
cp -r "npm/$platform" "$work/platform"
cp "$binary" "$work/platform/"
# A debug build carries ~100 MB of debug info; packing it would dominate the test's time.
if command -v strip >/dev/null 2>&1; then strip --strip-debug "$work/platform/$binary" 2>/dev/null || true; fi
(cd "$work/platform" && npm pack --silent --pack-destination "$work" >/dev/null)
root_tgz=$(ls "$work"/session-goal-runtime-[0-9]*.tgz)
platform_tgz=$(ls "$work"/session-goal-runtime-"$platform"-*.tgz)
echo "packed: $(basename "$root_tgz") ($(du -k "$root_tgz" | cut -f1) kB), $(basename "$platform_tgz") ($(du -k "$platform_tgz" | cut -f1) kB)"

# Install into a host offline: no registry, no lifecycle scripts. The other platforms' optional
# packages are not on this machine; npm skips them as optional.
mkdir "$work/host"
cd "$work/host"
printf '{ "name": "install-test-host", "version": "1.0.0", "private": true }\n' > package.json
npm install --offline --no-audit --no-fund --ignore-scripts --loglevel=error "$root_tgz" "$platform_tgz" >/dev/null
cp "$repo"/scripts/install-test/* .

# Run the host with a PATH that has node and the shell tools, and no cargo or rustc.
host_path="$(dirname "$node_bin"):/usr/bin:/bin"
if PATH="$host_path" command -v cargo >/dev/null 2>&1 || PATH="$host_path" command -v rustc >/dev/null 2>&1; then
  echo "install test: cargo/rustc still on the host PATH ($host_path)" >&2
  exit 1
fi
# The host's temp directory is its own, so what it leaves behind can be seen (and fails the test).
host_tmp="$work/tmp"
mkdir "$host_tmp"
run() { env -i HOME="$HOME" PATH="$host_path" TMPDIR="$host_tmp" "$@"; }
echo "host: node $(run "$node_bin" --version), no cargo on PATH"
run "$node_bin" esm-imports.mjs
run "$node_bin" cjs-requires.cjs
run "$node_bin" drive-goal.mjs "$repo/__test__/mock/opencode.mjs"

# Types for both entries, as a TypeScript host resolves them (nodenext: `import` → runtime.d.mts,
# `require` → runtime.d.ts). TypeScript is a devDependency of the repository: without it the
# check cannot run, and a check that cannot run is a failure, not a skip.
tsc="$repo/node_modules/typescript/bin/tsc"
if [ ! -f "$tsc" ]; then
  echo "install test: TypeScript is missing ($tsc); run npm ci in the repository" >&2
  exit 1
fi
node "$tsc" --noEmit --strict --module nodenext --moduleResolution nodenext \
  --target es2022 types-esm.mts types-cjs.cts
echo "types: ESM (types-esm.mts) and CommonJS (types-cjs.cts) type-check against the installed package"

# The CLI through npx (npm's own node must be new enough for npx; otherwise the bin directly).
if run "$node_bin" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  version=$(run npx --offline --no-install session-goal --version)
  help=$(run npx --offline --no-install session-goal --help)
else
  version=$(run "$node_bin" node_modules/.bin/session-goal --version)
  help=$(run "$node_bin" node_modules/.bin/session-goal --help)
fi
expected="session-goal-runtime $(node -p "require('$repo/package.json').version")"
[ "$version" = "$expected" ] || { echo "session-goal --version: '$version', expected '$expected'" >&2; exit 1; }
echo "$help" | grep -q '^Usage: session-goal <command>' || { echo "session-goal --help: no usage" >&2; exit 1; }
echo "cli: session-goal --version → $version; --help → $(echo "$help" | wc -l) lines"
# npm (npx) turns on Node's own module compile cache on Node 22 and later, which Node keeps in
# TMPDIR as `node-compile-cache`: npm's file, not this package's, so it alone is allowed.
left=$(ls -A "$host_tmp" | grep -vx 'node-compile-cache' || true)
[ -z "$left" ] || { echo "install test: the host left entries in its temp directory: $left" >&2; exit 1; }
echo "install test passed in $(( $(node -p "Date.now()") - started )) ms"
