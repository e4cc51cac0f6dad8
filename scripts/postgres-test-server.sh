#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests: its own cluster in a temp dir, on 127.0.0.1 only, on a free port.
#
#   scripts/postgres-test-server.sh ensure-installed  find initdb/pg_ctl, or install Debian's `postgresql` (apt-get)
#   scripts/postgres-test-server.sh start             start (or reuse) the server; prints its URL on stdout
#   scripts/postgres-test-server.sh url               print the URL of the running server
#   scripts/postgres-test-server.sh status            exit 0 if the server answers
#   scripts/postgres-test-server.sh stop              stop the server and delete its cluster
#
# Faults (the cluster and its data stay; the tests' fault harness, testkit/postgres.ts, drives these):
#   scripts/postgres-test-server.sh crash             stop at once, as a power cut would (`pg_ctl -m immediate`)
#   scripts/postgres-test-server.sh shutdown-smart    begin a smart shutdown, do not wait (new sessions: 57P03)
#   scripts/postgres-test-server.sh resume            start again on the same data and port (crash recovery runs)
#   scripts/postgres-test-server.sh restart           fast stop + start, e.g. to apply `ALTER SYSTEM SET max_connections`
#   scripts/postgres-test-server.sh sql 'STATEMENT' [DB]  one statement as the admin user (on DB), e.g.
#                                                    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ...`
#   scripts/postgres-test-server.sh dump DB FILE      a backup of DB (pg_dump, custom format)
#   scripts/postgres-test-server.sh restore DB FILE   DB replaced by that backup: restored beside it, then swapped in
#                                                    (its sessions ended), so nobody ever sees a half-restored DB
#
# Replication and point-in-time recovery (the campaign's failover and restore faults): with PGTEST_ARCHIVE_DIR set,
# `start` also archives WAL there (archive_command = cp).
#   PGTEST_PRIMARY_DIR=D scripts/postgres-test-server.sh standby   a streaming standby of the server in state dir D
#                                                    (pg_basebackup -R, fast checkpoint), on its own port; prints its URL
#   scripts/postgres-test-server.sh promote           end recovery: the standby becomes a primary
#   scripts/postgres-test-server.sh basebackup DIR    a base backup of the server into DIR (pg_basebackup, fast checkpoint)
#   PGTEST_FROM_DIR=D scripts/postgres-test-server.sh pitr BACKUP LSN   a new server from base backup BACKUP, its WAL
#                                                    replayed from PGTEST_ARCHIVE_DIR up to LSN, then promoted (the
#                                                    password of state dir D's server); prints its URL
#
# State (URL, cluster path) lives in $PGTEST_DIR (default .pgtest/default, git-ignored); mocha uses one per process.
# initdb refuses to run as root, so as root the cluster belongs to the `postgres` user (created by the Debian
# package) or, failing that, to a dedicated `episodes-pgtest` system user. The server is tuned for speed
# (fsync=off, full_page_writes=off): it holds test data only, and loses nothing but a power cut, which no test makes.
# synchronous_commit stays on, so that a crash (`pg_ctl -m immediate`) keeps every commit it confirmed, as a real
# server does; a test that wants a store forgetting its last commits turns it off for its own database. To use an
# existing server instead, set EPISODES_TEST_PG_URL.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE_DIR="${PGTEST_DIR:-$ROOT/.pgtest/default}"
DB_USER="episodes"
DB_NAME="episodes"

log() { echo "postgres-test-server: $*" >&2; }

find_bindir() {
  local d
  if [ -n "${PG_BINDIR:-}" ] && [ -x "$PG_BINDIR/initdb" ]; then echo "$PG_BINDIR"; return 0; fi
  # Debian keeps the server binaries out of PATH, one directory per major version; take the newest.
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  return 1
}

ensure_installed() {
  if find_bindir >/dev/null; then return 0; fi
  if [ "$(id -u)" != 0 ]; then
    log "PostgreSQL server binaries not found and not root: install the Debian package 'postgresql' or set PG_BINDIR"
    return 1
  fi
  log "installing PostgreSQL from Debian packages"
  # The package would otherwise create and start a default cluster on port 5432; the tests never need it. A drop-in,
  # so that the package's own createcluster.conf (a conffile) installs without a prompt.
  mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/episodes-no-main-cluster.conf
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >&2
  # Had a default cluster been created and started anyway, it is the package's, just made: stop it.
  if command -v pg_lsclusters >/dev/null 2>&1; then
    pg_lsclusters -h 2>/dev/null | while read -r ver name _port status _rest; do
      [ "$status" = online ] && pg_ctlcluster "$ver" "$name" stop >&2 || true
    done
  fi
  find_bindir >/dev/null || { log "postgresql installed but initdb/pg_ctl still not found"; return 1; }
}

# Runs a server-side command as the cluster's owner (a non-root user).
RUN_AS=""
pick_run_as() {
  if [ "$(id -u)" != 0 ]; then RUN_AS=""; return 0; fi
  if id postgres >/dev/null 2>&1; then RUN_AS=postgres; return 0; fi
  if ! id episodes-pgtest >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin episodes-pgtest
  fi
  RUN_AS=episodes-pgtest
}
as_owner() {
  if [ -z "$RUN_AS" ]; then "$@"; return; fi
  if command -v runuser >/dev/null 2>&1; then runuser -u "$RUN_AS" -- "$@"; return; fi
  su -s /bin/sh "$RUN_AS" -c "$(printf '%q ' "$@")"
}

free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

running() {
  [ -f "$STATE_DIR/url" ] && [ -f "$STATE_DIR/cluster" ] || return 1
  local cluster bindir
  cluster="$(cat "$STATE_DIR/cluster")"
  bindir="$(find_bindir)" || return 1
  pick_run_as
  as_owner "$bindir/pg_ctl" -D "$cluster/data" status >/dev/null 2>&1
}

start() {
  if running; then cat "$STATE_DIR/url"; return 0; fi
  ensure_installed
  local bindir cluster password port url attempt
  bindir="$(find_bindir)"
  pick_run_as
  mkdir -p "$STATE_DIR"
  # /tmp rather than the work tree: the owner must be able to reach it, whatever the checkout's permissions are.
  cluster="$(mktemp -d /tmp/episodes-pgtest.XXXXXX)"
  echo "$cluster" >"$STATE_DIR/cluster"
  [ -z "$RUN_AS" ] || chown "$RUN_AS" "$cluster"
  chmod 700 "$cluster"
  password="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  (umask 077 && echo "$password" >"$cluster/pwfile")
  [ -z "$RUN_AS" ] || chown "$RUN_AS" "$cluster/pwfile"
  as_owner "$bindir/initdb" -D "$cluster/data" -U "$DB_USER" --pwfile="$cluster/pwfile" --auth=scram-sha-256 \
    -E UTF8 --no-locale --no-sync >"$cluster/initdb.log" 2>&1 || {
    cat "$cluster/initdb.log" >&2
    log "initdb failed"
    return 1
  }
  rm -f "$cluster/pwfile"
  for attempt in 1 2 3; do
    port="$(free_port)"
    as_owner tee -a "$cluster/data/postgresql.conf" >/dev/null <<EOF
# postgres-test-server.sh: throwaway test server, loopback only; no fsync (the OS keeps what a crash does not)
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$cluster'
max_connections = 200
fsync = off
full_page_writes = off
# on: a confirmed COMMIT has left shared memory, so an immediate crash loses nothing confirmed
synchronous_commit = on
EOF
    if [ -n "${PGTEST_ARCHIVE_DIR:-}" ]; then
      mkdir -p "$PGTEST_ARCHIVE_DIR"
      [ -z "$RUN_AS" ] || chown "$RUN_AS" "$PGTEST_ARCHIVE_DIR"
      as_owner tee -a "$cluster/data/postgresql.conf" >/dev/null <<EOF
archive_mode = on
archive_command = 'test ! -f $PGTEST_ARCHIVE_DIR/%f && cp %p $PGTEST_ARCHIVE_DIR/%f'
wal_keep_size = 512MB
EOF
    fi
    if as_owner "$bindir/pg_ctl" -D "$cluster/data" -l "$cluster/server.log" -w -t 30 start >/dev/null 2>&1; then
      break
    fi
    log "start on port $port failed (attempt $attempt)"
    [ "$attempt" = 3 ] && { tail -n 20 "$cluster/server.log" >&2 || true; return 1; }
  done
  url="postgres://$DB_USER:$password@127.0.0.1:$port/$DB_NAME"
  PGPASSWORD="$password" "$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U "$DB_USER" -d postgres \
    -c "CREATE DATABASE $DB_NAME" >/dev/null
  (umask 077 && echo "$url" >"$STATE_DIR/url")
  log "started on 127.0.0.1:$port (cluster $cluster)"
  echo "$url"
}

stop() {
  if [ ! -f "$STATE_DIR/cluster" ]; then rm -rf "$STATE_DIR"; return 0; fi
  local cluster bindir
  cluster="$(cat "$STATE_DIR/cluster")"
  if bindir="$(find_bindir)" && [ -d "$cluster/data" ]; then
    pick_run_as
    as_owner "$bindir/pg_ctl" -D "$cluster/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  case "$cluster" in /tmp/episodes-pgtest.*) rm -rf "$cluster" ;; esac
  rm -rf "$STATE_DIR"
  log "stopped"
}

# pg_ctl on the cluster of a running (or crashed) server, as its owner.
ctl() {
  [ -f "$STATE_DIR/cluster" ] || { log "no cluster in $STATE_DIR"; return 1; }
  local cluster bindir
  cluster="$(cat "$STATE_DIR/cluster")"
  bindir="$(find_bindir)"
  pick_run_as
  as_owner "$bindir/pg_ctl" -D "$cluster/data" -l "$cluster/server.log" "$@"
}

sql() {
  local url bindir
  url="$(cat "$STATE_DIR/url")"
  [ -z "${2:-}" ] || url="${url%/*}/$2"
  bindir="$(find_bindir)"
  "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$url" -c "$1"
}

dump() {
  local url bindir
  url="$(cat "$STATE_DIR/url")"
  bindir="$(find_bindir)"
  "$bindir/pg_dump" -Fc -f "$2" -d "${url%/*}/$1"
}

restore() {
  local url bindir staging="${1}_restoring"
  url="$(cat "$STATE_DIR/url")"
  bindir="$(find_bindir)"
  sql "DROP DATABASE IF EXISTS \"$staging\" WITH (FORCE)"
  sql "CREATE DATABASE \"$staging\""
  "$bindir/pg_restore" --no-owner -d "${url%/*}/$staging" "$2"
  sql "DROP DATABASE \"$1\" WITH (FORCE)"
  sql "ALTER DATABASE \"$staging\" RENAME TO \"$1\""
}

# A new cluster dir for this state dir, owned by the server's user (call pick_run_as first: this runs in a subshell).
new_cluster() {
  local cluster
  mkdir -p "$STATE_DIR"
  cluster="$(mktemp -d /tmp/episodes-pgtest.XXXXXX)"
  echo "$cluster" >"$STATE_DIR/cluster"
  [ -z "$RUN_AS" ] || chown "$RUN_AS" "$cluster"
  chmod 700 "$cluster"
  echo "$cluster"
}

# Port and socket of a copied data dir (the last setting in postgresql.conf wins), then start it; prints its URL.
start_copy() {
  local cluster="$1" from_url="$2" extra="$3" port url bindir
  bindir="$(find_bindir)"
  port="$(free_port)"
  printf "port = %s\nunix_socket_directories = '%s'\n%s\n" "$port" "$cluster" "$extra" |
    as_owner tee -a "$cluster/data/postgresql.conf" >/dev/null
  as_owner "$bindir/pg_ctl" -D "$cluster/data" -l "$cluster/server.log" -w -t 120 start >/dev/null 2>&1 || {
    tail -n 30 "$cluster/server.log" >&2 || true
    return 1
  }
  url="$(echo "$from_url" | sed -E "s#@127\.0\.0\.1:[0-9]+/#@127.0.0.1:$port/#")"
  (umask 077 && echo "$url" >"$STATE_DIR/url")
  echo "$url"
}

password_of() { echo "$1" | sed -E 's#^postgres://[^:]+:([^@]+)@.*$#\1#'; }
port_of() { echo "$1" | sed -E 's#^.*@127\.0\.0\.1:([0-9]+)/.*$#\1#'; }

standby() {
  local primary_url cluster bindir
  primary_url="$(cat "${PGTEST_PRIMARY_DIR:?standby needs PGTEST_PRIMARY_DIR}/url")"
  bindir="$(find_bindir)"
  pick_run_as
  cluster="$(new_cluster)"
  as_owner env PGPASSWORD="$(password_of "$primary_url")" "$bindir/pg_basebackup" -h 127.0.0.1 \
    -p "$(port_of "$primary_url")" -U "$DB_USER" -D "$cluster/data" -X stream -R --checkpoint=fast >"$cluster/basebackup.log" 2>&1 || {
    cat "$cluster/basebackup.log" >&2
    return 1
  }
  start_copy "$cluster" "$primary_url" ""
}

basebackup() {
  local url bindir
  url="$(cat "$STATE_DIR/url")"
  bindir="$(find_bindir)"
  pick_run_as
  mkdir -p "$(dirname "$1")"
  [ -z "$RUN_AS" ] || chown "$RUN_AS" "$(dirname "$1")"
  as_owner env PGPASSWORD="$(password_of "$url")" "$bindir/pg_basebackup" -h 127.0.0.1 -p "$(port_of "$url")" \
    -U "$DB_USER" -D "$1" -X stream --checkpoint=fast >&2
}

pitr() {
  local from_url cluster
  from_url="$(cat "${PGTEST_FROM_DIR:?pitr needs PGTEST_FROM_DIR}/url")"
  pick_run_as
  cluster="$(new_cluster)"
  as_owner cp -a "$1" "$cluster/data"
  as_owner rm -f "$cluster/data/standby.signal" "$cluster/data/postmaster.pid"
  as_owner touch "$cluster/data/recovery.signal"
  start_copy "$cluster" "$from_url" "restore_command = 'cp ${PGTEST_ARCHIVE_DIR:?pitr needs PGTEST_ARCHIVE_DIR}/%f %p'
recovery_target_lsn = '$2'
recovery_target_action = 'promote'"
  # Promoted: the target must not reach a standby's copy of this configuration (it would stop its recovery there).
  as_owner sed -i '/^recovery_target_/d' "$cluster/data/postgresql.conf"
}

case "${1:-}" in
  ensure-installed) ensure_installed ;;
  start) start ;;
  url) running && cat "$STATE_DIR/url" || { log "not running"; exit 1; } ;;
  status) running ;;
  stop) stop ;;
  crash) ctl -m immediate -w stop >/dev/null ;;
  shutdown-smart) ctl -m smart -W stop >/dev/null ;;
  resume) ctl -w -t 60 start >/dev/null ;;
  restart) ctl -m fast -w -t 60 restart >/dev/null ;;
  sql) sql "${2:?sql needs a statement}" "${3:-}" ;;
  dump) dump "${2:?dump needs a database}" "${3:?dump needs a file}" ;;
  restore) restore "${2:?restore needs a database}" "${3:?restore needs a file}" ;;
  standby) standby ;;
  promote) ctl -w -t 120 promote >/dev/null ;;
  basebackup) basebackup "${2:?basebackup needs a directory}" ;;
  pitr) pitr "${2:?pitr needs a base backup}" "${3:?pitr needs an LSN}" ;;
  *)
    echo "usage: $0 {ensure-installed|start|url|status|stop|crash|resume|restart|sql STATEMENT|dump DB F|restore DB F}" >&2
    exit 2
    ;;
esac
