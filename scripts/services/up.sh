#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Starts real MinIO (S3) and Apache Cassandra 5.0 servers on 127.0.0.1 for the tests.
#
# Idempotent: servers that already answer are left alone, so a second call returns at once.
# First run on a machine builds MinIO with Go and fetches Cassandra with Maven into
# ~/.cache/ud-services (UD_SERVICES_CACHE); later runs, from any clone, only start them.
# Data, logs and pid files live in <clone>/.services (UD_SERVICES_DIR) and are throwaway.
# Ports: UD_S3_PORT (9000), UD_CASSANDRA_PORT (9042), UD_CASSANDRA_STORAGE_PORT (7000).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
# shellcheck source=minio.sh
source "$here/minio.sh"
# shellcheck source=cassandra.sh
source "$here/cassandra.sh"

started_ms=$(date +%s%3N)
mkdir -p "$UD_SERVICES_DIR" "$MINIO_RUN" "$CASSANDRA_RUN"

# Two `make test` runs in the same clone must not start two copies of each server, so the rest
# runs under a lock. `flock -o` holds it in the flock process itself: a lock fd opened here would
# be inherited by the servers we start and stay locked for as long as they run.
if [[ "${UD_SERVICES_UP_LOCKED:-}" != "$UD_SERVICES_DIR" ]]; then
  export UD_SERVICES_UP_LOCKED="$UD_SERVICES_DIR"
  exec flock -o "$UD_SERVICES_DIR/up.lock" "$BASH" "$0" "$@"
fi
unset UD_SERVICES_UP_LOCKED

# Decides what to do for one service: prints "ready", "starting" (our process is alive, maybe
# still booting) or "start" (nothing of ours is running: start it). Dies if the port is held by
# something that is not a healthy server of that kind.
service_state() {
  local name="$1" port="$2" pidfile="$3" marker="$4" ready_fn="$5"
  if "$ready_fn"; then
    # Healthy on the port: ours, or one started by another clone/compose; either way usable.
    echo ready
  elif live_pid "$pidfile" "$marker" >/dev/null; then
    echo starting
  else
    # Stale pid file from a crash or a reboot.
    rm -f "$pidfile"
    if port_open "$port"; then
      die "port $port is in use by another program, but it is not a working $name; free it or set the port variable (see scripts/services/lib.sh)"
    fi
    echo start
  fi
}

minio_logs() { log_tail "$MINIO_RUN/minio.log" 40; }

cassandra_state="$(service_state Cassandra "$UD_CASSANDRA_PORT" "$CASSANDRA_RUN/cassandra.pid" \
  "-Dcassandra.storagedir=$CASSANDRA_RUN/data" cassandra_ready)"
minio_state="$(service_state MinIO "$UD_S3_PORT" "$MINIO_RUN/minio.pid" "$MINIO_RUN/data" minio_ready)"

# Cassandra first: its JVM boots while MinIO is built/started.
if [[ "$cassandra_state" == start ]]; then
  # The inter-node port is not checked by service_state; a clash there would only show up as a
  # bind error deep in the Cassandra log.
  if port_open "$UD_CASSANDRA_STORAGE_PORT"; then
    die "port $UD_CASSANDRA_STORAGE_PORT (Cassandra storage/gossip) is in use by another program; free it or set UD_CASSANDRA_STORAGE_PORT"
  fi
  cassandra_provision
  log "starting Cassandra $CASSANDRA_VERSION on $UD_CASSANDRA_HOST:$UD_CASSANDRA_PORT (log: $CASSANDRA_RUN/logs/system.log)"
  cassandra_start
fi
if [[ "$minio_state" == start ]]; then
  minio_provision
  log "starting MinIO on $(minio_url) (log: $MINIO_RUN/minio.log)"
  minio_start
fi

if [[ "$minio_state" != ready ]]; then
  wait_ready MinIO "$MINIO_RUN/minio.pid" "$MINIO_RUN/data" minio_ready minio_logs minio_stop
  log "MinIO ready on $(minio_url)"
else
  log "MinIO already running on $(minio_url)"
fi
if [[ "$cassandra_state" != ready ]]; then
  wait_ready Cassandra "$CASSANDRA_RUN/cassandra.pid" "-Dcassandra.storagedir=$CASSANDRA_RUN/data" \
    cassandra_ready cassandra_logs cassandra_stop
  log "Cassandra ready on $UD_CASSANDRA_HOST:$UD_CASSANDRA_PORT"
else
  log "Cassandra already running on $UD_CASSANDRA_HOST:$UD_CASSANDRA_PORT"
  cassandra_warn_if_outdated
fi
elapsed_ms=$(($(date +%s%3N) - started_ms))
log "services up in $((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000)))s"
