"""bench.library at a small size: every figure it reports is of the library it registered."""

import math

from bench import library
from ud_assets.defs.assets import batch_size


def test_a_small_library_is_registered_and_measured_whole(tmp_path):
    out = library.measure(tmp_path, count=30, new=5)
    assert out["documents"] == 30 and out["listed"] == 35  # registered + the fresh uploads
    assert out["dagster_partitions"] == 30  # the sensor's requests are not applied by the bench
    assert out["sensor_runs_requested"] == 1  # five new uploads, one batch run
    assert out["schedule_runs_planned"] == math.ceil(30 / batch_size())  # every registered one stale
    assert set(out["register"]) == {"rows_s", "partitions_s", "generations_s", "total_s", "documents_per_s"}
