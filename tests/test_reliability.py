"""Failures that lose nothing: a run killed mid-write and an object store that goes away."""

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from tests import docgen
from tests.defs.test_assets import run, upload
from tests.end_state import assert_same_state, pinned_time, read_state
from ud_assets.defs.resources import LibrarianResource

REPO = Path(__file__).resolve().parent.parent
# Whole documents decoded, killed and decoded again on both backends (the default limit is 120 s).
pytestmark = pytest.mark.timeout(600)

RUN_IN_CHILD = r"""
import sys, time, dagster as dg
import ud_assets.processing.images as images
real_store_images = images.images_stage
def slow_store_images(*args, **kwargs):  # holds the run mid-materialization so the kill lands there
    time.sleep(60)
    return real_store_images(*args, **kwargs)
images.images_stage = slow_store_images
from ud_assets.defs.resources import LibrarianResource
from resources.settings import reset_shared
from tests.defs.test_assets import run
backend, home, workspace, bucket, dagster_home = sys.argv[1:6]
import os; os.makedirs(dagster_home, exist_ok=True)
resource = LibrarianResource(backend=backend, home=home, workspace=workspace, bucket=bucket)
with dg.instance_for_test(temp_dir=dagster_home) as instance:
    run(resource, instance, ["big.pdf"])
"""


def test_a_run_killed_mid_write_converges_on_re_run(isolated_librarian, tmp_path):
    data = docgen.pdf_text(40)  # enough pages that the kill lands between its pages and the rest
    reference = isolated_librarian("reference")
    upload(reference.get(), {"big.pdf": (data, "application/pdf")})
    with dg.instance_for_test() as instance, pinned_time():
        assert run(reference, instance, ["big.pdf"], raise_on_error=True).success
    expected = read_state(reference)
    kinds = Counter(row[0] for row in expected.documents.values())
    assert kinds == {"source": 1, "page": 40, "chunk": 40} and expected.failures == {}, expected.counts()

    killed = isolated_librarian("killed")
    lib = killed.get()
    upload(lib, {"big.pdf": (data, "application/pdf")})
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            RUN_IN_CHILD,
            killed.backend,
            killed.home or "",
            killed.workspace,
            killed.bucket or "",
            str(tmp_path / "dh"),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 240
        while time.time() < deadline and len(lib.list_children("big.pdf")) < 5:
            assert child.poll() is None, "the run ended before it could be killed"
            time.sleep(0.05)
        os.killpg(child.pid, signal.SIGKILL)  # mid-materialization: pages stored, the rest not
    finally:
        child.wait()
    # Killed after its pages were stored and before the generation was complete.
    assert lib.list_children("big.pdf") and lib.get_generation("big.pdf") is None

    with dg.instance_for_test() as instance, pinned_time():
        assert run(killed, instance, ["big.pdf"], raise_on_error=True).success
    # Exactly the undisturbed run's rows, objects and triples: nothing left over from the killed run.
    assert_same_state(read_state(killed), expected, "after the killed run's re-run")
    lib.remove_document("big.pdf")
    after_removal = read_state(killed)
    assert (after_removal.documents, after_removal.unreferenced) == ({}, set())
    # What stays is shared by every document: the two software agents' own description.
    assert {q[2] for q in after_removal.quads} == {
        "https://trustgraph.ai/agent/chunker",
        "https://trustgraph.ai/agent/universal-decoder",
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _minio_binary() -> str:
    out = subprocess.run(
        ["bash", "-c", "source scripts/services/lib.sh >/dev/null; echo $MINIO_BIN"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


class PrivateMinio:
    """A MinIO of this test's own, to stop and restart without disturbing the shared one."""

    def __init__(self, data: Path):
        self.port, self.data, self.process = _free_port(), data, None

    def start(self):
        env = {
            **os.environ,
            "MINIO_ROOT_USER": os.environ["AWS_ACCESS_KEY_ID"],
            "MINIO_ROOT_PASSWORD": os.environ["AWS_SECRET_ACCESS_KEY"],
        }
        self.process = subprocess.Popen(
            [_minio_binary(), "server", "--quiet", "--address", f"127.0.0.1:{self.port}", str(self.data)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("private MinIO did not start")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def private_minio(tmp_path, monkeypatch, graph_cassandra_run):
    if graph_cassandra_run.error:
        pytest.fail(graph_cassandra_run.error, pytrace=False)
    server = PrivateMinio(tmp_path / "minio")
    server.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{server.port}")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    yield server
    server.stop()


OUTAGE_DOCUMENTS = {
    "report.pdf": (docgen.pdf_with_text_and_image, "application/pdf"),
    "notes.md": (docgen.markdown, "text/markdown"),
}


def materialized_reference(workspace: str, bucket: str, documents: dict[str, tuple[bytes, str]]):
    """The documents materialized undisturbed in a workspace and bucket of their own: the end state to reach."""
    reference = LibrarianResource(backend="cassandra", workspace=workspace, bucket=bucket)
    upload(reference.get(), documents)
    with dg.instance_for_test() as instance, pinned_time():
        assert run(reference, instance, sorted(documents), raise_on_error=True).success
    state = read_state(reference)
    assert state.quads and state.failures == {}, state.counts()
    return state


def test_object_store_killed_mid_materialization_then_back_converges(
    private_minio, instance, graph_cassandra_run, monkeypatch
):
    import ud_assets.processing.images as images

    documents = {k: (make(), kind) for k, (make, kind) in OUTAGE_DOCUMENTS.items()}
    expected = materialized_reference(graph_cassandra_run.new_workspace(), "reference", documents)
    resource = LibrarianResource(backend="cassandra", workspace=graph_cassandra_run.new_workspace(), bucket="outage")
    lib = resource.get()
    upload(lib, documents)
    real_store_images = images.images_stage

    def store_images_then_lose_the_server(*args, **kwargs):
        private_minio.stop()  # SIGKILL: the object store goes away in the middle of the materialization
        return real_store_images(*args, **kwargs)

    monkeypatch.setattr(images, "images_stage", store_images_then_lose_the_server)
    with pinned_time():
        result = run(resource, instance, ["notes.md", "report.pdf"])
    assert not result.success
    [failure] = result.get_step_failure_events()
    assert f"127.0.0.1:{private_minio.port}" in failure.step_failure_data.error.message
    assert lib.get_generation("report.pdf") is None

    monkeypatch.setattr(images, "images_stage", real_store_images)
    private_minio.start()
    with pinned_time():
        assert run(resource, instance, ["notes.md", "report.pdf"], raise_on_error=True).success
    # Rows, objects, triples and an emptied failure ledger: exactly the undisturbed run's.
    assert_same_state(read_state(resource), expected, "after the object store came back")


def test_hostile_documents_fail_alone_with_a_named_cause_and_change_nothing(isolated_librarian, instance):
    from tests.decoding.test_limits import _declaring, _package

    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    bomb = _declaring(
        _package({"[Content_Types].xml": b"<Types/>", "word/document.xml": bytes(200_000)}),
        "word/document.xml",
        2 * 1024**3,
    )
    hostile = {
        "bomb.docx": (bomb, docx, "zip bomb"),
        "locked.pdf": (docgen.pdf_encrypted(), "application/pdf", "password"),
        "lying.pdf": (docgen.docx_with_headings_table_picture(), "application/pdf", "declared as"),
        "noise.docx": (docgen.random_bytes(), docx, "declared as"),
        "truncated.pdf": (docgen.pdf_truncated(), "application/pdf", "could not be parsed"),
        "nested.html": (
            b"<html><body>" + b"<div>" * 100_000 + b"deep" + b"</div>" * 100_000 + b"</body></html>",
            "text/html",
            "nested more than",
        ),
    }
    good = {"good.md": (docgen.markdown(), "text/markdown")}
    reference = isolated_librarian("reference")  # good.md decoded alone
    upload(reference.get(), good)
    with dg.instance_for_test() as reference_instance, pinned_time():
        assert run(reference, reference_instance, ["good.md"], raise_on_error=True).success
    expected = read_state(reference)

    resource = isolated_librarian("hostile")
    lib = resource.get()
    upload(lib, good)
    upload(lib, {k: (data, kind) for k, (data, kind, _) in hostile.items()})
    with pinned_time():
        run(resource, instance, sorted(["good.md", *hostile]))
    state = read_state(resource)
    assert set(state.failures) == set(hostile)
    for doc_id, (_data, _kind, cause) in hostile.items():
        assert cause in state.failures[doc_id].lower(), (doc_id, state.failures[doc_id])
    # Beside the hostile documents' own source rows, exactly what good.md decoded alone stores.
    decoded = {i: row for i, row in state.documents.items() if i not in hostile}
    assert decoded == expected.documents and state.quads == expected.quads
    assert state.generations == expected.generations and state.unreferenced == set()
