#!/usr/bin/env bash
# Debian's nginx for the secured-cluster tests (testkit/secure-front.ts): they run it themselves, as a
# foreground process with its own prefix and config in a temp dir, on 127.0.0.1 only. The system service is never used.
#
#   scripts/nginx-test-front.sh ensure-installed  find nginx, or install Debian's `nginx` (apt-get)
#   scripts/nginx-test-front.sh path              print the nginx binary's path (installing it if missing)
set -euo pipefail

log() { echo "nginx-test-front: $*" >&2; }

find_nginx() {
  if [ -n "${NGINX_BIN:-}" ] && [ -x "$NGINX_BIN" ]; then echo "$NGINX_BIN"; return 0; fi
  if [ -x /usr/sbin/nginx ]; then echo /usr/sbin/nginx; return 0; fi
  command -v nginx 2>/dev/null
}

ensure_installed() {
  if find_nginx >/dev/null; then return 0; fi
  if [ "$(id -u)" != 0 ]; then
    log "nginx not found and not root: install the Debian package 'nginx' or set NGINX_BIN"
    return 1
  fi
  log "installing nginx from Debian packages"
  # The package would start the system service on port 80; the tests never need it. Debian's own switch for
  # "do not start services now" is policy-rc.d (exit 101); put one in place only for this install if none exists.
  local policy=/usr/sbin/policy-rc.d added=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && added=1
  fi
  local rc=0
  {
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx
  } >&2 || rc=$?
  [ -z "$added" ] || rm -f "$policy"
  [ "$rc" = 0 ] || { log "apt-get install nginx failed"; return 1; }
  find_nginx >/dev/null || { log "nginx installed but not found"; return 1; }
}

case "${1:-}" in
  ensure-installed) ensure_installed ;;
  path) ensure_installed && find_nginx ;;
  *)
    echo "usage: $0 {ensure-installed|path}" >&2
    exit 2
    ;;
esac
