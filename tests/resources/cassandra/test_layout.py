"""What TrustGraph would read: the raw S3 objects and Cassandra rows the real backend writes.

These run against the real servers only (they fail, never skip, when those are unreachable).
"""

from __future__ import annotations

import time

import pytest

from resources.cassandra.triples import _parts, keyspace_for
from resources.model import GRAPH_SOURCE, Quad, Term
from resources.settings import open_librarian

PROV = "http://www.w3.org/ns/prov#"
pytestmark = pytest.mark.services


@pytest.fixture
def real(cassandra_run):
    if cassandra_run.error:
        pytest.fail(cassandra_run.error, pytrace=False)
    lib = open_librarian(cassandra_run.settings(cassandra_run.new_workspace()))
    yield lib
    lib.close()


def test_object_key_and_content_type(real):
    meta = real.add_document("urn:doc:1", "application/vnd.ms-excel", b"\xd0\xcf\x11\xe0 xls")
    client, bucket = real.objects.client, real.objects.bucket
    head = client.head_object(Bucket=bucket, Key=f"doc/{meta.object_id}")
    assert head["ContentType"] == "application/vnd.ms-excel"
    assert head["ContentLength"] == meta.size
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=f"doc/{meta.object_id}")["Contents"]]
    assert keys == [f"doc/{meta.object_id}"]
    assert real.objects.uri(meta.object_id) == f"s3://{bucket}/doc/{meta.object_id}"


def test_lightweight_insert_reports_a_taken_id(real):
    # The insert's IF NOT EXISTS result is read from its first column, "[applied]", since the
    # driver's was_applied refuses the row factory the connection uses (named_rows).
    import dataclasses

    meta = real.add_document("urn:doc:taken", "text/plain", b"first")
    assert real.documents.insert(dataclasses.replace(meta, title="second"), None) is False
    assert real.get_metadata("urn:doc:taken").title == meta.title
    fresh = dataclasses.replace(meta, id="urn:doc:fresh")
    assert real.documents.insert(fresh, None) is True


def test_document_row_is_trustgraphs(real):
    meta = real.add_document(
        "doc-tg",
        "application/pdf",
        b"%PDF",
        title="T",
        comments="C",
        tags=["a", "b"],
        metadata=[("https://ex.org/d", True, "http://purl.org/dc/elements/1.1/title", True, "T", False)],
    )
    real.add_child_document("doc-tg", "urn:page:tg-1", "text/plain", b"p", "page", title="Page 1")
    c = real.documents.c
    # TrustGraph's own queries (tables/library.py), verbatim apart from user -> workspace.
    row = c.execute(
        "SELECT time, kind, title, comments, metadata, tags, object_id, parent_id, document_type "
        "FROM librarian.document WHERE workspace = ? AND id = ?",
        (real.workspace, "doc-tg"),
    ).one()
    assert row.kind == "application/pdf" and row.title == "T" and row.comments == "C"
    assert row.tags == ["a", "b"] and row.object_id == meta.object_id
    assert row.metadata == [("https://ex.org/d", True, "http://purl.org/dc/elements/1.1/title", True, "T", False)]
    assert row.parent_id == "" and row.document_type == "source"
    children = list(
        c.execute(
            "SELECT id, workspace, parent_id, document_type FROM librarian.document WHERE parent_id = ? ALLOW FILTERING",
            ("doc-tg",),
        )
    )
    # TrustGraph's query spans workspaces: other runs' workspaces may hold a "doc-tg" too.
    ours = [(r.id, r.workspace, r.document_type) for r in children if r.workspace == real.workspace]
    assert ours == [("urn:page:tg-1", real.workspace, "page")]
    by_object = list(c.execute("SELECT id FROM librarian.document WHERE object_id = ?", (meta.object_id,)))
    assert [r.id for r in by_object] == ["doc-tg"]
    ks = c.cluster.metadata.keyspaces["librarian"]
    cols = ks.tables["document"].columns
    assert {n: cols[n].cql_type for n in ("id", "workspace", "time", "metadata", "tags", "object_id")} == {
        "id": "text",
        "workspace": "text",
        "time": "timestamp",
        "metadata": "list<frozen<tuple<text, boolean, text, boolean, text, boolean>>>",
        "tags": "list<text>",
        "object_id": "uuid",
    }
    assert [col.name for col in ks.tables["document"].partition_key] == ["workspace"]
    assert [col.name for col in ks.tables["document"].clustering_key] == ["id"]
    assert {"document_object", "document_parent"} <= set(ks.indexes)


def test_triple_tables_are_trustgraphs(real):
    ks = keyspace_for(real.workspace)
    c = real.triples.c
    real.triples.insert(
        [
            Quad("urn:page:1", PROV + "wasDerivedFrom", Term("doc-x", is_iri=True), GRAPH_SOURCE),
            Quad("urn:page:1", "http://www.w3.org/2000/01/rdf-schema#label", Term("Page 1", language="en"), ""),
        ]
    )
    meta = c.cluster.metadata.keyspaces[ks]
    ent, coll = meta.tables["quads_by_entity"], meta.tables["quads_by_collection"]
    assert [k.name for k in ent.partition_key] == ["collection", "entity"]
    assert [k.name for k in ent.clustering_key] == ["role", "p", "otype", "s", "o", "d", "dtype", "lang"]
    assert [k.name for k in coll.partition_key] == ["collection"]
    assert [k.name for k in coll.clustering_key] == ["d", "s", "p", "o", "otype", "dtype", "lang"]
    rows = {
        (r.entity, r.role)
        for r in c.execute(
            f'SELECT entity, role FROM "{ks}".quads_by_entity WHERE collection = ? AND entity IN ?',
            ("default", ["urn:page:1", "doc-x", GRAPH_SOURCE, PROV + "wasDerivedFrom", "Page 1"]),
        )
    }
    # one row per role, as upstream's insert writes them: S, P, O (literal objects too), G outside the default graph
    assert rows == {
        ("urn:page:1", "S"),
        (PROV + "wasDerivedFrom", "P"),
        ("doc-x", "O"),
        (GRAPH_SOURCE, "G"),
        ("Page 1", "O"),
    }
    literal_o = c.execute(
        f'SELECT role, p, otype, s, o, d, dtype, lang FROM "{ks}".quads_by_entity WHERE collection = ? AND entity = ?',
        ("default", "Page 1"),
    ).one()
    assert tuple(literal_o) == (
        "O",
        "http://www.w3.org/2000/01/rdf-schema#label",
        "l",
        "urn:page:1",
        "Page 1",
        "",
        "",
        "en",
    )
    label = c.execute(
        f'SELECT otype, dtype, lang, d FROM "{ks}".quads_by_collection WHERE collection = ? AND d = ?', ("default", "")
    ).one()
    assert (label.otype, label.dtype, label.lang, label.d) == ("l", "", "en", "")
    assert c.execute(f'SELECT collection FROM "{ks}".collection_metadata WHERE collection = ?', ("default",)).one()


def test_removal_leaves_no_rows_in_any_entity_partition(real):
    ks = keyspace_for(real.workspace)
    c = real.triples.c
    real.add_document("src", "application/pdf", b"%PDF")
    real.add_child_document("src", "urn:page:p1", "text/plain", b"p", "page")
    act = "https://trustgraph.ai/activity/a1"
    real.triples.insert(
        [
            Quad("urn:page:p1", PROV + "wasDerivedFrom", Term("src", is_iri=True)),
            Quad("urn:page:p1", PROV + "wasGeneratedBy", Term(act, is_iri=True)),
            Quad(act, PROV + "used", Term("src", is_iri=True)),
            Quad("src", "http://purl.org/dc/elements/1.1/title", Term("Source"), ""),
        ]
    )
    assert real.remove_document("src") == 2
    for entity in ("src", "urn:page:p1", act, PROV + "wasDerivedFrom", PROV + "used", GRAPH_SOURCE, "Source"):
        left = list(
            c.execute(f'SELECT * FROM "{ks}".quads_by_entity WHERE collection = ? AND entity = ?', ("default", entity))
        )
        assert left == [], entity
    assert list(c.execute(f'SELECT * FROM "{ks}".quads_by_collection WHERE collection = ?', ("default",))) == []
    assert (
        c.execute(
            "SELECT id FROM librarian.document WHERE workspace = ? AND id = ?", (real.workspace, "urn:page:p1")
        ).one()
        is None
    )


def test_upload_log_is_one_partition_read_from_the_cursor(real):
    for i in range(5):
        real.add_document(f"d{i}", "text/plain", b"x")
    events = real.uploads_since(None)
    c = real.documents.c
    rows = list(c.execute("SELECT seq, id FROM librarian.upload_log WHERE workspace = ?", (real.workspace,)))
    assert [r.id for r in rows] == [f"d{i}" for i in range(5)]
    assert [str(r.seq) for r in rows] == [e.cursor for e in events]


def test_triples_write_rate_10k(real, record_property):
    quads = [
        Quad(f"urn:chunk:{i // 10}", f"https://ex.org/p{i % 10}", Term(f"value {i}"), GRAPH_SOURCE)
        for i in range(10_000)
    ]
    t0 = time.perf_counter()
    real.triples.insert(quads)
    elapsed = time.perf_counter() - t0
    rate = len(quads) / elapsed
    record_property("quads_per_second", round(rate))
    print(f"\n10,000 quads written to Cassandra in {elapsed:.2f} s: {rate:,.0f} quads/s (5 rows each)")
    assert real.triples.count() == 10_000
    assert rate > 500  # a floor only: a regression to one synchronous row at a time would fall under it


def test_workspace_named_like_a_cql_keyword(cassandra_run):
    """DEFAULT_WORKSPACE is "default", a reserved word of CQL: the keyspace name must be quoted."""
    import uuid

    from resources.cassandra.triples import CassandraTripleStore

    if cassandra_run.error:
        pytest.fail(cassandra_run.error, pytrace=False)
    store = CassandraTripleStore(cassandra_run.connection, "default")
    assert store.keyspace == "default"
    collection = f"test_{uuid.uuid4().hex}"  # the shared keyspace stays; this session's collection goes
    quad = Quad("urn:x", "urn:p", Term("v"), GRAPH_SOURCE)
    try:
        store.insert([quad], collection=collection)
        assert store.query(s="urn:x", collection=collection) == [quad]
    finally:
        assert store.delete_subjects(["urn:x"], GRAPH_SOURCE, collection=collection) == 1
        cassandra_run.connection.execute(
            'DELETE FROM "default".collection_metadata WHERE collection = ?', (collection,)
        )
    assert store.count(collection=collection) == 0


def test_lost_schema_is_recreated(real):
    """A keyspace dropped under a running process (or lost by a restarted test node) comes back."""
    ks = keyspace_for(real.workspace)
    quad = Quad("urn:a", "urn:p", Term("v"), GRAPH_SOURCE)
    real.triples.insert([quad])
    real.triples.c.ddl(f'DROP KEYSPACE "{ks}"', "dropping a keyspace under the librarian")
    real.triples.insert([quad])  # prepared statements of a dropped table fail; the store recreates it
    assert real.triples.query(s="urn:a") == [quad]


def test_every_connection_sends_at_once_without_nagle(real):
    """Every socket to Cassandra, the sessions' and the control connection's, has TCP_NODELAY: with
    Nagle's algorithm on (the driver's default) a small request written behind an unacknowledged one
    waits for the server's delayed ACK, and a document's writes took three times as long."""
    import socket

    connection = real.triples.c
    real.triples.insert([Quad("urn:a", "urn:p", Term("v"), GRAPH_SOURCE)])  # the pools are open
    sockets = [pool._connection._socket for pool in connection.session._pools.values()]
    sockets.append(connection.cluster.control_connection._connection._socket)
    assert sockets and all(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in sockets)


def test_a_documents_triples_share_batches_by_replica_without_server_warnings(real, caplog, monkeypatch):
    """A document's quads touch a partition per literal and predicate, mostly one row each: those
    rows go in few UNLOGGED batches of partitions with the same replicas, each within Cassandra's
    default warning thresholds (no "Server warning" from the driver), and every row is stored."""
    import logging

    from resources.cassandra.connection import (
        REPLICA_BATCH_BYTES,
        REPLICA_BATCH_PARTITIONS,
        REPLICA_ROW_OVERHEAD,
        row_size,
    )

    quads = [
        Quad(f"urn:section:{i % 7}", f"https://ex.org/p{i % 11}", Term(f"literal value number {i}"), GRAPH_SOURCE)
        for i in range(70)
    ]
    # and literals long enough that the batches' size, not their partitions, bounds them: each row
    # repeats its literal, and Cassandra warns above 5 KiB
    quads += [
        Quad(f"urn:page:{i % 3}", f"https://ex.org/text{i % 2}", Term(f"{i} " + "word " * (40 * i)), GRAPH_SOURCE)
        for i in range(1, 8)
    ]
    rows = [row for q in quads for row in real.triples._rows_of("default", *_parts(q), "C", "E")]
    partitions = {(cql, partition) for cql, _, partition in rows}
    sent: list[int] = []
    original = real.triples.c.write_partitioned
    # the connection is shared by the process's librarians: patched for this test only
    monkeypatch.setattr(real.triples.c, "write_partitioned", lambda *a, **k: sent.append(original(*a, **k)) or sent[-1])
    with caplog.at_level(logging.WARNING, logger="cassandra"):
        real.triples.insert(quads)
    assert not [r for r in caplog.records if "Server warning" in r.getMessage()]
    # about one request per REPLICA_BATCH_PARTITIONS partitions or REPLICA_BATCH_BYTES, where one
    # per partition was sent before
    size = sum(row_size(params) + REPLICA_ROW_OVERHEAD for _, params, _ in rows)
    limit = len(partitions) // REPLICA_BATCH_PARTITIONS + size // REPLICA_BATCH_BYTES + 8
    assert sum(sent) <= limit, (sum(sent), len(partitions), size)
    assert sorted(real.triples.query(collection="default"), key=repr) == sorted(quads, key=repr)
    for q in quads:  # each literal's own partition, as TrustGraph's readers look a literal up
        assert real.triples.query(o=q.o, collection="default") == [q]


def test_text_rows_are_bound_exactly_as_the_driver_binds_them(real):
    """The triple tables' rows skip the driver's per-value serialization (text_binder): each bound
    row must carry the driver's own bytes and routing key, and anything but a row of str (a None,
    bytes, the wrong width) and any statement with a non-text column bind through the driver."""
    from resources.cassandra.connection import text_binder

    store = real.triples
    connection = store.c
    stmt = connection.prepare(store._ins_entity)
    bind = text_binder(stmt)
    assert bind is not stmt.bind
    rows = [
        (
            "default",
            "http://example.org/é/1",
            "s",
            "urn:p",
            "l",
            "urn:s",
            "naïve café ☕ 𝄞",
            "urn:graph:source",
            "",
            "",
        ),
        ("c", "", "", "", "", "", "", "", "", ""),
    ]
    for row in rows:
        fast, driver = bind(row), stmt.bind(row)
        assert fast.values == driver.values
        assert fast.routing_key == driver.routing_key
        assert (fast.keyspace, fast.consistency_level, fast.is_idempotent) == (
            driver.keyspace,
            driver.consistency_level,
            driver.is_idempotent,
        )
    with_none = ("default", "urn:e", "s", "urn:p", "u", "urn:s", "urn:o", "urn:g", None, "")
    assert bind(with_none).values == stmt.bind(with_none).values
    for bad in ((*rows[0], "one too many"), (*rows[0][:-1], b"bytes")):  # refused as the driver refuses
        with pytest.raises(Exception) as fast_error:
            bind(bad)
        with pytest.raises(Exception) as driver_error:
            stmt.bind(bad)
        assert type(fast_error.value) is type(driver_error.value)
    not_all_text = connection.prepare(store._coll_put)  # collection text, created_at from now(): one text column
    assert text_binder(not_all_text)(("default",)).values == [b"default"]
    with_timestamp = connection.prepare(
        f'INSERT INTO "{store.keyspace}".collection_metadata (collection, created_at) VALUES (?, ?)'
    )
    assert text_binder(with_timestamp) == with_timestamp.bind  # a non-text column: the driver binds
    # and what was written through the fast path reads back
    quad = Quad("urn:s:fast", "urn:p", Term("naïve café ☕ 𝄞"), GRAPH_SOURCE)
    assert store.insert([quad]) == 1
    assert list(store.query(s="urn:s:fast")) == [quad]
