"""Which requests the driver may send again after their connection died in flight.

The driver's default retry policy resends such a request to the next node, with the same client
timestamp, though the first node may have applied it already. On make cluster-up's three nodes, a
node killed mid-run left a child document's tags holding its generation twice. These tests replay
the stores' own statements at one timestamp on the real server, as that resend does, and check
that the connection resends exactly the statements whose replay stores the same thing.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from cassandra.policies import RetryPolicy

from resources.cassandra.connection import CassandraConfig, CassandraConnection, replay_safe
from resources.cassandra.documents import CassandraDocumentStore, _meta_to_row
from resources.cassandra.triples import CassandraTripleStore
from resources.model import SECTION, DocumentMetadata

pytestmark = pytest.mark.services

TIMESTAMP = 1_700_000_000_000_000  # microseconds: one client timestamp for the write and its replay


@pytest.fixture
def connection(cassandra_run):
    if cassandra_run.error:
        pytest.fail(cassandra_run.error, pytrace=False)
    conn = CassandraConnection(CassandraConfig.from_env())  # its own: the test fixes its timestamps
    yield conn
    conn.shutdown()


@pytest.fixture
def workspace(cassandra_run) -> str:
    return cassandra_run.new_workspace()


def applied_twice(conn: CassandraConnection, cql: str, row: tuple) -> None:
    """The write, then its replay by the driver: the same request at the same client timestamp."""
    generator = conn.cluster.timestamp_generator
    conn.cluster.timestamp_generator = lambda: TIMESTAMP
    try:
        conn.execute(cql, row, "the write")
        conn.execute(cql, row, "its replay")
    finally:
        conn.cluster.timestamp_generator = generator


def child(workspace: str) -> DocumentMetadata:
    return DocumentMetadata(
        id="urn:section:1",
        workspace=workspace,
        time=datetime(2026, 12, 6, tzinfo=UTC),
        kind="text/plain",
        title="Section 1",
        tags=("generation:abc",),
        parent_id="notes.md",
        document_type=SECTION,
        object_id=uuid.UUID(int=1),
    )


def test_a_child_row_replayed_at_its_timestamp_keeps_its_tags_twice_so_it_is_not_resent(connection, workspace):
    docs = CassandraDocumentStore(connection)
    applied_twice(connection, docs._upsert, _meta_to_row(child(workspace)))
    # Cassandra's doing, not ours: each list element is keyed by a time UUID made as the write is
    # applied, and the whole-list tombstone is older than the write's own timestamp.
    assert docs.get(workspace, "urn:section:1").tags == ("generation:abc", "generation:abc")
    assert not connection.prepare(docs._upsert).is_idempotent


def test_a_child_row_written_again_at_a_new_timestamp_keeps_one_copy(connection, workspace):
    """What the document's own transient retry does instead: the later write replaces the list."""
    docs = CassandraDocumentStore(connection)
    docs.upsert_many([child(workspace)])
    docs.upsert_many([child(workspace)])
    assert docs.get(workspace, "urn:section:1").tags == ("generation:abc",)


def test_a_quad_replayed_at_its_timestamp_stores_the_same_rows_so_it_is_resent(connection, workspace):
    triples = CassandraTripleStore(connection, workspace)
    row = ("c", "urn:s", "s", "urn:p", "l", "urn:s", "o", "", "", "")
    applied_twice(connection, triples._ins_entity, row)
    rows = list(connection.execute(f"SELECT s, p, o FROM {triples.keyspace}.quads_by_entity", (), "reading"))
    assert [(r.s, r.p, r.o) for r in rows] == [("urn:s", "urn:p", "o")]
    assert connection.prepare(triples._ins_entity).is_idempotent


def test_the_stores_statements_are_resent_only_when_their_replay_is_harmless(connection, workspace):
    docs = CassandraDocumentStore(connection)
    triples = CassandraTripleStore(connection, workspace)
    harmless = [docs._get, docs._get_in, docs._delete, triples._ins_entity, triples._ins_coll]
    harmful = {
        docs._upsert: "binds lists (metadata, tags)",
        docs._insert: "a lightweight transaction: replayed, it finds its own row and is not applied",
        docs._log: "now(): replayed, it logs a second event",
        docs._put_processing: "binds a list (tags)",
    }
    assert {cql: replay_safe(cql, connection.prepare(cql)) for cql in harmless} == dict.fromkeys(harmless, True)
    assert {cql: replay_safe(cql, connection.prepare(cql)) for cql in harmful} == dict.fromkeys(harmful, False)


def sent_by_write_partitioned(conn: CassandraConnection, rows: list, monkeypatch) -> list:
    """The requests write_partitioned hands the driver for `rows` (and then sends)."""
    import cassandra.concurrent

    sent: list = []
    real = cassandra.concurrent.execute_concurrent

    def recording(session, requests, **kwargs):
        sent.extend(statement for statement, _ in requests)
        return real(session, requests, **kwargs)

    monkeypatch.setattr(cassandra.concurrent, "execute_concurrent", recording)
    conn.write_partitioned(rows, "the test's rows")
    monkeypatch.undo()
    return sent


def test_a_lost_connection_resends_to_the_next_node_only_a_replay_safe_request(connection, workspace, monkeypatch):
    policy = connection.cluster.profile_manager.default.retry_policy
    docs = CassandraDocumentStore(connection)
    triples = CassandraTripleStore(connection, workspace)
    quads = [
        (triples._ins_entity, ("c", f"urn:s{n}", "s", "urn:p", "l", f"urn:s{n}", "o", "", "", ""), f"urn:s{n}")
        for n in range(3)
    ]
    row = (docs._upsert, _meta_to_row(child(workspace)), workspace)

    def decisions(rows: list) -> set[int]:
        statements = sent_by_write_partitioned(connection, rows, monkeypatch)
        assert statements, "nothing was sent"
        return {policy.on_request_error(s, None, ConnectionError("closed in flight"), 0)[0] for s in statements}

    assert decisions(quads) == {RetryPolicy.RETRY_NEXT_HOST}
    # On one node every partition has the same replicas: the child row shares the quads' batch.
    assert decisions([*quads, row]) == {RetryPolicy.RETHROW}
