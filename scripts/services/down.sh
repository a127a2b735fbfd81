#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Stops the MinIO and Cassandra servers that up.sh started from this clone. No error if they
# are not running. Data stays in .services/ for a faster next start; `down.sh --purge` (or
# UD_SERVICES_PURGE=1) also deletes it, e.g. after changing ports.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
# shellcheck source=minio.sh
source "$here/minio.sh"
# shellcheck source=cassandra.sh
source "$here/cassandra.sh"

purge="${UD_SERVICES_PURGE:-0}"
for arg in "$@"; do
  case "$arg" in
    --purge) purge=1 ;;
    *) die "usage: $0 [--purge]" ;;
  esac
done

# Both at once: Cassandra's drain takes a few seconds, MinIO's exit is instant.
minio_stop &
minio_job=$!
cassandra_stop
wait "$minio_job"

if [[ "$purge" == 1 ]]; then
  log "deleting $MINIO_RUN and $CASSANDRA_RUN"
  rm -rf "$MINIO_RUN" "$CASSANDRA_RUN"
fi
