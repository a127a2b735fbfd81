"""The Dagster UI's server as a data engineer starts it: the asset graph over GraphQL, and a launched run.

`dagster-webserver -w workspace.yaml` runs in its own process group with a temporary DAGSTER_HOME
(the project's dagster.yaml with the default run coordinator instead of the queued one, so a
launched run starts at once without a daemon; the default run launcher starts one process per run) and a temporary UD_HOME
(the embedded librarian: CASSANDRA_HOST is removed from its environment).
"""

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.instance.ref import InstanceRef

from tests.ui.harness import WORKSPACE_QUERY  # the one query that says whether the code location loaded

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CHAIN = ["document", "elements", "sections", "images", "provenance_triples"]
START_TIMEOUT = 120
RUN_TIMEOUT = 180
# Whatever would point the server at another librarian or change the project's definitions.
REMOVED_VARIABLES = (
    "CASSANDRA_HOST",
    "CASSANDRA_PORT",
    "UD_BACKEND",
    "UD_HOME",
    "UD_WORKSPACE",
    "UD_COLLECTION",
    "UD_BUCKET",
    "UD_BATCH_SIZE",
    "UD_REPROCESS_CRON",
    "DAGSTER_HOME",
)

NOTES = b"""# Field notes

The river rose two metres overnight.

## Observations

- the bridge held
- the ferry stopped
"""


ASSET_NODES_QUERY = """
query {
  assetNodes {
    assetKey { path }
    dependencyKeys { path }
    isPartitioned
    partitionDefinition { type name }
    jobNames
    opNames
    groupName
  }
}
"""

LAUNCH_RUN = """
mutation LaunchRun($executionParams: ExecutionParams!) {
  launchRun(executionParams: $executionParams) {
    __typename
    ... on LaunchRunSuccess { run { runId status } }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on PipelineNotFoundError { message }
    ... on InvalidSubsetError { message }
    ... on PythonError { message stack }
  }
}
"""

RUN_QUERY = """
query Run($runId: ID!) {
  runOrError(runId: $runId) {
    __typename
    ... on Run { runId status jobName tags { key value } }
    ... on RunNotFoundError { message }
    ... on PythonError { message }
  }
}
"""

LOGS_QUERY = """
query Logs($runId: ID!) {
  logsForRun(runId: $runId) {
    __typename
    ... on EventConnection {
      events {
        __typename
        ... on MessageEvent { message level stepKey }
        ... on ErrorEvent { error { message stack } }
      }
    }
    ... on PythonError { message }
  }
}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def instance_yaml() -> str:
    """The project's instance settings, launching runs directly instead of queueing them for a daemon."""
    settings = yaml.safe_load((ROOT / "dagster.yaml").read_text())
    # Dagster's default is the queued coordinator, which needs the daemon: name the direct one.
    settings["run_coordinator"] = {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}
    settings["telemetry"] = {"enabled": False}
    return yaml.safe_dump(settings)


class Server:
    def __init__(self, port: int, process: subprocess.Popen, log: Path):
        self.url = f"http://127.0.0.1:{port}"
        self.process = process
        self.log = log

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        assert not answer.get("errors"), f"GraphQL errors: {answer['errors']}"
        return answer["data"]

    def wait_until_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert self.process.poll() is None, f"dagster-webserver exited {self.process.returncode}:\n{self.output()}"
            try:
                with urllib.request.urlopen(f"{self.url}/server_info", timeout=5) as response:
                    if response.status == 200:
                        json.loads(response.read())
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            assert time.monotonic() < deadline, f"no /server_info after {START_TIMEOUT}s:\n{self.output()}"
            time.sleep(0.5)

    def repository(self) -> tuple[str, str]:
        """(location name, repository name) once the code location has loaded."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            workspace = self.graphql(WORKSPACE_QUERY)["workspaceOrError"]
            assert workspace["__typename"] == "Workspace", workspace
            entries = workspace["locationEntries"]
            assert [e["name"] for e in entries] == ["ud"], entries
            entry = entries[0]
            location = entry["locationOrLoadError"]
            if entry["loadStatus"] == "LOADED" and location is not None:
                assert location["__typename"] == "RepositoryLocation", (
                    f"code location failed to load: {location.get('message')}\n{''.join(location.get('stack', []))}"
                )
                assert len(location["repositories"]) == 1, location
                return location["name"], location["repositories"][0]["name"]
            assert time.monotonic() < deadline, f"code location not loaded after {START_TIMEOUT}s:\n{self.output()}"
            time.sleep(0.5)


def stop(process: subprocess.Popen) -> None:
    """End the webserver's process group (webserver, code server, run workers): TERM, then KILL."""
    pgid = process.pid  # start_new_session=True: the group's id is the webserver's pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        process.poll()
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=10)


@pytest.fixture(scope="module")
def homes(tmp_path_factory):
    base = tmp_path_factory.mktemp("webserver")
    dagster_home, ud_home = base / "dagster_home", base / "ud_home"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text(instance_yaml())
    return dagster_home, ud_home


@pytest.fixture(scope="module")
def server(homes):
    dagster_home, ud_home = homes
    env = {k: v for k, v in os.environ.items() if k not in REMOVED_VARIABLES}
    env.update(
        DAGSTER_HOME=str(dagster_home),
        UD_HOME=str(ud_home),
        DO_NOT_TRACK="true",
        UNSTRUCTURED_DISABLE_NOTICE="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONPATH=str(ROOT),
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    port = free_port()
    log = dagster_home / "webserver.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(BIN / "dagster-webserver"), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        running = Server(port, process, log)
        running.wait_until_ready()
        yield running
    finally:
        stop(process)
    # Nothing of the group may outlive the test.
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)


def test_the_asset_graph_is_served_over_graphql(server):
    server.repository()
    nodes = {"/".join(n["assetKey"]["path"]): n for n in server.graphql(ASSET_NODES_QUERY)["assetNodes"]}
    assert set(CHAIN) <= set(nodes), sorted(nodes)
    deps = {key: sorted("/".join(d["path"]) for d in node["dependencyKeys"]) for key, node in nodes.items()}
    assert deps["document"] == []
    for parent, child in itertools.pairwise(CHAIN):
        assert parent in deps[child], f"{child} depends on {deps[child]}, not on {parent}"
    for key in CHAIN:
        node = nodes[key]
        assert node["isPartitioned"], key
        assert node["partitionDefinition"] == {"type": "DYNAMIC", "name": "documents"}, key
        assert "decode_documents" in node["jobNames"], key
        assert node["opNames"] == ["universal_decoder"], key


def run_events(server: Server, run_id: str) -> str:
    logs = server.graphql(LOGS_QUERY, {"runId": run_id})["logsForRun"]
    if logs["__typename"] != "EventConnection":
        return json.dumps(logs)
    lines = []
    for event in logs.get("events", []):
        line = f"{event['__typename']} {event.get('stepKey') or ''} {event.get('message', '')}"
        error = event.get("error")
        if error:
            line += f"\n    {error['message']}" + "".join(error.get("stack") or [])[-2000:]
        lines.append(line)
    return "\n".join(lines)


def test_a_run_launched_over_graphql_decodes_a_document(server, homes):
    from resources.settings import load_settings, open_librarian

    dagster_home, ud_home = homes
    settings = load_settings(env={"UD_HOME": str(ud_home)})
    assert settings.backend == "embedded"
    with open_librarian(settings) as lib:
        lib.add_document("notes.md", "text/markdown", NOTES, title="Field notes")
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(dagster_home))) as instance:
        instance.add_dynamic_partitions("documents", ["notes.md"])

    location, repository = server.repository()
    launched = server.graphql(
        LAUNCH_RUN,
        {
            "executionParams": {
                "selector": {
                    "repositoryLocationName": location,
                    "repositoryName": repository,
                    "jobName": "decode_documents",
                },
                "mode": "default",
                "executionMetadata": {"tags": [{"key": "dagster/partition", "value": "notes.md"}]},
            }
        },
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]

    deadline = time.monotonic() + RUN_TIMEOUT
    while True:
        run = server.graphql(RUN_QUERY, {"runId": run_id})["runOrError"]
        assert run["__typename"] == "Run", run
        if run["status"] == "SUCCESS":
            break
        assert run["status"] != "QUEUED", f"run {run_id} was queued: no daemon dequeues it here"
        assert run["status"] not in ("FAILURE", "CANCELED", "CANCELING"), (
            f"run {run_id} ended {run['status']}:\n{run_events(server, run_id)}"
        )
        assert time.monotonic() < deadline, (
            f"run {run_id} still {run['status']} after {RUN_TIMEOUT}s:\n{run_events(server, run_id)}\n{server.output()}"
        )
        time.sleep(1)
    assert run["jobName"] == "decode_documents"
    assert {"key": "dagster/partition", "value": "notes.md"} in run["tags"]
    assert {"key": "ud/decode", "value": "true"} in run["tags"]

    with open_librarian(settings) as lib:
        generation = lib.get_generation("notes.md")
        assert generation is not None
        children = lib.list_children("notes.md")
        assert [c.document_type for c in children] == ["section"]  # whole-document: one section
        assert b"The river rose two metres overnight." in lib.get_content(children[0].id)
        assert lib.list_failures() == []

    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(dagster_home))) as instance:
        for key in CHAIN:
            assert instance.get_materialized_partitions(dg.AssetKey(key)) == {"notes.md"}, key
