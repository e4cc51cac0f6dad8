#!/usr/bin/env bash
# Checks .github/workflows with actionlint at a pinned version, installed on first use into the git-ignored .tools/
# by `go install` from the Go module proxy (the PyPI package builds by downloading from GitHub, which CI cannot reach).
#
#   bash scripts/actionlint.sh [ARGS...]    (`npm run lint` runs it)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="v1.7.12"
BIN="$ROOT/.tools/actionlint-$VERSION/actionlint"
if [ ! -x "$BIN" ]; then
  echo "actionlint: installing github.com/rhysd/actionlint@$VERSION (go install) into .tools/" >&2
  GOBIN="$(dirname "$BIN")" go install "github.com/rhysd/actionlint/cmd/actionlint@$VERSION" >&2
fi
cd "$ROOT"
exec "$BIN" "$@"
