"""The deployment of make cluster-up, driven as its operator would: its scripts, its ports, its processes.

Runs are submitted to the webserver over GraphQL (the queued run coordinator holds them in
PostgreSQL, the daemon hands them to Celery, a worker executes them); the test reads the run
storage and the event log from the same PostgreSQL, and the librarian's tables and objects from
the cluster's Cassandra nodes (at QUORUM) and MinIO. Faults are real: SIGKILL of a process whose
pid file in this clone's .cluster names it, a drive folder wiped under a running MinIO.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLUSTER_DIR = Path(os.environ.get("UD_CLUSTER_DIR") or REPO / ".cluster")
SCRIPTS = REPO / "scripts" / "cluster"
VENV = Path(sys.executable).resolve().parent.parent if (Path(sys.prefix) / "bin").exists() else None
UP_TIMEOUT = 600
RUN_TIMEOUT = 600
TERMINAL = ("SUCCESS", "FAILURE", "CANCELED")


def script_env() -> dict[str, str]:
    """The environment the cluster scripts run with: this interpreter's venv (the clone's .venv under make)."""
    env = dict(os.environ)
    env["UD_VENV"] = sys.prefix
    return env


def run_script(name: str, *args: str, timeout: float = UP_TIMEOUT) -> str:
    done = subprocess.run(
        [str(SCRIPTS / name), *args], cwd=REPO, env=script_env(), capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        pytest.fail(f"scripts/cluster/{name} {' '.join(args)} failed:\n{done.stderr[-4000:]}", pytrace=False)
    return done.stderr


def cluster_env() -> dict[str, str]:
    """What `make cluster-env` prints, as a mapping."""
    out = subprocess.run([str(SCRIPTS / "env.sh")], env=script_env(), capture_output=True, text=True, check=True).stdout
    env = {}
    for line in out.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value.replace("\\,", ",")
    return env


@contextmanager
def using_env(env: Mapping[str, str]):
    """os.environ set to these variables for a while (the project reads its settings from there)."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def parent_of(pid: int) -> int:
    try:
        return int(re.search(r"^PPid:\s+(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M).group(1))  # type: ignore[union-attr]
    except (OSError, AttributeError):
        return 0


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def pid_of(pidfile: Path, marker: str) -> int:
    """The pid in this clone's pid file, if that process is alive and has marker on its command line."""
    text = pidfile.read_text().strip() if pidfile.exists() else ""
    pid = int(text.splitlines()[0]) if text[:1].isdigit() else 0
    if not pid or not alive(pid) or marker not in cmdline(pid):
        pytest.fail(f"no live process of this clone's cluster in {pidfile} (marker {marker!r})", pytrace=False)
    return pid


def sigkill(pid: int, what: str) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while alive(pid):
        assert time.monotonic() < deadline, f"{what} (pid {pid}) still alive 30 s after SIGKILL"
        time.sleep(0.05)


@dataclass
class Cluster:
    env: dict[str, str]  # cluster_env()
    instance: object  # the DagsterInstance on the cluster's PostgreSQL

    # -- parts -------------------------------------------------------------------------------

    def cassandra_pid(self, node: int) -> int:
        run = CLUSTER_DIR / f"cassandra{node}"
        return pid_of(run / "cassandra.pid", f"-Dcassandra.storagedir={run}/data")

    def worker_pids(self) -> dict[str, int]:
        """worker name -> the pid of its Celery main process."""
        out = {}
        for pidfile in sorted((CLUSTER_DIR / "dagster").glob("worker*.pid")):
            name = pidfile.stem
            out[name] = pid_of(pidfile, f"--logfile {CLUSTER_DIR / 'dagster' / name}.log")
        return out

    def part_pid(self, name: str) -> int:
        markers = {
            "code-server": f"api grpc -m ud_assets.definitions -d {REPO}",
            "webserver": f"dagster-webserver -w {REPO}/deploy/workspace.yaml",
            "daemon": f"dagster-daemon run -w {REPO}/deploy/workspace.yaml",
        }
        return pid_of(CLUSTER_DIR / "dagster" / f"{name}.pid", markers[name])

    def up(self, *parts: str) -> float:
        """scripts/cluster/up.sh: restarts whatever is down, or only the Dagster parts named; its duration in seconds."""
        started = time.monotonic()
        run_script("up.sh", *parts)
        return time.monotonic() - started

    def minio_drive(self, n: int) -> Path:
        return CLUSTER_DIR / "minio" / f"data{n}"

    # -- runs --------------------------------------------------------------------------------

    def graphql(self):
        from dagster_graphql import DagsterGraphQLClient

        return DagsterGraphQLClient("127.0.0.1", port_number=3100, timeout=120)

    def submit(self, keys: list[str], workspace: str, bucket: str) -> str:
        """A decoding run over these documents, submitted to the webserver (queued, as the sensor's)."""
        from ud_assets.defs.partitions import documents_partitions

        self.instance.add_dynamic_partitions(documents_partitions.name, keys)  # type: ignore[attr-defined]
        tags = (
            {"dagster/partition": keys[0]}
            if len(keys) == 1
            else {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}
        )
        return self.graphql().submit_job_execution(
            "decode_documents",
            repository_location_name="ud",
            repository_name="__repository__",
            run_config={"resources": {"librarian": {"config": {"workspace": workspace, "bucket": bucket}}}},
            tags=tags,
        )

    def run(self, run_id: str):
        return self.instance.get_run_by_id(run_id)  # type: ignore[attr-defined]

    def wait(self, run_ids: Iterable[str], timeout: float = RUN_TIMEOUT) -> dict[str, str]:
        """Waits until every run has ended; run id -> status."""
        pending, ended = set(run_ids), {}
        deadline = time.monotonic() + timeout
        while pending:
            for run_id in list(pending):
                status = self.run(run_id).status.value
                if status in TERMINAL:
                    ended[run_id] = status
                    pending.discard(run_id)
            if pending:
                assert time.monotonic() < deadline, f"runs still not ended after {timeout} s: {self.statuses(pending)}"
                time.sleep(0.5)
        return ended

    def statuses(self, run_ids: Iterable[str]) -> dict[str, str]:
        return {r: self.run(r).status.value for r in run_ids}

    def logs(self, run_id: str) -> list:
        return list(self.instance.all_logs(run_id))  # type: ignore[attr-defined]

    def messages(self, run_id: str) -> list[str]:
        return [e.user_message for e in self.logs(run_id)]

    def run_pid(self, run_id: str) -> int:
        """The process that executed the run (the pid of its RUN_START event)."""
        for entry in self.logs(run_id):
            event = entry.dagster_event
            if event is not None and event.event_type_value == "PIPELINE_START":
                return int(event.pid)
        return 0

    def wait_for_documents(self, run_id: str, count: int = 1, timeout: float = RUN_TIMEOUT) -> set[str]:
        """Waits until the run has materialized `count` documents (their partitions), the next being under
        way; returns those partitions."""
        deadline = time.monotonic() + timeout
        while True:
            done = {
                e.dagster_event.partition
                for e in self.logs(run_id)
                if e.dagster_event is not None and e.dagster_event.event_type_value == "ASSET_MATERIALIZATION"
            }
            if len(done) >= count:
                return done
            status = self.run(run_id).status.value
            assert status not in TERMINAL, f"run {run_id} ended ({status}) before materializing {count} documents"
            assert time.monotonic() < deadline, f"run {run_id} materialized {len(done)} documents in {timeout} s"
            time.sleep(0.1)

    def runs_of(self, root_run_id: str) -> list:
        """The run and its automatic retries (run_retries), oldest first."""
        from dagster import RunsFilter

        runs = self.instance.get_runs(RunsFilter(tags={"dagster/root_run_id": root_run_id}))  # type: ignore[attr-defined]
        return [self.run(root_run_id), *sorted(runs, key=lambda r: int(r.tags.get("dagster/retry_number", "0")))]


def wipe(folder: Path) -> int:
    """Deletes everything inside a folder (a drive's contents, as a replaced disk); the number of entries removed."""
    count = 0
    for entry in folder.iterdir():
        count += 1
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    return count
