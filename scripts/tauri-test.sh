#!/usr/bin/env bash
# The Tauri example (examples/tauri-goals) built and run under Xvfb against the mock OpenCode:
# a goal driven to complete, another paused and resumed from the window, the page's text read
# back, a screenshot checked and deleted (scripts/tauri-test/drive.mjs does the driving).
#
#   bash scripts/tauri-test.sh
#
# Installs the system packages it needs with apt-get when they are missing (as root; otherwise
# it names them and stops): WebKitGTK 4.1, GTK 3, librsvg and libsoup 3 development files for the
# build; Xvfb, xauth and ImageMagick for the run. Builds in debug mode (see the example's
# Cargo.toml: on two cores an optimised build of Tauri takes several times as long) into
# examples/tauri-goals/target/, which stays between runs as a warm cache (git-ignored), or into
# TAURI_GOALS_TARGET_DIR when set (.ci/run sets one outside the clone, so that a fresh clone on the
# same machine starts warm).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
example="$root/examples/tauri-goals"
started=$(date +%s)

packages=(pkg-config libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libsoup-3.0-dev libjavascriptcoregtk-4.1-dev xvfb xauth imagemagick)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "tauri-test: missing system packages: ${missing[*]} (install them with apt-get as root)" >&2
    exit 1
  fi
  echo "tauri-test: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
installed=$(date +%s)

cargo fmt --manifest-path "$example/Cargo.toml" --check
target_dir=${TAURI_GOALS_TARGET_DIR:-$example/target}
cargo build --quiet --manifest-path "$example/Cargo.toml" --target-dir "$target_dir"
built=$(date +%s)
binary="$target_dir/debug/tauri-goals"

# Everything the run writes (the app's web view data, xvfb-run's auth file, the driver's scratch
# directory, the screenshot) goes into one private temp directory, which must be empty at the end.
private_tmp=$(mktemp -d "${TMPDIR:-/tmp}/tauri-test.XXXXXX")
trap 'rm -rf "$private_tmp"' EXIT
# The X screen is exactly the window's size (tauri.conf.json: 900x600), so a screenshot of the
# root window is a screenshot of the window. Xvfb has no GPU: WebKitGTK draws in software, without
# compositing or DMA-BUF buffers.
TMPDIR="$private_tmp" WEBKIT_DISABLE_COMPOSITING_MODE=1 WEBKIT_DISABLE_DMABUF_RENDERER=1 \
  xvfb-run --auto-servernum --server-args="-screen 0 900x600x24 -nolisten tcp" \
  node scripts/tauri-test/drive.mjs "$binary"
left=$(find "$private_tmp" -mindepth 1 | head -20)
if [[ -n "$left" ]]; then
  echo "tauri-test: files left behind in the temp directory:" >&2
  echo "$left" >&2
  exit 1
fi
echo "tauri-test: nothing left in the temp directory"
finished=$(date +%s)
echo "tauri-test: ok (packages $((installed - started)) s, build $((built - installed)) s, run $((finished - built)) s)"
