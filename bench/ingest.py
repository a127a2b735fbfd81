"""The peer a user would pick instead of the graph: unstructured-ingest's `local` pipeline.

    unstructured-ingest local --input-path DIR --strategy fast --num-processes N --work-dir W \
        local --output-dir OUT

runs from its own virtual environment (`make bench-setup` builds .venv-ingest with uv.lock's
versions of unstructured and its dependencies, so both sides decode with the same library), as a
fresh process timed from its launch to its exit like every other child of the bench. N is the
graph's parse workers (UD_PARSE_WORKERS, else Limits.workers), so both use as many parses at once.

Everything it needs was installed at setup: it runs with the offline switches of CHILD_ENV and,
where the kernel lets us, in a network namespace of its own with no interface up, so a format
that would download something (speech models for an audio attachment, a tokenizer) fails there
instead of downloading. unstructured-ingest logs such a document's error, writes no output for it,
goes on, and exits non-zero at the end: the bench counts the documents, not the exit code.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from bench.processes import CHILD_ENV, REPO_ROOT

INGEST_VENV = REPO_ROOT / ".venv-ingest"  # built by `make bench-setup`
STRATEGY = "fast"  # the bare loop's and the graph's strategy for text documents

# Offline switches on top of CHILD_ENV's: unstructured's usage ping (Scarf) and Hugging Face's
# telemetry; the hub itself is already offline (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE).
OFFLINE_ENV = {**CHILD_ENV, "SCARF_NO_ANALYTICS": "true", "HF_HUB_DISABLE_TELEMETRY": "1"}
# Variables of the bench's own interpreter that would leak the project's packages into the peer's.
FOREIGN_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")

# Pipeline.log_statuses: "<file_data_path>: [<step>] <message>" for each failed document, where
# file_data_path is the indexer's record of the document (work_dir/indexer/<id>.json).
_STATUS_LINE = re.compile(r"\s(?P<record>\S+\.json): \[(?P<step>[^\]]+)\] (?P<message>.*)$")


def executable(venv: Path = INGEST_VENV) -> Path:
    return venv / "bin" / "unstructured-ingest"


def missing_message(venv: Path = INGEST_VENV) -> str | None:
    """Why the peer cannot run (None when it can)."""
    if executable(venv).is_file():
        return None
    return (
        f"unstructured-ingest is not installed ({executable(venv)} missing): run `make bench-setup` "
        "(make bench does), or pass --no-ingest to measure without the peer"
    )


def command(
    ingest: Path,
    input_dir: Path,
    output_dir: Path,
    work_dir: Path,
    workers: int,
    isolate: list[str] | None = None,
    destination: list[str] | None = None,
    chunking: str | None = None,
) -> list[str]:
    """The CLI line a user would type, with its caches in work_dir instead of ~/.cache.

    The destination is the `local` subcommand (its --output-dir) unless `destination` gives another
    (its subcommand and options: sqlite_destination, s3_destination): unstructured-ingest 1.x takes
    the source's options first, then a destination and its own options. chunking: the source's
    --chunking-strategy (the like-for-like runs chunk by_title, as the graph does). --reprocess:
    nothing is skipped because an earlier run left output (each run has fresh folders anyway)."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    return [
        *(isolate or []),
        str(ingest),
        "local",
        "--input-path",
        str(input_dir),
        "--strategy",
        STRATEGY,
        *(["--chunking-strategy", chunking] if chunking else []),
        "--num-processes",
        str(workers),
        "--work-dir",
        str(work_dir),
        "--reprocess",
        *(destination or ["local", "--output-dir", str(output_dir)]),
    ]


# unstructured-ingest's own `elements` table for its sqlite destination, as its integration tests
# create it (Unstructured-IO/unstructured-ingest, test/integration/connectors/env_setup/sql/sqlite/
# destination/sqlite-schema.sql; the wheel ships no SQLite schema): the uploader writes the columns
# of its staged elements that the table has.
SQLITE_ELEMENTS_COLUMNS = (
    ("id", "TEXT PRIMARY KEY"),
    ("record_id", "TEXT"),
    ("element_id", "TEXT"),
    ("text", "TEXT"),
    ("embeddings", "TEXT"),
    ("type", "TEXT"),
    ("system", "TEXT"),
    ("layout_width", "REAL"),
    ("layout_height", "REAL"),
    ("points", "TEXT"),
    ("url", "TEXT"),
    ("version", "TEXT"),
    ("date_created", "TEXT"),
    ("date_modified", "TEXT"),
    ("date_processed", "TEXT"),
    ("permissions_data", "TEXT"),
    ("record_locator", "TEXT"),
    ("category_depth", "INTEGER"),
    ("parent_id", "TEXT"),
    ("attached_filename", "TEXT"),
    ("filetype", "TEXT"),
    ("last_modified", "TEXT"),
    ("file_directory", "TEXT"),
    ("filename", "TEXT"),
    ("languages", "TEXT"),
    ("page_number", "TEXT"),
    ("links", "TEXT"),
    ("page_name", "TEXT"),
    ("link_urls", "TEXT"),
    ("link_texts", "TEXT"),
    ("sent_from", "TEXT"),
    ("sent_to", "TEXT"),
    ("subject", "TEXT"),
    ("section", "TEXT"),
    ("header_footer_type", "TEXT"),
    ("emphasized_text_contents", "TEXT"),
    ("emphasized_text_tags", "TEXT"),
    ("text_as_html", "TEXT"),
    ("regex_metadata", "TEXT"),
    ("detection_class_prob", "DECIMAL"),
)
CHUNKING = "by_title"  # the like-for-like runs' chunking, the graph's own


def sqlite_schema() -> str:
    columns = ",\n".join(f"    {name} {kind}" for name, kind in SQLITE_ELEMENTS_COLUMNS)
    return f"CREATE TABLE elements (\n{columns}\n);\n"


def create_sqlite_database(path: Path) -> Path:
    """An empty database with the `elements` table (the destination refuses a missing file)."""
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as connection:
        connection.executescript(sqlite_schema())
    connection.close()
    return path


def sqlite_destination(database: Path) -> list[str]:
    return ["sqlite", "--database-path", str(database), "--table-name", "elements"]


def s3_destination(remote_url: str, endpoint_url: str, key: str, secret: str) -> list[str]:
    return ["s3", "--remote-url", remote_url, "--endpoint-url", endpoint_url, "--key", key, "--secret", secret]


def redacted(line: list[str]) -> list[str]:
    """The command line with the value after --secret hidden (it goes into the JSON figures)."""
    return [("***" if i and line[i - 1] == "--secret" else part) for i, part in enumerate(line)]


def sqlite_stored(database: Path) -> dict:
    """What the sqlite destination holds: rows of `elements`, documents (record ids), file bytes."""
    import sqlite3

    connection = sqlite3.connect(database)
    try:
        rows, records = connection.execute("SELECT count(*), count(DISTINCT record_id) FROM elements").fetchone()
    finally:
        connection.close()
    return {"rows": rows, "documents": records, "bytes": database.stat().st_size}


def s3_stored(bucket: str, prefix: str) -> dict:
    """What the s3 destination wrote under prefix: objects (one JSON per document), bytes."""
    from resources.s3 import make_client

    objects = size = 0
    for page in make_client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for entry in page.get("Contents", []):
            if entry["Key"].endswith(".json"):
                objects += 1
                size += entry["Size"]
    return {"objects": objects, "documents": objects, "bytes": size}


def child_env(base: dict[str, str]) -> dict[str, str]:
    """base without the project's interpreter settings, with the offline switches."""
    return {**{k: v for k, v in base.items() if k not in FOREIGN_ENV}, **OFFLINE_ENV}


def network_isolation() -> list[str]:
    """`unshare --net --` when this user may create a network namespace (root, or unprivileged user
    namespaces), else []: the offline variables alone then keep it from downloading."""
    unshare = shutil.which("unshare")
    if not unshare:
        return []
    for prefix in ([unshare, "--net", "--"], [unshare, "--user", "--map-root-user", "--net", "--"]):
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return prefix
    return []


def outcome(corpus: list[str], output_dir: Path, work_dir: Path, log_text: str) -> dict:
    """What one run produced for the corpus' file names: written (an output file), of which empty
    (no elements), and failures {file: why} for the documents it wrote nothing for."""
    outputs = {p.name: p for p in output_dir.glob("*.json")} if output_dir.is_dir() else {}
    written = [name for name in corpus if f"{name}.json" in outputs]
    empty = [name for name in written if _element_count(outputs[f"{name}.json"]) == 0]
    reasons = logged_failures(log_text, work_dir)
    failures = {
        name: reasons.get(name, "no output written (no error logged)")
        for name in corpus
        if f"{name}.json" not in outputs
    }
    return {
        "documents": len(corpus),
        "written": len(written),
        "empty": empty,
        "failed": len(failures),
        "failures": failures,
    }


def logged_failures(log_text: str, work_dir: Path) -> dict[str, str]:
    """{file name: "[step] message"} from the failed-documents summary unstructured-ingest logs last."""
    out: dict[str, str] = {}
    for line in log_text.splitlines():
        match = _STATUS_LINE.search(line)
        if not match or "ERROR" not in line[: match.start()]:
            continue
        name = _source_name(Path(match["record"]), work_dir)
        out[name] = f"[{match['step']}] {match['message'].strip()}"[:500]
    return out


def _source_name(record: Path, work_dir: Path) -> str:
    """The document's file name from the indexer's record of it (its file name when unreadable)."""
    for candidate in (record, work_dir / "indexer" / record.name):
        try:
            return json.loads(candidate.read_text())["source_identifiers"]["filename"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return record.name


def _element_count(path: Path) -> int | None:
    try:
        elements = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return len(elements) if isinstance(elements, list) else None


def run(runner, ingest: Path, folder: Path, corpus: list[str], run_dir: Path, workers: int, isolate: list[str]) -> dict:
    """One timed run over folder in fresh output and work folders: the process figures (as
    Runner.command measures them), the command line, and what it wrote for the corpus' files."""
    output_dir, work_dir, log_path = run_dir / "out", run_dir / "work", run_dir / "ingest.log"
    run_dir.mkdir(parents=True, exist_ok=True)
    line = command(ingest, folder, output_dir, work_dir, workers, isolate)
    sample = runner.command("unstructured_ingest", line, env=child_env(runner.env), log_path=log_path, check=False)
    log_text = log_path.read_text(errors="replace") if log_path.exists() else ""
    return {
        **sample,
        "command": line,
        "workers": workers,
        "network_isolated": bool(isolate),
        "log": str(log_path),
        **outcome(corpus, output_dir, work_dir, log_text),
    }


def run_to(
    runner,
    ingest: Path,
    folder: Path,
    corpus: list[str],
    run_dir: Path,
    workers: int,
    destination: str,
    bucket: str = "",
) -> dict:
    """One timed like-for-like run, chunked by_title, into the sqlite destination (a fresh database
    with unstructured-ingest's own `elements` table) or the s3 one (s3://bucket/<run folder name>/
    on the MinIO of AWS_ENDPOINT_URL_S3). Not network-isolated: the s3 destination needs MinIO,
    and the sqlite run is kept alike (the offline variables still apply). Returns the process
    figures, the command line (secret hidden), and what it stored."""
    import os

    work_dir, log_path = run_dir / "work", run_dir / "ingest.log"
    run_dir.mkdir(parents=True, exist_ok=True)
    if destination == "sqlite":
        database = create_sqlite_database(run_dir / "elements.db")
        target = sqlite_destination(database)
    elif destination == "s3":
        prefix = run_dir.name
        target = s3_destination(
            f"s3://{bucket}/{prefix}",
            os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ["AWS_ENDPOINT_URL"],
            os.environ["AWS_ACCESS_KEY_ID"],
            os.environ["AWS_SECRET_ACCESS_KEY"],
        )
    else:
        raise ValueError(f"unknown destination {destination!r}")
    line = command(ingest, folder, run_dir / "out", work_dir, workers, destination=target, chunking=CHUNKING)
    sample = runner.command(
        f"unstructured_ingest_{destination}", line, env=child_env(runner.env), log_path=log_path, check=False
    )
    stored = sqlite_stored(database) if destination == "sqlite" else s3_stored(bucket, prefix + "/")
    log_text = log_path.read_text(errors="replace") if log_path.exists() else ""
    return {
        **sample,
        "command": redacted(line),
        "destination": destination,
        "workers": workers,
        "log": str(log_path),
        "stored": stored,
        "documents": len(corpus),
        "failures": logged_failures(log_text, work_dir),
    }


def summary(samples: list[dict]) -> dict:
    """The figures of a run's repeats: median wall time of the runs that wrote anything (a run that
    wrote nothing did not decode the corpus, so its time says nothing), peak RSS, and counts."""
    from bench import report

    useful = [s for s in samples if s["written"] > 0]
    last = samples[-1]
    return {
        "ingest_s": report.median([s["process"]["wall_s"] for s in useful]),
        "peak_rss_mb": max(s["process"]["peak_rss_mb"] for s in samples),
        "documents": last["documents"],
        "written": last["written"],
        "empty": len(last["empty"]),
        "failed": last["failed"],
        "failures": {k: v for s in samples for k, v in s["failures"].items()},
        "exit_codes": [s["process"]["exit_code"] for s in samples],
        "workers": last["workers"],
        "network_isolated": last["network_isolated"],
        "wall_s": [s["process"]["wall_s"] for s in samples],
    }


def versions(venv: Path = INGEST_VENV) -> dict[str, str | None]:
    """unstructured-ingest's and unstructured's versions in the peer's environment (read from its
    site-packages, without starting it): both sides must decode with the same unstructured."""
    from importlib.metadata import distributions

    site = [str(p) for p in venv.glob("lib/python*/site-packages")]
    found = {d.metadata["Name"].lower().replace("_", "-"): d.version for d in distributions(path=site)} if site else {}
    return {name: found.get(name) for name in ("unstructured-ingest", "unstructured")}
