# shellcheck shell=bash
# shellcheck disable=SC2034  # settings are used by the scripts that source this file
# The multi-process deployment of make cluster-up: every part a separate real process on
# 127.0.0.x, with its own ports and data folders, beside (never instead of) make services-up.
# Sourced by up.sh, down.sh and env.sh after scripts/services/lib.sh, whose helpers, cache
# (~/.cache/ud-services: the MinIO binary and Cassandra jars) and conventions it reuses.
#
#   PostgreSQL     127.0.0.1:5433   Dagster's run, event-log and schedule storage
#   Redis          127.0.0.1:6380   the Celery broker and result backend
#   Cassandra      127.0.0.1, 127.0.0.2, 127.0.0.3 : 9142 (storage 7100), one cluster, RF 3
#   MinIO          127.0.0.1:9100   one server, four drives, erasure-coded
#   code server    127.0.0.1:4100   dagster api grpc -m ud_assets.definitions
#   webserver      127.0.0.1:3100   dagster-webserver -w deploy/workspace.yaml
#   daemon                          dagster-daemon run (run queue, sensors, schedules, monitoring)
#   workers        UD_CLUSTER_WORKERS (2) Celery workers, one run at a time each
#
# Data, logs and pid files: <clone>/.cluster (UD_CLUSTER_DIR), throwaway.

UD_CLUSTER_DIR="${UD_CLUSTER_DIR:-$UD_REPO_ROOT/.cluster}"
UD_CLUSTER_WORKERS="${UD_CLUSTER_WORKERS:-2}"
UD_CLUSTER_PG_PORT="${UD_CLUSTER_PG_PORT:-5433}"
UD_CLUSTER_REDIS_PORT="${UD_CLUSTER_REDIS_PORT:-6380}"
UD_CLUSTER_WEB_PORT="${UD_CLUSTER_WEB_PORT:-3100}"
UD_CLUSTER_GRPC_PORT="${UD_CLUSTER_GRPC_PORT:-4100}"
UD_CLUSTER_CASSANDRA_NODES="${UD_CLUSTER_CASSANDRA_NODES:-127.0.0.1 127.0.0.2 127.0.0.3}"
# The client settings every process of the deployment gets (env.sh prints them too).
UD_CLUSTER_REPLICATION="${UD_CLUSTER_REPLICATION:-NetworkTopologyStrategy:datacenter1=3}"
UD_CLUSTER_CONSISTENCY="${UD_CLUSTER_CONSISTENCY:-QUORUM}"

# scripts/services' servers, moved to the cluster's ports and folders.
UD_SERVICES_DIR="$UD_CLUSTER_DIR"
UD_S3_PORT="${UD_CLUSTER_S3_PORT:-9100}"
UD_CASSANDRA_PORT="${UD_CLUSTER_CASSANDRA_PORT:-9142}"
UD_CASSANDRA_STORAGE_PORT="${UD_CLUSTER_CASSANDRA_STORAGE_PORT:-7100}"
# Three nodes beside everything else on a 24 GiB machine.
UD_CASSANDRA_HEAP_MIN="${UD_CLUSTER_CASSANDRA_HEAP:-448m}"
UD_CASSANDRA_HEAP_MAX="${UD_CLUSTER_CASSANDRA_HEAP:-448m}"
UD_CASSANDRA_CLUSTER_NAME=ud-cluster
UD_CASSANDRA_HINTS=true
MINIO_RUN="$UD_CLUSTER_DIR/minio"
MINIO_DRIVES="$MINIO_RUN/data{1...4}"
# The four folders share this machine's root disk, which MinIO only accepts with MINIO_CI_CD=on.
MINIO_CI_CD=on

PG_RUN="$UD_CLUSTER_DIR/postgres"
REDIS_RUN="$UD_CLUSTER_DIR/redis"
DAGSTER_RUN="$UD_CLUSTER_DIR/dagster"
CLUSTER_DAGSTER_HOME="$DAGSTER_RUN/home"

# The project's virtual environment: the clone's .venv, or UD_VENV.
UD_VENV="${UD_VENV:-$UD_REPO_ROOT/.venv}"

clog() { printf '[cluster] %s\n' "$*" >&2; }

# The nodes, numbered from 1: node_count, node_host N.
node_count() { wc -w <<<"$UD_CLUSTER_CASSANDRA_NODES"; }
node_host() { tr ' ' '\n' <<<"$UD_CLUSTER_CASSANDRA_NODES" | grep -v '^$' | sed -n "${1}p"; }

# Points scripts/services/cassandra.sh at node N (its folder, address and token).
select_node() {
  local n="$1" count i seeds=""
  count="$(node_count)"
  CASSANDRA_RUN="$UD_CLUSTER_DIR/cassandra$n"
  CASSANDRA_CONF="$CASSANDRA_RUN/conf"
  UD_CASSANDRA_HOST="$(node_host "$n")"
  # Evenly spaced tokens of the Murmur3 ring: -2^63 + (n-1) * 2^64 / count.
  UD_CASSANDRA_INITIAL_TOKEN="$(python3 -c "print(-2**63 + ($n - 1) * 2**64 // $count)")"
  # Every node is a seed: each starts on its own, in any order, and they find each other.
  for ((i = 1; i <= count; i++)); do seeds+="${seeds:+,}$(node_host "$i"):$UD_CASSANDRA_STORAGE_PORT"; done
  UD_CASSANDRA_SEEDS="$seeds"
}

# The environment of the deployment's Dagster processes and of its users (env.sh prints it).
cluster_exports() {
  local hosts
  hosts="$(tr ' ' ',' <<<"$UD_CLUSTER_CASSANDRA_NODES")"
  printf '%s\n' \
    "DAGSTER_HOME=$CLUSTER_DAGSTER_HOME" \
    "CASSANDRA_HOST=$hosts" \
    "CASSANDRA_PORT=$UD_CASSANDRA_PORT" \
    "CASSANDRA_CONSISTENCY=$UD_CLUSTER_CONSISTENCY" \
    "UD_CASSANDRA_REPLICATION=$UD_CLUSTER_REPLICATION" \
    "AWS_ENDPOINT_URL_S3=http://$UD_S3_HOST:$UD_S3_PORT" \
    "AWS_ACCESS_KEY_ID=$UD_S3_ACCESS_KEY" \
    "AWS_SECRET_ACCESS_KEY=$UD_S3_SECRET_KEY" \
    "AWS_DEFAULT_REGION=$UD_S3_REGION" \
    "DAGSTER_PG_HOST=127.0.0.1" \
    "DAGSTER_PG_PORT=$UD_CLUSTER_PG_PORT" \
    "DAGSTER_PG_USER=dagster" \
    "DAGSTER_PG_PASSWORD=dagster" \
    "DAGSTER_PG_DB=dagster" \
    "UD_CELERY_BROKER=redis://127.0.0.1:$UD_CLUSTER_REDIS_PORT/0" \
    "UD_CELERY_BACKEND=redis://127.0.0.1:$UD_CLUSTER_REDIS_PORT/1" \
    "UD_CLUSTER_WORKERS=$UD_CLUSTER_WORKERS"
}
