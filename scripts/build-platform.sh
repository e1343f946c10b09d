#!/usr/bin/env bash
# Builds the release addon for another platform on this machine (x86_64 Debian 12) into its
# platform package, npm/<package>/session-goal-runtime.<package>.node:
#
#   npm run build:linux-arm64-gnu    aarch64-unknown-linux-gnu, Debian's aarch64 gcc and arm64 std
#   npm run build:linux-x64-musl     x86_64-unknown-linux-musl, musl-gcc, std built from source
#   npm run build:win32-x64          x86_64-pc-windows-gnu (mingw), std built from source, shipped
#                                    as win32-x64-msvc (docs/release.md)
#   bash scripts/build-platform.sh <platform> [--target-dir <dir>]
#
# It installs the Debian packages it needs with apt-get (as root; idempotent). The compiler is
# Debian's rustc-web (/usr/bin/rustc, /usr/bin/cargo), not rustup's: rustup here has only the
# x86_64-unknown-linux-gnu std and no rust-src, and cannot download more without its own server,
# while Debian ships the arm64 std as a package and the std's source (rust-web-src) for the
# targets it has no std for, which cargo then builds itself (-Z build-std, allowed on a stable
# compiler by RUSTC_BOOTSTRAP=1). rustup's toolchain stays first on PATH everywhere else.
#
# The release profile (Cargo.toml: LTO, opt-level "z", strip = "symbols") is the one the release
# workflow builds with; this script checks that the result has no symbol table or debug
# information left and is at most 4 MiB, and prints what it links against: the highest glibc
# symbol version (arm64), the shared libraries it needs (musl), the DLLs it imports (Windows: only
# system DLLs are allowed). A record of the build (time, size, whether the cargo target directory
# was cold) goes to target/platforms/<platform>.json for scripts/test-platforms.mjs.
#
# The cargo target directory is kept outside the clone (${XDG_CACHE_HOME:-~/.cache}/
# session-goal-runtime/platforms/cargo-target), shared by the three targets, so later builds on
# this machine are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=platforms/common.sh
source scripts/platforms/common.sh

platform=${1:-}
[ -n "$platform" ] || { echo "usage: $0 <linux-arm64-gnu|linux-x64-musl|win32-x64> [--target-dir <dir>]" >&2; exit 2; }
shift
platform_info "$platform"
target_dir="$platforms_cache/cargo-target"
while [ $# -gt 0 ]; do
  case "$1" in
    --target-dir) target_dir=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
max_bytes=$((4 * 1024 * 1024))
binary="session-goal-runtime.$package.node"
started=$(date +%s)

rust=(rustc-web cargo-web libstd-rust-web-dev)
build_env=(RUSTC=/usr/bin/rustc CARGO=/usr/bin/cargo RUSTDOC=/usr/bin/rustdoc)
tool_dir="$platforms_cache/tools"
mkdir -p "$tool_dir"
case "$platform" in
  linux-arm64-gnu)
    need_packages "${rust[@]}" libstd-rust-web-dev:arm64 gcc-aarch64-linux-gnu libc6-dev-arm64-cross binutils-aarch64-linux-gnu
    build_env+=(
      CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
      CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
      AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
    )
    objdump=aarch64-linux-gnu-objdump
    ;;
  linux-x64-musl)
    need_packages "${rust[@]}" rust-web-src musl-tools
    # Debian's musl-gcc searches musl's own library directory only, where there is no libgcc_s
    # (which Rust's unwinder needs on a dynamically linked musl target). The link step gets a
    # directory holding just that library's link name; at run time it is Alpine's libgcc_s.so.1
    # (package libgcc, which Node on Alpine needs too).
    mkdir -p "$tool_dir/musl-libgcc"
    libgcc=$(gcc -print-file-name=libgcc_s.so.1)
    ln -sfn "$libgcc" "$tool_dir/musl-libgcc/libgcc_s.so"
    printf '#!/bin/sh\nexec musl-gcc -L%s "$@"\n' "$tool_dir/musl-libgcc" > "$tool_dir/musl-linker"
    chmod +x "$tool_dir/musl-linker"
    build_env+=(
      RUSTC_BOOTSTRAP=1 CARGO_UNSTABLE_BUILD_STD=std
      CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER="$tool_dir/musl-linker"
      CC_x86_64_unknown_linux_musl=musl-gcc
      AR_x86_64_unknown_linux_musl=ar
    )
    objdump=objdump
    ;;
  win32-x64)
    need_packages "${rust[@]}" rust-web-src gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64
    # napi-build looks for libnode.dll to link against on windows-gnu and panics without one.
    # With napi's dyn-symbols feature (Cargo.toml) the addon resolves Node-API from the running
    # process instead, so an empty stand-in satisfies the build and nothing is imported from it
    # (checked below).
    if [ ! -f "$tool_dir/libnode-stub/libnode.dll" ]; then
      mkdir -p "$tool_dir/libnode-stub"
      echo 'void session_goal_libnode_stub(void) {}' |
        x86_64-w64-mingw32-gcc -shared -o "$tool_dir/libnode-stub/libnode.dll" -x c -
    fi
    build_env+=(
      LIBNODE_PATH="$tool_dir/libnode-stub"
      RUSTC_BOOTSTRAP=1 CARGO_UNSTABLE_BUILD_STD=std
      CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
      CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc
      AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
    )
    objdump=x86_64-w64-mingw32-objdump
    ;;
esac
installed=$(date +%s)

cold=true
[ -d "$target_dir/$triple/release" ] && cold=false
out=$(mktemp -d "${TMPDIR:-/tmp}/session-goal-build-XXXXXX")
trap 'rm -rf "$out"' EXIT
echo "build $platform: $triple with $(/usr/bin/rustc --version), target dir $target_dir ($([ "$cold" = true ] && echo cold || echo warm))"
# Debian's toolchain first on PATH for this build only; the binding files (index.js,
# index.d.ts) are not regenerated: they are the linux-x64-gnu build's, committed.
env -u RUSTUP_TOOLCHAIN PATH="/usr/bin:$PATH" "${build_env[@]}" \
  npx napi build --platform --release --target "$triple" --target-dir "$target_dir" \
  --output-dir "$out" --no-js --dts "$out/index.d.ts"
built_file=$(ls "$out"/session-goal-runtime.*.node)
built=$(date +%s)

# Stripped: the profile's strip = "symbols" must have left nothing for the strip tool to take.
before=$(stat -c %s "$built_file")
cp "$built_file" "$out/check.node"
"$strip_tool" --strip-all "$out/check.node"
after=$(stat -c %s "$out/check.node")
if [ "$platform" = win32-x64 ]; then
  symbols=$("$objdump" -t "$built_file" | grep -c '^\[' || true)
else
  symbols=$("$objdump" -h "$built_file" | grep -cE ' \.(symtab|debug_[a-z]+) ' || true)
fi
if [ "$symbols" -ne 0 ] || [ "$after" -ne "$before" ]; then
  echo "build $platform: not stripped ($symbols symbol or debug entries; $strip_tool --strip-all takes it from $before to $after bytes); Cargo.toml's release profile strips them (strip = \"symbols\")" >&2
  exit 1
fi
if [ "$before" -gt "$max_bytes" ]; then
  echo "build $platform: $before bytes, over the 4 MiB ($max_bytes bytes) budget" >&2
  exit 1
fi

# What the binary links against.
links=""
case "$platform" in
  linux-arm64-gnu)
    links="glibc $("$objdump" -T "$built_file" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1) at most; needs $("$objdump" -p "$built_file" | awk '/NEEDED/ { print $2 }' | paste -sd, -)"
    ;;
  linux-x64-musl)
    links="needs $("$objdump" -p "$built_file" | awk '/NEEDED/ { print $2 }' | paste -sd, -)"
    ;;
  win32-x64)
    # Windows' own DLLs (and the API sets that name them); anything else (libgcc_s_seh-1.dll,
    # libwinpthread-1.dll, libnode.dll, node.exe) would have to ship beside the addon or be the
    # stand-in, and fails the build.
    dlls=$("$objdump" -p "$built_file" | awk '/DLL Name:/ { print tolower($3) }' | sort -u)
    foreign=$(grep -vxE 'kernel32\.dll|ntdll\.dll|advapi32\.dll|bcrypt\.dll|bcryptprimitives\.dll|ws2_32\.dll|userenv\.dll|msvcrt\.dll|crypt32\.dll|secur32\.dll|ncrypt\.dll|shell32\.dll|ole32\.dll|oleaut32\.dll|user32\.dll|api-ms-win-[a-z0-9-]+\.dll' <<<"$dlls" || true)
    if [ -n "$foreign" ]; then
      echo "build $platform: imports DLLs that are not part of Windows: $(paste -sd, - <<<"$foreign")" >&2
      exit 1
    fi
    links="imports only system DLLs: $(paste -sd, - <<<"$dlls" | sed 's/,/, /g')"
    ;;
esac

mkdir -p "npm/$package"
cp "$built_file" "npm/$package/$binary"
finished=$(date +%s)
commit=$(git rev-parse HEAD)
dirty=false
[ -z "$(git status --porcelain)" ] || dirty=true
mkdir -p target/platforms
node -e '
  const [file, ...f] = process.argv.slice(1)
  const record = {
    platform: f[0], package: f[1], triple: f[2], file: f[3], bytes: Number(f[4]),
    strippedAgainBytes: Number(f[5]), seconds: Number(f[6]), installSeconds: Number(f[7]),
    cold: f[8] === "true", rustc: f[9], links: f[10], commit: f[11], dirty: f[12] === "true",
    builtAt: new Date().toISOString(),
  }
  require("fs").writeFileSync(file, JSON.stringify(record, null, 2) + "\n")
' "target/platforms/$platform.json" "$platform" "$package" "$triple" "npm/$package/$binary" "$before" "$after" \
  "$((built - installed))" "$((installed - started))" "$cold" "$(/usr/bin/rustc --version)" "$links" "$commit" "$dirty"
echo "build $platform: npm/$package/$binary, $before bytes ($(node -p "($before / 1048576).toFixed(2)") MiB, stripped: $strip_tool finds nothing more), built in $((built - installed)) s ($([ "$cold" = true ] && echo cold || echo warm)), packages $((installed - started)) s"
echo "build $platform: $links"
