"""bench.library at a small size: every figure it reports is of the library it registered."""

import json
import math

import pytest

from bench import library
from ud_assets.defs.assets import batch_size

REGISTER_KEYS = {"rows_s", "partitions_s", "generations_s", "total_s", "documents_per_s"}


def assert_measured_whole(out: dict, count: int, new: int) -> None:
    # registered + the fresh uploads + the one added outside ud
    assert out["documents"] == count and out["listed"] == count + new + 1
    # The first tick's requests are not applied; the external document's ticks apply theirs (as the daemon does).
    assert out["dagster_partitions"] == count + new + 1
    assert out["sensor_runs_requested"] == 1  # a few new uploads, one batch run
    assert out["schedule_runs_planned"] == math.ceil(count / batch_size())  # every registered one stale
    assert set(out["register"]) == REGISTER_KEYS
    assert out["register_s"] == out["register"]["total_s"]
    for key in ("register_s", "sensor_tick_s", "schedule_plan_s", "partitions_query_s"):
        assert out[key] >= 0
    # The document added outside ud was found by the sweep, a whole sensor interval at least later.
    assert out["external_upload_ticks"] >= 1
    assert out["external_upload_latency_s"] >= 30 * out["external_upload_ticks"]


def test_a_small_library_is_registered_and_measured_whole(tmp_path):
    out = library.measure(tmp_path, count=30, new=5)
    assert out["backend"] == "embedded"
    assert_measured_whole(out, 30, 5)


@pytest.mark.services
def test_on_cassandra_the_library_is_measured_whole_and_its_footprint_removed():
    from resources.cassandra.connection import CassandraConfig, acquire
    from resources.s3 import make_client

    footprint = library.Footprint()
    out = library.measure_backend("cassandra", count=300, new=5, footprint=footprint)
    assert out["backend"] == "cassandra" and out["left_behind"] == []
    assert_measured_whole(out, 300, 5)
    assert set(out["verdicts"]) == set(library.TARGETS)
    (workspace,) = footprint.workspaces
    connection = acquire(CassandraConfig.from_env())
    try:
        for table, key in (("document", "id"), ("upload_log", "id"), ("record_generation", "document_id")):
            rows = connection.execute(f"SELECT {key} FROM librarian.{table} WHERE workspace = ? LIMIT 1", (workspace,))
            assert list(rows) == [], table
    finally:
        connection.release()
    assert footprint.bucket not in [b["Name"] for b in make_client().list_buckets().get("Buckets", [])]


def test_verdicts_hold_each_figure_to_its_target():
    figures = {"sensor_tick_s": 1.0, "schedule_plan_s": 60.01}
    assert library.verdicts(figures) == {"sensor_tick_s": "PASS", "schedule_plan_s": "FAIL"}


def test_one_backend_is_measured_in_process_and_written_under_its_name(tmp_path):
    out_file = tmp_path / "library.json"
    assert library.main(["--backend", "embedded", "--documents", "20", "--new", "2", "--out", str(out_file)]) == 0
    out = json.loads(out_file.read_text())
    assert set(out["backends"]) == {"embedded"} and out["documents"] == 20
    assert out["backends"]["embedded"]["listed"] == 23  # and the document added outside ud
    assert set(out["backends"]["embedded"]["verdicts"]) == set(library.TARGETS)
    with pytest.raises(SystemExit):
        library.main(["--backend", "sqlite"])


def test_the_figures_go_into_the_bench_output_under_library_1m(tmp_path):
    bench_json = tmp_path / "bench.json"
    bench_json.write_text(json.dumps({"figures": {"graph_s": 1.0}}))
    bench_json.with_suffix(".md").write_text("| figure | value |\n|---|---|\n| graph_s | 1.0 s |\n")
    argv = ["--backend", "embedded", "--documents", "20", "--new", "2", "--out", str(tmp_path / "library.json")]
    assert library.main([*argv, "--into", str(bench_json)]) == 0
    out = json.loads(bench_json.read_text())
    assert out["figures"] == {"graph_s": 1.0}  # what the bench wrote stays
    measured = json.loads((tmp_path / "library.json").read_text())["backends"]["embedded"]
    assert out["library_1m"]["documents"] == 20
    assert out["library_1m"]["embedded"] == {k: measured[k] for k in library.LIBRARY_KEYS}
    table = bench_json.with_suffix(".md").read_text()
    assert table.startswith("| figure | value |")
    assert f"| sensor_tick_s | {measured['sensor_tick_s']} s | <= 1 s |" in table
