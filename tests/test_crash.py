"""Real crashes: a server SIGKILLed in the middle of a pass, restarted with the project's script.

Each test materializes a batch of ordinary documents one run each through the project's job,
kills MinIO or Cassandra with SIGKILL while a document is being written (no stop script: nothing
gets flushed or drained), restarts it with scripts/services/up.sh as `make services-up` would, and
re-runs the partitions that failed. Once the server answers again, one pass must be enough, and
the end state must equal, exactly, an undisturbed run of the same documents in another workspace
and bucket: document rows, stored objects and their bytes, generation records, both triple
tables, an empty failure ledger. That reference was written before the crash, so it must also
read back unchanged afterwards: a restart must not lose what was acknowledged long before.

The servers are the ones the environment names (scripts/services/env.sh, set by `make test`).
A test only kills a server whose pid file, in this checkout's .services (or UD_SERVICES_DIR), is
the process listening on the environment's port; it never touches one another checkout started.
Whatever happens, the servers are running again when a test ends: the rest of the suite needs them.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import dagster as dg
import pytest

from tests import docgen
from tests.defs.test_assets import ASSETS, run, upload
from tests.end_state import State, assert_same_state, drop_bucket, pinned_time, read_cassandra_state
from ud_assets.decoding import detect
from ud_assets.defs.resources import LibrarianResource

REPO = Path(__file__).resolve().parent.parent
SERVICES_DIR = Path(os.environ.get("UD_SERVICES_DIR") or REPO / ".services")

DOCUMENTS: dict[str, tuple[Callable[[], bytes], str]] = {
    "report.pdf": (docgen.pdf_with_text_and_image, detect.PDF),
    "chapters.pdf": (lambda: docgen.pdf_text(12), detect.PDF),
    "handbook.docx": (docgen.docx_with_headings_table_picture, detect.DOCX),
    "slides.pptx": (docgen.pptx_with_picture, detect.PPTX),
    "sales.xlsx": (docgen.xlsx, detect.XLSX),
    "page.html": (docgen.html_with_data_uri_image, detect.HTML),
    "book.epub": (docgen.epub_with_image, detect.EPUB),
    "letter.odt": (docgen.odt, detect.ODT),
    "notes.md": (docgen.markdown, detect.MARKDOWN),
    "cities.csv": (docgen.csv_utf16, detect.CSV),
    "mail.eml": (docgen.eml_with_image_attachment, detect.EML),
}
KEYS = list(DOCUMENTS)  # the order of a pass


@functools.cache
def documents() -> dict[str, tuple[bytes, str]]:
    """The bytes, made once: the reference and the crashed runs decode the very same (xlsx embeds a time)."""
    return {k: (make(), kind) for k, (make, kind) in DOCUMENTS.items()}


KILL_AT = "handbook.docx"  # the kill lands while this document is being written: mid-pass
RESTART_TIMEOUT = 300


# -- the servers of this environment --------------------------------------------------------


def _listener_pids(port: int) -> set[int]:
    out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True).stdout
    return {int(pid) for pid in re.findall(r"pid=(\d+)", out)}


def _answers(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@dataclass
class Server:
    """One server of scripts/services/up.sh, as the environment names it."""

    name: str
    port: int
    pidfile: Path
    marker: str  # a path only this checkout's server has on its command line (as live_pid checks)

    def pid(self) -> int:
        """The server's pid, if it is the one this checkout's scripts started; else the test fails."""
        text = self.pidfile.read_text().strip() if self.pidfile.exists() else ""
        pid = int(text) if text.isdigit() else 0
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode() if pid else ""
        except OSError:
            cmdline = ""
        if not pid or pid not in _listener_pids(self.port) or self.marker not in cmdline:
            pytest.fail(
                f"the {self.name} on port {self.port} was not started by this checkout's scripts/services "
                f"(no live pid in {self.pidfile}); refusing to kill it. Stop it where it was started "
                "(make services-down there) so that this checkout's `make test` starts its own.",
                pytrace=False,
            )
        return pid

    def command_line(self) -> str:
        return Path(f"/proc/{self.pid()}/cmdline").read_bytes().replace(b"\0", b" ").decode()

    def kill(self) -> None:
        """SIGKILL, as a crash would: no drain, no flush."""
        pid = self.pid()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _alive(pid) or _answers(self.port):
            assert time.monotonic() < deadline, f"{self.name} (pid {pid}) still there 30 s after SIGKILL"
            time.sleep(0.05)


def cassandra_server() -> Server:
    run = SERVICES_DIR / "cassandra"
    return Server(
        "Cassandra",
        int(os.environ.get("CASSANDRA_PORT") or 9042),
        run / "cassandra.pid",
        f"-Dcassandra.storagedir={run}/data",
    )


def require_crash_safe_cassandra(server: Server) -> None:
    """A node started with the settings of an older scripts/services loses data when killed: say so first."""
    conf = SERVICES_DIR / "cassandra" / "conf" / "cassandra.yaml"
    unsafe = [flag for flag in ("-Dcassandra.unsafesystem=true",) if flag in server.command_line()]
    if conf.exists() and re.search(r"^commitlog_sync:\s*periodic", conf.read_text(), re.M):
        unsafe.append("commitlog_sync: periodic")
    if unsafe:
        pytest.fail(
            f"the Cassandra on port {server.port} runs with {', '.join(unsafe)}, under which a crash loses "
            "acknowledged data; restart it with the current settings: make services-down && make services-up",
            pytrace=False,
        )


def minio_server() -> Server:
    endpoint = urlparse(os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or "")
    run = SERVICES_DIR / "minio"
    return Server("MinIO", endpoint.port or 9000, run / "minio.pid", f"{run}/data")


def services_env() -> dict[str, str]:
    """up.sh's variables for the servers the test environment names (env.sh in reverse)."""
    env = dict(os.environ)
    env["UD_SERVICES_DIR"] = str(SERVICES_DIR)
    env["UD_S3_PORT"] = str(minio_server().port)
    env["UD_CASSANDRA_PORT"] = str(cassandra_server().port)
    for ud, aws in (
        ("UD_S3_ACCESS_KEY", "AWS_ACCESS_KEY_ID"),
        ("UD_S3_SECRET_KEY", "AWS_SECRET_ACCESS_KEY"),
        ("UD_S3_REGION", "AWS_DEFAULT_REGION"),
    ):
        if os.environ.get(aws):
            env[ud] = os.environ[aws]
    if os.environ.get("CASSANDRA_USERNAME"):
        env["UD_CASSANDRA_AUTH"] = "password"
    # The inter-node port is in no client variable: the running node's configuration has it.
    conf = SERVICES_DIR / "cassandra" / "conf" / "cassandra.yaml"
    found = re.search(r"^storage_port:\s*(\d+)", conf.read_text(), re.M) if conf.exists() else None
    if found and "UD_CASSANDRA_STORAGE_PORT" not in os.environ:
        env["UD_CASSANDRA_STORAGE_PORT"] = found.group(1)
    return env


def services_up(env: dict[str, str] | None = None) -> None:
    """scripts/services/up.sh, which `make services-up` runs (it leaves running servers alone)."""
    done = subprocess.run(
        ["scripts/services/up.sh"],
        cwd=REPO,
        env=env or services_env(),
        capture_output=True,
        text=True,
        timeout=RESTART_TIMEOUT,
    )
    assert done.returncode == 0, f"scripts/services/up.sh failed:\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def servers_restored(graph_cassandra_run):
    """The servers run again after this module, whatever happened in it."""
    if graph_cassandra_run.error:
        pytest.fail(graph_cassandra_run.error, pytrace=False)
    env = services_env()  # read now: a killed node's configuration is still on disk, but be safe
    yield env
    if not (_answers(cassandra_server().port) and _answers(minio_server().port)):
        services_up(env)


# -- passes ----------------------------------------------------------------------------------


def one_pass(resource: LibrarianResource, instance, keys: list[str]) -> dict[str, str]:
    """One run per document, in order; the documents whose run failed, with the failure."""
    failed = {}
    for key in keys:
        result = run(resource, instance, [key])
        if not result.success:
            events = result.get_step_failure_events()
            failed[key] = events[0].step_failure_data.error.message[:300] if events else "run failed"
    return failed


def materialize(resource: LibrarianResource, instance) -> None:
    lib = resource.get()
    upload(lib, documents())
    with pinned_time():
        failed = one_pass(resource, instance, KEYS)
    assert failed == {}, f"an undisturbed pass failed: {failed}"


@dataclass
class Reference:
    workspace: str
    bucket: str
    state: State


@pytest.fixture(scope="module")
def buckets() -> Iterator[Callable[[str], str]]:
    """Buckets of this module's own, so that every object in one is accounted for; removed at its end."""
    made: list[str] = []
    tag = uuid.uuid4().hex[:8]

    def make(purpose: str) -> str:
        made.append(f"udcrash-{tag}-{purpose}")
        return made[-1]

    yield make
    for bucket in made:
        drop_bucket(bucket)


@pytest.fixture(scope="module")
def reference(servers_restored, graph_cassandra_run, buckets) -> Reference:
    """The documents materialized undisturbed, before any crash, in a workspace and bucket of their own."""
    workspace, bucket = graph_cassandra_run.new_workspace(), buckets("reference")
    with dg.instance_for_test() as instance:
        materialize(LibrarianResource(backend="cassandra", workspace=workspace, bucket=bucket), instance)
    state = read_cassandra_state(workspace, bucket)
    assert len(state.documents) > 2 * len(KEYS) and state.quads and state.failures == {}, state.counts()
    print(f"reference: {state.counts()}")
    return Reference(workspace, bucket, state)


class Crash:
    """Kills a server with SIGKILL when a given document starts being written, then restarts it."""

    def __init__(self, server: Server, env: dict[str, str], delay: float = 0.05, down_for: float = 0.0):
        self.server, self.env, self.delay, self.down_for = server, env, delay, down_for
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.killed_at = self.ready_at = 0.0
        self.pid = server.pid()  # ours, or the test fails before anything happened

    def hook(self, module, name: str, document_id: str) -> Callable:
        """A wrapper of module.name (a stage) that sets the crash off when document_id reaches it."""
        real = getattr(module, name)

        def stage(attempt, *args, **kwargs):
            if attempt.document_id == document_id and self.thread is None:
                self.thread = threading.Thread(target=self._crash_and_restart, name="crash", daemon=True)
                self.thread.start()
            return real(attempt, *args, **kwargs)

        return stage

    def _crash_and_restart(self) -> None:
        try:
            time.sleep(self.delay)  # the stage is writing by now
            self.server.kill()
            self.killed_at = time.monotonic()
            time.sleep(self.down_for)
            services_up(self.env)
            self.ready_at = time.monotonic()
        except BaseException as e:
            self.error = e

    def wait(self) -> None:
        assert self.thread is not None, f"the pass never reached {KILL_AT}: no crash happened"
        self.thread.join(RESTART_TIMEOUT + 60)
        assert not self.thread.is_alive(), "the server was not back in time"
        if self.error is not None:
            raise self.error


def crash_mid_pass(
    server: Server, env: dict[str, str], stage: str, workspace: str, bucket: str, down_for: float
) -> dict:
    """Materialize KEYS one run each, SIGKILL the server mid-pass, restart it, re-run the failures.

    Returns what happened (for the report); asserts that one pass after the restart converged."""
    import ud_assets.processing.runner as runner

    resource = LibrarianResource(backend="cassandra", workspace=workspace, bucket=bucket)
    upload(resource.get(), documents())
    crash = Crash(server, env, down_for=down_for)
    with dg.instance_for_test() as instance:
        try:
            with pinned_time(), pytest.MonkeyPatch.context() as patch:
                patch.setattr(runner, stage, crash.hook(runner, stage, KILL_AT))
                started = time.monotonic()
                first = one_pass(resource, instance, KEYS)
                ended = time.monotonic()
        finally:
            if crash.thread is not None:
                crash.thread.join(RESTART_TIMEOUT + 60)
            if not _answers(server.port):
                services_up(env)
        crash.wait()
        print(
            f"{server.name} killed {crash.killed_at - started:.1f} s into the pass, back {crash.ready_at - crash.killed_at:.1f} s later"
        )
        for key, error in first.items():
            print(f"  failed in the pass: {key}: {error[:200]}")
        assert started < crash.killed_at < ended, "the kill did not land inside the pass"
        # The server answers again (up.sh waited for it): one more pass over the failures converges.
        with pinned_time():
            second = one_pass(resource, instance, list(first))
        assert second == {}, f"{len(second)} documents still failing after the restart: {second}"
        for asset in ASSETS:
            assert instance.get_materialized_partitions(dg.AssetKey(asset)) == set(KEYS), asset
    return {"failed_in_pass": first, "down_s": crash.ready_at - crash.killed_at}


def assert_failed_from_kill_on(outcome: dict) -> None:
    """The kill made the pass fail, from the document it landed in or the next: never before it.

    Which document sees the server gone depends on how much of its writing the kill's short delay
    let through (a small document's objects can all be stored before the process dies)."""
    failed = outcome["failed_in_pass"]
    assert failed, f"no document failed although the server was killed mid-pass: {outcome}"
    first = min(KEYS.index(key) for key in failed)
    assert first >= KEYS.index(KILL_AT), f"{KEYS[first]} failed before the kill: {outcome}"


def check_end_state(workspace: str, bucket: str, reference: Reference) -> None:
    assert_same_state(read_cassandra_state(workspace, bucket), reference.state, "after the crash")
    # Written before the crash, in another workspace and bucket: all still there, unchanged.
    assert_same_state(read_cassandra_state(reference.workspace, reference.bucket), reference.state, "the reference")


@pytest.mark.services
@pytest.mark.timeout(900)
def test_cassandra_killed_mid_pass_loses_nothing_and_converges(
    servers_restored, reference, graph_cassandra_run, buckets
):
    require_crash_safe_cassandra(cassandra_server())
    workspace, bucket = graph_cassandra_run.new_workspace(), buckets("cassandra")
    outcome = crash_mid_pass(cassandra_server(), servers_restored, "provenance_stage", workspace, bucket, down_for=0.0)
    assert_failed_from_kill_on(outcome)  # the server went away under it
    check_end_state(workspace, bucket, reference)


@pytest.mark.services
@pytest.mark.timeout(900)
def test_minio_killed_mid_pass_loses_nothing_and_converges(
    servers_restored, reference, graph_cassandra_run, buckets, monkeypatch
):
    workspace, bucket = graph_cassandra_run.new_workspace(), buckets("minio")
    # Down for 5 s, longer than the job's own retries of an unavailable store with a client that
    # tries each request twice (boto3's five attempts can outlast such a restart): the document
    # being written fails, and its re-run is part of the test.
    monkeypatch.setenv("UD_S3_MAX_ATTEMPTS", "2")
    outcome = crash_mid_pass(minio_server(), servers_restored, "sections_stage", workspace, bucket, down_for=5.0)
    assert_failed_from_kill_on(outcome)  # the server went away under it
    check_end_state(workspace, bucket, reference)
