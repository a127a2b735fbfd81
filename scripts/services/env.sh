#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Prints the environment the tests need to reach the servers of up.sh, one `export` per line:
#   eval "$(scripts/services/env.sh)"
# boto3/botocore read AWS_ENDPOINT_URL_S3 and the AWS_* credentials directly; an IP endpoint
# makes them use path-style addressing, which MinIO needs here.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

emit() { printf 'export %s=%q\n' "$1" "$2"; }

emit AWS_ENDPOINT_URL_S3 "http://$UD_S3_HOST:$UD_S3_PORT"
emit AWS_ACCESS_KEY_ID "$UD_S3_ACCESS_KEY"
emit AWS_SECRET_ACCESS_KEY "$UD_S3_SECRET_KEY"
emit AWS_DEFAULT_REGION "$UD_S3_REGION"
emit CASSANDRA_HOST "$UD_CASSANDRA_HOST"
emit CASSANDRA_PORT "$UD_CASSANDRA_PORT"
if [[ "$UD_CASSANDRA_AUTH" == password ]]; then
  emit CASSANDRA_USERNAME cassandra
  emit CASSANDRA_PASSWORD cassandra
fi
