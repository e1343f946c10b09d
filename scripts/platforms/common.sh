# Shared by scripts/build-platform.sh and scripts/platforms/node.sh (sourced, not run): the table of
# the platforms built and tested on this machine, the cache directory, and apt-get installs.
#
# A platform is named as its npm package is (npm/<package>/), except win32-x64: its binary is
# built for x86_64-pc-windows-gnu (mingw) and shipped as the win32-x64-msvc package, the one the
# loader (index.js) picks in the official node.exe; docs/release.md says why that is sound.

# Everything downloaded or built for these platforms is kept here, outside the clone, so that a
# second run on the same machine (a fresh clone included) starts warm.
platforms_cache=${SESSION_GOAL_PLATFORMS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/session-goal-runtime/platforms}

# platform_info <platform>: sets package (npm/<package>), triple (what cargo builds), strip_tool.
platform_info() {
  case "$1" in
    linux-arm64-gnu) package=linux-arm64-gnu triple=aarch64-unknown-linux-gnu strip_tool=aarch64-linux-gnu-strip ;;
    linux-x64-musl) package=linux-x64-musl triple=x86_64-unknown-linux-musl strip_tool=strip ;;
    win32-x64) package=win32-x64-msvc triple=x86_64-pc-windows-gnu strip_tool=x86_64-w64-mingw32-strip ;;
    *) echo "unknown platform '$1' (one of: linux-arm64-gnu, linux-x64-musl, win32-x64)" >&2; return 2 ;;
  esac
}

# need_packages <debian package>...: installs the missing ones with apt-get (as root; otherwise
# names them and fails). A package named <name>:<arch> adds that dpkg architecture first.
need_packages() {
  local missing=() package arch
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
  done
  ((${#missing[@]})) || return 0
  if [[ $(id -u) -ne 0 ]]; then
    echo "missing Debian packages: ${missing[*]} (install them with apt-get as root)" >&2
    return 1
  fi
  for package in "${missing[@]}"; do
    if [[ $package == *:* ]]; then
      arch=${package##*:}
      dpkg --print-foreign-architectures | grep -qx "$arch" || dpkg --add-architecture "$arch"
    fi
  done
  echo "installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
