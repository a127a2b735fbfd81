"""What the asset checks cost per small document (issue #29): they read back what was stored.

    python -m bench.checks [--documents 60] [--repeat 3] [--backend embedded|cassandra|both] [--out FILE]

The small-documents corpus (bench.corpus.generate_small) is decoded once into a fresh librarian.
Then each document goes through every stage again, its generation current (so nothing is decoded:
the run is the up-to-date check, the metadata, and the checks), once with every check and once
with none, alternately, `--repeat` times. The difference is what the checks cost: this process's
CPU (the checks run in it), the servers' CPU from /proc (Cassandra's JVM and MinIO, when they are
the backend), and wall time. Medians over documents of the per-document medians over repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import cpu
from bench.corpus import generate_small


def measure(backend: str, folder: Path, repeat: int) -> dict:
    from resources.settings import load_settings, open_librarian
    from ud_assets.decoding.detect import detect_mime
    from ud_assets.decoding.model import DecoderConfig
    from ud_assets.processing.runner import process_document
    from ud_assets.processing.stages import NAMES, STAGES, check_key

    every_check = [check_key(stage.name, check.name) for stage in STAGES for check in stage.checks]
    paths = sorted(folder.iterdir())
    servers = cpu.service_pids() if backend == "cassandra" else {}
    with tempfile.TemporaryDirectory() as home:
        settings = (
            load_settings(backend="embedded", home=home, workspace="bench")
            if backend == "embedded"
            else load_settings(backend="cassandra", workspace=f"bench_checks_{os.getpid()}")
        )
        with open_librarian(settings) as lib:
            for path in paths:
                data = path.read_bytes()
                lib.add_document(path.name, detect_mime(data[:65536], filename=path.name), data, title=path.name)
                process_document(lib, path.name, DecoderConfig(), NAMES)
            samples: dict[str, dict[str, list[dict[str, float]]]] = {p.name: {"with": [], "without": []} for p in paths}
            for round_ in range(repeat):
                for path in paths:
                    # Alternate which goes first, so a warm cache favours neither.
                    order = [("with", every_check), ("without", [])]
                    for label, checks in order if round_ % 2 == 0 else order[::-1]:
                        before_servers = cpu.snapshot(servers)
                        before_cpu, before_wall = time.process_time(), time.perf_counter()
                        outcome = process_document(lib, path.name, DecoderConfig(), NAMES, checks=checks)
                        wall = time.perf_counter() - before_wall
                        own = time.process_time() - before_cpu
                        after_servers = cpu.delta(before_servers, cpu.snapshot(servers))
                        assert outcome.skipped, f"{path.name} was decoded again"
                        if checks:
                            assert not any(outcome.checks.values()), f"{path.name}: {outcome.checks}"
                        samples[path.name][label].append(
                            {"own_cpu_ms": own * 1000, "wall_ms": wall * 1000}
                            | {f"{name}_cpu_ms": (value or 0.0) * 1000 for name, value in after_servers.items()}
                        )

    def per_document(key: str, label: str) -> list[float]:
        return [statistics.median(s[key] for s in doc[label]) for doc in samples.values()]

    keys = sorted(next(iter(samples.values()))["with"][0])
    out: dict = {"backend": backend, "documents": len(paths), "repeat": repeat, "checks": every_check}
    for key in keys:
        with_, without = per_document(key, "with"), per_document(key, "without")
        cost = [a - b for a, b in zip(with_, without, strict=True)]
        out[key] = {
            "with_checks_median": round(statistics.median(with_), 2),
            "without_checks_median": round(statistics.median(without), 2),
            "checks_median": round(statistics.median(cost), 2),
            "checks_p95": round(sorted(cost)[int(0.95 * (len(cost) - 1))], 2),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.checks", description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backend", choices=("embedded", "cassandra", "both"), default="both")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as folder:
        generate_small(folder, args.documents)
        for backend in ("embedded", "cassandra") if args.backend == "both" else (args.backend,):
            results.append(measure(backend, Path(folder), args.repeat))
            print(json.dumps(results[-1], indent=2), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"checks_cost_per_document": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
