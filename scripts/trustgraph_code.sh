#!/usr/bin/env bash
# TrustGraph's own code, for the tests that read and write the librarian as TrustGraph does
# (its triple store reader trustgraph.direct.cassandra_kg, its librarian trustgraph.tables.library).
# The PyPI sources of trustgraph-base and trustgraph-flow, merged into one `trustgraph` package
# under .trustgraph/<version>/ (never committed). Only cassandra-driver is needed to import the
# modules the tests use, so their many service dependencies are not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${TRUSTGRAPH_VERSION:-2.11.1}"
target=".trustgraph/$version"
[ -f "$target/.complete" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --no-binary :all: -d "$work" \
  "trustgraph-base==$version" "trustgraph-flow==$version"
rm -rf "$target" && mkdir -p "$target"
for package in base flow; do
  tar -xzf "$work/trustgraph_${package}-$version.tar.gz" -C "$work"
  cp -r "$work/trustgraph_${package}-$version/trustgraph" "$target/"
done
touch "$target/.complete"
echo "trustgraph: $version sources in $target"
