"""Real crashes at kill points: a server, or the run's own process, SIGKILLed at an observed event.

A kill point is a stage's Nth storage write in the run's process (resources/faults.py, enabled by
UD_FAULTS in that process's environment): never a sleep. For every stage (document, elements,
sections, images, provenance_triples, chunks) and every target (Cassandra's JVM, MinIO, the run's
own process, tests/crash_child.py), one document is materialized in a child process until the
stage reaches its kill point; there the target is SIGKILLed (no stop script: nothing gets flushed
or drained), restarted with scripts/services/up.sh as `make services-up` would (a killed run's
process is simply started again), and the document is run again. The kill points of one target
run as one batch, with one restart each, and the batch's end state must equal, exactly, an
undisturbed run of the same documents in another workspace and bucket (tests/end_state.py): the
upload log in order, every document column but times, child rows, objects and their bytes,
generation records, both triple tables, an empty failure ledger. That reference was written before
the kills, so it must also read back unchanged: a restart must not lose what was acknowledged.

The servers are the ones the environment names (scripts/services/env.sh, set by `make test`).
A test only kills a server whose pid file, in this checkout's .services (or UD_SERVICES_DIR), is
the process listening on the environment's port; it never touches one another checkout started.
Whatever happens, the servers are running again when a test ends: the rest of the suite needs them.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import dagster as dg
import pytest

from tests import crash_child, docgen
from tests.defs.test_assets import run, upload
from tests.end_state import (
    State,
    assert_same_state,
    document_slice,
    drop_bucket,
    pinned_time,
    read_cassandra_state,
)
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


# -- kill points -------------------------------------------------------------------------------

# One kill point per stage, each in a document of its own: the stage's Nth storage write (its Nth
# call of any kind for `document`, which only reads), counted by resources/faults.py in the run's
# process. The document is one in which the stage has that much to write.
KILL_POINTS: list[tuple[str, str, dict]] = [
    ("document", "notes.md", {"nth": 1, "reads": True}),  # the source row read, its bytes not yet
    ("elements", "page.html", {"nth": 1}),  # the elements object stored, nothing after it
    ("sections", "chapters.pdf", {"nth": 2}),  # the second of twelve page objects stored
    ("images", "handbook.docx", {"nth": 1}),  # the first image object stored
    ("provenance_triples", "slides.pptx", {"nth": 1}),  # the triples stored, the generation not committed
    ("chunks", "report.pdf", {"nth": 2}),  # the chunks' second write (objects, rows, triples)
]
STAGES = [stage for stage, _, _ in KILL_POINTS]
BATCH = [key for _, key, _ in KILL_POINTS]  # the documents of a batch, in order
TARGETS = ["cassandra", "minio", "process"]
ANSWER_TIMEOUT = 300


def one_pass(resource: LibrarianResource, instance, keys: list[str]) -> dict[str, str]:
    """One run per document, in order; the documents whose run failed, with the failure."""
    failed = {}
    for key in keys:
        result = run(resource, instance, [key])
        if not result.success:
            events = result.get_step_failure_events()
            failed[key] = events[0].step_failure_data.error.message[:300] if events else "run failed"
    return failed


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


def upload_batch(resource: LibrarianResource) -> None:
    docs = documents()
    upload(resource.get(), {key: docs[key] for key in BATCH})


@pytest.fixture(scope="module")
def reference(servers_restored, graph_cassandra_run, buckets) -> Reference:
    """The batch materialized undisturbed, before any crash, in a workspace and bucket of their own."""
    workspace, bucket = graph_cassandra_run.new_workspace(), buckets("reference")
    resource = LibrarianResource(backend="cassandra", workspace=workspace, bucket=bucket)
    upload_batch(resource)
    with dg.instance_for_test() as instance, pinned_time():
        failed = one_pass(resource, instance, BATCH)
    assert failed == {}, f"an undisturbed pass failed: {failed}"
    state = read_cassandra_state(workspace, bucket)
    assert len(state.documents) > 2 * len(BATCH) and state.quads and state.failures == {}, state.counts()
    assert [u[:2] for u in state.uploads] == [(key, "added") for key in BATCH], state.uploads
    print(f"reference: {state.counts()}, {len(state.uploads)} upload log events")
    return Reference(workspace, bucket, state)


class Child:
    """The run's own process (tests/crash_child.py), with UD_FAULTS naming its kill-point file."""

    def __init__(
        self,
        workspace: str,
        bucket: str,
        env: dict[str, str],
        fault_file: Path,
        log: Path,
        dagster_home: Path | None = None,
    ):
        self.fault_file = fault_file
        env = {**env, "UD_FAULTS": str(fault_file), "UD_S3_MAX_ATTEMPTS": "2"}
        self.stderr = log.open("a")
        spec = {"workspace": workspace, "bucket": bucket}
        if dagster_home is not None:
            spec["dagster_home"] = str(dagster_home)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.crash_child", json.dumps(spec)],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )
        self.answers: queue.Queue[dict | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self.answer()
        assert ready is not None and "ready" in ready, f"the child did not start; see {log}"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(crash_child.PREFIX):
                self.answers.put(json.loads(line[len(crash_child.PREFIX) :]))
        self.answers.put(None)  # its stdout ended: it exited or was killed

    def answer(self, timeout: float = ANSWER_TIMEOUT) -> dict | None:
        return self.answers.get(timeout=timeout)

    def send(self, key: str | list[str], arm: dict | None = None) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"run": key, "arm": arm}) + "\n")
        self.proc.stdin.flush()

    def run(self, key: str) -> dict:
        """A run of key; a run that failed because a server was still reconnecting is tried again."""
        answer: dict | None = None
        for attempt in range(4):
            if attempt:
                time.sleep(5)
            self.send(key)
            answer = self.answer()
            assert answer is not None, "the child died in an undisturbed run"
            if answer["success"]:
                break
        assert answer is not None
        return answer

    def wait_for_kill_point(self) -> tuple[dict | None, dict | None]:
        """(the event the kill point wrote, None) once it fires; (None, the run's answer) if the run ended first."""
        while True:
            if self.fault_file.exists():
                return json.loads(self.fault_file.read_text()), None
            try:
                answer = self.answers.get(timeout=0.02)
            except queue.Empty:
                continue
            if self.fault_file.exists():  # it fired, then the child went on or died
                return json.loads(self.fault_file.read_text()), answer
            return None, answer

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


@dataclass
class Kill:
    """What happened at one kill point."""

    stage: str
    key: str
    event: dict | None = None  # what the hook wrote when it fired
    killed: str = ""  # what was killed, and how we know it died
    first: dict | None = None  # the interrupted run's answer (None: its process was killed)
    rerun: dict | None = None  # the run after the restart


@dataclass
class Batch:
    target: str
    kills: dict[str, Kill]
    seconds: float
    state_error: str = ""  # the end state's difference from the reference ("" when equal)


def kill_servers_batch(server: Server, env: dict[str, str], workspace: str, bucket: str, tmp: Path) -> dict:
    """Each kill point in turn in one child: at the event the child waits, the server is SIGKILLed,
    the child goes on against it (its run fails, or ends if nothing of it was left to write there),
    the server is restarted with scripts/services/up.sh, and the child reruns the document."""
    kills = {}
    fault_file = tmp / f"fault-{server.name}"
    child = Child(workspace, bucket, env, fault_file, tmp / f"child-{server.name}.log")
    try:
        for stage, key, point in KILL_POINTS:
            kill = kills[stage] = Kill(stage, key)
            child.send(key, {**point, "stage": stage, "action": "pause"})
            kill.event, kill.first = child.wait_for_kill_point()
            if kill.event is None:
                continue  # never fired: the test of this kill point fails
            pid = server.pid()
            server.kill()
            kill.killed = f"{server.name} pid {pid} SIGKILLed, its port closed"
            fault_file.unlink()  # the child goes on, against the dead server
            if kill.first is None:
                kill.first = child.answer()
            services_up(env)
            kill.rerun = child.run(key)
    finally:
        fault_file.unlink(missing_ok=True)
        child.close()
        if not _answers(server.port):
            services_up(env)
    return kills


def kill_process_batch(env: dict[str, str], workspace: str, bucket: str, tmp: Path) -> dict:
    """Each kill point in a fresh child that SIGKILLs itself at the event; the next child reruns
    the killed document first, as a restarted run would."""
    kills: dict[str, Kill] = {}
    fault_file = tmp / "fault-process"
    log = tmp / "child-process.log"
    previous: Kill | None = None
    for stage, key, point in [*KILL_POINTS, ("", "", {})]:
        child = Child(workspace, bucket, env, fault_file, log)
        try:
            if previous is not None:
                previous.rerun = child.run(previous.key)
            if not stage:
                break
            kill = previous = kills[stage] = Kill(stage, key)
            child.send(key, {**point, "stage": stage, "action": "kill"})
            kill.event, kill.first = child.wait_for_kill_point()
            if kill.event is not None:
                if kill.first is None:
                    kill.first = child.answer()
                code = child.proc.wait(60)
                kill.killed = f"the run's process pid {child.proc.pid} exited with {code}"
                if code == -signal.SIGKILL:
                    kill.killed = f"the run's process pid {child.proc.pid} SIGKILLed"
        finally:
            fault_file.unlink(missing_ok=True)
            child.close()
    return kills


@pytest.fixture(scope="module")
def batches(servers_restored, reference, graph_cassandra_run, buckets, tmp_path_factory) -> Callable[[str], Batch]:
    """The batch of kill points of a target, run once (by its first test) and kept for the others."""
    done: dict[str, Batch] = {}

    def batch(target: str) -> Batch:
        if target in done:
            return done[target]
        workspace, bucket = graph_cassandra_run.new_workspace(), buckets(target)
        resource = LibrarianResource(backend="cassandra", workspace=workspace, bucket=bucket)
        upload_batch(resource)
        tmp = tmp_path_factory.mktemp(f"crash-{target}")
        started = time.monotonic()
        if target == "process":
            kills = kill_process_batch(servers_restored, workspace, bucket, tmp)
        else:
            server = cassandra_server() if target == "cassandra" else minio_server()
            if target == "cassandra":
                require_crash_safe_cassandra(server)
            kills = kill_servers_batch(server, servers_restored, workspace, bucket, tmp)
        outcome = done[target] = Batch(target, kills, time.monotonic() - started)
        try:
            assert_same_state(read_cassandra_state(workspace, bucket), reference.state, f"after the {target} kills")
            # Written before the kills, in another workspace and bucket: all still there, unchanged.
            assert_same_state(
                read_cassandra_state(reference.workspace, reference.bucket), reference.state, "the reference"
            )
        except AssertionError as e:
            outcome.state_error = str(e)
        print(f"{target}: {len(kills)} kill points in {outcome.seconds:.0f} s")
        for kill in kills.values():
            print(
                f"  {kill.stage} ({kill.key}): {kill.event}; {kill.killed}; first run {kill.first}; rerun {kill.rerun}"
            )
        return outcome

    return batch


@pytest.mark.services
@pytest.mark.timeout(900)
@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("target", TARGETS)
def test_a_kill_at_each_stage_loses_nothing_and_a_rerun_converges(batches, target, stage):
    """Killed at the stage's event, restarted, rerun: the end state is the undisturbed run's.

    Compared exactly with the reference (tests/end_state.py): the upload log in order with its
    events, every document column but times and object keys, the child rows, the objects' bytes,
    the generation records and elements objects, both triple tables and the collections, and an
    empty failure ledger; and the reference itself still reads back unchanged."""
    outcome = batches(target)
    kill = outcome.kills[stage]
    assert kill.event is not None, f"the kill point never fired: the run of {kill.key} ended with {kill.first}"
    assert kill.event["stage"] == stage, kill.event
    assert kill.killed, kill
    if target == "process":
        assert kill.first is None and "SIGKILLed" in kill.killed, kill  # it never answered: it died at the event
    assert kill.rerun is not None and kill.rerun["success"], f"the rerun after the restart failed: {kill.rerun}"
    assert outcome.state_error == "", outcome.state_error


@pytest.mark.services
@pytest.mark.timeout(900)
def test_a_server_kill_makes_runs_fail(batches):
    """The kills land: with a server gone under it, a run that had writes left fails (a kill point
    whose stage was the document's last use of the server may let its run succeed)."""
    for target in ("cassandra", "minio"):
        outcome = batches(target)
        failed = [stage for stage, kill in outcome.kills.items() if kill.first and not kill.first["success"]]
        assert len(failed) >= 3, f"{target}: only {failed} failed with the server killed under them"


# -- a batch whose documents write their triples together, killed ----------------------------

# The batch stores its documents side by side and their triples wait for each other's (a long
# linger: resources/grouped_inserts.py), so the provenance triples of several documents go in one
# write. It pauses right after the chunks stage's second triples write, and the test SIGKILLs the
# run's process once at least one document of the batch is recorded as materialized.
GROUPED_KILL_POINT = {"stage": "chunks", "part": "triples", "nth": 2, "action": "pause"}
GROUPED_ENV = {"UD_GROUP_LINGER_S": "30"}


def materialized(dagster_home: Path) -> set[str]:
    """The partitions a run in that instance recorded as materialized (any asset: a batch records a
    document's materializations only once the whole document is stored)."""
    with dg.DagsterInstance.local_temp(str(dagster_home)) as instance:
        records = instance.fetch_materializations(dg.AssetKey("document"), limit=1000).records
        return {r.asset_materialization.partition for r in records if r.asset_materialization}


GROUPED_ATTEMPTS = 6  # runs of the batch until one is killed in the state the test is about (2 in 3 are, measured)


@dataclass
class GroupedKill:
    """One killed run of the grouped batch: where it was stored, and what it had done."""

    workspace: str
    bucket: str
    done: set[str]  # the documents its Dagster instance recorded as materialized
    shared: list[list[str]]  # for each triples write before the kill, the documents whose quads it carried


def _kill_a_grouped_batch(
    attempt: int, subjects: dict[str, set[str]], servers_restored, graph_cassandra_run, buckets, tmp_path
) -> GroupedKill | str:
    """The batch in a run of its own process, SIGKILLed once it paused after the chunks stage's
    second triples write and recorded at least one document as materialized; or why this run
    could not be killed that way. subjects: each document's quad subjects (to tell whose quads a
    write carried)."""
    workspace, bucket = graph_cassandra_run.new_workspace(), buckets(f"grouped{attempt}")
    upload_batch(LibrarianResource(backend="cassandra", workspace=workspace, bucket=bucket))
    home, fault_file = tmp_path / f"dagster-{attempt}", tmp_path / f"fault-grouped-{attempt}"
    home.mkdir()
    env = {**servers_restored, **GROUPED_ENV}
    child = Child(workspace, bucket, env, fault_file, tmp_path / f"child-{attempt}.log", dagster_home=home)
    try:
        child.send(BATCH, {**GROUPED_KILL_POINT})
        event, answer = child.wait_for_kill_point()
        if event is None:
            # Every document's chunks went in one write: the batch ended before a second one.
            return f"the kill point never fired: the batch ended with {answer}"
        deadline = time.monotonic() + 120
        while not materialized(home) and time.monotonic() < deadline:
            time.sleep(0.1)
        child.proc.send_signal(signal.SIGKILL)
        assert child.proc.wait(60) == -signal.SIGKILL
    finally:
        fault_file.unlink(missing_ok=True)
        child.close()
    done = materialized(home)  # what the run recorded before it died, read again after the kill
    if not done:
        # The paused write held every document's last insert: none could be materialized.
        return f"no document of the batch was recorded as materialized before the kill (pid {child.proc.pid})"
    writes = [set(write) for stage_writes in event["triple_inserts"].values() for write in stage_writes]
    shared = [sorted(k for k in BATCH if subjects[k] & write) for write in writes]
    kill = GroupedKill(workspace, bucket, done, shared)
    if done == set(BATCH):
        return f"the whole batch was materialized before the kill: {sorted(done)}"
    if not any(len(keys) > 1 for keys in shared):
        # Each insert was written alone: the documents reached their triples too far apart (over
        # UD_GROUP_SETTLE_S) once the batch had started its last.
        return f"no triples write carried two documents' quads: {shared}"
    return kill


@pytest.mark.services
@pytest.mark.timeout(900)
def test_a_grouped_batch_killed_mid_run_keeps_what_it_materialized_and_a_rerun_converges(
    servers_restored, reference, graph_cassandra_run, buckets, tmp_path
):
    """SIGKILL in the middle of a batch that groups its documents' triple writes: every document
    the killed run recorded as materialized is stored whole (rows, objects, generation, quads equal
    to the undisturbed reference's), and a rerun of the batch ends in exactly the reference state.

    Whether documents meet in a write depends on how their parses and stores interleave, so the
    batch is run again (in a fresh workspace) until a run is killed after a write that carried
    several documents' quads and before the whole batch was materialized."""
    subjects = {key: {q[2] for q in document_slice(reference.state, key)["quads"]} for key in BATCH}
    missed: list[str] = []
    for attempt in range(1, GROUPED_ATTEMPTS + 1):
        outcome = _kill_a_grouped_batch(attempt, subjects, servers_restored, graph_cassandra_run, buckets, tmp_path)
        if isinstance(outcome, GroupedKill):
            break
        missed.append(outcome)
    else:
        pytest.fail(f"no run of {GROUPED_ATTEMPTS} was killed in the middle of a grouped batch: {missed}")
    killed = read_cassandra_state(outcome.workspace, outcome.bucket)
    for key in sorted(outcome.done):
        assert document_slice(killed, key) == document_slice(reference.state, key), (
            f"{key} was recorded as materialized, but what is stored of it differs from the reference"
        )

    fault_file = tmp_path / "fault-rerun"
    env = {**servers_restored, **GROUPED_ENV}
    rerun = Child(outcome.workspace, outcome.bucket, env, fault_file, tmp_path / "rerun.log")
    try:
        rerun.send(BATCH)
        answer = rerun.answer()
    finally:
        rerun.close()
    assert answer is not None and answer["success"], f"the rerun of the batch failed: {answer}"
    assert_same_state(
        read_cassandra_state(outcome.workspace, outcome.bucket), reference.state, "after the grouped batch's kill"
    )
    print(
        f"grouped batch: killed on attempt {attempt} (missed: {missed}); the writes' documents {outcome.shared}; "
        f"materialized before the kill {sorted(outcome.done)}"
    )
