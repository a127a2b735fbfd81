"""The UI as a user starts it: `dagster dev -w workspace.yaml` on a temporary instance and librarian.

Shared by the browser tests (tests/ui/conftest.py) and `make screenshots` (scripts/screenshots.py).
It drives the product only from the outside: the `ud` console script, `dagster dev`, Dagster's
GraphQL API and a headless Chromium (Debian's, through Playwright). No product module is imported.

`dagster dev` runs in its own session and process group with
  - DAGSTER_HOME a temporary folder holding a copy of the repository's dagster.yaml (queued runs,
    dequeued by the daemon `dagster dev` starts, which also runs the sensor `librarian_uploads`),
  - UD_HOME a temporary folder: the embedded librarian (CASSANDRA_* removed, UD_BACKEND=embedded),
  - DO_NOT_TRACK=true and the offline switches of the Makefile.
`stop()` ends the whole group (webserver, daemon, code server, run workers): TERM to `dagster dev`
so it shuts its services down, then KILL to whatever of the session is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # the virtualenv's bin: dagster, ud
SAMPLES = ROOT / "samples"
START_TIMEOUT = 180
# Whatever would point the server at another librarian, another instance or other definitions.
REMOVED_VARIABLES = (
    "CASSANDRA_HOST",
    "CASSANDRA_PORT",
    "CASSANDRA_USERNAME",
    "CASSANDRA_PASSWORD",
    "CASSANDRA_TLS",
    "CASSANDRA_TLS_CA_FILE",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL",
    "UD_BACKEND",
    "UD_HOME",
    "UD_WORKSPACE",
    "UD_COLLECTION",
    "UD_BUCKET",
    "UD_BATCH_SIZE",
    "UD_REPROCESS_CRON",
    "DAGSTER_HOME",
)

WORKSPACE_QUERY = """
query {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on RepositoryLocation { name repositories { name } }
          ... on PythonError { message stack }
        }
      }
    }
    ... on PythonError { message }
  }
}
"""

PARTITION_STATUS_QUERY = """
query Status($path: [String!]!) {
  assetNodeOrError(assetKey: {path: $path}) {
    __typename
    ... on AssetNode {
      assetPartitionStatuses {
        __typename
        ... on DefaultPartitionStatuses { materializedPartitions failedPartitions materializingPartitions }
      }
    }
  }
}
"""

PARTITION_KEYS_QUERY = """
query Keys($path: [String!]!) {
  assetNodeOrError(assetKey: {path: $path}) { ... on AssetNode { partitionKeys } }
}
"""

RUNS_QUERY = """
query Runs {
  runsOrError(limit: 100) {
    ... on Runs { results { runId status tags { key value } } }
  }
}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def chromium_path() -> str:
    """Debian's Chromium (Playwright's own browser download is not used)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise RuntimeError("chromium not found on PATH (make setup installs Debian's chromium)")
    return path


def launch_browser(playwright):
    return playwright.chromium.launch(
        executable_path=chromium_path(), headless=True, args=["--no-sandbox", "--disable-dev-shm-usage"]
    )


class DagsterDev:
    """A running `dagster dev` on a free port of 127.0.0.1, with its instance and librarian folders."""

    def __init__(self, base: Path):
        self.base = base
        self.dagster_home = base / "dagster_home"
        self.ud_home = base / "ud_home"
        self.dagster_home.mkdir(parents=True, exist_ok=True)
        self.ud_home.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "dagster.yaml", self.dagster_home / "dagster.yaml")
        self.log = base / "dagster-dev.log"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if k not in REMOVED_VARIABLES}
        self.env.update(
            DAGSTER_HOME=str(self.dagster_home),
            UD_HOME=str(self.ud_home),
            UD_BACKEND="embedded",
            DO_NOT_TRACK="true",
            UNSTRUCTURED_DISABLE_NOTICE="1",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            # The checkout's code wins over an editable install of another checkout.
            PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
            PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        self.process: subprocess.Popen | None = None

    # -- the server ---------------------------------------------------------------------------

    def start(self) -> None:
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [str(BIN / "dagster"), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(self.port)],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def output(self, tail: int = 6000) -> str:
        try:
            return self.log.read_text(errors="replace")[-tail:]
        except FileNotFoundError:
            return ""

    def wait_until_ready(self, timeout: float = START_TIMEOUT) -> None:
        """The webserver answers and the code location `ud` is loaded; raises (never skips) otherwise."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"dagster dev exited {self.process.returncode}:\n{self.output()}")
            try:
                workspace = self.graphql(WORKSPACE_QUERY, timeout=10)["workspaceOrError"]
                entries = workspace.get("locationEntries") or []
                if entries and entries[0]["loadStatus"] == "LOADED":
                    location = entries[0]["locationOrLoadError"]
                    if location["__typename"] != "RepositoryLocation":
                        raise RuntimeError(
                            f"code location failed to load: {location.get('message')}\n"
                            + "".join(location.get("stack") or [])
                        )
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"dagster dev not ready after {timeout:.0f}s on {self.url}:\n{self.output()}")
            time.sleep(0.5)

    def session_pids(self) -> list[int]:
        """Every live process of the server's session (its children stay in it)."""
        if self.process is None:
            return []
        sid = self.process.pid
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp session
            if int(fields[3]) == sid and fields[0] != "Z":
                pids.append(int(entry.name))
        return pids

    def stop(self, grace: float = 20) -> None:
        """TERM to `dagster dev` (it stops its webserver and daemon), then KILL what is left of the session."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self.session_pids():
            self.process.poll()
            time.sleep(0.2)
        for pid in self.session_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while self.session_pids() and time.monotonic() < deadline:
            time.sleep(0.2)

    # -- what a user touches --------------------------------------------------------------------

    def ud(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """The `ud` console script against the same librarian as the server."""
        done = subprocess.run(
            [str(BIN / "ud"), *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=300
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"ud {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def upload(self, path: Path, doc_id: str | None = None) -> str:
        """`ud librarian add FILE --id ID`: the id (the file name by default) becomes the partition key."""
        return self.ud("librarian", "add", str(path), "--id", doc_id or path.name).stdout.strip()

    # -- assertions and waits over GraphQL ------------------------------------------------------

    def graphql(self, query: str, variables: dict | None = None, timeout: float = 60) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = json.loads(response.read())
        if answer.get("errors"):
            raise RuntimeError(f"GraphQL errors: {answer['errors']}")
        return answer["data"]

    def partition_statuses(self, asset: str) -> dict[str, list[str]]:
        node = self.graphql(PARTITION_STATUS_QUERY, {"path": asset.split("/")})["assetNodeOrError"]
        statuses = node.get("assetPartitionStatuses") or {}
        return {
            name: statuses.get(name) or []
            for name in ("materializedPartitions", "failedPartitions", "materializingPartitions")
        }

    def wait_partition_keys(self, asset: str, keys: list[str], timeout: float) -> None:
        """Wait until the sensor has added the keys to the asset's partitions."""
        deadline = time.monotonic() + timeout
        while True:
            node = self.graphql(PARTITION_KEYS_QUERY, {"path": asset.split("/")})["assetNodeOrError"]
            if set(keys) <= set(node.get("partitionKeys") or []):
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{asset}: partitions {keys} not added after {timeout:.0f}s: "
                    f"{node.get('partitionKeys')}\n{self.output(3000)}"
                )
            time.sleep(1)

    def wait_partitions(
        self,
        asset: str,
        keys: list[str],
        timeout: float,
        status: str = "materializedPartitions",
    ) -> dict[str, list[str]]:
        """Wait until every key has `status` for the asset; a key that fails instead ends the wait early."""
        deadline = time.monotonic() + timeout
        while True:
            statuses = self.partition_statuses(asset)
            if set(keys) <= set(statuses[status]):
                return statuses
            if status == "materializedPartitions":
                failed = set(keys) & set(statuses["failedPartitions"])
                if failed:
                    raise AssertionError(f"{asset}: partitions {sorted(failed)} failed\n{self.runs_summary()}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{asset}: {keys} not all {status} after {timeout:.0f}s: {statuses}\n"
                    f"{self.runs_summary()}\n{self.output(3000)}"
                )
            time.sleep(2)

    def runs_summary(self) -> str:
        runs = self.graphql(RUNS_QUERY)["runsOrError"].get("results", [])
        lines = []
        for run in runs:
            tags = {t["key"]: t["value"] for t in run["tags"]}
            partition = tags.get("dagster/partition") or "{}...{}".format(
                tags.get("dagster/asset_partition_range_start", ""), tags.get("dagster/asset_partition_range_end", "")
            )
            lines.append(f"run {run['runId'][:8]} {run['status']} {partition}")
        return "\n".join(lines)


@contextlib.contextmanager
def dagster_dev(base: Path) -> Iterator[DagsterDev]:
    """Start `dagster dev` under `base`, wait until it serves the code location, and always stop it."""
    server = DagsterDev(base)
    try:
        server.start()
        server.wait_until_ready()
        yield server
    finally:
        server.stop()
