#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Stops every part of the deployment that up.sh started from this clone (Dagster first, then the
# servers). No error for parts that are not running. Data stays in .cluster/ for a faster next
# start; `down.sh --purge` (or UD_CLUSTER_PURGE=1) also deletes it. `down.sh PART...` stops only
# those Dagster parts (code-server, webserver, daemon, workerN), e.g. to restart one with up.sh PART.
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

purge="${UD_CLUSTER_PURGE:-0}"
parts=()
for arg in "$@"; do
  case "$arg" in
    --purge) purge=1 ;;
    code-server | webserver | daemon | worker[0-9]*) parts+=("$arg") ;;
    *) die "usage: $0 [--purge] | $0 PART... (code-server, webserver, daemon, workerN: stops only those)" ;;
  esac
done
if ((${#parts[@]})); then
  for name in "${parts[@]}"; do dagster_stop "$name"; done
  exit 0
fi

# Workers as many as were started, whatever UD_CLUSTER_WORKERS says now.
for pidfile in "$DAGSTER_RUN"/worker*.pid; do
  [[ -e "$pidfile" ]] || continue
  name="$(basename "$pidfile" .pid)"
  dagster_stop "$name" &
done
for name in daemon webserver code-server; do dagster_stop "$name" & done
wait

minio_stop &
redis_stop &
pg_stop &
for ((n = 1; n <= $(node_count); n++)); do
  (select_node "$n" && cassandra_stop) &
done
wait

if [[ "$purge" == 1 ]]; then
  clog "deleting $UD_CLUSTER_DIR"
  rm -rf "$UD_CLUSTER_DIR"
fi
