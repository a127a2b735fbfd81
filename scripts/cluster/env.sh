#!/usr/bin/env bash
# Prints the exports that point the project's commands (ud, dagster, pytest) at the deployment
# of scripts/cluster/up.sh:
#   eval "$(scripts/cluster/env.sh)"      (or: eval "$(make -s cluster-env)")
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../services/lib.sh
source "$here/../services/lib.sh"
# shellcheck source=lib.sh
source "$here/lib.sh"

while IFS='=' read -r name value; do
  printf 'export %s=%q\n' "$name" "$value"
done < <(cluster_exports)
