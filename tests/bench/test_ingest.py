"""The peer comparison's own parts (bench.ingest): the command line, its environment, what a run
wrote, the figures of its repeats. No unstructured-ingest run: its output is written by hand here."""

import json
import sys
from pathlib import Path

import pytest

from bench import ingest, report
from bench.processes import REPO_ROOT, Runner
from bench.run import compute, compute_small, main, parse_workers
from tests.bench.test_bench import _measurements

# -- the command line ------------------------------------------------------------------------


def test_the_command_line_is_the_cli_a_user_types(tmp_path):
    line = ingest.command(
        tmp_path / "venv/bin/unstructured-ingest", tmp_path / "docs", tmp_path / "out", tmp_path / "work", workers=3
    )
    assert line == [
        str(tmp_path / "venv/bin/unstructured-ingest"),
        "local",
        "--input-path",
        str(tmp_path / "docs"),
        "--strategy",
        "fast",
        "--num-processes",
        "3",
        "--work-dir",
        str(tmp_path / "work"),
        "--reprocess",
        "local",  # the destination subcommand, then its own option
        "--output-dir",
        str(tmp_path / "out"),
    ]


def test_the_command_line_runs_inside_the_isolation_prefix(tmp_path):
    line = ingest.command(tmp_path / "ui", tmp_path, tmp_path / "o", tmp_path / "w", 2, ["unshare", "--net", "--"])
    assert line[:4] == ["unshare", "--net", "--", str(tmp_path / "ui")]
    with pytest.raises(ValueError):
        ingest.command(tmp_path / "ui", tmp_path, tmp_path / "o", tmp_path / "w", 0)


def test_the_peer_gets_the_offline_switches_and_none_of_the_projects_interpreter():
    env = ingest.child_env(
        {"PATH": "/usr/bin", "PYTHONPATH": str(REPO_ROOT), "VIRTUAL_ENV": "/x", "HF_HUB_OFFLINE": "0"}
    )
    assert env["PATH"] == "/usr/bin" and "PYTHONPATH" not in env and "VIRTUAL_ENV" not in env
    for name, value in {
        "DO_NOT_TRACK": "true",
        "SCARF_NO_ANALYTICS": "true",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }.items():
        assert env[name] == value


def test_parse_workers_are_the_graphs():
    assert parse_workers({"UD_PARSE_WORKERS": "3"}) == 3
    from ud_assets.decoding.limits import Limits

    assert parse_workers({}) == Limits().workers


def test_a_missing_environment_says_how_to_build_it_or_skip_it(tmp_path):
    assert ingest.missing_message(tmp_path) is not None
    assert "make bench-setup" in ingest.missing_message(tmp_path) and "--no-ingest" in ingest.missing_message(tmp_path)
    with pytest.raises(SystemExit, match="make bench-setup"):
        main(["--ingest-venv", str(tmp_path)])  # before anything is measured or any server asked
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/unstructured-ingest").write_text("#!/bin/sh\n")
    assert ingest.missing_message(tmp_path) is None


def test_versions_are_read_from_the_peers_site_packages(tmp_path):
    site = tmp_path / "lib/python3.11/site-packages"
    for name, version in (("unstructured_ingest", "1.12.0"), ("unstructured", "0.27.35")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
    assert ingest.versions(tmp_path) == {"unstructured-ingest": "1.12.0", "unstructured": "0.27.35"}
    assert ingest.versions(tmp_path / "absent") == {"unstructured-ingest": None, "unstructured": None}


# -- what a run wrote ------------------------------------------------------------------------

# The failed-documents summary unstructured-ingest 1.12 logs at the end (Pipeline.log_statuses).
SUMMARY_LOG = """\
2026-12-03 16:45:27,740 MainProcess ERROR    Exception raised while running partition
Traceback (most recent call last):
RuntimeError: Failed to load Whisper model 'base' on device None.
2026-12-03 16:45:27,748 MainProcess ERROR    1 failed documents:
2026-12-03 16:45:27,748 MainProcess ERROR    {record}: [partition] SpeechToText agent failed: urlopen error
2026-12-03 16:45:27,748 MainProcess ERROR    failed to run destination command local: Pipeline did not run successfully
"""


def _a_run(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    (work / "indexer").mkdir(parents=True)
    out.mkdir()
    (out / "a.pdf.json").write_text(json.dumps([{"type": "Title", "text": "A"}, {"type": "NarrativeText"}]))
    (out / "mail.eml.json").write_text("[]")  # the fast strategy refused its image attachment
    record = work / "indexer" / "fbd94b589ef9.json"
    record.write_text(json.dumps({"source_identifiers": {"filename": "voice.eml", "fullpath": "/d/voice.eml"}}))
    return out, work, SUMMARY_LOG.format(record=record)


def test_outcome_counts_written_empty_and_failed_documents(tmp_path):
    out, work, log = _a_run(tmp_path)
    result = ingest.outcome(["a.pdf", "mail.eml", "voice.eml", "lost.txt"], out, work, log)
    assert (result["documents"], result["written"], result["failed"]) == (4, 2, 2)
    assert result["empty"] == ["mail.eml"]
    assert result["failures"] == {
        "voice.eml": "[partition] SpeechToText agent failed: urlopen error",  # named by its indexer record
        "lost.txt": "no output written (no error logged)",
    }


def test_outcome_of_a_run_that_wrote_nothing(tmp_path):
    result = ingest.outcome(["a.pdf"], tmp_path / "never-created", tmp_path / "work", "")
    assert (result["written"], result["failed"]) == (0, 1)


def test_a_failure_whose_record_is_gone_keeps_the_records_name(tmp_path):
    line = "2026-12-03 16:45:27,748 MainProcess ERROR    /gone/indexer/abc.json: [download] timed out"
    assert ingest.logged_failures(line, tmp_path) == {"abc.json": "[download] timed out"}
    assert ingest.logged_failures(line.replace("ERROR", "INFO "), tmp_path) == {}  # not the summary


# -- the figures of the repeats --------------------------------------------------------------


def _sample(wall_s, written, failures=None, exit_code=0, rss=800.0):
    failures = failures or {}
    return {
        "process": {"wall_s": wall_s, "exit_code": exit_code, "peak_rss_mb": rss},
        "documents": 3,
        "written": written,
        "empty": [],
        "failed": len(failures),
        "failures": failures,
        "workers": 2,
        "network_isolated": True,
    }


def test_summary_is_the_median_of_the_runs_that_wrote_anything():
    samples = [_sample(30.0, 3), _sample(2.0, 0, {"a": "x", "b": "y", "c": "z"}, 1), _sample(34.0, 2, {"c": "z"}, 1)]
    s = ingest.summary(samples)
    assert s["ingest_s"] == 32.0  # the 2 s run decoded nothing: no time of it counts
    assert s["wall_s"] == [30.0, 2.0, 34.0] and s["exit_codes"] == [0, 1, 1]
    assert (s["documents"], s["written"], s["failed"]) == (3, 2, 1)  # the last round's counts
    assert s["failures"] == {"a": "x", "b": "y", "c": "z"}  # every round's
    assert ingest.summary([_sample(2.0, 0)])["ingest_s"] is None


def test_graph_vs_ingest_targets():
    targets = {t.figure: (t.kind, t.limit) for t in report.TARGETS}
    assert targets["graph_vs_ingest"] == ("max", 0.9) and targets["small_graph_vs_ingest"] == ("max", 0.9)
    verdicts = report.figures_and_verdicts(
        {"graph_total_s": 45.0, "ingest_s": 50.0, "small_graph_total_s": 91.0, "small_ingest_s": 100.0}
    )
    assert verdicts["graph_vs_ingest"]["value"] == pytest.approx(0.9)
    assert verdicts["graph_vs_ingest"]["verdict"] == "PASS"  # the bound itself passes
    assert verdicts["small_graph_vs_ingest"]["verdict"] == "FAIL"  # 0.91
    assert report.figures_and_verdicts({"graph_total_s": 45.0})["graph_vs_ingest"]["verdict"] == "n/a"


def test_compute_compares_the_graphs_fresh_process_with_ingest(tmp_path):
    samples, *rest = _measurements(tmp_path)  # graph_total_s: 30, 33, 31 s from launch
    samples["ingest"] = [_sample(40.0, 3), _sample(36.0, 3), _sample(50.0, 2, {"c.eml": "[partition] offline"}, 1)]
    out = compute(samples, *rest)
    f = out["figures"]
    assert (f["graph_total_s"], f["ingest_s"]) == (31.0, 40.0)
    assert (f["ingest_written"], f["ingest_empty"], f["ingest_failed"]) == (2, 0, 1)
    assert out["targets"]["graph_vs_ingest"]["value"] == pytest.approx(31 / 40)
    assert out["targets"]["graph_vs_ingest"]["verdict"] == "PASS"
    assert out["samples"]["ingest_s"] == [40.0, 36.0, 50.0] and len(out["details"]["ingest"]) == 3
    assert any("--num-processes 2" in n for n in out["notes"])
    assert any("wrote nothing for 1 of 3" in n and "c.eml" in n for n in out["notes"])


def test_compute_small_compares_the_graphs_fresh_process_with_ingest(tmp_path):
    keys = {"a.pdf": tmp_path / "a.pdf", "b.md": tmp_path / "b.md"}
    raw = [{"loop_s": 4.0, "files": [{"file": "a.pdf", "s": 1.0}, {"file": "b.md", "s": 0.5}]}]

    def graph_run(run_s, total_s):
        corpus = {"run_s": run_s, "done_at": 50.0 + total_s, "document_s": {"a.pdf": 1.2, "b.md": 0.6}, "failures": {}}
        return {"corpus": corpus, "process": {"launched_at": 50.0}}

    samples = {
        "raw": raw * 3,
        "1worker": [graph_run(6.0, 20.0)] * 3,
        "default": [graph_run(5.0, 18.0), graph_run(5.5, 21.0), graph_run(4.5, 19.0)],
        "ingest": [_sample(25.0, 2), _sample(20.0, 2), _sample(30.0, 1, {"b.md": "[partition] x"}, 1)],
        "embedded_1worker": [graph_run(4.4, 10.0), graph_run(5.5, 10.0), graph_run(4.0, 10.0)],
        "raw_beside_1worker": [{"loop_s": 4.0}, {"loop_s": 5.0}, {"loop_s": 4.0}],
    }
    out = compute_small(samples, keys, [{"format": "PDF", "bytes": 10}, {"format": "Markdown", "bytes": 5}])
    # each round's embedded run and the bare loop beside it are in the report, and paired
    assert out["samples"]["embedded_1worker"] == [4.4, 5.5, 4.0]
    assert out["samples"]["raw_beside_1worker"] == [4.0, 5.0, 4.0] and out["samples"]["raw_beside_default"] == []
    assert out["figures"]["embedded_small"]["one_worker_vs_raw"] == pytest.approx(1.1)
    f = out["figures"]
    assert (f["small_graph_total_s"], f["small_ingest_s"]) == (19.0, 25.0)  # medians, from launch
    assert (f["small_ingest_written"], f["small_ingest_empty"], f["small_ingest_failed"]) == (1, 0, 1)
    assert report.figures_and_verdicts(f)["small_graph_vs_ingest"]["value"] == pytest.approx(19 / 25)
    assert out["samples"]["ingest"] == [25.0, 20.0, 30.0] and out["samples"]["default_total"] == [18.0, 21.0, 19.0]
    assert out["ingest"]["failures"] == {"b.md": "[partition] x"}
    assert set(out["failures"]) == {"1worker", "default"}  # the graph's undecoded documents


def test_compute_small_without_the_peer(tmp_path):
    samples = {
        "raw": [{"loop_s": 4.0, "files": [{"file": "a.pdf", "s": 1.0}]}],
        "1worker": [{"corpus": {"run_s": 6.0, "done_at": 60.0, "document_s": {"a.pdf": 1.2}, "failures": {}}}],
        "default": [{"corpus": {"run_s": 5.0, "done_at": 60.0, "failures": {}}, "process": {"launched_at": 50.0}}],
        "ingest": [],
    }
    samples["1worker"][0]["process"] = {"launched_at": 50.0}
    out = compute_small(samples, {"a.pdf": tmp_path / "a.pdf"}, [{"format": "PDF", "bytes": 10}])
    assert out["figures"]["small_ingest_s"] is None and out["ingest"] is None
    assert report.figures_and_verdicts(out["figures"])["small_graph_vs_ingest"]["verdict"] == "n/a"


# -- the measured child ----------------------------------------------------------------------


def test_a_command_that_exits_non_zero_is_a_result_with_its_own_log(tmp_path):
    runner = Runner(tmp_path, {"PATH": "/usr/bin:/bin"})
    log = tmp_path / "peer.log"
    line = [sys.executable, "-c", "import os, sys; print(os.environ.get('ONLY_HERE')); sys.exit(3)"]
    sample = runner.command("exits_3", line, env={"ONLY_HERE": "yes"}, log_path=log, check=False)
    assert sample["process"]["exit_code"] == 3 and sample["process"]["wall_s"] > 0
    assert "yes" in log.read_text() and not (tmp_path / "children.log").exists()
    with pytest.raises(RuntimeError, match="exit 3"):
        runner.command("exits_3", line, env={}, log_path=log)


# -- like for like (issue #28) ---------------------------------------------------------------


def test_the_like_for_like_line_chunks_by_title_into_the_destination_and_hides_the_secret(tmp_path):

    target = ingest.s3_destination("s3://b/p", "http://127.0.0.1:9000", "key", "hush")
    line = ingest.command(
        Path("ui"), tmp_path, tmp_path / "o", tmp_path / "w", 2, destination=target, chunking="by_title"
    )
    assert line[line.index("--chunking-strategy") + 1] == "by_title"
    assert line[line.index("--reprocess") + 1 :] == target  # the destination and its options come last
    assert "--output-dir" not in line
    assert "hush" in line and "hush" not in ingest.redacted(line) and "***" in ingest.redacted(line)
    plain = ingest.command(Path("ui"), tmp_path, tmp_path / "o", tmp_path / "w", 2)
    assert "--chunking-strategy" not in plain and plain[-3:] == ["local", "--output-dir", str(tmp_path / "o")]


def test_the_sqlite_destination_gets_unstructured_ingests_own_elements_table(tmp_path):
    import sqlite3

    database = ingest.create_sqlite_database(tmp_path / "db" / "elements.db")
    connection = sqlite3.connect(database)
    columns = [row[1] for row in connection.execute("PRAGMA table_info(elements)")]
    assert columns[:4] == ["id", "record_id", "element_id", "text"] and len(columns) == 40
    connection.executemany(
        "INSERT INTO elements (id, record_id, text) VALUES (?, ?, ?)",
        [("1", "a", "x"), ("2", "a", "y"), ("3", "b", "z")],
    )
    connection.commit()
    connection.close()
    stored = ingest.sqlite_stored(database)
    assert (stored["rows"], stored["documents"]) == (3, 2) and stored["bytes"] == database.stat().st_size


def test_cluster_parts_come_from_live_pid_files(tmp_path):
    import os

    from bench import cluster

    (tmp_path / "dagster").mkdir()
    (tmp_path / "cassandra2").mkdir()
    (tmp_path / "dagster" / "worker1.pid").write_text(f"{os.getpid()}\n")
    (tmp_path / "dagster" / "worker2.pid").write_text("999999999\n")  # no such process
    (tmp_path / "cassandra2" / "cassandra.pid").write_text(f"{os.getpid()}\n")
    assert cluster.part_pids(tmp_path) == {cluster.WORKER_PART: [os.getpid()], "cassandra2": [os.getpid()]}


def test_cluster_rounds_combine_into_the_median_per_part():
    from bench import cluster

    def round_(worker, cassandra, webserver):
        per_document = {cluster.WORKER_PART: worker, "cassandra1": cassandra, "dagster_webserver": webserver}
        return {
            "documents": 200,
            "workers": 2,
            "not_projected": list(cluster.NOT_PROJECTED),
            "materialized": 200,
            "run_status": "SUCCESS",
            "wall_s": 100.0,
            "cpu_s_per_document": per_document,
        }

    combined = cluster.combine([round_(0.2, 0.1, 9.0), round_(0.3, 0.05, 9.0), round_(0.25, 0.2, 9.0)])
    assert combined["cpu_s_per_document"] == {cluster.WORKER_PART: 0.25, "cassandra1": 0.1, "dagster_webserver": 9.0}
    capacity = combined["capacity"]
    assert "dagster_webserver" not in capacity["cpu_s_per_document"]  # serves the operator: not projected
    assert capacity["projection"]["1"] == {"documents_per_hour": 14_400, "saturates": cluster.WORKER_PART}
    assert capacity["projection"]["4"] == {"documents_per_hour": 36_000, "saturates": "cassandra1"}
    assert len(combined["rounds"]) == 3


def test_the_peer_comparison_takes_the_graph_from_a_fresh_process_without_a_warm_up_run(tmp_path):
    """The timed graph_s workers run a warm-up first; the peer does not, nor does a person's
    `dagster job execute`. The like-for-like side is the worker that ran nothing before."""
    keys = {"a.pdf": tmp_path / "a.pdf"}

    def graph_run(total_s, cpu_s):
        corpus = {"run_s": 5.0, "done_at": 50.0 + total_s, "document_s": {"a.pdf": 1.2}, "failures": {}}
        return {"corpus": {**corpus, "stored": {"documents": 1}}, "process": {"launched_at": 50.0, "cpu_s": cpu_s}}

    samples = {
        "raw": [{"loop_s": 4.0, "files": [{"file": "a.pdf", "s": 1.0}]}],
        "1worker": [graph_run(20.0, 9.0)],
        "default": [graph_run(19.0, 9.0), graph_run(21.0, 9.5), graph_run(20.0, 9.2)],  # warmed up first
        "fresh": [graph_run(17.0, 8.0), graph_run(16.0, 7.5), graph_run(18.0, 8.4)],
        "embedded_fresh": [graph_run(12.0, 6.0)],
        "ingest": [],
        # the same pair with the servers on a core of their own
        "apart": [graph_run(14.0, 7.0)],
        "apart_s3": [{"stored": {"documents": 1}, "process": {"wall_s": 20.0, "cpu_s": 9.0}, "failures": {}}],
    }
    out = compute_small(samples, keys, [{"format": "PDF", "bytes": 10}])
    side = out["like_for_like"]
    assert side["graph_services"]["wall_s"] == 17.0 and side["graph_services"]["cpu_s"] == 8.0
    assert side["graph_embedded"]["wall_s"] == 12.0
    assert side["ingest_s3"] is None  # the peer not measured: no ratio
    apart = out["like_for_like_servers_apart"]
    assert (apart["graph_services"]["wall_s"], apart["ingest_s3"]["wall_s"]) == (14.0, 20.0)
    assert apart["graph_embedded"] is None
