"""The deployment's Dagster storage (ud_assets/instance/postgres.py) on the cluster's PostgreSQL,
driven from a process of its own with the deployment's DAGSTER_HOME, as a run worker and the daemon
use it."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.cluster.dagster_storage_probe import FORKED_EVENTS
from tests.cluster.harness import REPO, Cluster

EVENTS = 40


def test_events_share_kept_connections_safe_across_fork_and_a_terminated_session(cluster: Cluster, tag):
    done = subprocess.run(
        [sys.executable, "-m", "tests.cluster.dagster_storage_probe", tag, str(EVENTS)],
        cwd=REPO,
        env={**cluster.env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["storages"] == [
        "PooledPostgresEventLogStorage",
        "PooledPostgresRunStorage",
        "PooledPostgresScheduleStorage",
    ]
    # dagster-postgres's own storage opens a connection per event and per read: 81 and 40 each here.
    assert seen["connections_for_events"] <= 2, seen
    assert all(n <= 2 for n in seen["connections_for_reads"].values()), seen
    # The child wrote beside its parent through a connection of its own, and closed none of its parent's.
    assert seen["child_exit"] == 0 and seen["parent_session_kept"], seen
    expected = sorted(
        [f"p{i}" for i in range(EVENTS)]
        + [f"{who}{i}" for who in ("child", "parent") for i in range(FORKED_EVENTS)]
        + ["after-termination"]
    )
    assert seen["stored_partitions"] == expected
