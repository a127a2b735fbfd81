"""The reference of the cluster tests: the same documents decoded on one node, in a process of its own.

    python -m tests.cluster.reference DOCS_DIR WORKSPACE BUCKET

Uploads every file of DOCS_DIR (named by its id; its kind in DOCS_DIR/kinds.json) into the librarian the
environment names (make services-up's single MinIO and Cassandra) and materializes them in one run of
the project's job, in process, as tests/test_crash.py's reference is written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import dagster as dg


def main(docs_dir: str, workspace: str, bucket: str) -> int:
    from tests.defs.test_assets import run, upload
    from ud_assets.defs.resources import LibrarianResource

    folder = Path(docs_dir)
    kinds = json.loads((folder / "kinds.json").read_text())
    documents = {doc_id: ((folder / doc_id).read_bytes(), kind) for doc_id, kind in kinds.items()}
    resource = LibrarianResource(backend="cassandra", workspace=workspace, bucket=bucket)
    upload(resource.get(), documents)
    with dg.instance_for_test() as instance:
        result = run(resource, instance, list(documents))
    if not result.success:
        print("the reference run failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
