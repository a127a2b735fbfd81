"""The benchmark's arithmetic: ratios, target verdicts and the printed table (pure; unit-tested)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

PASS, FAIL, UNKNOWN = "PASS", "FAIL", "n/a"


@dataclass(frozen=True)
class Target:
    """A figure's bound: value <= limit ("max") or value >= limit ("min")."""

    figure: str
    kind: str  # "max" | "min"
    limit: float
    description: str

    def verdict(self, value: float | None) -> str:
        if value is None:
            return UNKNOWN
        if self.kind == "max":
            return PASS if value <= self.limit else FAIL
        if self.kind == "min":
            return PASS if value >= self.limit else FAIL
        raise ValueError(f"unknown target kind {self.kind!r}")

    @property
    def text(self) -> str:
        return f"{'<=' if self.kind == 'max' else '>='} {self.limit:g}"


TARGETS = (
    Target("graph_vs_raw", "max", 1.25, "graph_s / raw_warm_s (both warm, excluding start-up)"),
    Target("upload_vs_cold", "max", 1.5, "upload_to_triples_s / cold_partition_s (both fresh processes)"),
    Target("large_pdf_rss_ratio", "max", 1.5, "peak RSS, graph on the large PDF / bare partition() on it"),
    Target("triples_per_s", "min", 5000, "quads written to Cassandra per second"),
    Target(
        "small_graph_vs_raw_1worker",
        "max",
        1.10,
        "small documents: graph_s with UD_PARSE_WORKERS=1 / raw_warm_s (the fixed cost per document, not hidden)",
    ),
    Target("small_graph_vs_raw", "max", 0.75, "small documents: graph_s with the default parse workers / raw_warm_s"),
    Target(
        "small_overhead_median_ms",
        "max",
        40,
        "small documents: median of (graph document time - bare partition time), UD_PARSE_WORKERS=1",
    ),
    # The peer: what a user runs instead (bench.ingest). Both fresh processes, timed from launch:
    # the graph does more (librarian, sections, chunks, triples), and still has to be faster.
    Target(
        "graph_vs_ingest",
        "max",
        0.9,
        "graph_fresh_total_s (else graph_total_s) / unstructured-ingest's ingest_s (both from launch)",
    ),
    Target(
        "small_graph_vs_ingest",
        "max",
        0.9,
        "small documents: graph_fresh_total_s (else graph_total_s; default parse workers) / unstructured-ingest's "
        "ingest_s",
    ),
    # Issue #28: like for like (the peer chunks by_title into a database too), CPU apart from the
    # servers', and the embedded default where no server shares the cores.
    Target(
        "embedded_vs_ingest_sqlite_corpus",
        "max",
        0.9,
        "graph on the embedded librarian / unstructured-ingest by_title into sqlite (fresh processes)",
    ),
    Target(
        "embedded_vs_ingest_sqlite_small",
        "max",
        0.9,
        "small documents: graph on the embedded librarian / unstructured-ingest by_title into sqlite",
    ),
    Target(
        "services_vs_ingest_s3_corpus",
        "max",
        0.9,
        "graph on MinIO + Cassandra / unstructured-ingest by_title into s3 on the same MinIO (fresh processes)",
    ),
    Target(
        "services_vs_ingest_s3_small",
        "max",
        0.9,
        "small documents: graph on MinIO + Cassandra / unstructured-ingest by_title into s3",
    ),
    Target(
        "cpu_graph_over_bare_median_ms",
        "max",
        25,
        "small documents: graph's own CPU per document - bare partition()'s, median (/proc, ms)",
    ),
    Target(
        "cpu_graph_over_bare_p95_ms",
        "max",
        60,
        "small documents: graph's own CPU per document p95 - bare partition()'s p95 (/proc, ms)",
    ),
    Target(
        "embedded_one_worker_vs_raw",
        "max",
        1.15,
        "small documents, embedded librarian: graph_s with one parse worker / the bare loop run beside it",
    ),
    Target(
        "embedded_default_workers_vs_raw",
        "max",
        0.75,
        "small documents, embedded librarian: graph_s with the default parse workers / the bare loop run beside it",
    ),
    Target(
        "embedded_overhead_median_ms",
        "max",
        40,
        "small documents, embedded librarian: median of (graph document time - bare partition time)",
    ),
)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, or None when either is missing or the denominator is not positive."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def rate(count: float | None, seconds: float | None) -> float | None:
    return ratio(count, seconds)


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def percentile(values: list[float], fraction: float) -> float | None:
    """The value below which `fraction` of values fall (nearest rank; None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(fraction * len(ordered))))
    return ordered[rank - 1]


def amortized_ms(graph_s: float | None, raw_s: float | None, documents: int) -> float | None:
    """The graph's extra wall time over the bare loop, per document, in milliseconds."""
    if graph_s is None or raw_s is None or documents <= 0:
        return None
    return round((graph_s - raw_s) / documents * 1000, 1)


def overheads_ms(graph_document_s: dict[str, float], raw_file_s: dict[str, float]) -> list[float]:
    """Per document: the graph's time for it minus bare partition()'s, in milliseconds."""
    return [1000 * (graph_document_s[k] - raw_file_s[k]) for k in sorted(graph_document_s) if k in raw_file_s]


def spread(values: list[float | None]) -> float | None:
    """(max - min) / median of the samples: how noisy repeated measurements were (None for < 2)."""
    present = [v for v in values if v is not None]
    if len(present) < 2:
        return None
    mid = statistics.median(present)
    return (max(present) - min(present)) / mid if mid else None


def peer_side(figures: dict, prefix: str) -> float | None:
    """The graph's wall time against the peer's from launch: the fresh worker's, which runs nothing
    before the job as the peer does (`{prefix}graph_fresh_total_s`, measured with the like-for-like
    runs), else the warmed worker's (`{prefix}graph_total_s`, which first runs the job over the
    warm-up document)."""
    fresh = figures.get(f"{prefix}graph_fresh_total_s")
    return fresh if fresh is not None else figures.get(f"{prefix}graph_total_s")


def figures_and_verdicts(figures: dict) -> dict:
    """The ratios of the targets from the measured figures, each with its verdict.

    figures needs: graph_s, raw_warm_s, upload_to_triples_s, cold_partition_s,
    large_pdf_graph_peak_rss_mb, large_pdf_bare_peak_rss_mb, triples_per_s, graph_total_s, ingest_s,
    the small documents' small_* counterparts (any may be missing or None: that verdict is n/a).
    """
    values = {
        "graph_vs_raw": ratio(figures.get("graph_s"), figures.get("raw_warm_s")),
        "upload_vs_cold": ratio(figures.get("upload_to_triples_s"), figures.get("cold_partition_s")),
        "large_pdf_rss_ratio": ratio(
            figures.get("large_pdf_graph_peak_rss_mb"), figures.get("large_pdf_bare_peak_rss_mb")
        ),
        "triples_per_s": figures.get("triples_per_s"),
        "small_graph_vs_raw_1worker": ratio(figures.get("small_graph_1worker_s"), figures.get("small_raw_warm_s")),
        "small_graph_vs_raw": ratio(figures.get("small_graph_s"), figures.get("small_raw_warm_s")),
        "small_overhead_median_ms": figures.get("small_overhead_median_ms"),
        "graph_vs_ingest": ratio(peer_side(figures, ""), figures.get("ingest_s")),
        "small_graph_vs_ingest": ratio(peer_side(figures, "small_"), figures.get("small_ingest_s")),
        "embedded_vs_ingest_sqlite_corpus": _nested(figures, "like_for_like", "embedded_vs_ingest_sqlite", "corpus"),
        "embedded_vs_ingest_sqlite_small": _nested(figures, "like_for_like", "embedded_vs_ingest_sqlite", "small"),
        "services_vs_ingest_s3_corpus": _nested(figures, "like_for_like", "services_vs_ingest_s3", "corpus"),
        "services_vs_ingest_s3_small": _nested(figures, "like_for_like", "services_vs_ingest_s3", "small"),
        "cpu_graph_over_bare_median_ms": _nested(figures, "cpu_per_document_ms", "graph_over_bare_median"),
        "cpu_graph_over_bare_p95_ms": _nested(figures, "cpu_per_document_ms", "graph_over_bare_p95"),
        "embedded_one_worker_vs_raw": _nested(figures, "embedded_small", "one_worker_vs_raw"),
        "embedded_default_workers_vs_raw": _nested(figures, "embedded_small", "default_workers_vs_raw"),
        "embedded_overhead_median_ms": _nested(figures, "embedded_small", "overhead_median_ms"),
    }
    return {
        t.figure: {
            "value": values[t.figure],
            "target": t.text,
            "verdict": t.verdict(values[t.figure]),
            "what": t.description,
        }
        for t in TARGETS
    }


def _nested(figures: dict, *path: str) -> float | None:
    """figures[path[0]][path[1]]..., None when any level is missing or None."""
    value: object = figures
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value if isinstance(value, (int, float)) else None


def fmt(value, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}{unit}"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}{unit}"
        if abs(value) >= 100:
            return f"{value:.1f}{unit}"
        return f"{value:.2f}{unit}"
    return f"{value}{unit}"


# (figure key, label, unit) of the table's measured rows, before the verdict rows
ROWS = (
    ("raw_warm_s", "raw_warm_s (bare partition loop, warm)", " s"),
    ("graph_s", "graph_s (whole graph, warm worker)", " s"),
    ("raw_total_s", "raw, fresh process incl. start-up", " s"),
    ("graph_total_s", "graph, fresh process incl. start-up and a warm-up run", " s"),
    ("graph_fresh_total_s", "graph, fresh process incl. start-up, nothing run before", " s"),
    ("graph_vs_raw_including_startup", "graph / raw incl. start-up", "x"),
    ("upload_to_triples_s", "upload_to_triples_s (sensor path, fresh process)", " s"),
    ("cold_partition_s", "cold_partition_s (python -c partition)", " s"),
    ("graph_peak_rss_mb", "peak RSS, graph over the corpus", " MB"),
    ("raw_peak_rss_mb", "peak RSS, raw loop over the corpus", " MB"),
    ("large_pdf_graph_peak_rss_mb", "peak RSS, graph on the large PDF", " MB"),
    ("large_pdf_bare_peak_rss_mb", "peak RSS, bare partition() on the large PDF", " MB"),
    ("large_pdf_graph_tree_pss_mb", "peak PSS of the process tree, graph on the large PDF", " MB"),
    ("large_pdf_bare_tree_pss_mb", "peak PSS, bare partition() on the large PDF", " MB"),
    ("large_pdf_pss_ratio", "PSS ratio graph / bare on the large PDF", "x"),
    ("triples_per_s", "triples_per_s (Cassandra insert)", "/s"),
    ("ingest_s", "ingest_s (unstructured-ingest CLI, fresh process)", " s"),
    ("ingest_peak_rss_mb", "peak RSS, unstructured-ingest over the corpus", " MB"),
    ("ingest_written", "unstructured-ingest: documents written", ""),
    ("ingest_empty", "unstructured-ingest: of those, without elements", ""),
    ("ingest_failed", "unstructured-ingest: documents failed", ""),
    ("small_documents", "small documents (generated, every format)", ""),
    ("small_raw_warm_s", "small documents: bare partition loop, warm", " s"),
    ("small_graph_1worker_s", "small documents: graph, UD_PARSE_WORKERS=1", " s"),
    ("small_graph_s", "small documents: graph, default parse workers", " s"),
    ("small_overhead_median_ms", "small documents: overhead per document, median", " ms"),
    ("small_overhead_p95_ms", "small documents: overhead per document, p95", " ms"),
    ("small_overhead_amortized_ms", "small documents: extra wall time per document, one parse worker", " ms"),
    ("small_graph_total_s", "small documents: graph, default workers, fresh process with a warm-up run", " s"),
    ("small_graph_fresh_total_s", "small documents: graph, default workers, fresh process, nothing run before", " s"),
    ("small_ingest_s", "small documents: unstructured-ingest CLI, fresh process", " s"),
    ("small_ingest_written", "small documents: unstructured-ingest, documents written", ""),
    ("small_ingest_empty", "small documents: unstructured-ingest, of those without elements", ""),
    ("small_ingest_failed", "small documents: unstructured-ingest, documents failed", ""),
)

UNITS = {  # the rest are ratios
    "triples_per_s": "/s",
    "small_overhead_median_ms": " ms",
    "cpu_graph_over_bare_median_ms": " ms",
    "cpu_graph_over_bare_p95_ms": " ms",
    "embedded_overhead_median_ms": " ms",
}


def table_rows(figures: dict, verdicts: dict) -> list[tuple[str, str, str, str]]:
    """(figure, value, target, verdict) rows: measured figures, then the targets."""
    rows = [(label, fmt(figures.get(key), unit), "", "") for key, label, unit in ROWS]
    for t in TARGETS:
        v = verdicts[t.figure]
        unit = UNITS.get(t.figure, "x")
        rows.append(
            (t.description, fmt(v["value"], unit), t.text + {"x": "x", "/s": ""}.get(unit, unit.strip()), v["verdict"])
        )
    return rows


def format_table(
    rows: list[tuple[str, ...]], header: tuple[str, ...] = ("figure", "value", "target", "verdict")
) -> str:
    """A plain-text table, columns padded to their widest cell."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def markdown_table(
    rows: list[tuple[str, ...]], header: tuple[str, ...] = ("figure", "value", "target", "verdict")
) -> str:
    """The same rows as a Markdown table (for the README)."""

    def cells(row):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"

    return "\n".join([cells(header), "|" + "|".join("---" for _ in header) + "|", *(cells(r) for r in rows)])


# Where a graph run's time went: per-document stage timings (materialization metadata) summed.
BREAKDOWN = (
    (
        "decode",
        "unstructured's partition() in forked children (the work itself; summed over documents and page "
        "ranges parsed side by side, so not wall time)",
    ),
    ("isolation", "forking the decoder child and passing its result back"),
    (
        "elements_other",
        "outside the decoder: the worker's decoder warm-up (first document of a process only), "
        "reading the bytes, elements as JSON into the object store",
    ),
    ("sections", "storing pages/sections as librarian children"),
    ("images", "storing images as librarian children"),
    ("provenance_triples", "building and writing provenance triples, commit, checks"),
    ("chunks", "chunking, storing chunks as librarian children, their triples"),
    ("other_in_document", "the rest of each document's step (metadata reads, generation checks, logs)"),
    ("waiting_for_parses", "the step idle until the next background parse ended (nothing parsed was left to store)"),
    ("dagster", "Dagster around the documents (run start/end, materialization events, asset checks)"),
)


def breakdown(
    stage_timings: dict[str, dict[str, float]],
    document_s: dict[str, float],
    run_s: float,
    parse_wait_s: dict[str, float] | None = None,
) -> dict[str, float]:
    """Seconds of a graph run per part (BREAKDOWN's keys), from the step's own per-document timings.

    stage_timings: {document: {"asset.metric_s": seconds}} as the materializations report them:
    sections.partition_s (all of the elements stage), elements.partition_s (the decoder call),
    elements.decoder_wall_s / decoder_work_s (the forked child: wall, and the partitioning in it),
    sections.sections_s, images.store_s, provenance_triples.store_s, chunks.chunk_s; others ignored.
    document_s: {document: the step's wall time for it}; run_s: the whole run; parse_wait_s:
    {document: how long the step waited for its background parse before taking it}.
    Parses run in background children beside the step, and a document's chunks are written beside
    its images and provenance: those parts overlap, so together they may exceed the run; the step's
    own time (documents, waiting, Dagster) adds up to it.
    """
    parts = dict.fromkeys((key for key, _ in BREAKDOWN), 0.0)
    for timings in stage_timings.values():
        decoder = timings.get("elements.decoder_wall_s", timings.get("elements.partition_s", 0.0))
        work = timings.get("elements.decoder_work_s", decoder)
        stage = max(timings.get("sections.partition_s", 0.0), timings.get("elements.partition_s", 0.0), decoder)
        parts["decode"] += work
        parts["isolation"] += max(0.0, decoder - work)
        parts["elements_other"] += stage - decoder
        parts["sections"] += timings.get("sections.sections_s", 0.0)
        parts["images"] += timings.get("images.store_s", 0.0)
        parts["provenance_triples"] += timings.get("provenance_triples.store_s", 0.0)
        parts["chunks"] += timings.get("chunks.chunk_s", 0.0)
    in_documents = sum(document_s.values())
    accounted = sum(v for k, v in parts.items() if k not in ("other_in_document", "dagster"))
    parts["other_in_document"] = max(0.0, in_documents - accounted)
    parts["waiting_for_parses"] = waited = sum((parse_wait_s or {}).values())
    parts["dagster"] = max(0.0, run_s - in_documents - waited)
    return parts


def format_breakdown(parts: dict[str, float], total: float) -> str:
    labels = dict(BREAKDOWN)
    width = max(len(k) for k in labels)
    return "\n".join(
        f"  {key.ljust(width)}  {parts.get(key, 0.0):7.2f} s  {100 * (ratio(parts.get(key, 0.0), total) or 0):5.1f} %  "
        f"{labels[key]}"
        for key in labels
    )
