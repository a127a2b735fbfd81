"""The deployment of make cluster-up under load and faults, compared exactly with one node.

Every test submits decoding runs to the webserver as a person would (queued in PostgreSQL, launched
by the daemon onto the Celery workers) over the same documents, in a workspace and bucket of its
own, and compares the end state with the one-node reference (tests/cluster/conftest.py): document
rows, object bytes, generation records, elements, both triple tables, an empty failure ledger and no
object that no row references. The only difference allowed is the time each run started, which
provenance records (prov:startedAtTime). Reads on the cluster are at QUORUM.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from tests.cluster.conftest import KEYS, TIMINGS, Reference, _settings
from tests.cluster.harness import Cluster, alive, parent_of, sigkill, using_env, wipe
from tests.end_state import State, assert_same_state, read_cassandra_state
from ud_assets.decoding.provenance import PROV_STARTED_AT_TIME
from ud_assets.processing.model import GENERATION_TAG

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]
RUN_TIME = "<the time the run started>"


def timeless(state: State) -> State:
    """The state with the runs' start times (prov:startedAtTime literals) replaced by one placeholder."""
    times = {q[4] for q in state.quads if q[3] == PROV_STARTED_AT_TIME}

    def scrub(row: tuple) -> tuple:
        return tuple(RUN_TIME if value in times else value for value in row)

    return replace(state, quads={scrub(q) for q in state.quads}, entity_rows={scrub(r) for r in state.entity_rows})


def assert_like_reference(workspace: str, bucket: str, reference: Reference, what: str) -> State:
    state = read_cassandra_state(workspace, bucket)
    assert_same_state(timeless(state), timeless(reference.state), what)
    assert_one_generation_each(state)
    return state


def assert_one_generation_each(state: State) -> None:
    """Every document has one generation record, and every row below it that names a generation (its pages or
    sections and their images) names that one."""
    assert set(state.generations) == set(KEYS)
    parent = {doc_id: row[1] for doc_id, row in state.documents.items()}

    def root(doc_id: str) -> str:
        while parent[doc_id]:
            doc_id = parent[doc_id]
        return doc_id

    found: dict[str, set[str]] = {k: set() for k in KEYS}
    for doc_id, row in state.documents.items():
        tags = [t for t in row[6] if t.startswith(GENERATION_TAG)]
        if parent[doc_id] and tags:
            assert len(tags) == 1, f"{doc_id}: generation tags {tags}"
            found[root(doc_id)].add(tags[0].removeprefix(GENERATION_TAG))
    assert found == {k: {state.generations[k][0]} for k in KEYS}


def timed(name: str, started: float) -> None:
    TIMINGS[name] = time.monotonic() - started


@pytest.fixture(scope="module")
def batch(cluster: Cluster, reference, places) -> tuple[str, str, list[str]]:
    """The documents as three queued runs of two, submitted at once: (workspace, bucket, run ids)."""
    workspace, bucket = places("batch")
    started = time.monotonic()
    run_ids = [cluster.submit(KEYS[i : i + 2], workspace, bucket) for i in range(0, len(KEYS), 2)]
    assert cluster.wait(run_ids) == {r: "SUCCESS" for r in run_ids}
    timed("batch of 3 runs", started)
    return workspace, bucket, run_ids


def test_batch_lands_on_both_workers_with_one_generation_per_document(cluster, reference, batch):
    workspace, bucket, run_ids = batch
    masters = cluster.worker_pids()
    assert len(masters) == 2, masters
    # The process that executed each run (its RUN_START event) is a worker's pool process.
    worker_of = {}
    for run_id in run_ids:
        pid = cluster.run_pid(run_id)
        owners = [name for name, master in masters.items() if parent_of(pid) == master]
        assert len(owners) == 1, f"run {run_id} ran in pid {pid}, which is no worker's (workers: {masters})"
        worker_of[run_id] = owners[0]
        # Nor is it a process of the run launcher (the daemon) or of the code server.
        assert parent_of(pid) not in (cluster.part_pid("daemon"), cluster.part_pid("code-server"))
    assert set(worker_of.values()) == set(masters), f"the runs did not land on both workers: {worker_of}"
    assert_like_reference(workspace, bucket, reference, "the batch on the cluster")


def test_trustgraphs_readers_see_the_same_on_the_cluster_as_on_one_node(cluster, reference, batch, services_env):
    workspace, _, _ = batch
    cluster_view = trustgraph_view(workspace)
    with using_env(services_env):
        one_node_view = trustgraph_view(reference.workspace)
    assert cluster_view.keys() == one_node_view.keys()
    for part in cluster_view:
        assert cluster_view[part] == one_node_view[part], part
    assert len(cluster_view["entities"]) > 100, "too few entities read to compare"


def test_trustgraphs_own_reader_finds_every_quad_on_the_cluster_by_every_pattern(cluster, batch):
    """TrustGraph 2.11.1's EntityCentricKnowledgeGraph, at the cluster's consistency, over the batch's quads:
    each found by every pattern its insert makes it findable by (tests/resources/cassandra/test_trustgraph_reader.py)."""
    from resources.cassandra.triples import keyspace_for
    from tests.resources.cassandra.test_trustgraph_reader import Patterns, trustgraph_reader

    workspace, _, _ = batch
    tg = trustgraph_reader(workspace)
    try:
        stored = [
            tuple(r)
            for r in tg.session.execute(
                f'SELECT s, p, o, d, otype, dtype, lang FROM "{keyspace_for(workspace)}".quads_by_collection '
                "WHERE collection = %s",
                ("default",),
            )
        ]
        assert len(stored) > 100, "too few quads to read"
        patterns = Patterns(tg)
        missed = {r: m for r in stored if (m := patterns.missing(r))}
        assert not missed, f"{len(missed)} of {len(stored)} quads missed, e.g. {list(missed.items())[:3]}"
    finally:
        tg.close()


def trustgraph_view(workspace: str) -> dict[str, object]:
    """What TrustGraph's own readers get: its librarian queries (tables/library.py) per document, its triple
    store's reads per entity (quads_by_entity) and per collection (quads_by_collection), at the consistency
    the environment names. Workspace names, object ids and run times are left out (they differ by design)."""
    from resources.cassandra.triples import keyspace_for
    from tests.end_state import cql_session

    ks = keyspace_for(workspace)
    view: dict[str, object] = {}
    with cql_session() as session:
        documents = {}
        for doc_id in KEYS:
            row = session.execute(
                "SELECT kind, title, comments, metadata, tags, parent_id, document_type "
                "FROM librarian.document WHERE workspace = %s AND id = %s",
                (workspace, doc_id),
            ).one()
            children = session.execute(
                "SELECT id, workspace, parent_id, document_type FROM librarian.document WHERE parent_id = %s "
                "ALLOW FILTERING",
                (doc_id,),
            )
            documents[doc_id] = (
                tuple(row),
                sorted((c.id, c.document_type) for c in children if c.workspace == workspace),
            )
        view["documents"] = documents
        collection = sorted(
            tuple(r)
            for r in session.execute(
                f'SELECT d, s, p, o, otype, dtype, lang FROM "{ks}".quads_by_collection WHERE collection = %s',
                ("default",),
            )
        )
        times = {r[3] for r in collection if r[2] == PROV_STARTED_AT_TIME}
        view["collection"] = [tuple(RUN_TIME if v in times else v for v in r) for r in collection]
        # every object is an entity (literals and quoted triples too: TrustGraph's insert writes their 'O' row)
        entities = {e for r in collection for e in (r[0], r[1], r[2], r[3]) if e}
        by_entity: dict[str, list[tuple]] = {}
        for entity in sorted(entities):
            rows = session.execute(
                f'SELECT role, p, otype, s, o, d, dtype, lang FROM "{ks}".quads_by_entity '
                "WHERE collection = %s AND entity = %s",
                ("default", entity),
            )
            # the run times' own partitions (their 'O' rows) are merged under the placeholder
            key = RUN_TIME if entity in times else entity
            by_entity.setdefault(key, []).extend(tuple(RUN_TIME if v in times else v for v in r) for r in rows)
        view["entities"] = {entity: sorted(rows) for entity, rows in by_entity.items()}
    return view


def test_one_cassandra_node_killed_mid_materialization(cluster: Cluster, reference, places):
    workspace, bucket = places("cassandra")
    started = time.monotonic()
    run_id = cluster.submit(KEYS, workspace, bucket)
    cluster.wait_for_documents(run_id, 1)  # the first document stored, the next under way
    node = 1  # the first contact point of every process, and the node its driver learned the ring from
    sigkill(cluster.cassandra_pid(node), f"Cassandra node {node}")
    assert cluster.run(run_id).status.value == "STARTED", "the kill did not land inside the run"
    # Two of three replicas answer: the run completes without the node.
    assert cluster.wait([run_id]) == {run_id: "SUCCESS"}, cluster.messages(run_id)[-20:]
    down_for = cluster.up()  # the node returns (scripts/cluster/up.sh restarts what is down)
    print(f"node {node} restarted in {down_for:.1f} s")
    assert_like_reference(workspace, bucket, reference, "after a Cassandra node was killed")
    timed("Cassandra node killed", started)


def test_one_minio_drive_wiped_mid_run(cluster: Cluster, reference, places):
    workspace, bucket = places("minio")
    started = time.monotonic()
    run_id = cluster.submit(KEYS, workspace, bucket)
    cluster.wait_for_documents(run_id, 1)  # the first document stored, the next under way
    removed = wipe(cluster.minio_drive(3))
    assert removed > 0, "the drive was empty: nothing was stored on it yet"
    assert cluster.run(run_id).status.value == "STARTED", "the wipe did not land inside the run"
    assert cluster.wait([run_id]) == {run_id: "SUCCESS"}, cluster.messages(run_id)[-20:]
    # Every object reads back byte-identical (read_state hashes each one) with a drive's data gone.
    assert_like_reference(workspace, bucket, reference, "after a MinIO drive was wiped")
    timed("MinIO drive wiped", started)


def test_worker_killed_mid_document_is_retried_and_converges(cluster: Cluster, reference, places):
    workspace, bucket = places("worker")
    started = time.monotonic()
    run_id = cluster.submit(KEYS, workspace, bucket)
    cluster.wait_for_documents(run_id, 1)  # the first document stored, the next under way
    pid = cluster.run_pid(run_id)
    masters = cluster.worker_pids()
    assert parent_of(pid) in masters.values(), f"run {run_id} runs in pid {pid}, no worker's pool process"
    sigkill(pid, "the worker process executing the run")
    # Run monitoring finds the worker's task failed, fails the run; run_retries submits it again.
    deadline = time.monotonic() + 600
    while True:
        runs = cluster.runs_of(run_id)
        if len(runs) > 1 and runs[-1].status.value in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        assert time.monotonic() < deadline, [(r.run_id, r.status.value) for r in runs]
        time.sleep(1)
    assert [r.status.value for r in runs] == ["FAILURE", "SUCCESS"], [(r.run_id, r.status.value) for r in runs]
    assert runs[1].tags["dagster/parent_run_id"] == run_id
    assert all(alive(p) for p in masters.values()), "a worker's main process died with its pool process"
    assert_like_reference(workspace, bucket, reference, "after a worker was killed")
    timed("worker killed", started)


def test_webserver_daemon_and_code_server_restart_without_losing_queue_or_cursor(cluster: Cluster, places, tag):
    from dagster import RunsFilter

    from resources.settings import open_librarian

    started = time.monotonic()
    instance = cluster.instance
    # An upload to the workspace the sensor watches: the sensor requests its run and moves its cursor.
    doc_id = f"restart-{tag}.md"
    lib = open_librarian(_settings("default", "library"))
    try:
        lib.add_document(doc_id, "text/markdown", f"# Restart {tag}\n\nThe queue survives.\n".encode(), title=doc_id)
    finally:
        lib.close()
    sensor_runs = wait_for_sensor_run(cluster, doc_id)
    cursor = sensor_cursor(instance)
    assert cursor, "the sensor has no cursor after requesting a run"

    # The daemon down: runs submitted now wait in the queue (PostgreSQL).
    sigkill(cluster.part_pid("daemon"), "dagster-daemon")
    workspace, bucket = places("restart")
    queued = [cluster.submit([key], workspace, bucket) for key in ("notes.md", "cities.csv")]
    # The code server and the webserver die and come back while the runs wait.
    for part in ("code-server", "webserver"):
        killed = cluster.part_pid(part)
        sigkill(killed, part)
        cluster.up(part)  # this part alone
        assert cluster.part_pid(part) != killed
        assert cluster.statuses(queued) == {r: "QUEUED" for r in queued}, part
        assert sensor_cursor(instance) == cursor, part
    cluster.up("daemon")  # the daemon returns: it launches the queued runs
    assert cluster.wait(queued) == {r: "SUCCESS" for r in queued}
    # The sensor goes on from its cursor: the upload it handled is not requested again.
    wait_for_sensor_tick(instance, after=time.time())
    assert sensor_cursor(instance) == cursor
    again = instance.get_runs(RunsFilter(tags={"dagster/partition": doc_id}))
    assert [r.run_id for r in again] == [r.run_id for r in sensor_runs]
    timed("restarts", started)


def sensor_state(instance):
    states = [s for s in instance.all_instigator_state() if s.name == "librarian_uploads"]
    assert len(states) == 1, states
    return states[0]


def sensor_cursor(instance) -> str:
    return sensor_state(instance).instigator_data.cursor


def wait_for_sensor_run(cluster: Cluster, doc_id: str) -> list:
    from dagster import RunsFilter

    deadline = time.monotonic() + 180
    while True:
        runs = cluster.instance.get_runs(RunsFilter(tags={"dagster/partition": doc_id}))
        if runs and all(r.status.value in ("SUCCESS", "FAILURE", "CANCELED") for r in runs):
            assert [r.status.value for r in runs] == ["SUCCESS"], [(r.run_id, r.status.value) for r in runs]
            return runs
        assert time.monotonic() < deadline, f"the sensor did not decode {doc_id} within 180 s"
        time.sleep(1)


def wait_for_sensor_tick(instance, after: float) -> None:
    """Waits for a tick of the sensor that began after the given time (its minimum interval is 30 s)."""
    state = sensor_state(instance)
    deadline = time.monotonic() + 120
    while True:
        ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=1)
        if ticks and ticks[0].timestamp > after and ticks[0].status.value != "STARTED":
            return
        assert time.monotonic() < deadline, "no sensor tick within 120 s"
        time.sleep(1)
