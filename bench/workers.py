"""The benchmark's measured processes: `python -m bench.workers KIND --args JSON --result FILE`.

Each kind runs in a fresh interpreter started by bench.run (bench.processes.Runner), which times it
from launch (time.monotonic() is system-wide, so the parent's launch time and the child's timestamps
share a clock) and reads its peak RSS from os.wait4. Each writes one JSON object to FILE.

    raw      unstructured's partition(filename=F, strategy="fast") over every file in one process,
             after one warm-up call (and importing the per-format partitioners, as the graph's
             warm-up does): the library's floor.
    graph    the decode_documents job over a partition range, in-process executor, against the real
             librarian: first over the warm-up document alone (the graph's warm-up call), then over
             the corpus in a fresh workspace (timed); "warmup_workspace" = "" skips the warm-up;
             "profile" = a path runs the timed run under cProfile and writes its stats there.
    upload   one new upload through the sensor path until its triples are queryable.
    triples  insert generated quads with the project's Cassandra triple store.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

STARTED = time.monotonic()  # as early as this module can take it (after the interpreter's own start-up)


def peak_rss_mb() -> float:
    """This process's own peak resident set (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- raw -------------------------------------------------------------------------------------


def raw_kwargs(path: str) -> dict:
    """Extra arguments the bare library needs for a file to be partitionable at all.

    unstructured's e-mail partitioner sends an image attachment to partition_image, which refuses
    strategy="fast"; the graph splits attachments off first (it decodes the text ones and stores the
    images). The bare loop therefore skips attachments of e-mails.
    """
    return {"process_attachments": False} if path.lower().endswith((".eml", ".msg")) else {}


# unstructured's per-format partitioner modules: the graph's worker imports them all in its warm-up
# (ud_assets.decoding.isolation), so the raw loop's warm-up imports them too; neither loop then pays
# a format's first import inside the timing.
PARTITIONER_MODULES = (
    "md",
    "html",
    "text",
    "csv",
    "tsv",
    "pdf",
    "docx",
    "pptx",
    "xlsx",
    "odt",
    "epub",
    "rtf",
    "email",
    "xml",
    "json",
    "rst",
    "image",
)


def run_raw(args: dict) -> dict:
    import importlib

    t0 = time.monotonic()
    from unstructured.partition.auto import partition

    imported = time.monotonic()
    for name in PARTITIONER_MODULES:
        try:
            importlib.import_module(f"unstructured.partition.{name}")
        except ImportError:
            pass
    partition(filename=args["warmup"], strategy="fast")
    warmed = time.monotonic()
    files, errors = [], {}
    from bench.cpu import self_cpu_s

    cpu_started = self_cpu_s()
    for path in args["files"]:
        started, cpu = time.monotonic(), self_cpu_s()
        try:
            elements = partition(filename=path, strategy="fast", **raw_kwargs(path))
            count = len(elements)
        except Exception as exc:  # a file the bare library cannot read is reported, not fatal
            errors[os.path.basename(path)] = f"{type(exc).__name__}: {str(exc)[:200]}"
            count = None
        files.append(
            {
                "file": os.path.basename(path),
                "elements": count,
                "s": round(time.monotonic() - started, 4),
                "cpu_s": round(self_cpu_s() - cpu, 4),
            }
        )
    done = time.monotonic()
    return {
        "import_s": imported - t0,
        "warmup_s": warmed - imported,
        "loop_s": done - warmed,
        "loop_cpu_s": self_cpu_s() - cpu_started,
        "done_at": done,
        "files": files,
        "errors": errors,
        "peak_rss_self_mb": peak_rss_mb(),
    }


# -- graph -----------------------------------------------------------------------------------


def _job_and_resource(workspace: str, bucket: str, home: str = ""):
    """The job and its librarian: MinIO + Cassandra, or the embedded one in `home` when given."""
    import dagster as dg

    from ud_assets.defs.assets import universal_decoder
    from ud_assets.defs.jobs import decode_documents
    from ud_assets.defs.resources import LibrarianResource

    if home:
        resource_ = LibrarianResource(backend="embedded", workspace=workspace, home=home)
    else:
        resource_ = LibrarianResource(backend="cassandra", workspace=workspace, bucket=bucket)
    defs = dg.Definitions(assets=[universal_decoder], jobs=[decode_documents], resources={"librarian": resource_})
    return defs, defs.resolve_job_def("decode_documents"), resource_


def range_tags(keys: list[str]) -> dict:
    if len(keys) == 1:
        return {"dagster/partition": keys[0]}
    return {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}


def document_ends(dagster_instance, run_id: str) -> tuple[float | None, dict[str, float]]:
    """The run's first step start and, per partition, when its last materialization was stored
    (time.time() seconds, the event log's clock)."""
    step_start = None
    ends: dict[str, float] = {}
    for entry in dagster_instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None:
            continue
        if event.event_type_value == "STEP_START" and step_start is None:
            step_start = entry.timestamp
        elif event.event_type_value == "ASSET_MATERIALIZATION" and event.partition:
            ends[event.partition] = max(ends.get(event.partition, 0.0), entry.timestamp)
    return step_start, ends


def stored(lib) -> dict:
    """What a run left in the librarian: document rows and objects (with every child), their bytes, quads."""
    documents = lib.list_documents(include_children=True)
    return {
        "documents": sum(1 for d in documents if not getattr(d, "parent_id", None)),
        "objects": len(documents),
        "bytes": sum(d.size or 0 for d in documents),
        "quads": lib.triples.count(collection=lib.collection),
    }


def _execute(workspace: str, bucket: str, keys: list[str], dagster_instance, home: str = "") -> dict:
    """One batched run of the whole graph over keys; returns timings, CPU and what was stored."""
    from bench import cpu
    from ud_assets.defs.partitions import documents_partitions

    # The servers' CPU over this run alone: the parent's reading spans the whole worker (its
    # warm-up run, and the reads below that count what was stored). Read before the run's clock
    # starts, so that the pass over /proc is not in run_s.
    servers = cpu.service_pids()
    servers_before = cpu.snapshot(servers)
    started, clock_started = time.monotonic(), time.time()
    _defs, job, resource_ = _job_and_resource(workspace, bucket, home)
    dagster_instance.add_dynamic_partitions(documents_partitions.name, keys)
    result = job.execute_in_process(instance=dagster_instance, tags=range_tags(keys), raise_on_error=False)
    done, clock_done = time.monotonic(), time.time()
    servers_cpu_s = cpu.delta(servers_before, cpu.snapshot(servers))
    step_start, ends = document_ends(dagster_instance, result.run_id)
    lib = resource_.get()
    decoded = [k for k in keys if lib.get_generation(k) is not None]
    failures = {f.document_id: f.error for f in lib.list_failures()}
    per_document: dict[str, float] = {}
    parse_waits: dict[str, float] = {}
    stage_timings: dict[str, dict[str, float]] = {}
    for event in result.get_asset_materialization_events():
        materialization = event.materialization
        asset = materialization.asset_key.to_user_string()
        for name, value in materialization.metadata.items():
            value = getattr(value, "value", value)
            if not name.endswith("_s") or not isinstance(value, (int, float)):
                continue
            if name == "document_s":  # the step's own wall time for this document (on its last stage)
                per_document[materialization.partition] = value
            elif name == "parse_wait_s":  # the step waiting for this document's background parse
                parse_waits[materialization.partition] = value
            else:
                stage_timings.setdefault(materialization.partition, {})[f"{asset}.{name}"] = value
    return {
        "started_at": started,
        "done_at": done,
        "run_s": done - started,
        "success": result.success,
        "documents": len(keys),
        "decoded": len(decoded),
        "failures": failures,
        "triples": lib.triples.count(collection=lib.collection),
        "document_s": per_document,
        "parse_wait_s": parse_waits,
        "stage_timings": stage_timings,
        # on time.time()'s clock, for the CPU the parent samples from /proc (bench.run.graph_run):
        # the run, its first step's start, and each document's last materialization
        "clock_started": clock_started,
        "clock_done": clock_done,
        "step_started": step_start,
        "document_ends": ends,
        "servers_cpu_s": servers_cpu_s,
        "stored": stored(lib),
    }


def instance():
    """The Dagster instance of DAGSTER_HOME (the bench gives each worker an initialised one, like a
    deployment's instance), else a throwaway one."""
    import dagster as dg

    if os.environ.get("DAGSTER_HOME"):
        return dg.DagsterInstance.get()
    return dg.instance_for_test()


def run_graph(args: dict) -> dict:
    out: dict = {}
    profiler = None
    if args.get("profile"):
        import cProfile

        profiler = cProfile.Profile()
    with instance() as dagster_instance:
        if args.get("warmup_workspace"):
            from ud_assets.decoding.isolation import warm_up

            out["warmup"] = _execute(
                args["warmup_workspace"], args["bucket"], [args["warmup_key"]], dagster_instance, args.get("home", "")
            )
            # Every format's parser imported, as the raw loop's warm-up does (a batch run's first
            # step does the same: processing.parse_ahead.ParseAhead).
            out["warmup"]["warm_up_s"] = warm_up()
            out["peak_rss_after_warmup_mb"] = peak_rss_mb()
        if profiler:
            profiler.enable()
        out["corpus"] = _execute(
            args["workspace"], args["bucket"], args["keys"], dagster_instance, args.get("home", "")
        )
        if profiler:
            profiler.disable()
            profiler.dump_stats(args["profile"])
    out["peak_rss_self_mb"] = peak_rss_mb()
    return out


# -- upload through the sensor ---------------------------------------------------------------


def run_upload(args: dict) -> dict:
    import dagster as dg

    from ud_assets.decoding.detect import detect_mime
    from ud_assets.decoding.ids import document_iri
    from ud_assets.defs.sensors import librarian_uploads

    marks = {"imported": time.monotonic()}
    _defs, job, resource_ = _job_and_resource(args["workspace"], args["bucket"])
    lib = resource_.get()
    marks["librarian_opened"] = time.monotonic()
    with open(args["file"], "rb") as handle:
        data = handle.read()
    doc_id = args["key"]
    lib.add_document(doc_id, detect_mime(data, doc_id), data, title=doc_id)
    marks["uploaded"] = time.monotonic()
    with instance() as dagster_instance:
        context = dg.build_sensor_context(instance=dagster_instance, cursor=None, resources={"librarian": resource_})
        result = librarian_uploads(context)
        for request in result.dynamic_partitions_requests:
            if request.__class__.__name__ == "AddDynamicPartitionsRequest":
                dagster_instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        marks["sensor_evaluated"] = time.monotonic()
        runs = []
        for run_request in result.run_requests or []:
            tags = dict(run_request.tags)
            if run_request.partition_key:
                tags["dagster/partition"] = run_request.partition_key
            runs.append(job.execute_in_process(instance=dagster_instance, tags=tags, raise_on_error=False).success)
        marks["run_done"] = time.monotonic()
    subject = document_iri(doc_id)
    deadline = time.monotonic() + 60
    found = 0
    while time.monotonic() < deadline:
        found = len(lib.triples.query(s=subject, collection=lib.collection))
        if found:
            break
        time.sleep(0.05)
    marks["triples_queryable"] = time.monotonic()
    return {
        "marks": marks,
        "done_at": marks["triples_queryable"],
        "run_requests": len(result.run_requests or []),
        "runs_succeeded": runs,
        "document_triples": found,
        "triples": lib.triples.count(collection=lib.collection),
        "peak_rss_self_mb": peak_rss_mb(),
    }


# -- triple-store throughput -----------------------------------------------------------------

_XSD = "http://www.w3.org/2001/XMLSchema#"
_PROV = "http://www.w3.org/ns/prov#"
_TG = "https://trustgraph.ai/ns/"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


def generated_quads(count: int, graph: str = "urn:graph:source") -> list:
    """count provenance-like quads: 10 per entity (IRIs and typed literals), like the decoder writes."""
    from resources.model import Quad, Term

    quads = []
    entity = 0
    while len(quads) < count:
        s = f"urn:bench:section:{entity:07d}"
        doc = f"https://trustgraph.ai/doc/bench-{entity // 100:05d}"
        shapes = [
            (_RDF_TYPE, Term(_TG + "Section", is_iri=True)),
            (_PROV + "wasDerivedFrom", Term(doc, is_iri=True)),
            (_PROV + "wasGeneratedBy", Term(f"urn:bench:activity:{entity // 100:05d}", is_iri=True)),
            (_LABEL, Term(f"Section {entity}")),
            (_TG + "pageNumber", Term(str(entity % 300 + 1), datatype=_XSD + "integer")),
            (_TG + "charOffset", Term(str(entity * 4000), datatype=_XSD + "integer")),
            (_TG + "charLength", Term(str(1000 + entity % 3000), datatype=_XSD + "integer")),
            (_TG + "elementTypes", Term("NarrativeText,Title,Image")),
            (_TG + "imageCount", Term(str(entity % 3), datatype=_XSD + "integer")),
            ("http://purl.org/dc/terms/created", Term("2024-01-01T00:00:00Z", datatype=_XSD + "dateTime")),
        ]
        for p, o in shapes:
            if len(quads) == count:
                break
            quads.append(Quad(s, p, o, graph))
        entity += 1
    return quads


def run_triples(args: dict) -> dict:
    from resources.settings import load_settings, open_librarian

    settings = load_settings(backend="cassandra", workspace=args["workspace"], bucket=args["bucket"])
    with open_librarian(settings) as lib:  # creates the workspace's keyspace (not timed)
        quads = generated_quads(args["count"])
        lib.triples.insert(quads[:1], lib.collection)  # the collection row, prepared statements (not timed)
        started = time.monotonic()
        inserted = lib.triples.insert(quads[1:], lib.collection)
        elapsed = time.monotonic() - started
        stored = lib.triples.count(collection=lib.collection)
    return {"quads": inserted, "insert_s": elapsed, "stored": stored, "peak_rss_self_mb": peak_rss_mb()}


KINDS = {"raw": run_raw, "graph": run_graph, "upload": run_upload, "triples": run_triples}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--args", required=True, help="JSON arguments of the kind")
    parser.add_argument("--result", required=True, help="where to write the JSON result")
    ns = parser.parse_args(argv)
    out = KINDS[ns.kind](json.loads(ns.args))
    out["module_loaded_at"] = STARTED
    with open(ns.result, "w", encoding="utf-8") as handle:
        json.dump(out, handle)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown (Cassandra driver threads, atexit hooks): the figures are written.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
