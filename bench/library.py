"""A library of a million documents: what the sensor, the upgrade schedule and listing cost at that size.

    python -m bench.library [--documents 1000000] [--new 100] [--backend embedded|cassandra|both] [--out FILE]
    (from the repository root; the cassandra backend needs the servers of `make services-up` and
    the environment of scripts/services/env.sh)

On each librarian backend, with a fresh Dagster instance: the embedded one (files + SQLite) in a
fresh folder, the cassandra one (MinIO + Cassandra) in a workspace and bucket of its own, removed
at the end whatever happens (bench.services.Footprint). Each backend is measured in a process of
its own, so that the memory figures of one are not hidden under the other's peak:

1. register N documents: Librarian.register_documents (rows and their upload-log events) and
   Librarian.set_generations (a current generation each, as after a full decode), 10,000 a
   call, the dynamic partitions added 10,000 at a time. No bytes are stored (none of the
   measured operations reads them), so this is the metadata of a decoded library, not its objects;
2. the upload sensor's tick over `--new` fresh uploads (real `add_document` calls): target <= 1 s;
   then the worst-case delay before a document added outside ud (no upload-log event, as
   TrustGraph's librarian adds one) is found by the sensor's sweep (external_upload_latency_s);
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
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from bench.services import Footprint

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
    from resources.model import DocumentMetadata
    from resources.records import Generation
    from ud_assets.decoding import formats
    from ud_assets.defs.partitions import documents_partitions
    from ud_assets.defs.schedules import _default_config_json, current_target

    unstructured, decoder, config_json = current_target(_default_config_json())
    assert decoder == formats.versions_label()
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
        registered = lib.register_documents(metas)
        assert len(registered) == len(metas), "the bench's library is fresh: every id is new"
        timings["rows_s"] += time.perf_counter() - began
        began = time.perf_counter()
        instance.add_dynamic_partitions(documents_partitions.name, ids)
        timings["partitions_s"] += time.perf_counter() - began
        began = time.perf_counter()
        lib.set_generations(
            [
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
        )
        timings["generations_s"] += time.perf_counter() - began
        if (start // BATCH) % 10 == 9:
            log(f"registered {start + len(ids):,} of {count:,}")
    return {key: round(value, 2) for key, value in timings.items()}


def measure(home: Path, count: int, new: int, backend: str = "embedded", footprint: Footprint | None = None) -> dict:
    """The figures of one backend; the cassandra one's workspace and bucket come from `footprint`
    (the caller removes them)."""
    import dagster as dg

    from ud_assets.defs import schedules
    from ud_assets.defs.partitions import documents_partitions
    from ud_assets.defs.resources import LibrarianResource
    from ud_assets.defs.schedules import reprocess_after_upgrade
    from ud_assets.defs.sensors import librarian_uploads

    if backend == "embedded":
        resource_ = LibrarianResource(backend="embedded", home=str(home / "ud"))
    elif backend == "cassandra" and footprint is not None:
        resource_ = LibrarianResource(
            backend="cassandra", workspace=footprint.workspace("library"), bucket=footprint.bucket
        )
    else:
        raise ValueError(f"backend {backend!r} (cassandra needs a footprint)")
    lib = resource_.get()
    out: dict = {"backend": backend, "documents": count, "new_uploads": new}
    (home / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(home / "dagster")) as instance:
        log(f"{backend}: registering {count:,} documents (rows, upload log, partitions, generations)")
        began = time.perf_counter()
        out["register"] = register(lib, instance, count)
        out["register"]["total_s"] = round(time.perf_counter() - began, 2)
        out["register"]["documents_per_s"] = round(count / max(out["register"]["total_s"], 0.01))
        out["register_s"] = out["register"]["total_s"]
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

        out.update(external_upload(lib, instance, resource_, result.cursor))
        log(
            f"a document added outside ud: found after {out['external_upload_ticks']} ticks "
            f"({out['external_upload_sweep_s']} s of sweeping): worst-case delay {out['external_upload_latency_s']} s"
        )

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
        assert first.id and listed == count + new + 1, (listed, count, new)  # and the external one
        log(f"listing: first row in {out['list_first_row_s']} s, all {listed:,} in {out['list_all_s']} s")

        began = time.perf_counter()
        keys = documents_partitions.get_partition_keys(dynamic_partitions_store=instance)
        out["partitions_query_s"] = round(time.perf_counter() - began, 2)
        out["dagster_partitions"] = len(keys)
        log(f"Dagster's partition query: {len(keys):,} keys in {out['partitions_query_s']} s")
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return out


EXTERNAL_ID = "zzzz-external.txt"  # sorts after every other id: the last row the sweep reaches


def external_upload(lib, instance, resource_, cursor: str) -> dict:
    """The worst-case delay before a document added outside ud is found: its row and bytes written
    with no upload-log event (as TrustGraph's librarian adds one), just behind where the sweep
    starts. Sensor ticks run as the daemon runs them (partition requests applied, the cursor
    carried) until one adds its partition; the delay is the ticks times the sensor's interval,
    plus the ticks' own time."""
    import dataclasses

    import dagster as dg

    from ud_assets.defs.sensors import SensorCursor, librarian_uploads

    object_id = uuid.uuid4()
    lib.objects.put(object_id, b"added outside ud\n", KIND)
    template = lib.get_metadata("new-0000.txt")
    lib.documents.upsert_many([dataclasses.replace(template, id=EXTERNAL_ID, object_id=object_id, sha256="", size=0)])
    state = SensorCursor(log=SensorCursor.parse(cursor).log, sweep="").dump()
    ticks, spent, slowest = 0, 0.0, 0.0
    while True:
        ticks += 1
        context = dg.build_sensor_context(instance=instance, cursor=state, resources={"librarian": resource_})
        began = time.perf_counter()
        result = librarian_uploads(context)
        took = time.perf_counter() - began
        spent, slowest = spent + took, max(slowest, took)
        added = [
            key
            for request in result.dynamic_partitions_requests
            if isinstance(request, dg.AddDynamicPartitionsRequest)
            for key in request.partition_keys
        ]
        if added:
            instance.add_dynamic_partitions(result.dynamic_partitions_requests[0].partitions_def_name, added)
        if EXTERNAL_ID in added:
            break
        state = result.cursor
    interval = librarian_uploads.minimum_interval_seconds or 30
    return {
        "external_upload_ticks": ticks,
        "external_upload_sweep_s": round(spent, 2),
        "external_upload_slowest_tick_s": round(slowest, 3),
        # Added just after a tick began: found by the ticks-th tick after it, each interval seconds apart.
        "external_upload_latency_s": round(ticks * interval + slowest, 1),
    }


def _last_cursor(lib, cursor: str | None) -> str | None:
    """The upload log's cursor after the registered documents (the sensor has seen them all)."""
    while True:
        page = lib.uploads_since(cursor, limit=BATCH)
        if not page:
            return cursor
        cursor = page[-1].cursor


TARGETS = {"sensor_tick_s": 1.0, "schedule_plan_s": 60.0}
BACKENDS = ("embedded", "cassandra")


def verdicts(figures: dict) -> dict[str, str]:
    return {key: "PASS" if figures[key] <= limit else "FAIL" for key, limit in TARGETS.items()}


def measure_backend(backend: str, count: int, new: int, footprint: Footprint | None = None) -> dict:
    """measure() in a fresh folder, and for cassandra in the workspace and bucket of `footprint`
    (default: a new one), removed after."""
    with tempfile.TemporaryDirectory(prefix="udlibrary-") as folder:
        if backend == "embedded":
            figures = measure(Path(folder), count, new)
        else:
            footprint = footprint or Footprint()
            try:
                figures = measure(Path(folder), count, new, "cassandra", footprint)
            finally:
                log(f"removing workspace {', '.join(footprint.workspaces)} and bucket {footprint.bucket}")
                left = footprint.cleanup()
                for what in left:
                    log(f"could not remove {what}")
            figures["left_behind"] = left
    figures["verdicts"] = verdicts(figures)
    return figures


def measure_apart(backend: str, count: int, new: int, folder: Path) -> dict:
    """measure_backend in a child process: peak RSS is per process, and one backend's peak would
    hide the other's growth."""
    out = folder / f"{backend}.json"
    command = [sys.executable, "-m", "bench.library", "--backend", backend, "--documents", str(count)]
    subprocess.run([*command, "--new", str(new), "--out", str(out)], check=True)
    return json.loads(out.read_text())["backends"][backend]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.library", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--new", type=int, default=100, help="fresh uploads the sensor tick finds")
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument("--out", default="bench-out/library.json")
    parser.add_argument(
        "--into",
        metavar="BENCH_JSON",
        help="also add the figures to this `python -m bench` output (its library_1m key) and its Markdown table",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("DO_NOT_TRACK", "true")
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    out: dict = {"documents": args.documents, "new_uploads": args.new, "backends": {}}
    if len(backends) == 1:
        out["backends"][backends[0]] = measure_backend(backends[0], args.documents, args.new)
    else:
        with tempfile.TemporaryDirectory(prefix="udlibrary-") as folder:
            for backend in backends:
                out["backends"][backend] = measure_apart(backend, args.documents, args.new, Path(folder))
    out["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    if args.into:
        add_to_bench(Path(args.into), out)
    return 0


LIBRARY_KEYS = ("sensor_tick_s", "schedule_plan_s", "register_s", "partitions_query_s", "external_upload_latency_s")


def add_to_bench(bench_json: Path, library: dict) -> None:
    """library_1m in the bench's JSON (per backend: the four figures the targets name) and a table
    of them under its Markdown table. Named for the million documents the targets are set at; the
    `documents` key says how many this run registered."""
    data = json.loads(bench_json.read_text())
    data["library_1m"] = {
        "documents": library["documents"],
        "date": library["date"],
        **{name: {k: b.get(k) for k in LIBRARY_KEYS} for name, b in library["backends"].items()},
    }
    bench_json.write_text(json.dumps(data, indent=2, default=str) + "\n")
    markdown = bench_json.with_suffix(".md")
    names = list(library["backends"])
    rows = [f"| figure ({library['documents']:,} documents) | " + " | ".join(names) + " | target |"]
    rows.append("|---|" + "---|" * len(names) + "---|")
    for key in LIBRARY_KEYS:
        cells = [f"{library['backends'][n].get(key)} s" for n in names]
        target = f"<= {TARGETS[key]:g} s" if key in TARGETS else ""
        rows.append(f"| {key} | " + " | ".join(cells) + f" | {target} |")
    previous = markdown.read_text() if markdown.exists() else ""
    markdown.write_text(previous.rstrip("\n") + "\n\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    sys.exit(main())
