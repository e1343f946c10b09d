#!/usr/bin/env bash
# Install test: the package as a user gets it. Packs the root package and one platform package
# (with its built .node), installs both into a temporary host directory offline, then runs the
# host with no Rust toolchain reachable: every documented export by name from ESM and through
# require, a goal driven from active to complete against the mock OpenCode with OpenChamber's
# option names, `session-goal doctor` on that goal, and `session-goal --version` / `--help`.
#
#   scripts/install-test.sh [--node <node>] [--platform <platform>]
#     --node      the Node that runs the host: a node binary, or a script that runs one as if it
#                 were node (scripts/platforms/node.sh prints those of the other platforms);
#                 default: the node on PATH
#     --platform  the platform package to test, e.g. linux-arm64-gnu (default: this machine's).
#                 Its binary is the repository root's session-goal-runtime.<platform>.node
#                 (npm run build / build:debug) when there is one, else npm/<platform>/'s
#                 (npm run build:<platform>)
#
# "No Rust on the host" does not depend on where Node or Rust are installed: the host's PATH is
# one private directory holding links to node, npm, npx and sh only, so a cargo in /usr/bin (Debian's
# rustc-web, `apt install cargo`) or ~/.cargo/bin is out of its reach. The host also gets its own
# HOME and TMPDIR inside the test's temp directory: nothing is written to the user's home, and
# whatever the host leaves in its temp directory fails the test.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

node_bin=$(command -v node)
platform=""
while [ $# -gt 0 ]; do
  case "$1" in
    --node) node_bin=$2; shift 2 ;;
    --platform) platform=$2; shift 2 ;;
    *) echo "usage: $0 [--node <node>] [--platform <platform>]" >&2; exit 2 ;;
  esac
done
[ -n "$platform" ] || platform=$(node -p "require('./lib/load-native.js').hostPlatform()")
[ -f "npm/$platform/package.json" ] || { echo "install test: no platform package npm/$platform" >&2; exit 2; }
os=$(node -p "require('./npm/$platform/package.json').os[0]")
binary="session-goal-runtime.$platform.node"
if [ -f "$binary" ]; then
  built="$binary"
elif [ -f "npm/$platform/$binary" ]; then
  built="npm/$platform/$binary"
else
  echo "install test: $binary not built (run npm run build, or npm run build:$platform, first)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/session-goal-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$(node -p "Date.now()")
# npm's own cache and logs for the packing and the install stay in the temp directory too.
export npm_config_cache="$work/npm-cache"

# Pack: the root package (prepack adds optionalDependencies) and the platform package.
npm pack --silent --pack-destination "$work" >/dev/null
mkdir "$work/platform"
cp "npm/$platform/package.json" "npm/$platform/README.md" "$work/platform/"
cp "$built" "$work/platform/$binary"
# A debug build carries ~100 MB of debug info; packing it would dominate the test's time.
case "$platform" in
  linux-x64-*) if command -v strip >/dev/null 2>&1; then strip --strip-debug "$work/platform/$binary" 2>/dev/null || true; fi ;;
esac
(cd "$work/platform" && npm pack --silent --pack-destination "$work" >/dev/null)
root_tgz=$(ls "$work"/session-goal-runtime-[0-9]*.tgz)
platform_tgz=$(ls "$work"/session-goal-runtime-"$platform"-*.tgz)
tar -tzf "$platform_tgz" | grep -qx "package/$binary" || { echo "install test: $(basename "$platform_tgz") does not hold $binary" >&2; exit 1; }
echo "packed: $(basename "$root_tgz") ($(du -k "$root_tgz" | cut -f1) kB), $(basename "$platform_tgz") ($(du -k "$platform_tgz" | cut -f1) kB)"

# The host's PATH: links to node (the one under test), npm and npx, and sh (npx runs a package's
# bin through it), and nothing else.
host_bin="$work/bin"
mkdir "$host_bin"
ln -s "$node_bin" "$host_bin/node"
for tool in npm npx sh; do
  found=$(command -v "$tool") || { echo "install test: $tool is not on PATH (npm and npx come with Node.js)" >&2; exit 1; }
  ln -s "$found" "$host_bin/$tool"
done
for tool in cargo rustc rustup; do
  if reached=$(PATH="$host_bin" command -v "$tool" 2>/dev/null); then
    echo "install test: the host PATH ($host_bin) reaches $tool ($reached), so it would not prove a" \
      "host without Rust: link only node, npm, npx and sh into it (scripts/install-test.sh)" >&2
    exit 1
  fi
done
host_tmp="$work/tmp"
host_home="$work/home"
mkdir "$host_tmp" "$host_home" "$work/host"
run() {
  env -i HOME="$host_home" PATH="$host_bin" TMPDIR="$host_tmp" npm_config_cache="$host_home/.npm" \
    INSTALL_TEST_PLATFORM="$platform" OPENCODE_SERVER_PASSWORD=install-test "$@"
}
echo "host: node $(run node --version | tr -d "\r") ($platform), PATH holds node, npm, npx and sh only: no cargo, rustc or rustup"

# Install into the host offline (no registry, no lifecycle scripts), with npm running on the
# Node under test: npm judges the platform package's os, cpu and libc against that Node's, as on
# the platform itself. The other platforms' optional packages are not on this machine; npm skips
# them as optional.
cd "$work/host"
printf '{ "name": "install-test-host", "version": "1.0.0", "private": true }\n' > package.json
# (npm's own script by its real path: a Windows Node under wine does not resolve the links.)
npm_cli=$(readlink -f "$host_bin/npm")
run node "$npm_cli" install --offline --no-audit --no-fund --ignore-scripts --loglevel=error "$root_tgz" "$platform_tgz" >/dev/null
cp "$repo"/scripts/install-test/* .
run node esm-imports.mjs
run node cjs-requires.cjs
run node drive-goal.mjs "$repo/__test__/mock/opencode.mjs"

# Types for both entries, as a TypeScript host resolves them (nodenext: `import` → runtime.d.mts,
# `require` → runtime.d.ts), checked with this machine's node. TypeScript is a devDependency of
# the repository: without it the check cannot run, and a check that cannot run is a failure, not
# a skip.
tsc="$repo/node_modules/typescript/bin/tsc"
if [ ! -f "$tsc" ]; then
  echo "install test: TypeScript is missing ($tsc); run npm ci in the repository" >&2
  exit 1
fi
node "$tsc" --noEmit --strict --module nodenext --moduleResolution nodenext \
  --target es2022 types-esm.mts types-cjs.cts
echo "types: ESM (types-esm.mts) and CommonJS (types-cjs.cts) type-check against the installed package"

# The CLI through npx, as a user runs it. npx needs a Node of npm's own minimum (20), and a
# Windows Node runs the Linux npm's shims badly: there the installed bin is run directly.
if [ "$os" != win32 ] && run node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  cli() { run npx --offline --no-install session-goal "$@"; }
  how="npx session-goal"
else
  cli() { run node node_modules/session-goal-runtime/bin/session-goal.js "$@"; }
  how="node …/bin/session-goal.js"
fi
version=$(cli --version)
help=$(cli --help)
expected="session-goal-runtime $(node -p "require('$repo/package.json').version")"
[ "$version" = "$expected" ] || { echo "session-goal --version: '$version', expected '$expected'" >&2; exit 1; }
echo "$help" | grep -q '^Usage: session-goal <command>' || { echo "session-goal --help: no usage" >&2; exit 1; }
echo "cli ($how): --version → $version; --help → $(echo "$help" | wc -l) lines"
# npm (npx) turns on Node's own module compile cache on Node 22 and later, which Node keeps in
# TMPDIR as `node-compile-cache`: npm's file, not this package's, so it alone is allowed.
left=$(ls -A "$host_tmp" | grep -vx 'node-compile-cache' || true)
[ -z "$left" ] || { echo "install test: the host left entries in its temp directory: $left" >&2; exit 1; }
echo "install test passed in $(( $(node -p "Date.now()") - started )) ms"
