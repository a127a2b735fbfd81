"""`make bench`: the asset graph against the bare library, on real MinIO + Cassandra.

    python -m bench [--corpus DIR] [--out FILE] [--repeat N]   (from the repository root)

Every figure comes from a fresh subprocess (bench.workers), timed from its launch
on the system-wide monotonic clock, its peak RSS read with os.wait4. Before the first timed
round, SERVER_WARMUP_RUNS untimed graph runs over the corpus warm Cassandra's JIT, as a
deployment's long-running node is (a node just started costs about twice the CPU a request):

- raw_warm_s: unstructured's partition(filename=F, strategy="fast") over every file in one warm
  process (one warm-up call first, not timed): the floor for this library.
- graph_s: the decode_documents job (document → … → provenance_triples) over all files as one
  batched run (partition range, in-process executor, UD_BATCH_SIZE covering all files) against a
  fresh workspace and bucket, in a warm worker: the same process first ran the graph over the
  warm-up document alone (the graph's warm-up call). graph_total_s / raw_total_s compare the same
  two processes including their start-up (interpreter, imports, warm-up).
- upload_to_triples_s: a new upload through the sensor path (add_document → librarian_uploads
  evaluated with build_sensor_context → the requested run executed → triples queryable) in a fresh
  process, against cold_partition_s: `python -c "...partition(filename=F, strategy='fast')"`.
- peak RSS of the graph on the large PDF vs bare partition() on it, each in its own process.
- triples_per_s: generated quads inserted with the project's Cassandra triple store.
- ingest_s: the peer users would pick instead, `unstructured-ingest local --strategy fast
  --num-processes N` (N = the graph's parse workers) over the same folder, from its own virtual
  environment (make bench-setup), offline, wall time from launch to exit (bench.ingest), against
  graph_total_s; the same for the small documents (small_ingest_s, small_graph_total_s).
  --no-ingest skips it.

- like for like (issue #28; --no-like-for-like skips it): unstructured-ingest chunked by_title into
  its sqlite destination (unstructured-ingest's own `elements` table) against the graph on the
  embedded librarian, and into its s3 destination on the same MinIO against the graph on MinIO +
  Cassandra, on the corpus and the small documents, with what each side stored. Both sides are
  fresh processes that run nothing before: the graph's side is a worker of its own without the
  warm-up run the timed graph_s workers make (it pays its imports in the run, as `dagster job
  execute` does). On the small documents the MinIO + Cassandra pair is also run with both servers
  on a core of their own and both pipelines on the other (bench.cpu.servers_apart):
  like_for_like.services_vs_ingest_s3_servers_apart, a figure beside the target, not the target.
- cpu_per_document_ms: CPU-seconds from /proc (bench.cpu) per small document: the graph worker's
  process tree (on MinIO + Cassandra, and graph_embedded_* on the embedded librarian), bare
  partition(), Cassandra's JVM and MinIO apart (graph_default_mean: the run's CPU over its
  documents with the default workers, whose triples are written together); embedded_small: the small
  documents on the embedded librarian; cluster_capacity: python -m bench.cluster's latest figures.

Targets: graph_s / raw_warm_s <= 1.25; upload_to_triples_s / cold_partition_s <= 1.5; large-PDF
peak RSS graph / bare <= 1.5; triples_per_s >= 5000; graph_total_s / ingest_s <= 0.9 (and for the
small documents); issue #28's (bench.report.TARGETS). All figures go to --out as JSON; a short table is printed. Everything the run
created on the servers (workspaces, keyspaces, bucket) is removed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from bench import corpus as corpus_mod
from bench import cpu as cpu_mod
from bench import ingest as ingest_mod
from bench import report
from bench.processes import CHILD_ENV, Runner, cold_partition_command
from bench.services import Footprint, upload_embedded

BUSY_CORES = 0.25  # other processes using more CPUs than this during a bare-library measurement: noisy
SERVER_WARMUP_RUNS = 2  # untimed graph runs over the corpus before the first timed round (Cassandra's JIT)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


# -- the corpus ------------------------------------------------------------------------------


def document_keys(paths: list[Path]) -> dict[str, Path]:
    """Partition keys (= librarian ids) for files: the file name, or doc-NNNN.ext when Dagster refuses it."""
    from ud_assets.defs.keys import partition_key_problem

    keys: dict[str, Path] = {}
    for index, path in enumerate(paths):
        key = path.name
        if partition_key_problem(key) or key in keys:
            key = f"doc-{index:04d}{path.suffix}"
        keys[key] = path
    return keys


def pick_large_pdf(paths: list[Path]) -> Path:
    pdfs = [p for p in paths if p.suffix.lower() == ".pdf"]
    return max(pdfs or paths, key=lambda p: p.stat().st_size)


def pick_upload_file(paths: list[Path], large: Path) -> Path:
    named = [p for p in paths if p.name == corpus_mod.UPLOAD_FILE]
    if named:
        return named[0]
    others = sorted((p for p in paths if p != large), key=lambda p: p.stat().st_size) or [large]
    return others[len(others) // 2]


def describe_corpus(paths: list[Path], generated: list[dict] | None, source: str) -> dict:
    if generated:
        specs = [corpus_mod.FileSpec(f["name"], f["format"], f["pages"]) for f in generated]
        files = generated
    else:
        files = [{"name": p.name, "bytes": p.stat().st_size, "pdf_pages": _pdf_pages(p)} for p in paths]
        specs = [corpus_mod.FileSpec(p.name, p.suffix.lstrip(".").upper() or "?", _pdf_pages(p)) for p in paths]
    return {
        "source": source,
        **corpus_mod.summary(specs),
        "bytes": sum(p.stat().st_size for p in paths),
        "files_detail": files,
    }


def _pdf_pages(path: Path) -> int:
    if path.suffix.lower() != ".pdf":
        return 0
    try:
        import pypdfium2 as pdfium

        pdf = pdfium.PdfDocument(str(path))
        try:
            return len(pdf)
        finally:
            pdf.close()
    except Exception:
        return 0


# -- the benchmark ---------------------------------------------------------------------------


def measure(args, workdir: Path, footprint: Footprint) -> dict:
    if args.corpus:
        folder = Path(args.corpus)
        generated = None
        source = str(folder.resolve())
    else:
        folder = workdir / "corpus"
        log(f"generating the corpus ({args.large_pdf_pages}-page large PDF) in {folder}")
        generated = corpus_mod.generate(folder, args.large_pdf_pages)
        source = "generated (bench.corpus)"
    paths = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if not paths:
        raise SystemExit(f"no files in {folder}")
    warmup = corpus_mod.write_warmup(workdir)
    keys = document_keys(paths)
    large = pick_large_pdf(paths)
    upload_file = pick_upload_file(paths, large)
    key_of = {path: key for key, path in keys.items()}
    corpus_info = describe_corpus(paths, generated, source)
    corpus_info.update(
        {
            "large_pdf": large.name,
            "large_pdf_pages": _pdf_pages(large),
            "upload_file": upload_file.name,
            "warmup_file": f"{warmup.name} (1-page PDF, not part of the corpus)",
        }
    )
    log(
        f"corpus: {corpus_info['files']} files, {corpus_info['format_count']} formats, "
        f"{corpus_info['pdf_pages']} PDF pages, {corpus_info['bytes']:,} bytes"
    )

    env = {**os.environ, **CHILD_ENV, "UD_BATCH_SIZE": str(len(keys) + 1)}
    env.pop("UD_WORKSPACE", None)
    runner = Runner(workdir, env)
    samples: dict[str, list] = {
        "raw": [],
        "graph": [],
        "upload": [],
        "cold": [],
        "ingest": [],
        "embedded": [],
        "fresh": [],
        "ingest_sqlite": [],
        "ingest_s3": [],
    }
    warmup_key = "ud-bench-warmup.pdf"  # its own workspace, and a name no corpus file is likely to have

    # A Cassandra node just started spends about twice the CPU a request until its JIT has
    # compiled the write and read paths: r19, whose `make bench` started the servers, measured
    # 13.1 and 12.1 s of Cassandra CPU over the first two corpus rounds and 7.7 s over the third
    # (r18, on a node already running: 5.0-6.4 s), and the graph 20.1, 19.6 and 16.4 s. A
    # deployment's node runs for months: every timed round should meet a warm one, whether or
    # not the bench started it.
    for warming in range(1, SERVER_WARMUP_RUNS + 1):
        ws_servers = footprint.workspace(f"sw{warming}")
        footprint.upload(ws_servers, keys)
        log(f"servers: the graph over the corpus, not timed, to warm Cassandra ({warming}/{SERVER_WARMUP_RUNS})")
        runner.worker("graph", {"workspace": ws_servers, "bucket": footprint.bucket, "keys": list(keys)}, dagster=True)

    for round_ in range(1, args.repeat + 1):
        suffix = f" (round {round_}/{args.repeat})" if args.repeat > 1 else ""
        log(f"raw: partition() over {len(paths)} files in one warm process{suffix}")
        samples["raw"].append(bare_loop(runner, paths, warmup))

        ws_warm, ws_graph = footprint.workspace(f"gw{round_}"), footprint.workspace(f"g{round_}")
        footprint.upload(ws_warm, {warmup_key: warmup})
        footprint.upload(ws_graph, keys)
        log(f"graph: decode_documents over {len(keys)} partitions, one batched run{suffix}")
        samples["graph"].append(
            runner.worker(
                "graph",
                {
                    "workspace": ws_graph,
                    "bucket": footprint.bucket,
                    "keys": list(keys),
                    "warmup_workspace": ws_warm,
                    "warmup_key": warmup_key,
                },
                dagster=True,
            )
        )
        if args.ingest:
            samples["ingest"].append(run_ingest(args, runner, folder, paths, workdir / f"ingest-{round_}", suffix))
        if args.like_for_like:
            # The graph's side of the peer comparisons: a fresh process and nothing else, as a
            # person runs the job (the timed runs above are warmed up first, the peer is not).
            log(f"graph: decode_documents over {len(keys)} partitions from a fresh process{suffix}")
            samples["fresh"].append(graph_run(runner, footprint, keys, warmup, f"gf{round_}", warm=False))
            log(f"graph: decode_documents over {len(keys)} partitions on the embedded librarian, fresh{suffix}")
            samples["embedded"].append(
                graph_run(runner, footprint, keys, warmup, f"ge{round_}", workdir / f"embedded-{round_}", warm=False)
            )
            if args.ingest:
                for destination in ("sqlite", "s3"):
                    samples[f"ingest_{destination}"].append(
                        run_ingest_to(
                            args,
                            runner,
                            folder,
                            paths,
                            workdir / f"ingest-{destination}-{round_}",
                            destination,
                            footprint.bucket,
                            suffix,
                        )
                    )

        log(f"cold: python -c partition({upload_file.name}){suffix}")
        samples["cold"].append(runner.command("cold_partition", cold_partition_command(str(upload_file))))
        ws_upload = footprint.workspace(f"u{round_}")
        log(f"upload: {upload_file.name} through the librarian_uploads sensor until its triples are queryable{suffix}")
        samples["upload"].append(
            runner.worker(
                "upload",
                {
                    "workspace": ws_upload,
                    "bucket": footprint.bucket,
                    "file": str(upload_file),
                    "key": key_of[upload_file],
                },
                dagster=True,
            )
        )

    small = measure_small(args, workdir, footprint, env) if args.small_docs else None

    ws_large = footprint.workspace("large")
    footprint.upload(ws_large, {key_of[large]: large})
    log(f"memory: graph on {large.name} alone")
    large_graph = runner.worker(
        "graph",
        {"workspace": ws_large, "bucket": footprint.bucket, "keys": [key_of[large]], "warmup_workspace": ""},
        dagster=True,
        poll_memory=True,
    )
    log(f"memory: bare partition() on {large.name}")
    large_bare = runner.command("bare_partition_large_pdf", cold_partition_command(str(large)), poll_memory=True)

    if args.profile:  # an extra run: cProfile slows Python code down, so it is never one of the samples
        profile = str(Path(args.profile).resolve())
        ws_warm, ws_graph = footprint.workspace("pw"), footprint.workspace("p")
        footprint.upload(ws_warm, {warmup_key: warmup})
        footprint.upload(ws_graph, keys)
        log("profile: one more graph run, under cProfile")
        runner.worker(
            "graph",
            {
                "workspace": ws_graph,
                "bucket": footprint.bucket,
                "keys": list(keys),
                "warmup_workspace": ws_warm,
                "warmup_key": warmup_key,
                "profile": profile,
            },
            dagster=True,
        )
        log(f"cProfile stats of the timed graph run written to {profile}")

    ws_triples = footprint.workspace("triples")
    log(f"triples: inserting {args.triples:,} generated quads")
    try:
        triples = runner.worker("triples", {"workspace": ws_triples, "bucket": footprint.bucket, "count": args.triples})
    except RuntimeError:  # Cassandra restarted by someone else's test meanwhile: once more, after it is back
        log("triples: the worker failed; once more in 30 s")
        time.sleep(30)
        triples = runner.worker("triples", {"workspace": ws_triples, "bucket": footprint.bucket, "count": args.triples})

    result = compute(samples, large_graph, large_bare, triples, corpus_info, keys)
    result["like_for_like_corpus"] = like_for_like_side(samples["fresh"], samples["embedded"], samples)
    if small is not None:
        result["figures"].update(small["figures"])
    result["figures"]["like_for_like"] = like_for_like(
        result["like_for_like_corpus"], small["like_for_like"] if small else None
    )
    apart = small.get("like_for_like_servers_apart") if small else None
    result["figures"]["like_for_like"]["services_vs_ingest_s3_servers_apart"] = {
        "small": like_for_like(None, apart)["services_vs_ingest_s3"]["small"]
    }
    result["figures"]["cluster_capacity"] = cluster_capacity(args.cluster_json)
    result["targets"] = report.figures_and_verdicts(result["figures"])
    if small is not None:
        result["small_documents"] = small
    return result


def cluster_capacity(path: Path | None) -> dict | None:
    """The capacity figures of `python -m bench.cluster` (on make cluster-up's deployment, which
    this run does not start), with when they were measured; None when there are none."""
    if path is None or not Path(path).is_file():
        return None
    measured = json.loads(Path(path).read_text())
    return {**measured["cluster_capacity"], "measured": measured.get("date"), "source": str(path)}


def parse_workers(env: dict) -> int:
    """The graph's parses at once in a worker run with env (UD_PARSE_WORKERS, else Limits' default)."""
    from ud_assets.decoding.limits import Limits

    return Limits.from_env(env).workers


def bare_loop(runner: Runner, paths: list[Path], warmup: Path) -> dict:
    """partition() over paths in one warm process, after the warm-up document (workers.run_raw)."""
    return runner.worker("raw", {"files": [str(p) for p in paths], "warmup": str(warmup)})


def graph_run(
    runner: Runner,
    footprint: Footprint,
    keys: dict[str, Path],
    warmup: Path,
    name: str,
    embedded_home: Path | None = None,
    warm: bool = True,
) -> dict:
    """The graph over keys in a fresh worker (after its warm-up run over the warm-up document,
    unless not `warm`: then the run pays its imports as `dagster job execute` does), on MinIO +
    Cassandra (fresh workspaces of footprint) or on the embedded librarian in a fresh folder
    embedded_home; with the CPU MinIO and Cassandra spent meanwhile (servers_cpu_s, /proc)."""
    warmup_key = "ud-bench-warmup.pdf"
    ws_warm, ws = footprint.workspace(f"{name}w") if warm else "", footprint.workspace(name)
    if embedded_home is not None:
        if warm:
            upload_embedded(embedded_home, ws_warm, {warmup_key: warmup})
        upload_embedded(embedded_home, ws, keys)
    else:
        if warm:
            footprint.upload(ws_warm, {warmup_key: warmup})
        footprint.upload(ws, keys)
    servers = cpu_mod.service_pids()
    before = cpu_mod.snapshot(servers)
    sample = runner.worker(
        "graph",
        {
            "workspace": ws,
            "bucket": footprint.bucket,
            "keys": list(keys),
            "warmup_workspace": ws_warm,
            "warmup_key": warmup_key,
            "home": str(embedded_home) if embedded_home is not None else "",
        },
        dagster=True,
        poll_cpu=True,
    )
    sample["servers_cpu_s"] = cpu_mod.delta(before, cpu_mod.snapshot(servers))
    attach_cpu(sample)
    return sample


def attach_cpu(sample: dict) -> None:
    """The graph's own CPU from the tree samples its parent took (bench.cpu.TreeSampler): the
    worker's process tree (the step, the decoding children, reused or not) over the run (cpu_s),
    and per document between consecutive documents' last materializations (document_cpu_s). The
    samples themselves are dropped (thousands per run)."""
    samples = sample["process"].pop("cpu_samples", None)
    own_samples = sample["process"].pop("own_cpu_samples", None)
    run = sample["corpus"]
    if not samples or "clock_started" not in run:
        return
    run["cpu_s"] = cpu_mod.cpu_at(samples, run["clock_done"]) - cpu_mod.cpu_at(samples, run["clock_started"])
    sample["process"]["tree_cpu_s"] = samples[-1][1]  # the whole life: start-up, warm-up run, the run
    ends = run.get("document_ends") or {}
    run["document_cpu_s"] = cpu_mod.interval_cpu(samples, run["step_started"], ends) if run.get("step_started") else {}
    if own_samples and run.get("step_started"):
        # The same intervals, the step process alone (its threads: storage, Dagster's events, the
        # driver's event loop) and the decoding children it forked (the parses): the tree's CPU
        # over bare partition() splits into what the step adds and what the parses cost here.
        step = cpu_mod.interval_cpu(own_samples, run["step_started"], ends)
        run["document_step_cpu_s"] = step
        run["document_parse_cpu_s"] = {d: run["document_cpu_s"][d] - step[d] for d in step}


def run_ingest_to(
    args, runner: Runner, folder: Path, paths: list[Path], run_dir: Path, destination: str, bucket: str, suffix: str
) -> dict:
    """The peer like for like: chunked by_title into its sqlite or s3 destination (bench.ingest.run_to)."""
    workers = parse_workers(runner.env)
    log(f"ingest: unstructured-ingest --chunking-strategy by_title into {destination} over {len(paths)} files{suffix}")
    servers = cpu_mod.service_pids()
    before = cpu_mod.snapshot(servers)
    sample = ingest_mod.run_to(
        runner, args.ingest, folder, [p.name for p in paths], run_dir, workers, destination, bucket
    )
    sample["servers_cpu_s"] = cpu_mod.delta(before, cpu_mod.snapshot(servers))
    log(
        f"ingest ({destination}): {sample['process']['wall_s']:.1f} s, stored {sample['stored']}, "
        f"{len(sample['failures'])} failed (exit {sample['process']['exit_code']})"
    )
    return sample


def run_ingest(args, runner: Runner, folder: Path, paths: list[Path], run_dir: Path, suffix: str) -> dict:
    """The peer over folder, with as many processes as the graph run beside it had parse workers."""
    workers = parse_workers(runner.env)
    log(f"ingest: unstructured-ingest --num-processes {workers} over {len(paths)} files{suffix}")
    sample = ingest_mod.run(runner, args.ingest, folder, [p.name for p in paths], run_dir, workers, args.isolate)
    log(
        f"ingest: {sample['process']['wall_s']:.1f} s, wrote {sample['written']} of {sample['documents']} "
        f"({len(sample['empty'])} without elements), {sample['failed']} failed (exit {sample['process']['exit_code']})"
    )
    return sample


def measure_small(args, workdir: Path, footprint: Footprint, env: dict) -> dict:
    """Many small ordinary documents: the graph's fixed cost per document, which a library pays.

    Each round: the bare partition() loop; the graph with one parse worker (nothing hidden by
    parallelism) and with the default workers, each in a fresh worker over a fresh workspace, on
    MinIO + Cassandra and on the embedded librarian (with --like-for-like); then
    unstructured-ingest with as many processes as the default workers: into JSON files, and
    (--like-for-like) chunked into its sqlite and s3 destinations."""
    folder = workdir / "small"
    log(f"small documents: generating {args.small_docs} (every format, 1-3 pages or screens each)")
    generated = corpus_mod.generate_small(folder, args.small_docs)
    paths = sorted(folder.iterdir())
    keys = document_keys(paths)
    warmup = corpus_mod.write_warmup(workdir)
    small_env = {**env, "UD_BATCH_SIZE": str(len(keys) + 1)}
    runners = {
        "1worker": Runner(workdir, {**small_env, "UD_PARSE_WORKERS": "1"}),
        "default": Runner(workdir, {k: v for k, v in small_env.items() if k != "UD_PARSE_WORKERS"}),
    }
    # One document parsed and one stored at a time: documents end one after another, so the CPU
    # between two ends is one document's (with 4 stored at once, ends bunch up and an interval holds
    # several documents' CPU, or none). For cpu_per_document_ms only.
    sequential = Runner(workdir, {**small_env, "UD_PARSE_WORKERS": "1", "UD_STORE_WORKERS": "1"})
    samples: dict[str, list] = {
        "raw": [],
        "1worker": [],
        "default": [],
        "ingest": [],
        "embedded_1worker": [],
        "embedded_default": [],
        "ingest_sqlite": [],
        "ingest_s3": [],
        "sequential": [],
        "sequential_embedded": [],
        "fresh": [],
        "embedded_fresh": [],
        "apart": [],
        "apart_s3": [],
        "raw_beside_1worker": [],
        "raw_beside_default": [],
    }
    for round_ in range(1, args.repeat + 1):
        suffix = f" (round {round_}/{args.repeat})" if args.repeat > 1 else ""
        log(f"small documents: partition() over {len(paths)} files in one warm process{suffix}")
        samples["raw"].append(bare_loop(runners["default"], paths, warmup))
        log(f"small documents: the graph, one document parsed and one stored at a time (CPU per document){suffix}")
        samples["sequential"].append(graph_run(sequential, footprint, keys, warmup, f"sq{round_}"))
        if args.like_for_like:
            # The same on the embedded librarian: no server's threads share the cores or preempt
            # the parse, and no Cassandra or S3 client runs in the step.
            log(f"small documents: the same on the embedded librarian (CPU per document){suffix}")
            home = workdir / f"small-embedded-sequential-{round_}"
            samples["sequential_embedded"].append(graph_run(sequential, footprint, keys, warmup, f"qe{round_}", home))
        if args.like_for_like:
            # The peer comparison's side: fresh processes with nothing run before (as measure()'s).
            log(f"small documents: the graph from a fresh process, MinIO + Cassandra and embedded{suffix}")
            samples["fresh"].append(graph_run(runners["default"], footprint, keys, warmup, f"sf{round_}", warm=False))
            home = workdir / f"small-embedded-fresh-{round_}"
            samples["embedded_fresh"].append(
                graph_run(runners["default"], footprint, keys, warmup, f"ef{round_}", home, warm=False)
            )
            if args.ingest:
                # The same pair with Cassandra and MinIO on a core of their own and both pipelines
                # on the other, as a deployment's servers run on machines of their own: what the
                # pipelines cost, without the servers' share of two cores.
                with cpu_mod.servers_apart(cpu_mod.service_pids()) as apart:
                    if apart:
                        log(f"small documents: the graph and the peer into s3, servers on a core of their own{suffix}")
                        samples["apart"].append(
                            graph_run(runners["default"], footprint, keys, warmup, f"sa{round_}", warm=False)
                        )
                        samples["apart_s3"].append(
                            run_ingest_to(
                                args,
                                runners["default"],
                                folder,
                                paths,
                                workdir / f"small-ingest-apart-{round_}",
                                "s3",
                                footprint.bucket,
                                suffix,
                            )
                        )
        for name, runner in runners.items():
            log(f"small documents: the graph over {len(keys)} partitions, parse workers {name}{suffix}")
            samples[name].append(graph_run(runner, footprint, keys, warmup, f"s{name[0]}{round_}"))
            if args.like_for_like:
                # The bare loop again right before the embedded run it is compared with: the bare
                # loop's own time moves by a fifth between rounds here, more than the margin the
                # embedded targets measure, so each run is divided by the bare loop beside it.
                log(f"small documents: partition() over {len(paths)} files, beside the embedded run{suffix}")
                samples[f"raw_beside_{name}"].append(bare_loop(runners["default"], paths, warmup))
                log(f"small documents: the graph on the embedded librarian, parse workers {name}{suffix}")
                home = workdir / f"small-embedded-{name}-{round_}"
                samples[f"embedded_{name}"].append(
                    graph_run(runner, footprint, keys, warmup, f"e{name[0]}{round_}", home)
                )
        if args.ingest:
            samples["ingest"].append(
                run_ingest(args, runners["default"], folder, paths, workdir / f"small-ingest-{round_}", suffix)
            )
            if args.like_for_like:
                for destination in ("sqlite", "s3"):
                    samples[f"ingest_{destination}"].append(
                        run_ingest_to(
                            args,
                            runners["default"],
                            folder,
                            paths,
                            workdir / f"small-ingest-{destination}-{round_}",
                            destination,
                            footprint.bucket,
                            suffix,
                        )
                    )
    return compute_small(samples, keys, generated)


def compute_small(samples: dict, keys: dict, generated: list[dict]) -> dict:
    name_to_key = {path.name: key for key, path in keys.items()}
    raw_file_s = {name_to_key.get(e["file"], e["file"]): e["s"] for e in samples["raw"][-1]["files"]}
    overheads = report.overheads_ms(samples["1worker"][-1]["corpus"]["document_s"], raw_file_s)
    graph_runs = ("1worker", "default")
    undecoded = {name: {k: v for s in samples[name] for k, v in s["corpus"]["failures"].items()} for name in graph_runs}
    ingest = ingest_mod.summary(samples["ingest"]) if samples.get("ingest") else None
    # From the worker's launch to the run's end, as graph_total_s: the graph's side of the peer comparison.
    small_total = [s["corpus"]["done_at"] - s["process"]["launched_at"] for s in samples["default"]]
    figures = {
        "small_documents": len(keys),
        "small_raw_warm_s": report.median([s["loop_s"] for s in samples["raw"]]),
        "small_graph_1worker_s": report.median([s["corpus"]["run_s"] for s in samples["1worker"]]),
        "small_graph_s": report.median([s["corpus"]["run_s"] for s in samples["default"]]),
        "small_overhead_median_ms": report.median(list(overheads)),
        "small_overhead_p95_ms": report.percentile(overheads, 0.95),
        # A document's own time overlaps the others' (several are stored at once), so it is its
        # latency; what a library pays per document is the extra wall time spread over them.
        "small_overhead_amortized_ms": report.amortized_ms(
            report.median([s["corpus"]["run_s"] for s in samples["1worker"]]),
            report.median([s["loop_s"] for s in samples["raw"]]),
            len(keys),
        ),
        "small_graph_total_s": report.median(small_total),
        "small_graph_fresh_total_s": report.median([fresh_total_s(s) for s in samples.get("fresh", [])]),
        "small_ingest_s": ingest["ingest_s"] if ingest else None,
        "small_ingest_written": ingest["written"] if ingest else None,
        "small_ingest_empty": ingest["empty"] if ingest else None,
        "small_ingest_failed": ingest["failed"] if ingest else None,
    }
    figures["cpu_per_document_ms"] = cpu_per_document(samples, name_to_key)
    figures["embedded_small"] = embedded_small(samples, raw_file_s, len(keys))
    figures["parse_workers"] = parse_workers_figures(samples)
    side = like_for_like_side(samples.get("fresh", []), samples.get("embedded_fresh", []), samples)
    apart = like_for_like_side(samples.get("apart", []), [], {"ingest_s3": samples.get("apart_s3", [])})
    return {
        "figures": figures,
        "like_for_like": side,
        "like_for_like_servers_apart": apart,
        # The same figures under the names issue #15 gives them, for this corpus of small documents.
        **issue_names(figures),
        "failures": undecoded,
        "formats": sorted({f["format"] for f in generated}),
        "bytes": sum(f["bytes"] for f in generated),
        "overheads_ms": overheads,
        "graph_breakdown_s": report.breakdown(
            samples["1worker"][-1]["corpus"].get("stage_timings", {}),
            samples["1worker"][-1]["corpus"].get("document_s", {}),
            samples["1worker"][-1]["corpus"]["run_s"],
            samples["1worker"][-1]["corpus"].get("parse_wait_s", {}),
        ),
        "ingest": ingest,
        "samples": {
            "raw": [s["loop_s"] for s in samples["raw"]],
            **{name: [s["corpus"]["run_s"] for s in samples[name]] for name in graph_runs},
            "default_total": small_total,
            "ingest": [s["process"]["wall_s"] for s in samples.get("ingest", [])],
            # each round's embedded runs and the bare loops run just before them (embedded_small)
            **{
                name: [s["corpus"]["run_s"] for s in samples.get(name, [])]
                for name in ("embedded_1worker", "embedded_default")
            },
            **{
                name: [s["loop_s"] for s in samples.get(name, [])]
                for name in ("raw_beside_1worker", "raw_beside_default")
            },
        },
        "ingest_runs": samples.get("ingest", []),
    }


def fresh_total_s(sample: dict) -> float:
    """A graph worker's wall time from its launch to its run's end (graph_total_s's definition)."""
    return sample["corpus"]["done_at"] - sample["process"]["launched_at"]


def like_for_like_side(services: list[dict], embedded: list[dict], samples: dict) -> dict:
    """Fresh-process wall times and what was stored, for the graph on each librarian and the peer
    into each destination (medians of the rounds; stored: the last round's)."""

    def graph(runs):
        if not runs:
            return None
        return {
            "wall_s": report.median([fresh_total_s(s) for s in runs]),
            "cpu_s": report.median([s["process"].get("tree_cpu_s", s["process"].get("cpu_s")) for s in runs]),
            "servers_cpu_s": {
                part: report.median([s.get("servers_cpu_s", {}).get(part) for s in runs])
                for part in runs[-1].get("servers_cpu_s", {})
            },
            "stored": runs[-1]["corpus"].get("stored"),
        }

    def peer(runs):
        useful = [s for s in runs if s["stored"].get("documents")]
        if not useful:
            return None
        return {
            "wall_s": report.median([s["process"]["wall_s"] for s in useful]),
            "cpu_s": report.median([s["process"]["cpu_s"] for s in useful]),
            "servers_cpu_s": {
                part: report.median([s.get("servers_cpu_s", {}).get(part) for s in useful])
                for part in useful[-1].get("servers_cpu_s", {})
            },
            "stored": useful[-1]["stored"],
            "failed": len(useful[-1]["failures"]),
        }

    return {
        "graph_embedded": graph(embedded),
        "graph_services": graph(services),
        "ingest_sqlite": peer(samples.get("ingest_sqlite", [])),
        "ingest_s3": peer(samples.get("ingest_s3", [])),
    }


def like_for_like(corpus: dict | None, small: dict | None) -> dict:
    """The issue's like_for_like figures: graph / peer, fresh-process wall times."""

    def pair(side, graph, peer):
        if not side or not side.get(graph) or not side.get(peer):
            return None
        return report.ratio(side[graph]["wall_s"], side[peer]["wall_s"])

    return {
        "embedded_vs_ingest_sqlite": {
            "corpus": pair(corpus, "graph_embedded", "ingest_sqlite"),
            "small": pair(small, "graph_embedded", "ingest_sqlite"),
        },
        "services_vs_ingest_s3": {
            "corpus": pair(corpus, "graph_services", "ingest_s3"),
            "small": pair(small, "graph_services", "ingest_s3"),
        },
    }


def per_document_medians(runs: list[dict]) -> dict[str, float]:
    """{document: median over the rounds of its CPU-seconds}."""
    documents = sorted({d for run in runs for d in run})
    values = {d: report.median([run.get(d) for run in runs]) for d in documents}
    return {d: v for d, v in values.items() if v is not None}


def cpu_per_document(samples: dict, name_to_key: dict) -> dict:
    """CPU-milliseconds per small document (/proc): the graph's own process tree on MinIO +
    Cassandra, one document parsed and one stored at a time, document by document (else with one
    parse worker); bare partition() per file; Cassandra's JVM and MinIO over the same graph run,
    per document and per quad (medians of the rounds); graph_mean: the run's CPU over its
    documents with one parse worker and the default store workers; graph_embedded_*: the same
    sequential measurement on the embedded librarian."""
    runs = samples.get("sequential") or samples["1worker"]
    embedded_runs = samples.get("sequential_embedded") or []
    graph = per_document_medians([s["corpus"].get("document_cpu_s", {}) for s in runs])
    bare = per_document_medians(
        [{name_to_key.get(f["file"], f["file"]): f.get("cpu_s") for f in s["files"]} for s in samples["raw"]]
    )
    graph_ms = [1000 * v for v in graph.values()]
    bare_ms = [1000 * v for v in bare.values()]

    def server(part: str, per: str) -> float | None:
        values = []
        for s in runs:
            # the run's own window when the worker read it (not its warm-up run, nor the counts after)
            spent = (s["corpus"].get("servers_cpu_s") or s.get("servers_cpu_s", {})).get(part)
            count = s["corpus"].get("documents") if per == "document" else s["corpus"].get("triples")
            values.append(1000 * spent / count if spent is not None and count else None)
        return report.median(values)

    def per_document_ms(key: str, of: list[dict] = runs) -> list[float]:
        return [1000 * v for v in per_document_medians([s["corpus"].get(key, {}) for s in of]).values()]

    def median_ms(key: str, of: list[dict] = runs) -> float | None:
        values = per_document_ms(key, of)
        return report.median(values) if values else None

    def p95_ms(key: str, of: list[dict] = runs) -> float | None:
        values = per_document_ms(key, of)
        return report.percentile(values, 0.95) if values else None

    def mean_ms(key: str, of: list[dict] = runs) -> float | None:
        # /proc counts 10 ms ticks: a document's share is coarse, the mean over documents is not
        values = per_document_ms(key, of)
        return sum(values) / len(values) if values else None

    out = {
        "graph_median": report.median(graph_ms),
        "graph_p95": report.percentile(graph_ms, 0.95),
        "bare_median": report.median(bare_ms),
        "bare_p95": report.percentile(bare_ms, 0.95),
        "cassandra_median": server("cassandra", "document"),
        "minio_median": server("minio", "document"),
        "cassandra_per_quad": server("cassandra", "quad"),
        "minio_per_quad": server("minio", "quad"),
        "graph_per_quad": report.median(
            [1000 * s["corpus"]["cpu_s"] / s["corpus"]["triples"] for s in runs if s["corpus"].get("triples")]
        ),
        # the whole run's CPU (Dagster's run start and end included) over its documents
        "graph_mean": report.median(
            [
                1000 * s["corpus"]["cpu_s"] / s["corpus"]["documents"]
                for s in samples["1worker"]
                if "cpu_s" in s["corpus"]
            ]
        ),
        # the same with the default workers: documents stored side by side and their triples
        # written together on Cassandra, which the sequential figures never see
        "graph_default_mean": report.median(
            [
                1000 * s["corpus"]["cpu_s"] / s["corpus"]["documents"]
                for s in samples.get("default", [])
                if "cpu_s" in s["corpus"]
            ]
        ),
        "graph_sequential_mean": report.median(
            [1000 * s["corpus"]["cpu_s"] / s["corpus"]["documents"] for s in runs if "cpu_s" in s["corpus"]]
        ),
        "bare_mean": report.median(
            [1000 * s["loop_cpu_s"] / len(s["files"]) for s in samples["raw"] if "loop_cpu_s" in s]
        ),
        # the graph's tree split in two: the step process alone, and its decoding children
        "graph_step_median": median_ms("document_step_cpu_s"),
        "graph_parse_median": median_ms("document_parse_cpu_s"),
        "graph_step_mean": mean_ms("document_step_cpu_s"),
        "graph_parse_mean": mean_ms("document_parse_cpu_s"),
        # The same measurement on the embedded librarian (one parsed and one stored at a time too):
        # what the graph costs where no server shares the cores and no database client runs.
        "graph_embedded_median": median_ms("document_cpu_s", embedded_runs),
        "graph_embedded_p95": p95_ms("document_cpu_s", embedded_runs),
        "graph_embedded_step_median": median_ms("document_step_cpu_s", embedded_runs),
        "graph_embedded_parse_median": median_ms("document_parse_cpu_s", embedded_runs),
        "graph_embedded_step_mean": mean_ms("document_step_cpu_s", embedded_runs),
        "graph_embedded_parse_mean": mean_ms("document_parse_cpu_s", embedded_runs),
    }
    for graph_key, bare_key, key in (
        ("graph_median", "bare_median", "graph_over_bare_median"),
        ("graph_p95", "bare_p95", "graph_over_bare_p95"),
        ("graph_embedded_median", "bare_median", "graph_embedded_over_bare_median"),
        ("graph_embedded_p95", "bare_p95", "graph_embedded_over_bare_p95"),
        ("graph_default_mean", "bare_mean", "graph_default_over_bare_mean"),
    ):
        out[key] = out[graph_key] - out[bare_key] if None not in (out[graph_key], out[bare_key]) else None
    return out


def paired_ratio(runs: list[dict], beside: list[dict]) -> float | None:
    """The median over rounds of each graph run's wall time over the bare loop's run just before
    it (None unless every run has its bare loop)."""
    if not runs or len(beside) != len(runs):
        return None
    return report.median([report.ratio(g["corpus"]["run_s"], b["loop_s"]) for g, b in zip(runs, beside, strict=True)])


def embedded_small(samples: dict, raw_file_s: dict[str, float], documents: int) -> dict:
    """The embedded default (files + SQLite, no server sharing the cores) on the small documents.

    Each run is compared with the bare loop run just before it (paired_ratio) when the bench ran
    one; the ratio of the medians over the round's first bare loop is kept beside it (_unpaired)."""
    one, default = samples.get("embedded_1worker", []), samples.get("embedded_default", [])
    raw = report.median([s["loop_s"] for s in samples["raw"]])
    overheads = report.overheads_ms(one[-1]["corpus"]["document_s"], raw_file_s) if one else []
    one_unpaired = report.ratio(report.median([s["corpus"]["run_s"] for s in one]), raw) if one else None
    default_unpaired = report.ratio(report.median([s["corpus"]["run_s"] for s in default]), raw) if default else None
    one_paired = paired_ratio(one, samples.get("raw_beside_1worker", []))
    default_paired = paired_ratio(default, samples.get("raw_beside_default", []))
    return {
        "one_worker_vs_raw": one_paired if one_paired is not None else one_unpaired,
        "default_workers_vs_raw": default_paired if default_paired is not None else default_unpaired,
        "one_worker_vs_raw_unpaired": one_unpaired,
        "default_workers_vs_raw_unpaired": default_unpaired,
        "raw_beside_s": {
            name: report.median([s["loop_s"] for s in samples.get(f"raw_beside_{name}", [])])
            for name in ("1worker", "default")
        },
        "overhead_median_ms": report.median(overheads) if overheads else None,
        "overhead_p95_ms": report.percentile(overheads, 0.95) if overheads else None,
        "one_worker_s": report.median([s["corpus"]["run_s"] for s in one]) if one else None,
        "default_workers_s": report.median([s["corpus"]["run_s"] for s in default]) if default else None,
        "raw_warm_s": raw,
        "documents": documents,
    }


def parse_workers_figures(samples: dict) -> dict:
    """One parse worker against the default on each librarian: wall and CPU of the run (medians)."""
    out = {}
    for librarian, prefix in (("services", ""), ("embedded", "embedded_")):
        one, default = samples.get(f"{prefix}1worker", []), samples.get(f"{prefix}default", [])
        if not one or not default:
            continue
        out[librarian] = {
            "one_worker_s": report.median([s["corpus"]["run_s"] for s in one]),
            "default_workers_s": report.median([s["corpus"]["run_s"] for s in default]),
            "one_worker_cpu_s": report.median([s["corpus"].get("cpu_s") for s in one]),
            "default_workers_cpu_s": report.median([s["corpus"].get("cpu_s") for s in default]),
            "default_vs_one": report.ratio(
                report.median([s["corpus"]["run_s"] for s in default]),
                report.median([s["corpus"]["run_s"] for s in one]),
            ),
            "others_cpu_s_one": report.median([s["process"].get("others_cpu_s") for s in one]),
            "others_cpu_s_default": report.median([s["process"].get("others_cpu_s") for s in default]),
        }
    return out


def issue_names(small: dict) -> dict:
    """The small documents' figures named as the issue that set their targets names them."""
    return {
        "raw_warm_s": small["small_raw_warm_s"],
        "graph_s": small["small_graph_s"],
        "graph_single_worker_s": small["small_graph_1worker_s"],
        "graph_total_s": small["small_graph_total_s"],
        "graph_fresh_total_s": small.get("small_graph_fresh_total_s"),
        "ingest_s": small["small_ingest_s"],
        "per_document_overhead_ms": {
            "median": small["small_overhead_median_ms"],
            "p95": small["small_overhead_p95_ms"],
        },
    }


def compute(samples: dict, large_graph: dict, large_bare: dict, triples: dict, corpus_info: dict, keys: dict) -> dict:
    raw_warm = [s["loop_s"] for s in samples["raw"]]
    raw_total = [s["done_at"] - s["process"]["launched_at"] for s in samples["raw"]]
    graph_warm = [s["corpus"]["run_s"] for s in samples["graph"]]
    graph_total = [s["corpus"]["done_at"] - s["process"]["launched_at"] for s in samples["graph"]]
    upload = [s["done_at"] - s["process"]["launched_at"] for s in samples["upload"]]
    cold = [s["process"]["wall_s"] for s in samples["cold"]]
    ingest_runs = samples.get("ingest", [])
    ingest = ingest_mod.summary(ingest_runs) if ingest_runs else None
    figures = {
        "raw_warm_s": report.median(raw_warm),
        "graph_s": report.median(graph_warm),
        "raw_total_s": report.median(raw_total),
        "graph_total_s": report.median(graph_total),
        # The peer comparison's side (#15's graph_vs_ingest): a fresh worker that runs nothing
        # before the job, as the peer and a person's `dagster job execute` do (graph_total_s's
        # worker first runs the job over the warm-up document).
        "graph_fresh_total_s": report.median([fresh_total_s(s) for s in samples.get("fresh", [])]),
        "upload_to_triples_s": report.median(upload),
        "cold_partition_s": report.median(cold),
        "graph_peak_rss_mb": max(s["process"]["peak_rss_mb"] for s in samples["graph"]),
        "raw_peak_rss_mb": max(s["process"]["peak_rss_mb"] for s in samples["raw"]),
        "large_pdf_graph_peak_rss_mb": large_graph["process"]["peak_rss_mb"],
        "large_pdf_bare_peak_rss_mb": large_bare["process"]["peak_rss_mb"],
        "large_pdf_graph_tree_pss_mb": large_graph["process"].get("tree_peak_pss_mb"),
        "large_pdf_bare_tree_pss_mb": large_bare["process"].get("tree_peak_pss_mb"),
        "large_pdf_graph_processes": large_graph["process"].get("tree_max_processes"),
        "large_pdf_graph_s": large_graph["corpus"]["run_s"],
        "triples_per_s": report.rate(triples["quads"], triples["insert_s"]),
        "triples_inserted": triples["quads"],
        "triples_insert_s": triples["insert_s"],
        "ingest_s": ingest["ingest_s"] if ingest else None,
        "ingest_peak_rss_mb": ingest["peak_rss_mb"] if ingest else None,
        "ingest_written": ingest["written"] if ingest else None,
        "ingest_empty": ingest["empty"] if ingest else None,
        "ingest_failed": ingest["failed"] if ingest else None,
    }
    figures["graph_vs_raw_including_startup"] = report.ratio(figures["graph_total_s"], figures["raw_total_s"])
    figures["large_pdf_pss_ratio"] = report.ratio(
        figures["large_pdf_graph_tree_pss_mb"], figures["large_pdf_bare_tree_pss_mb"]
    )
    verdicts = report.figures_and_verdicts(figures)

    last = samples["graph"][-1]["corpus"]
    graph_breakdown = report.breakdown(
        last.get("stage_timings", {}), last.get("document_s", {}), last["run_s"], last.get("parse_wait_s", {})
    )
    large_run = large_graph["corpus"]
    large_breakdown = report.breakdown(
        large_run.get("stage_timings", {}),
        large_run.get("document_s", {}),
        large_run["run_s"],
        large_run.get("parse_wait_s", {}),
    )
    graph_docs = last["document_s"]
    name_to_key = {path.name: key for key, path in keys.items()}
    per_file = []
    for entry in samples["raw"][-1]["files"]:
        graph_s = graph_docs.get(name_to_key.get(entry["file"], entry["file"]))
        per_file.append(
            {
                "file": entry["file"],
                "raw_s": entry["s"],
                "graph_document_s": graph_s,
                "ratio": report.ratio(graph_s, entry["s"]),
            }
        )

    notes = [
        "graph_s and raw_warm_s both exclude process start-up and one warm-up call on the same 1-page PDF "
        "(the graph's warm-up is a run over that document in a throwaway workspace, which also imports "
        "unstructured's per-format partitioners; the raw warm-up imports the same modules); the target compares these. "
        "graph_total_s and raw_total_s include interpreter start-up, imports and the warm-up.",
        "graph_s covers the run from the job's launch (execute_in_process) until it returned, i.e. every "
        "triple written and checked; uploading the documents to the librarian happens before and is not timed.",
        "upload_to_triples_s runs from the fresh process's launch until the document's triples answered a query "
        "(includes importing Dagster, the librarian connection, add_document, the sensor tick and the run); "
        "cold_partition_s runs from launch to exit of `python -c` (import + one partition call).",
        "Peak RSS is ru_maxrss of each child from os.wait4: the largest resident set of the child or of any "
        "process it forked and waited for (the decoder forks one child per document, whose RSS includes the "
        "pages it shares with its parent). The large-PDF runs also poll the whole process tree every 0.1 s: "
        "'tree PSS' is the peak of its summed proportional set size, i.e. memory the tree really used, "
        "shared pages counted once (a sampled peak, so a slight underestimate).",
        "The raw loop partitions e-mails with process_attachments=False: unstructured's fast strategy refuses "
        "their image attachments (the graph splits them off, decodes text attachments and stores images).",
        "The graph decodes with strategy 'auto' (text PDFs run 'fast'), like a real run; the raw loop with 'fast'.",
    ]
    if ingest:
        notes.append(
            f"ingest_s: `unstructured-ingest local --strategy fast --num-processes {ingest['workers']}` "
            "(as many processes as the graph's parse workers) over the corpus folder, from launch to exit, in its "
            "own virtual environment, offline"
            + (" (in a network namespace without network)" if ingest["network_isolated"] else "")
            + "; it writes one JSON of elements per document and no more (no librarian, sections, chunks or "
            "triples). graph_vs_ingest compares it with graph_total_s (launch to the run's end). E-mails: it "
            "partitions them with their attachments, which the fast strategy refuses (an empty output)."
        )
        if ingest["failed"]:
            notes.append(
                f"unstructured-ingest wrote nothing for {ingest['failed']} of {ingest['documents']} documents: "
                f"{json.dumps(ingest['failures'])[:500]}"
            )
    for number, sample in enumerate(samples["graph"], start=1):
        run = sample["corpus"]
        if not run.get("success", True) or run.get("decoded", run.get("documents")) != run.get("documents"):
            notes.append(
                f"graph round {number}: {run.get('decoded')} of {run.get('documents')} documents decoded; "
                f"failures: {json.dumps(run.get('failures', {}))[:500]}"
            )
    for number, sample in enumerate(samples["upload"], start=1):
        if not sample.get("document_triples"):
            notes.append(f"upload round {number}: the document's triples never became queryable (60 s)")
    # The processes that use no server (raw loop, python -c) show what else ran on the machine.
    local = [s["process"] for name in ("raw", "cold") for s in samples[name]] + [large_bare["process"]]
    busiest = max((report.ratio(p.get("others_cpu_s"), p["wall_s"]) or 0.0 for p in local), default=0.0)
    if busiest > BUSY_CORES:
        notes.append(
            f"Other processes used up to {busiest:.2f} of the {os.cpu_count()} CPUs while the bare-library "
            "measurements ran (others_cpu_s / wall_s): the figures are noisier than on an idle machine; "
            "compare the rounds (--repeat N) in 'samples'."
        )
    spreads = {
        name: report.spread(values)
        for name, values in (
            ("raw_warm_s", raw_warm),
            ("graph_s", graph_warm),
            ("upload_to_triples_s", upload),
            ("cold_partition_s", cold),
            ("ingest_s", [s["process"]["wall_s"] for s in ingest_runs]),
        )
    }
    return {
        "figures": figures,
        "targets": verdicts,
        "per_file": per_file,
        "graph_breakdown_s": graph_breakdown,
        "large_pdf_graph_breakdown_s": large_breakdown,
        "corpus": corpus_info,
        "samples": {
            "raw_warm_s": raw_warm,
            "raw_total_s": raw_total,
            "graph_s": graph_warm,
            "graph_total_s": graph_total,
            "upload_to_triples_s": upload,
            "cold_partition_s": cold,
            "ingest_s": [s["process"]["wall_s"] for s in ingest_runs],
            "spread": spreads,
        },
        "ingest": ingest,
        "details": {
            "raw": samples["raw"],
            "graph": samples["graph"],
            "upload": samples["upload"],
            "cold": samples["cold"],
            "large_pdf_graph": large_graph,
            "large_pdf_bare": large_bare,
            "triples": triples,
            "ingest": ingest_runs,
        },
        "notes": notes,
    }


def environment() -> dict:
    def v(name):
        try:
            return version(name)
        except Exception:
            return None

    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "unstructured": v("unstructured"),
        "dagster": v("dagster"),
        "cassandra_driver": v("cassandra-driver"),
        "loadavg_at_start": os.getloadavg(),
    }


def check_services() -> None:
    missing = [n for n in ("CASSANDRA_HOST", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") if not os.environ.get(n)]
    if not (os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")):
        missing.append("AWS_ENDPOINT_URL_S3")
    if missing:
        raise SystemExit(
            f"bench needs the real MinIO + Cassandra: {', '.join(missing)} not set; "
            'run `make bench`, or: scripts/services/up.sh && eval "$(scripts/services/env.sh)"'
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", help="a folder of documents (default: generate one of every supported format)")
    parser.add_argument("--out", default="bench-out/bench.json", help="where to write the JSON figures")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the timed measurements; medians are reported")
    parser.add_argument(
        "--large-pdf-pages",
        type=int,
        default=corpus_mod.DEFAULT_LARGE_PDF_PAGES,
        help="pages of the generated large PDF",
    )
    parser.add_argument("--triples", type=int, default=50_000, help="quads of the triple-store measurement")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="also run the graph once more under cProfile (not a sample) and write its stats to FILE",
    )
    parser.add_argument(
        "--small-docs",
        type=int,
        default=corpus_mod.SMALL_CORPUS_SIZE,
        help="also measure a generated corpus of this many small documents (0: skip)",
    )
    parser.add_argument(
        "--no-ingest", action="store_true", help="skip the peer, unstructured-ingest (needs make bench-setup)"
    )
    parser.add_argument(
        "--ingest-venv",
        type=Path,
        default=ingest_mod.INGEST_VENV,
        help="the peer's virtual environment (default: .venv-ingest, built by make bench-setup)",
    )
    parser.add_argument("--keep-workdir", action="store_true", help="keep the temp folder (corpus, child logs)")
    parser.add_argument(
        "--cluster-json",
        type=Path,
        default=Path("bench-out/cluster.json"),
        help="figures of python -m bench.cluster to report as cluster_capacity (when the file exists)",
    )
    parser.add_argument(
        "--no-like-for-like",
        dest="like_for_like",
        action="store_false",
        help="skip the graph on the embedded librarian and the peer's sqlite and s3 destinations (issue #28)",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.triples < 2:
        parser.error("--repeat must be >= 1 and --triples >= 2")
    args.ingest, args.isolate = None, []
    if not args.no_ingest:
        missing = ingest_mod.missing_message(args.ingest_venv)
        if missing:
            raise SystemExit(f"bench: {missing}")
        args.ingest = ingest_mod.executable(args.ingest_venv)
        args.isolate = ingest_mod.network_isolation()
    check_services()

    env_info = environment()
    if args.ingest:
        env_info["peer"] = {**ingest_mod.versions(args.ingest_venv), "network_isolated": bool(args.isolate)}
    workdir = Path(tempfile.mkdtemp(prefix="udbench-"))
    footprint = Footprint()
    log(f"bucket {footprint.bucket}, workspaces udbench_{footprint.tag}_*, work folder {workdir}")
    started = time.monotonic()
    failed = True
    try:
        result = measure(args, workdir, footprint)
        failed = False
    finally:
        left = footprint.cleanup()
        if left:
            log(
                f"cleanup left {len(left)} things behind (bucket {footprint.bucket}, workspaces "
                f"{', '.join(footprint.workspaces)}): {left[:3]}"
            )
        else:
            log(f"removed bucket {footprint.bucket} and {len(footprint.workspaces)} workspaces")
        if args.keep_workdir or failed:
            log(f"kept {workdir} (children's output: {workdir / 'children.log'})")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    env_info["loadavg_at_end"] = os.getloadavg()
    env_info["bench_wall_s"] = round(time.monotonic() - started, 1)
    out = {**env_info, **result, "repeat": args.repeat}

    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=2, default=str) + "\n")
    rows = report.table_rows(result["figures"], result["targets"])
    markdown_path = out_path.with_suffix(".md")
    c = result["corpus"]
    peer = env_info.get("peer")
    peer_text = f", peer: unstructured-ingest {peer['unstructured-ingest']}" if peer else ", peer not measured"
    markdown_path.write_text(
        f"Measured {env_info['date'][:10]} on {env_info['cpu_count']} CPUs (Python {env_info['python']}, unstructured "
        f"{env_info['unstructured']}, Dagster {env_info['dagster']}), corpus: {c['files']} files of {c['format_count']} "
        f"formats, {c['pdf_pages']} PDF pages{peer_text}; medians of {args.repeat} round(s).\n\n"
        + report.markdown_table(rows)
        + "\n"
    )
    print()
    print(
        f"ud bench, {env_info['date']}: {env_info['cpu_count']} CPUs, Python {env_info['python']}, "
        f"unstructured {env_info['unstructured']}, dagster {env_info['dagster']}{peer_text}"
    )
    c = result["corpus"]
    print(
        f"corpus: {c['files']} files, {c['format_count']} formats, {c['pdf_pages']} PDF pages "
        f"(large PDF {c['large_pdf']}: {c['large_pdf_pages']} pages; upload {c['upload_file']})"
    )
    print()
    print(report.format_table(rows))
    print()
    run_s = result["figures"]["graph_s"] or 0.0
    print(
        f"where the graph's time went (last timed run, {result['details']['graph'][-1]['corpus']['run_s']:.1f} s; "
        f"bare partition loop {result['figures']['raw_warm_s']:.1f} s):"
    )
    print(
        report.format_breakdown(result["graph_breakdown_s"], result["details"]["graph"][-1]["corpus"]["run_s"] or run_s)
    )
    print()
    print(f"figures written to {out_path} (Markdown table: {markdown_path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
