#!/usr/bin/env bash
# Debian's ffmpeg (the vendor simulator's playable media, src/vendor-sim/media-render.ts; ffprobe in its tests) and
# chromium (the review desk's browser tests, test/integration/review/, driven by playwright-core) and prometheus (its promtool
# checks the worker's /metrics and deploy/prometheus/alerts.yml, test/integration/telemetry/), installed only when missing.
#
#   scripts/review-test-tools.sh ensure-installed  find ffmpeg, ffprobe, chromium and promtool, or apt-get install them
#   scripts/review-test-tools.sh chromium          print the chromium binary's path (installing it if missing)
#   scripts/review-test-tools.sh promtool          print the promtool binary's path (installing it if missing)
set -euo pipefail

log() { echo "review-test-tools: $*" >&2; }

find_chromium() {
  if [ -n "${CHROMIUM_BIN:-}" ] && [ -x "$CHROMIUM_BIN" ]; then echo "$CHROMIUM_BIN"; return 0; fi
  if [ -x /usr/bin/chromium ]; then echo /usr/bin/chromium; return 0; fi
  command -v chromium 2>/dev/null
}

missing_packages() {
  command -v ffmpeg >/dev/null 2>&1 && command -v ffprobe >/dev/null 2>&1 || echo ffmpeg
  find_chromium >/dev/null || echo chromium
  command -v promtool >/dev/null 2>&1 || echo prometheus
}

ensure_installed() {
  local missing
  missing="$(missing_packages | tr '\n' ' ')"
  [ -n "${missing// /}" ] || return 0
  if [ "$(id -u)" != 0 ]; then
    log "missing: $missing; not root: install these Debian packages (or set CHROMIUM_BIN)"
    return 1
  fi
  log "installing from Debian packages: $missing"
  # shellcheck disable=SC2086 # one word per package
  {
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing fonts-dejavu-core
  } >&2 || { log "apt-get install $missing failed"; return 1; }
  [ -z "$(missing_packages)" ] || { log "installed but still missing: $(missing_packages | tr '\n' ' ')"; return 1; }
}

case "${1:-}" in
  ensure-installed) ensure_installed ;;
  chromium) ensure_installed && find_chromium ;;
  promtool) ensure_installed && command -v promtool ;;
  *)
    echo "usage: $0 {ensure-installed|chromium|promtool}" >&2
    exit 2
    ;;
esac
