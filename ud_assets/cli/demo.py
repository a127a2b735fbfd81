"""`make demo`: put the sample documents into the librarian and materialize the whole graph.

Runs against the embedded librarian by default (UD_HOME) and the Dagster instance in
DAGSTER_HOME, so the run, its materializations and the partitions are there in `make dev`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def upload_samples(librarian, folder: Path) -> list[str]:
    from ud_assets.decoding.detect import detect_mime

    ids = []
    for path in sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")):
        if not librarian.exists(path.name):
            data = path.read_bytes()
            librarian.add_document(path.name, detect_mime(data, path.name), data, title=path.name)
            print(f"  uploaded {path.name} ({len(data):,} bytes)")
        ids.append(path.name)
    return ids


def materialize(document_ids: list[str], instance) -> bool:
    """One run over all the documents (a partition range), as a batched backfill would do."""

    from ud_assets.definitions import defs
    from ud_assets.defs.partitions import documents_partitions

    instance.add_dynamic_partitions(documents_partitions.name, document_ids)
    keys = documents_partitions.get_partition_keys(dynamic_partitions_store=instance)
    wanted = [k for k in keys if k in set(document_ids)]
    job = defs.resolve_job_def("decode_documents")
    result = job.execute_in_process(
        instance=instance,
        run_config={"loggers": {"console": {"config": {"log_level": "INFO"}}}},
        tags={"dagster/asset_partition_range_start": wanted[0], "dagster/asset_partition_range_end": wanted[-1]},
        raise_on_error=False,
    )
    return result.success


def summary(librarian, document_ids: list[str]) -> list[dict]:
    rows = []
    for doc_id in document_ids:
        generation = librarian.get_generation(doc_id)
        failure = {f.document_id: f for f in librarian.list_failures()}.get(doc_id)
        children = librarian.list_children(doc_id)
        grandchildren = [g for c in children for g in librarian.list_children(c.id)]
        images = sum(1 for g in grandchildren if g.document_type == "image")
        chunks = sum(1 for g in grandchildren if g.document_type == "chunk")
        counts = json.loads(generation.summary_json) if generation else {}
        rows.append(
            {
                "document": doc_id,
                "kind": librarian.get_metadata(doc_id).kind,
                "pages": sum(1 for c in children if c.document_type == "page"),
                "sections": sum(1 for c in children if c.document_type == "section"),
                "tables": counts.get("tables", 0),
                "images": images,
                "chunks": chunks,
                "triples": counts.get("triples", 0),
                "status": "ok" if generation else f"failed: {failure.error if failure else 'not decoded'}",
            }
        )
    return rows


def print_table(rows: list[dict]) -> None:
    columns = ["document", "pages", "sections", "tables", "images", "chunks", "triples", "status"]
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(str(row[c]).ljust(widths[c]) for c in columns))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=Path, default=SAMPLES)
    args = parser.parse_args(argv)

    from dagster import DagsterInstance

    from resources.settings import load_settings, open_librarian

    settings = load_settings()
    print(
        f"librarian: {settings.backend} ({settings.home if settings.backend == 'embedded' else ','.join(settings.cassandra_hosts)})"
    )
    with open_librarian(settings) as librarian:
        print(f"uploading samples from {args.samples}")
        ids = upload_samples(librarian, args.samples)
        print(f"materializing document → elements → sections → images → provenance_triples for {len(ids)} documents")
        instance = DagsterInstance.get()
        ok = materialize(ids, instance)
        rows = summary(librarian, ids)
    print()
    print_table(rows)
    print()
    print(f"Dagster instance: {os.environ.get('DAGSTER_HOME')}; open the UI with `make dev` → http://127.0.0.1:3000")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
