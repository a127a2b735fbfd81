"""How fast `ud librarian import` brings many small files into the librarian (files per second).

    python -m bench.importing [--files 2000] [--rounds 3] [--backend embedded|cassandra|both] [--out FILE]
    (from the repository root; the cassandra backend needs the servers of `make services-up` and
    the environment of scripts/services/env.sh)

A folder of `--files` generated small files (20 B - 1 KB of text, 10 subfolders) is imported with
ud_assets.processing.importing.import_sources, the function behind the command, into a fresh
librarian each round: the embedded one (files + SQLite in a fresh folder), and MinIO + Cassandra (a
workspace per round in a bucket of this run, removed at the end: bench.services.Footprint), from
the local folder and from an S3 prefix on the same MinIO. A round's time is the import's own
(reading the librarian's rows into the content index, hashing, kind detection, object writes,
registration), without the interpreter's start; the figure is the median of the rounds' files/s.
Targets: >= 500 files/s embedded, >= 200 files/s on MinIO + Cassandra.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.services import Footprint

TARGETS = {"embedded": 500.0, "cassandra": 200.0, "s3_to_cassandra": 200.0}


def log(message: str) -> None:
    print(f"[importing {time.strftime('%H:%M:%S')}] {message}", flush=True)


def make_files(folder: Path, count: int) -> None:
    for i in range(count):
        path = folder / f"part{i % 10}" / f"file-{i:06d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"generated document {i}\n".encode() * (1 + i % 40))


def one_round(settings, source) -> float:
    from resources.settings import open_librarian
    from ud_assets.processing.importing import import_sources

    with open_librarian(settings) as lib:
        summary = import_sources(lib, [source])
    assert summary.added == summary.seen, summary.lines()
    return summary.seen / summary.elapsed


def measure(backend: str, files: int, rounds: int, folder: Path, footprint: Footprint | None) -> dict:
    from resources.model import StoreSettings
    from resources.settings import load_settings
    from ud_assets.processing.importing import FolderSource, S3Source

    rates: list[float] = []
    for n in range(rounds):
        if backend == "embedded":
            settings = StoreSettings(backend="embedded", home=str(folder / f"ud-{n}"))
        else:
            assert footprint is not None
            settings = load_settings(
                backend="cassandra", workspace=footprint.workspace(f"{backend}_{n}"), bucket=footprint.bucket
            )
        if backend == "s3_to_cassandra":
            assert footprint is not None
            source = S3Source(f"s3://{footprint.bucket}/source/")
        else:
            source = FolderSource(folder / "files")
        rate = one_round(settings, source)
        log(f"{backend} round {n + 1}: {rate:.0f} files/s")
        rates.append(rate)
    median = statistics.median(rates)
    return {
        "import_files_per_s": round(median, 1),
        "rounds": [round(r, 1) for r in rates],
        "target": TARGETS[backend],
        "verdict": "PASS" if median >= TARGETS[backend] else "FAIL",
    }


def upload_source(footprint: Footprint, folder: Path) -> None:
    """The generated files under s3://bucket/source/, for the S3-prefix figure."""
    from concurrent.futures import ThreadPoolExecutor

    from resources.s3 import S3ObjectStore

    store = S3ObjectStore(footprint.bucket)  # creates the bucket when missing
    paths = sorted(p for p in folder.rglob("*") if p.is_file())
    with ThreadPoolExecutor(10) as pool:
        list(
            pool.map(
                lambda p: store.client.put_object(
                    Bucket=footprint.bucket, Key="source/" + p.relative_to(folder).as_posix(), Body=p.read_bytes()
                ),
                paths,
            )
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.importing", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backend", choices=["embedded", "cassandra", "both"], default="both")
    parser.add_argument("--out", default="bench-out/importing.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("DO_NOT_TRACK", "true")
    out: dict = {"files": args.files, "rounds": args.rounds, "backends": {}}
    with tempfile.TemporaryDirectory(prefix="udimport-") as tmp:
        folder = Path(tmp)
        make_files(folder / "files", args.files)
        if args.backend in ("embedded", "both"):
            out["backends"]["embedded"] = measure("embedded", args.files, args.rounds, folder, None)
        if args.backend in ("cassandra", "both"):
            footprint = Footprint()
            try:
                out["backends"]["cassandra"] = measure("cassandra", args.files, args.rounds, folder, footprint)
                upload_source(footprint, folder / "files")
                out["backends"]["s3_to_cassandra"] = measure(
                    "s3_to_cassandra", args.files, args.rounds, folder, footprint
                )
            finally:
                log(f"removing workspaces {', '.join(footprint.workspaces)} and bucket {footprint.bucket}")
                for what in footprint.cleanup():
                    log(f"could not remove {what}")
    out["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
