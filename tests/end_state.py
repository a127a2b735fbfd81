"""The whole end state of a workspace, read by another route than the code under test.

Fault and recovery tests compare what a disturbed run left with an undisturbed reference run of
the same documents, field by field and with exact equality. The state is read straight from the
stores (raw CQL and a boto3 listing for Cassandra + S3; raw SQL and the object folder for the
embedded backend), never through the librarian, so a librarian bug cannot hide itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from resources.cassandra.triples import keyspace_for
from resources.embedded import SQLITE_NAME
from ud_assets.defs.resources import LibrarianResource

# Provenance carries the time of the run; pinned, so that two runs of the same bytes give equal triples.
FIXED_NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


@contextmanager
def pinned_time() -> Iterator[None]:
    """Runs inside get FIXED_NOW as their time, so a rerun and its reference give equal triples."""
    import ud_assets.processing.runner as runner

    real = runner.open_attempt

    def open_attempt(librarian, document_id, config, version, now=None, read=None):
        return real(librarian, document_id, config, version, FIXED_NOW, read)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "open_attempt", open_attempt)
        yield


@dataclass
class State:
    """Everything a workspace has stored, in terms that do not depend on the workspace's name."""

    documents: dict[
        str, tuple
    ]  # id -> (type, parent, sha256, size, kind, title, tags, comments, metadata): all but times and object key
    contents: dict[str, str]  # id -> sha256 of the bytes at its object key ("missing" when absent)
    elements: dict[str, str]  # id -> sha256 of its generation's elements object
    generations: dict[str, tuple]  # id -> the generation record but its time and object key
    failures: dict[str, str]  # the failure ledger: id -> error
    quads: set[tuple]  # (collection, d, s, p, o, otype, dtype, lang)
    entity_rows: set[tuple]  # Cassandra's quads_by_entity rows (none on the embedded backend)
    collections: set[str]  # Cassandra's collection_metadata rows
    unreferenced: set[str] = field(default_factory=set)  # stored objects that no row references
    uploads: list[tuple] = field(default_factory=list)  # the upload log in its order: (id, event, sha256)

    def counts(self) -> str:
        return f"{len(self.documents)} rows, {len(self.contents)} objects, {len(self.quads)} quads"


GENERATION_FIELDS = ("fingerprint", "sha256", "unstructured_version", "decoder_version", "config_json", "summary_json")


def read_state(resource: LibrarianResource) -> State:
    if resource.backend == "embedded":
        assert resource.home, "an embedded resource names its home"
        return read_embedded_state(Path(resource.home), resource.workspace)
    assert resource.bucket, "a Cassandra resource of a test has a bucket of its own"
    return read_cassandra_state(resource.workspace, resource.bucket)


def read_embedded_state(home: Path, workspace: str) -> State:
    stored = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (home / "objects").iterdir()
        if p.is_file() and not p.name.startswith(".tmp-")
    }
    db = sqlite3.connect(f"file:{home / SQLITE_NAME}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        rows = db.execute("SELECT * FROM document WHERE workspace = ?", (workspace,)).fetchall()
        generations = db.execute("SELECT * FROM record_generation WHERE workspace = ?", (workspace,)).fetchall()
        failures = db.execute("SELECT * FROM record_failure WHERE workspace = ?", (workspace,)).fetchall()
        uploads = [
            tuple(r)
            for r in db.execute(
                "SELECT id, event, sha256 FROM upload_log WHERE workspace = ? ORDER BY seq", (workspace,)
            )
        ]
        quads = {
            tuple(r)
            for r in db.execute(
                "SELECT collection, d, s, p, o, otype, dtype, lang FROM quads WHERE workspace = ?", (workspace,)
            )
        }
    finally:
        db.close()
    referenced = {r["object_id"] for r in rows} | {g["elements_object_id"] for g in generations}
    return State(
        documents={
            r["id"]: (
                r["document_type"],
                r["parent_id"] or None,
                r["sha256"],
                r["size"],
                r["kind"],
                r["title"],
                tuple(json.loads(r["tags"])),
                r["comments"],
                tuple(tuple(m) for m in json.loads(r["metadata"])),
            )
            for r in rows
        },
        contents={r["id"]: stored.get(r["object_id"], "missing") for r in rows},
        elements={g["document_id"]: stored.get(g["elements_object_id"], "missing") for g in generations},
        generations={g["document_id"]: tuple(g[f] for f in GENERATION_FIELDS) for g in generations},
        failures={f["document_id"]: f["error"] for f in failures},
        quads=quads,
        entity_rows=set(),
        collections={q[0] for q in quads},
        unreferenced=set(stored) - referenced,
        uploads=uploads,
    )


@contextmanager
def cql_session() -> Iterator:
    """A driver session of the test's own, beside the project's: reads the tables as they are."""
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import Cluster

    user, password = os.environ.get("CASSANDRA_USERNAME"), os.environ.get("CASSANDRA_PASSWORD")
    cluster = Cluster(
        [h.strip() for h in os.environ["CASSANDRA_HOST"].split(",")],
        port=int(os.environ.get("CASSANDRA_PORT") or 9042),
        auth_provider=PlainTextAuthProvider(user, password) if user and password else None,
        # A node that has just restarted on a busy machine can be slow to answer at first.
        connect_timeout=30,
        control_connection_timeout=30,
    )
    try:
        session = cluster.connect()
        session.default_timeout = 120
        if os.environ.get("CASSANDRA_CONSISTENCY"):  # e.g. QUORUM on the cluster (tests/cluster)
            from cassandra import ConsistencyLevel

            session.default_consistency_level = ConsistencyLevel.name_to_value[os.environ["CASSANDRA_CONSISTENCY"]]
        yield session
    finally:
        cluster.shutdown()


def s3_client():
    from resources.s3 import make_client

    return make_client()


def drop_bucket(bucket: str) -> None:
    client = s3_client()
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:
                client.delete_objects(Bucket=bucket, Delete={"Objects": keys})
        client.delete_bucket(Bucket=bucket)
    except Exception:
        pass  # best effort, like the session's own cleanup


def read_cassandra_state(workspace: str, bucket: str) -> State:
    client = s3_client()
    stored: dict[str, str] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            body = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
            stored[item["Key"]] = hashlib.sha256(body).hexdigest()

    def content(object_id: object) -> str:
        return stored.get(f"doc/{object_id}", "missing")

    ks = keyspace_for(workspace)
    with cql_session() as session:
        rows = list(session.execute("SELECT * FROM librarian.document WHERE workspace = %s", (workspace,)))
        generations = list(
            session.execute("SELECT * FROM librarian.record_generation WHERE workspace = %s", (workspace,))
        )
        failures = list(session.execute("SELECT * FROM librarian.record_failure WHERE workspace = %s", (workspace,)))
        uploads = [
            (r.id, r.event, r.sha256)
            for r in session.execute(
                "SELECT id, event, sha256 FROM librarian.upload_log WHERE workspace = %s ORDER BY seq", (workspace,)
            )
        ]
        quads = {
            tuple(r)
            for r in session.execute(
                f'SELECT collection, d, s, p, o, otype, dtype, lang FROM "{ks}".quads_by_collection'
            )
        }
        entity_rows = {
            tuple(r)
            for r in session.execute(
                f'SELECT collection, entity, role, p, otype, s, o, d, dtype, lang FROM "{ks}".quads_by_entity'
            )
        }
        collections = {r.collection for r in session.execute(f'SELECT collection FROM "{ks}".collection_metadata')}
    referenced = {f"doc/{r.object_id}" for r in rows} | {f"doc/{g.elements_object_id}" for g in generations}
    return State(
        documents={
            r.id: (
                r.document_type,
                r.parent_id,
                r.sha256,
                r.size,
                r.kind,
                r.title,
                tuple(r.tags or ()),
                r.comments or "",
                tuple(tuple(m) for m in r.metadata or ()),
            )
            for r in rows
        },
        contents={r.id: content(r.object_id) for r in rows},
        elements={g.document_id: content(g.elements_object_id) for g in generations},
        generations={g.document_id: tuple(getattr(g, f) for f in GENERATION_FIELDS) for g in generations},
        failures={f.document_id: f.error for f in failures},
        quads=quads,
        entity_rows=entity_rows,
        collections=collections,
        unreferenced=set(stored) - referenced,
        uploads=uploads,
    )


def assert_same_state(state: State, reference: State, what: str) -> None:
    """Exact equality, field by field, so that a failure names what differs."""
    assert state.failures == {}, f"{what}: failure ledger not empty: {state.failures}"
    assert state.unreferenced == set(), f"{what}: objects no row references: {sorted(state.unreferenced)[:5]}"
    assert {i: c for i, c in state.contents.items() if c != state.documents[i][2]} == {}, (
        f"{what}: objects whose bytes are not the row's sha256 (or missing)"
    )
    assert set(state.documents) == set(reference.documents), (
        f"{what}: rows missing {sorted(set(reference.documents) - set(state.documents))[:5]}, "
        f"extra {sorted(set(state.documents) - set(reference.documents))[:5]}"
    )
    differ = {
        i: (state.documents[i], reference.documents[i])
        for i in reference.documents
        if state.documents[i] != reference.documents[i]
    }
    assert differ == {}, f"{what}: document rows differ (found, expected): {dict(list(differ.items())[:3])}"
    assert state.uploads == reference.uploads, (
        f"{what}: upload log (id, event, sha256) in order differs:\n  found    {state.uploads}\n  expected {reference.uploads}"
    )
    assert state.contents == reference.contents, f"{what}: object bytes differ"
    assert state.generations == reference.generations, f"{what}: generation records differ"
    assert state.elements == reference.elements, f"{what}: elements objects differ"
    assert len(state.quads) == len(reference.quads) and state.quads == reference.quads, (
        f"{what}: {len(state.quads)} quads instead of {len(reference.quads)}; missing e.g. "
        f"{sorted(reference.quads - state.quads)[:3]}, extra e.g. {sorted(state.quads - reference.quads)[:3]}"
    )
    assert state.collections == reference.collections, f"{what}: collections {state.collections}"
    assert state.entity_rows == reference.entity_rows, (
        f"{what}: quads_by_entity has {len(state.entity_rows)} rows instead of {len(reference.entity_rows)}"
    )


def document_slice(state: State, document_id: str) -> dict[str, object]:
    """What a state holds of one document: its row and its descendants' (through their parent
    links), their objects' bytes, its generation and elements, and the quads about any of them
    (subject: the document's IRI or a descendant's id). Two states that agree here agree on
    everything that document's materialization stored."""
    from ud_assets.decoding.ids import document_iri

    ids = {document_id} if document_id in state.documents else set()
    while True:
        more = {i for i, row in state.documents.items() if row[1] in ids} - ids
        if not more:
            break
        ids |= more
    subjects = ids | {document_iri(document_id)}
    return {
        "rows": {i: state.documents[i] for i in ids},
        "contents": {i: state.contents[i] for i in ids},
        "generation": state.generations.get(document_id),
        "elements": state.elements.get(document_id),
        "quads": {q for q in state.quads if q[2] in subjects},
    }
