#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Starts the multi-process deployment (scripts/cluster/lib.sh lists what runs where).
#
# Idempotent: every part that answers is left alone and every part that is down is started
# again, so a second call returns in seconds. The first call on a machine installs what is
# missing (Debian's postgresql and redis-server; MinIO and Cassandra as scripts/services does,
# into the same cache). UD_CLUSTER_WORKERS (2) Celery workers; UD_VENV (<clone>/.venv).
#
#   up.sh                 everything
#   up.sh PART...         only these Dagster parts, if down: code-server, webserver, daemon, workerN
#                         (the servers must be up); e.g. after stopping one to restart it alone
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
services="$here/../services"
# shellcheck source=../services/lib.sh
source "$services/lib.sh"
# shellcheck source=lib.sh
source "$here/lib.sh"
# shellcheck source=../services/minio.sh
source "$services/minio.sh"
# shellcheck source=../services/cassandra.sh
source "$services/cassandra.sh"
# shellcheck source=parts.sh
source "$here/parts.sh"

started_ms=$(date +%s%3N)
mkdir -p "$UD_CLUSTER_DIR"
# One up.sh at a time per clone (see scripts/services/up.sh for why flock -o).
if [[ "${UD_CLUSTER_UP_LOCKED:-}" != "$UD_CLUSTER_DIR" ]]; then
  export UD_CLUSTER_UP_LOCKED="$UD_CLUSTER_DIR"
  exec flock -o "$UD_CLUSTER_DIR/up.lock" "$BASH" "$0" "$@"
fi
unset UD_CLUSTER_UP_LOCKED

if (($#)); then
  dagster_home
  for part in "$@"; do dagster_part "$part"; done
  wait_dagster_parts
  clog "$* up"
  exit 0
fi

[[ -x "$UD_VENV/bin/dagster" ]] || die "no Dagster in $UD_VENV (run make setup, or set UD_VENV)"
"$UD_VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(not all(map(u.find_spec, ('dagster_celery', 'dagster_postgres'))))" ||
  die "$UD_VENV lacks dagster-celery/dagster-postgres (make setup installs the 'cluster' extra)"

# --- servers: Cassandra nodes first (their JVMs boot while the rest starts) -----------------
count="$(node_count)"
declare -a node_state
for ((n = 1; n <= count; n++)); do
  select_node "$n"
  node_state[n]="$(part_state "Cassandra node $n" "$UD_CASSANDRA_HOST" "$UD_CASSANDRA_PORT" "$CASSANDRA_RUN/cassandra.pid" \
    "-Dcassandra.storagedir=$CASSANDRA_RUN/data" cassandra_ready)"
  if [[ "${node_state[n]}" == start ]]; then
    port_open_on "$UD_CASSANDRA_HOST" "$UD_CASSANDRA_STORAGE_PORT" &&
      die "port $UD_CASSANDRA_HOST:$UD_CASSANDRA_STORAGE_PORT (Cassandra storage) is in use by another program"
    cassandra_provision
    clog "starting Cassandra node $n on $UD_CASSANDRA_HOST:$UD_CASSANDRA_PORT (log: $CASSANDRA_RUN/logs/system.log)"
    cassandra_start
  fi
done

minio_state="$(part_state MinIO 127.0.0.1 "$UD_S3_PORT" "$MINIO_RUN/minio.pid" "$MINIO_RUN/data" minio_cluster_ready)"
if [[ "$minio_state" == start ]]; then
  minio_provision
  clog "starting MinIO on $(minio_url) over 4 drives (log: $MINIO_RUN/minio.log)"
  minio_start
fi

pg_state="$(part_state PostgreSQL 127.0.0.1 "$UD_CLUSTER_PG_PORT" "$PG_RUN/postgres.pid" "$PG_RUN/data" pg_ready)"
[[ "$pg_state" == start ]] && pg_start
redis_state="$(part_state Redis 127.0.0.1 "$UD_CLUSTER_REDIS_PORT" "$REDIS_RUN/redis.pid" "$REDIS_RUN/redis.conf" redis_ready)"
[[ "$redis_state" == start ]] && redis_start

[[ "$pg_state" == ready ]] || wait_part PostgreSQL "$PG_RUN/postgres.pid" "$PG_RUN/data" pg_ready pg_logs
[[ "$redis_state" == ready ]] || wait_part Redis "$REDIS_RUN/redis.pid" "$REDIS_RUN/redis.conf" redis_ready redis_logs
[[ "$minio_state" == ready ]] || wait_part MinIO "$MINIO_RUN/minio.pid" "$MINIO_RUN/data" minio_cluster_ready minio_logs
for ((n = 1; n <= count; n++)); do
  select_node "$n"
  if [[ "${node_state[n]}" != ready ]]; then
    wait_part "Cassandra node $n" "$CASSANDRA_RUN/cassandra.pid" "-Dcassandra.storagedir=$CASSANDRA_RUN/data" \
      cassandra_ready cassandra_logs
  fi
done
clog "servers up: Cassandra x$count on :$UD_CASSANDRA_PORT, MinIO :$UD_S3_PORT, PostgreSQL :$UD_CLUSTER_PG_PORT, Redis :$UD_CLUSTER_REDIS_PORT"
# Nodes that were all running already formed the cluster when they started.
all_ready=1
for ((n = 1; n <= count; n++)); do [[ "${node_state[n]}" == ready ]] || all_ready=0; done
[[ "$all_ready" == 1 ]] || cassandra_wait_ring

# --- Dagster --------------------------------------------------------------------------------
dagster_home
librarian_init
dagster_part code-server
dagster_part webserver
dagster_part daemon
for ((w = 1; w <= UD_CLUSTER_WORKERS; w++)); do dagster_part "worker$w"; done
wait_dagster_parts

elapsed_ms=$(($(date +%s%3N) - started_ms))
clog "cluster up in $((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000)))s: UI http://127.0.0.1:$UD_CLUSTER_WEB_PORT; eval \"\$(make -s cluster-env)\""
