"""Capacity beyond one machine, from measurement: CPU-seconds per small document of each part of
`make cluster-up`'s deployment, and documents per hour projected at 1, 4 and 16 workers.

    make cluster-up && python -m bench.cluster [--documents 200] [--out bench-out/cluster.json]
    (from the repository root; the cluster of this clone, whose pid files are in .cluster/)

A run over the small documents (bench.corpus.generate_small) is submitted to the webserver as an
operator's would be (the queued run coordinator in PostgreSQL, the daemon, a Celery worker
executing it); each part's process tree is read from /proc before and after (bench.cpu: utime +
stime with reaped children): the Celery workers (the run's process is a child of one), PostgreSQL
(the event log and run storage), Redis (the broker), each Cassandra node, MinIO, and Dagster's
daemon, webserver and code server. A run over one document first warms the worker (its imports),
and is not counted. CPU per document = (the part's CPU over the counted run, less its idle CPU
over as long: measured for IDLE_S with no run just before) / documents; the gross figure is kept.

The projection (bench.cpu.capacity): each worker has a core of its own; every shared part has
one core; documents per hour at w workers = the least of w * 3600 / worker CPU and 3600 / each
shared part's CPU; the part that sets it saturates first. With replication factor 3 on 3 nodes
every node writes every row, so more nodes do not raise its ceiling; more cores per node do.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench import corpus as corpus_mod
from bench import cpu
from bench.processes import REPO_ROOT
from bench.run import document_keys

SCRIPTS = REPO_ROOT / "scripts" / "cluster"
TERMINAL = ("SUCCESS", "FAILURE", "CANCELED")
IDLE_S = 30.0  # the idle baseline's length
WORKER_PART = "celery_worker"
# Parts that serve the operator rather than the documents (the bench's own polling reads
# PostgreSQL directly; the webserver answers one submission a run): reported, not projected.
NOT_PROJECTED = ("dagster_webserver", "dagster_code_server")


def log(message: str) -> None:
    print(f"[cluster {time.strftime('%H:%M:%S')}] {message}", flush=True)


def cluster_dir() -> Path:
    return Path(os.environ.get("UD_CLUSTER_DIR") or REPO_ROOT / ".cluster")


def cluster_env() -> dict[str, str]:
    """What `make cluster-env` prints, as a mapping."""
    env = {**os.environ, "UD_VENV": sys.prefix}
    out = subprocess.run([str(SCRIPTS / "env.sh")], env=env, capture_output=True, text=True, check=True).stdout
    values = {}
    for line in out.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        values[name] = value.replace("\\,", ",")
    return values


def part_pids(folder: Path) -> dict[str, list[int]]:
    """{part: roots of its process trees} from the cluster's pid files (parts not running: left out)."""
    files: dict[str, list[Path]] = {
        WORKER_PART: sorted((folder / "dagster").glob("worker*.pid")),
        "postgres": [folder / "postgres" / "postgres.pid"],
        "redis": [folder / "redis" / "redis.pid"],
        "minio": [folder / "minio" / "minio.pid"],
        "dagster_daemon": [folder / "dagster" / "daemon.pid"],
        "dagster_webserver": [folder / "dagster" / "webserver.pid"],
        "dagster_code_server": [folder / "dagster" / "code-server.pid"],
    }
    for node in sorted(folder.glob("cassandra[0-9]*")):
        files[node.name] = [node / "cassandra.pid"]
    out = {}
    for part, paths in files.items():
        pids = [pid for pid in (cpu.pid_from_file(p) for p in paths) if pid]
        if pids:
            out[part] = pids
    return out


def submit(instance, keys: list[str], workspace: str, bucket: str) -> str:
    from dagster_graphql import DagsterGraphQLClient

    from ud_assets.defs.partitions import documents_partitions

    instance.add_dynamic_partitions(documents_partitions.name, keys)
    tags = (
        {"dagster/partition": keys[0]}
        if len(keys) == 1
        else {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}
    )
    port = int(os.environ.get("UD_CLUSTER_WEB_PORT", "3100"))
    return DagsterGraphQLClient("127.0.0.1", port_number=port, timeout=120).submit_job_execution(
        "decode_documents",
        repository_location_name="ud",
        repository_name="__repository__",
        run_config={"resources": {"librarian": {"config": {"workspace": workspace, "bucket": bucket}}}},
        tags=tags,
    )


def wait(instance, run_id: str, timeout: float = 1800) -> str:
    deadline = time.monotonic() + timeout
    while True:
        status = instance.get_run_by_id(run_id).status.value
        if status in TERMINAL:
            return status
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} not ended after {timeout} s ({status})")
        time.sleep(1.0)


def measure(documents: int, workdir: Path) -> dict:
    from dagster import DagsterInstance

    from bench.services import Footprint

    parts = part_pids(cluster_dir())
    missing = [p for p in (WORKER_PART, "postgres", "redis", "minio", "cassandra1") if p not in parts]
    if missing:
        raise SystemExit(f"bench.cluster: the cluster is not up ({', '.join(missing)} not running): make cluster-up")
    folder = workdir / "small"
    corpus_mod.generate_small(folder, documents)
    keys = document_keys(sorted(folder.iterdir()))
    warmup = corpus_mod.write_warmup(workdir)
    footprint = Footprint()
    footprint.bucket = footprint.bucket.replace("udbench-", "udcap-")
    ws_warm, ws = footprint.workspace("cw"), footprint.workspace("c")
    try:
        log(f"uploading {len(keys)} small documents (workspace {ws}, bucket {footprint.bucket})")
        footprint.upload(ws_warm, {"ud-bench-warmup.pdf": warmup})
        footprint.upload(ws, keys)
        instance = DagsterInstance.get()
        try:
            log("warm-up run (one document, not counted)")
            warm_status = wait(instance, submit(instance, ["ud-bench-warmup.pdf"], ws_warm, footprint.bucket))
            time.sleep(2.0)  # the worker's and the daemon's bookkeeping after a run
            log(f"idle: {IDLE_S:.0f} s with no run (each part's background CPU: gossip, compaction, polling)")
            idle_before, idle_started = cpu.snapshot(parts), time.monotonic()
            time.sleep(IDLE_S)
            idle = cpu.delta(idle_before, cpu.snapshot(parts))
            idle_rate = {
                part: seconds / (time.monotonic() - idle_started)
                for part, seconds in idle.items()
                if seconds is not None
            }
            before = cpu.snapshot(parts)
            started = time.monotonic()
            log(f"counted run over {len(keys)} documents")
            run_id = submit(instance, list(keys), ws, footprint.bucket)
            status = wait(instance, run_id)
            time.sleep(2.0)
            wall = time.monotonic() - started
            spent = cpu.delta(before, cpu.snapshot(parts))
            run = instance.get_run_by_id(run_id)
            materialized = len(
                {
                    e.dagster_event.partition
                    for e in instance.all_logs(run_id)
                    if e.dagster_event is not None and e.dagster_event.event_type_value == "ASSET_MATERIALIZATION"
                }
            )
        finally:
            instance.dispose()
    finally:
        left = footprint.cleanup()
        if left:
            log(f"cleanup left {left[:3]}")
    # What the documents cost: the run's CPU less what the part spends idle over as long a time.
    # (a part restarted meanwhile has no figure)
    measured = {part: seconds for part, seconds in spent.items() if seconds is not None}
    net = {part: max(0.0, seconds - idle_rate.get(part, 0.0) * wall) for part, seconds in measured.items()}
    per_document = {part: round(seconds / len(keys), 4) for part, seconds in net.items()}
    projected = {p: c for p, c in per_document.items() if p not in NOT_PROJECTED}
    return {
        "documents": len(keys),
        "materialized": materialized,
        "run_status": status,
        "warmup_status": warm_status,
        "run_tags": dict(run.tags) if run else {},
        "wall_s": round(wall, 1),
        "cpu_s": spent,
        "idle_cpu_s_per_s": {part: round(rate, 4) for part, rate in idle_rate.items()},
        "cpu_s_per_document_gross": {part: round(seconds / len(keys), 4) for part, seconds in measured.items()},
        "cpu_s_per_document": per_document,
        "workers": len(parts[WORKER_PART]),
        "capacity": cpu.capacity(projected, WORKER_PART, workers=(1, 4, 16)),
        "not_projected": list(NOT_PROJECTED),
    }


def combine(rounds: list[dict]) -> dict:
    """Rounds of measure(): per part the median CPU per document, projected again; the rounds kept."""
    import statistics

    if len(rounds) == 1:
        return rounds[0]
    parts = sorted(set.intersection(*(set(r["cpu_s_per_document"]) for r in rounds)))
    median = {p: round(statistics.median(r["cpu_s_per_document"][p] for r in rounds), 4) for p in parts}
    projected = {p: c for p, c in median.items() if p not in NOT_PROJECTED}
    return {
        **{k: rounds[-1][k] for k in ("documents", "workers", "not_projected")},
        "materialized": [r["materialized"] for r in rounds],
        "run_status": [r["run_status"] for r in rounds],
        "wall_s": [r["wall_s"] for r in rounds],
        "cpu_s_per_document": median,
        "capacity": cpu.capacity(projected, WORKER_PART, workers=(1, 4, 16)),
        "rounds": rounds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cluster", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, default=corpus_mod.SMALL_CORPUS_SIZE)
    parser.add_argument("--out", default="bench-out/cluster.json")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; per part, the median is projected")
    args = parser.parse_args(argv)
    os.environ.update(cluster_env())
    rounds = []
    for round_ in range(1, args.repeat + 1):
        log(f"round {round_}/{args.repeat}")
        rounds.append(measure(args.documents, Path(tempfile.mkdtemp(prefix="udcap-"))))
    result = combine(rounds)
    out = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "cluster_capacity": result,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    capacity = result["capacity"]
    print(
        f"{result['materialized']} of {result['documents']} documents, run {result['run_status']}, {result['wall_s']} s"
    )
    for part, seconds in sorted(result["cpu_s_per_document"].items(), key=lambda item: -item[1]):
        print(f"  {part:22s} {1000 * seconds:8.1f} ms CPU per document")
    for workers, row in capacity["projection"].items():
        print(f"  {workers:>2} workers: {row['documents_per_hour']:,} documents/hour (limited by {row['saturates']})")
    print(f"saturates first (of the shared parts): {capacity['saturates_first']}; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
