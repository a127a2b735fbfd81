"""Our schema created by several processes at once, on different nodes of make cluster-up's cluster.

Processes of a deployment start together (the daemon's sensor, Celery workers, a CLI call) and each
creates the tables it needs with CREATE TABLE IF NOT EXISTS. Separate processes reach different
coordinators by chance; here each of three creators is pinned to one node, so that the race happens
every time. Rows acknowledged right after each creation must all be readable once the nodes agree.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from resources.cassandra import triples
from resources.cassandra.connection import CassandraConfig, acquire, stable_table_id

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]
ROWS_PER_NODE = 20


def test_the_triple_stores_tables_created_at_once_on_every_node_lose_no_rows(cluster, tag):
    from cassandra import ConsistencyLevel
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, ExecutionProfile
    from cassandra.cluster import Cluster as Driver
    from cassandra.policies import WhiteListRoundRobinPolicy
    from cassandra.query import SimpleStatement

    config = CassandraConfig.from_env()
    keyspace = f"udc_{tag}_race_{uuid.uuid4().hex[:6]}"
    shared = acquire(config)
    statements = triples.schema(shared, keyspace)  # the DDL the triple store runs, as shipped
    insert = f'INSERT INTO "{keyspace}".collection_metadata (collection) VALUES (%s)'
    pinned = []
    try:
        for host in config.hosts:
            # One node as coordinator, and no wait for agreement after a schema change: another process
            # does not wait for this one's either.
            profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]))
            driver = Driver(
                [host],
                port=config.port,
                execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                max_schema_agreement_wait=0,
            )
            pinned.append((host, driver, driver.connect()))
        start = threading.Barrier(len(pinned))
        errors: list[str] = []

        def create_then_write(host: str, session) -> None:
            start.wait()
            try:
                for cql in statements:
                    session.execute(cql, timeout=60)
                for i in range(ROWS_PER_NODE):
                    one = SimpleStatement(insert, consistency_level=ConsistencyLevel.ONE)
                    session.execute(one, (f"{host}-{i}",), timeout=30)
            except Exception as e:  # reported below, with the node
                errors.append(f"{host}: {e!r}")

        threads = [threading.Thread(target=create_then_write, args=(h, s)) for h, _, s in pinned]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []

        ids: dict[str, dict[str, uuid.UUID]] = {}
        deadline = time.monotonic() + 60
        while True:
            versions = {s.execute("SELECT schema_version FROM system.local").one().schema_version for _, _, s in pinned}
            if len(versions) == 1 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert len(versions) == 1, f"no schema agreement after 60 s: {versions}"
        every = SimpleStatement(
            f'SELECT collection FROM "{keyspace}".collection_metadata', consistency_level=ConsistencyLevel.ALL
        )
        stored = {r.collection for r in pinned[0][2].execute(every)}
        written = {f"{h}-{i}" for h, _, _ in pinned for i in range(ROWS_PER_NODE)}
        assert stored == written, f"{len(written - stored)} of {len(written)} acknowledged rows lost"
        for host, _, session in pinned:
            rows = session.execute(
                "SELECT table_name, id FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,)
            )
            ids[host] = {r.table_name: r.id for r in rows}
        expected = {t: stable_table_id(keyspace, t) for t in triples.TABLES}
        assert all(found == expected for found in ids.values()), ids
    finally:
        for _, driver, _ in pinned:
            driver.shutdown()
        try:
            shared.ddl(f'DROP KEYSPACE IF EXISTS "{keyspace}"', "dropping a test keyspace")
        finally:
            shared.release()


def test_a_schemas_statements_go_to_one_node_so_an_index_finds_its_table(cluster, tag, monkeypatch):
    """The librarian's schema (its tables, then TrustGraph's index on document.parent_id) created by
    a connection that spans the three nodes: every statement of one schema goes through the same
    live node, which knows the tables it has just created. Sent to whichever node the driver picked,
    the CREATE INDEX reached a node that had not heard of the table yet ("Table 'document' doesn't
    exist", CI on 985c0b9). Five fresh keyspaces in a row, each with every table and the index."""
    from resources.cassandra.connection import CassandraConnection, create_table_cql, quote

    config = CassandraConfig.from_env()
    assert len(config.hosts) == 3
    shared = acquire(config)
    sent: list[tuple[str, object]] = []
    real_ddl = CassandraConnection.ddl

    def recording_ddl(self, cql, what, host=None):
        sent.append((what, host))
        return real_ddl(self, cql, what, host)

    monkeypatch.setattr(CassandraConnection, "ddl", recording_ddl)
    keyspaces = [f"udc_{tag}_index_{uuid.uuid4().hex[:6]}" for _ in range(5)]
    try:
        for keyspace in keyspaces:
            sent.clear()
            statements = [  # the shape of the librarian's schema: a keyspace, a table, its index
                shared.create_keyspace_cql(keyspace),
                create_table_cql(
                    keyspace, "document", "workspace text, id text, parent_id text, PRIMARY KEY (workspace, id)"
                ),
                f"CREATE INDEX IF NOT EXISTS document_parent ON {quote(keyspace)}.document (parent_id)",
            ]
            shared.ensure_schema(keyspace, statements, ["document"], ["document_parent"])
            hosts = {host for _, host in sent}
            assert len(sent) == 3 and len(hosts) == 1, sent
            (host,) = hosts
            assert host is not None and host.is_up
            meta = shared.cluster.metadata.keyspaces[keyspace]
            assert "document" in meta.tables and "document_parent" in meta.indexes, keyspace
    finally:
        for keyspace in keyspaces:
            shared.ddl(f'DROP KEYSPACE IF EXISTS "{keyspace}"', "dropping a test keyspace")
        shared.release()
