"""A library of a million documents: what the sensor, the upgrade schedule and listing cost at that size.

    python -m bench.library [--documents 1000000] [--new 100] [--out FILE]   (from the repository root)

On the embedded librarian (files + SQLite) in a fresh folder and a fresh Dagster instance:

1. register N documents: their librarian rows and upload-log events written in batches of
   10,000 per transaction, their dynamic partitions added 10,000 at a time, and a current
   generation recorded for each, as after a full decode. No bytes are stored (none of the measured
   operations reads them), so this is the metadata of a decoded library, not its objects;
2. the upload sensor's tick over `--new` fresh uploads (real `add_document` calls): target <= 1 s;
3. the upgrade schedule's evaluation once every generation is stale (a new unstructured version):
   its time (target <= 60 s, a schedule tick's own limit) and the memory it added;
4. `ud librarian list`'s first page and a full pass (Librarian.iter_documents), with the memory it
   added;
5. Dagster's own query of the asset's partitions (get_partition_keys), which the UI and any
   whole-library plan pay.

Memory figures are the growth of this process's peak RSS (ru_maxrss) over each step: a step that
held the whole library would add hundreds of MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

BATCH = 10_000
KIND = "text/plain"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def log(message: str) -> None:
    print(f"[library {time.strftime('%H:%M:%S')}] {message}", flush=True)


def document_id(index: int) -> str:
    return f"doc-{index:07d}.txt"


def register(lib, instance, count: int) -> dict:
    """Rows, upload-log events, partitions and generations of `count` documents, in batches."""
    from resources.embedded import _ms
    from resources.model import SOURCE, DocumentMetadata
    from resources.records import Generation
    from ud_assets.decoding.model import DECODER_LOGIC_VERSION
    from ud_assets.defs.partitions import documents_partitions
    from ud_assets.defs.schedules import _default_config_json, current_target

    store = lib.documents
    unstructured, decoder, config_json = current_target(_default_config_json())
    assert decoder == DECODER_LOGIC_VERSION
    now = datetime.now(UTC)
    timings = {"rows_s": 0.0, "partitions_s": 0.0, "generations_s": 0.0}
    for start in range(0, count, BATCH):
        ids = [document_id(i) for i in range(start, min(count, start + BATCH))]
        began = time.perf_counter()
        metas = [
            DocumentMetadata(
                id=i, kind=KIND, object_id=uuid.uuid4(), time=now, workspace=lib.workspace, size=1, sha256=f"{n:064x}"
            )
            for n, i in enumerate(ids, start)
        ]
        store.upsert_many(metas)
        with store.db.write() as c:  # the upload log, as add_document writes it, one transaction a batch
            c.executemany(
                "INSERT INTO upload_log (workspace, id, event, sha256, time_ms) VALUES (?, ?, 'added', ?, ?)",
                [(lib.workspace, m.id, m.sha256, _ms(now)) for m in metas],
            )
        timings["rows_s"] += time.perf_counter() - began
        began = time.perf_counter()
        instance.add_dynamic_partitions(documents_partitions.name, ids)
        timings["partitions_s"] += time.perf_counter() - began
        began = time.perf_counter()
        generations = [
            Generation(
                document_id=m.id,
                fingerprint=m.sha256[:32],
                sha256=m.sha256,
                unstructured_version=unstructured,
                decoder_version=decoder,
                config_json=config_json,
                elements_object_id=str(uuid.uuid4()),
                time=now,
            )
            for m in metas
        ]
        _put_records(store, "generation", lib.workspace, generations)
        timings["generations_s"] += time.perf_counter() - began
        if (start // BATCH) % 10 == 9:
            log(f"registered {start + len(ids):,} of {count:,}")
    assert all(m.document_type == SOURCE for m in metas)
    return {key: round(value, 2) for key, value in timings.items()}


def _put_records(store, kind: str, workspace: str, records: list) -> None:
    """SqliteDocumentStore.put_record, many in one transaction."""
    from resources.embedded import _to_sql
    from resources.librarian import record_columns

    cols = record_columns(kind)
    names = ", ".join(name for name, _ in cols)
    rows = [(workspace, *[_to_sql(getattr(r, name), t) for name, t in cols]) for r in records]
    with store.db.write() as c:
        c.executemany(
            f"INSERT OR REPLACE INTO record_{kind} (workspace, {names}) VALUES (?, {', '.join('?' * len(cols))})", rows
        )


def measure(home: Path, count: int, new: int) -> dict:
    import dagster as dg

    from ud_assets.defs import schedules
    from ud_assets.defs.partitions import documents_partitions
    from ud_assets.defs.resources import LibrarianResource
    from ud_assets.defs.schedules import reprocess_after_upgrade
    from ud_assets.defs.sensors import librarian_uploads

    resource_ = LibrarianResource(backend="embedded", home=str(home / "ud"))
    lib = resource_.get()
    out: dict = {"documents": count, "new_uploads": new}
    (home / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(home / "dagster")) as instance:
        log(f"registering {count:,} documents (rows, upload log, partitions, generations)")
        began = time.perf_counter()
        out["register"] = register(lib, instance, count)
        out["register"]["total_s"] = round(time.perf_counter() - began, 2)
        out["register"]["documents_per_s"] = round(count / out["register"]["total_s"])
        log(f"registered in {out['register']['total_s']} s ({out['register']['documents_per_s']:,}/s)")

        cursor = _last_cursor(lib, None)
        for i in range(new):
            lib.add_document(f"new-{i:04d}.txt", KIND, f"new document {i}\n".encode())
        context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"librarian": resource_})
        rss = peak_rss_mb()
        began = time.perf_counter()
        result = librarian_uploads(context)
        out["sensor_tick_s"] = round(time.perf_counter() - began, 3)
        out["sensor_runs_requested"] = len(result.run_requests)
        out["sensor_rss_growth_mb"] = round(peak_rss_mb() - rss, 1)
        log(f"sensor tick over {new} new uploads: {out['sensor_tick_s']} s, {len(result.run_requests)} runs")

        # Every generation stale: a new unstructured version.
        schedules_target = schedules.current_target
        schedules.current_target = lambda config: ("9.9.9", *schedules_target(config)[1:])
        try:
            schedule_context = dg.build_schedule_context(instance=instance, resources={"librarian": resource_})
            rss = peak_rss_mb()
            began = time.perf_counter()
            requests = reprocess_after_upgrade(schedule_context)
            out["schedule_plan_s"] = round(time.perf_counter() - began, 2)
            out["schedule_rss_growth_mb"] = round(peak_rss_mb() - rss, 1)
            out["schedule_runs_planned"] = len(requests) if isinstance(requests, list) else 0
        finally:
            schedules.current_target = schedules_target
        log(f"upgrade schedule: {out['schedule_runs_planned']:,} runs planned in {out['schedule_plan_s']} s")

        began = time.perf_counter()
        first = next(iter(lib.iter_documents(page=1000)))
        out["list_first_row_s"] = round(time.perf_counter() - began, 3)
        rss = peak_rss_mb()
        began = time.perf_counter()
        listed = sum(1 for _ in lib.iter_documents(page=1000))
        out["list_all_s"] = round(time.perf_counter() - began, 2)
        out["list_rss_growth_mb"] = round(peak_rss_mb() - rss, 1)
        out["listed"] = listed
        assert first.id and listed == count + new, (listed, count, new)
        log(f"listing: first row in {out['list_first_row_s']} s, all {listed:,} in {out['list_all_s']} s")

        began = time.perf_counter()
        keys = documents_partitions.get_partition_keys(dynamic_partitions_store=instance)
        out["dagster_partition_keys_s"] = round(time.perf_counter() - began, 2)
        out["dagster_partitions"] = len(keys)
        log(f"Dagster's partition query: {len(keys):,} keys in {out['dagster_partition_keys_s']} s")
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return out


def _last_cursor(lib, cursor: str | None) -> str | None:
    """The upload log's cursor after the registered documents (the sensor has seen them all)."""
    while True:
        page = lib.uploads_since(cursor, limit=BATCH)
        if not page:
            return cursor
        cursor = page[-1].cursor


TARGETS = {"sensor_tick_s": 1.0, "schedule_plan_s": 60.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.library", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--new", type=int, default=100, help="fresh uploads the sensor tick finds")
    parser.add_argument("--out", default="bench-out/library.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("DO_NOT_TRACK", "true")
    with tempfile.TemporaryDirectory(prefix="udlibrary-") as folder:
        out = measure(Path(folder), args.documents, args.new)
    out["verdicts"] = {k: "PASS" if out[k] <= limit else "FAIL" for k, limit in TARGETS.items()}
    out["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
