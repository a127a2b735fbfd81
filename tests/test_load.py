"""Load: 1,000 uploads picked up by the sensor and decoded by batched runs through the run queue.

Real processes, as in production on one machine: dagster-daemon evaluates the sensor and
dequeues runs within dagster.yaml's limits, and each run worker decodes a batch.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from resources.settings import load_settings, open_librarian
from ud_assets.processing.model import GENERATION_TAG

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS = 1000


def _document(i: int) -> tuple[str, bytes, str]:
    kind = i % 3
    if kind == 0:
        return (
            f"load-{i:04d}.md",
            f"# Note {i}\n\nBody of note {i}.\n\n## Part\n\nMore text {i}.\n".encode(),
            "text/markdown",
        )
    if kind == 1:
        return f"load-{i:04d}.txt", f"Plain text document number {i}.\n\nSecond paragraph.\n".encode(), "text/plain"
    return f"load-{i:04d}.csv", f"id,value\n{i},{i * 2}\n".encode(), "text/csv"


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_a_thousand_uploads_through_the_sensor_and_the_run_queue(tmp_path):
    home, dagster_home = tmp_path / "ud", tmp_path / "dagster_home"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CASSANDRA_", "UD_"))}
    env.update(
        DAGSTER_HOME=str(dagster_home),
        UD_HOME=str(home),
        UD_BATCH_SIZE="100",
        DO_NOT_TRACK="true",
        PYTHONPATH=str(REPO),
    )
    settings = load_settings(env=env)
    with open_librarian(settings) as lib:
        for i in range(DOCUMENTS):
            doc_id, data, kind = _document(i)
            lib.add_document(doc_id, kind, data, title=doc_id)

    daemon = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w", "workspace.yaml"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with open_librarian(settings) as lib:
            deadline = time.time() + 900
            while time.time() < deadline:
                done = len(lib.list_generations())
                if done == DOCUMENTS:
                    break
                assert daemon.poll() is None, "dagster-daemon stopped"
                time.sleep(5)
            assert len(lib.list_generations()) == DOCUMENTS, f"only {done} of {DOCUMENTS} decoded in time"
            for i in range(DOCUMENTS):
                doc_id = _document(i)[0]
                generation = lib.get_generation(doc_id)
                children = lib.list_children(doc_id)
                assert children and all(GENERATION_TAG + generation.fingerprint in c.tags for c in children), doc_id
                assert len({c.id for c in children}) == len(children)
            assert lib.list_failures() == []
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait()

    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"ud/decode": "true"}))
        assert runs and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        assert len(runs) <= DOCUMENTS // 100 + 2  # batched, not one run per document
        spans = [
            (instance.get_run_record_by_id(r.run_id).start_time, instance.get_run_record_by_id(r.run_id).end_time)
            for r in runs
        ]
        for start, _end in spans:  # the run queue kept at most two decoding runs at once
            assert sum(1 for s, e in spans if s <= start < e) <= 2
