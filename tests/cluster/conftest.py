"""The cluster of make cluster-up, started for these tests and stopped after them; the one-node reference.

The tests start the deployment with scripts/cluster/up.sh (as `make cluster-up`) and stop it with
scripts/cluster/down.sh at the end. A part that does not come up fails the tests: nothing skips.
The reference is written on make services-up's single node (the environment `make test` sets).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cluster.harness import CLUSTER_DIR, REPO, Cluster, cluster_env, run_script, using_env
from tests.end_state import State, drop_bucket, read_cassandra_state
from tests.test_crash import documents

# The documents of every test: tests/test_crash.py's, less the spreadsheet (it embeds the time it was made)
# and the slowest formats, so that a whole pass takes seconds; one has 12 pages, long enough to be hit mid-way.
KEYS = ["report.pdf", "chapters.pdf", "handbook.docx", "page.html", "notes.md", "cities.csv"]
TIMINGS: dict[str, float] = {}


def docs() -> dict[str, tuple[bytes, str]]:
    every = documents()
    return {k: every[k] for k in KEYS}


NODE_LOG_LINES = 15


def node_warnings() -> str:
    """The last warnings and errors of each Cassandra node's system.log: what a failed cluster test needs
    beside its traceback, since the nodes' folders go with the clone."""
    out = []
    for log in sorted(CLUSTER_DIR.glob("cassandra*/logs/system.log")):
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.startswith(("WARN", "ERROR"))]
        out.append(f"{log.parent.parent.name}: {len(lines)} warnings and errors, the last {NODE_LOG_LINES}:")
        out.extend(line[:300] for line in lines[-NODE_LOG_LINES:])
    return "\n".join(out) or f"no Cassandra node logs under {CLUSTER_DIR}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.sections.append(("Cassandra nodes of the cluster", node_warnings()))


@dataclass
class Reference:
    workspace: str
    bucket: str
    state: State


@pytest.fixture(scope="package")
def services_env() -> dict[str, str]:
    """make services-up's single node, as `make test` names it (read before the cluster fixture changes os.environ)."""
    env = dict(os.environ)
    missing = [v for v in ("CASSANDRA_HOST", "AWS_ENDPOINT_URL_S3") if not env.get(v)]
    if missing:
        pytest.fail(f"the reference needs make services-up's servers: {missing} not set (run make test)", pytrace=False)
    return env


@pytest.fixture(scope="package")
def tag() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture(scope="package")
def reference_process(services_env, tag, tmp_path_factory) -> Iterator[tuple[subprocess.Popen, str, str, float]]:
    """The one-node reference, written by a process of its own while the cluster starts."""
    folder = tmp_path_factory.mktemp("cluster-docs")
    for doc_id, (data, _) in docs().items():
        (folder / doc_id).write_bytes(data)
    (folder / "kinds.json").write_text(json.dumps({k: kind for k, (_, kind) in docs().items()}))
    workspace, bucket = f"udc_{tag}_reference", f"udcluster-{tag}-reference"
    log = folder / "reference.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.cluster.reference", str(folder), workspace, bucket],
            cwd=REPO,
            env={**services_env, "PYTHONPATH": str(REPO)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process, workspace, bucket, time.monotonic()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        with using_env(services_env):
            drop_bucket(bucket)
            _drop_workspace(workspace)


@pytest.fixture(scope="package")
def cluster(reference_process) -> Iterator[Cluster]:
    """The deployment, up for the whole package and down at its end; os.environ names it meanwhile."""
    from dagster import DagsterInstance

    started = time.monotonic()
    try:
        run_script("up.sh")
        TIMINGS["cluster up"] = time.monotonic() - started
        env = cluster_env()
        with using_env(env):
            instance = DagsterInstance.get()
            try:
                yield Cluster(env=env, instance=instance)
            finally:
                instance.dispose()
    finally:
        started = time.monotonic()
        run_script("down.sh")
        TIMINGS["cluster down"] = time.monotonic() - started
        print("\ncluster timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in TIMINGS.items()))


@pytest.fixture(scope="package")
def reference(cluster, reference_process, services_env) -> Reference:
    """The documents decoded on the single node: its whole end state."""
    process, workspace, bucket, started = reference_process
    try:
        process.wait(timeout=600)
    except subprocess.TimeoutExpired:
        pytest.fail("the one-node reference did not finish within 600 s", pytrace=False)
    log = Path(process.args[3]) / "reference.log"  # type: ignore[index]
    assert process.returncode == 0, f"the one-node reference failed:\n{log.read_text()[-4000:]}"
    TIMINGS["one-node reference (beside the cluster's start)"] = time.monotonic() - started
    with using_env(services_env):
        state = read_cassandra_state(workspace, bucket)
    assert state.failures == {} and len(state.documents) > 2 * len(KEYS), state.counts()
    return Reference(workspace, bucket, state)


def _drop_workspace(workspace: str) -> None:
    """Best effort: the rows and keyspace of a workspace of these tests."""
    from resources.cassandra.connection import CassandraConfig, acquire
    from resources.cassandra.triples import keyspace_for

    try:
        c = acquire(CassandraConfig.from_env())
    except Exception:
        return
    try:
        for table in ("document", "upload_log", "record_generation", "record_failure"):
            c.execute(f"DELETE FROM librarian.{table} WHERE workspace = ?", (workspace,))
        c.ddl(f'DROP KEYSPACE IF EXISTS "{keyspace_for(workspace)}"', "dropping a test keyspace")
    except Exception:
        pass
    finally:
        c.release()


@pytest.fixture(scope="package")
def places(cluster, tag) -> Iterator[Callable[[str], tuple[str, str]]]:
    """A workspace and a bucket of the cluster per purpose, uploaded with the documents; dropped at the end."""
    from resources.settings import open_librarian
    from tests.defs.test_assets import upload

    made: list[tuple[str, str]] = []

    def make(purpose: str) -> tuple[str, str]:
        workspace, bucket = f"udc_{tag}_{purpose}", f"udcluster-{tag}-{purpose}"
        lib = open_librarian(_settings(workspace, bucket))
        try:
            upload(lib, docs())
        finally:
            lib.close()
        made.append((workspace, bucket))
        return workspace, bucket

    yield make
    for workspace, bucket in made:
        drop_bucket(bucket)
        _drop_workspace(workspace)


def _settings(workspace: str, bucket: str):
    from resources.settings import load_settings

    return load_settings(backend="cassandra", workspace=workspace, bucket=bucket)
