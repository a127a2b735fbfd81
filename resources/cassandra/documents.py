"""The librarian's metadata in Cassandra, in TrustGraph's layout (keyspace "librarian").

librarian.document has TrustGraph's exact columns and key (PRIMARY KEY (workspace, id)) and its
two secondary indexes (document_object on object_id, document_parent on parent_id), plus two
extra columns TrustGraph ignores: size bigint, sha256 text.

librarian.upload_log(workspace, seq timeuuid, id, event, sha256), clustered by seq ascending, is
ours: uploads_since reads one partition from the cursor on, so its cost grows with the new
events, not with the library. seq comes from the coordinator's clock (now()).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from resources.cassandra.connection import CassandraConnection, CassandraUnavailable, create_table_cql, row_size
from resources.librarian import RECORD_TYPES, record_columns
from resources.model import (
    SOURCE,
    DocumentMetadata,
    LibrarianError,
    OutcomeUnknown,
    ProcessingRequest,
    Record,
    StorageUnavailable,
    Upload,
)

KEYSPACE = "librarian"

_COLUMNS = (
    "id, workspace, time, kind, title, comments, metadata, tags, object_id, parent_id, document_type, size, sha256"
)

# Bulk writes (register_many, put_records) all land in one partition, the workspace's, and a
# replica applies concurrent updates of one partition one after the other: a few large unlogged
# batches beat many small requests. Measured on this project's single node (2 cores, 20,000 rows,
# 2026-12-03): batches of 250-1,000 rows, 2-4 in flight, ~9,500 document rows/s; the same rows
# as single statements (execute_concurrent, 16-64 in flight) 600-800/s, and 64 batches in flight
# timed out. A single-partition batch is one mutation, which batch_size_fail_threshold does not
# limit (CASSANDRA-10876); BULK_BYTES keeps each well under the commit log's mutation limit.
# register_many sends its batches (rows with their upload-log events) one at a time, so that the
# log's events commit in order: 11,000 records/s on 20,000 records (2026-12-07). put_records,
# whose rows have no order to keep, sends BULK_IN_FLIGHT at once.
BULK_ROWS = 500
BULK_BYTES = 1 << 20
BULK_IN_FLIGHT = 2
# Pauses between reads back of a row whose insert lost its reply (settle): the driver reconnects
# a node it lost within about a second (its reconnection policy starts at 0.5 s).
SETTLE_PAUSES_S = (0.2, 0.5, 1.0, 2.0, 4.0)
# Ids per "id IN ?" read of which ids are taken (a slice of clustering keys in one partition).
TAKEN_CHUNK = 500


# The tables schema() creates in the librarian keyspace.
TABLES = ("document", "upload_log", "processing", *(f"record_{kind}" for kind in RECORD_TYPES))


def schema(create_keyspace: str) -> list[str]:
    """The librarian keyspace's DDL, after create_keyspace (its CREATE KEYSPACE, with the deployment's replication)."""
    ks = KEYSPACE
    return [
        create_keyspace,
        create_table_cql(
            ks,
            "document",
            """
            id text,
            workspace text,
            time timestamp,
            kind text,
            title text,
            comments text,
            metadata list<tuple<text, boolean, text, boolean, text, boolean>>,
            tags list<text>,
            object_id uuid,
            parent_id text,
            document_type text,
            size bigint,
            sha256 text,
            PRIMARY KEY (workspace, id)
            """,
        ),
        f"CREATE INDEX IF NOT EXISTS document_object ON {ks}.document (object_id)",
        f"CREATE INDEX IF NOT EXISTS document_parent ON {ks}.document (parent_id)",
        create_table_cql(
            ks,
            "upload_log",
            """
            workspace text,
            seq timeuuid,
            id text,
            event text,
            sha256 text,
            PRIMARY KEY (workspace, seq)
            """,
            "CLUSTERING ORDER BY (seq ASC)",
        ),
        # TrustGraph's processing requests, its exact table (trustgraph/tables/library.py).
        create_table_cql(
            ks,
            "processing",
            """
            id text,
            document_id text,
            time timestamp,
            flow text,
            workspace text,
            collection text,
            tags list<text>,
            PRIMARY KEY (workspace, id)
            """,
        ),
        *(record_table(kind) for kind in RECORD_TYPES),
    ]


_CQL_TYPES = {str: "text", int: "bigint", bool: "boolean", datetime: "timestamp"}


def record_table(kind: str) -> str:
    """Our decoder records (resources.records), one table per type: PRIMARY KEY (workspace, document_id)."""
    cols = ",\n            ".join(f"{name} {_CQL_TYPES[t]}" for name, t in record_columns(kind))
    return create_table_cql(
        KEYSPACE,
        f"record_{kind}",
        f"""
            workspace text,
            {cols},
            PRIMARY KEY (workspace, document_id)
        """,
    )


_EPOCH_UUID = datetime(1582, 10, 15, tzinfo=UTC)


def _uuid_time(u: uuid.UUID) -> datetime:
    t = _EPOCH_UUID + timedelta(microseconds=u.time // 10)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def _utc(t: datetime | None) -> datetime:
    if t is None:
        return datetime.fromtimestamp(0, UTC)
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _row_to_meta(r) -> DocumentMetadata:
    return DocumentMetadata(
        id=r.id,
        workspace=r.workspace,
        time=_utc(r.time),
        kind=r.kind or "",
        title=r.title or "",
        comments=r.comments or "",
        metadata=tuple(tuple(m) for m in (r.metadata or ())),
        tags=tuple(r.tags or ()),
        object_id=r.object_id,
        parent_id=r.parent_id or "",
        document_type=r.document_type or SOURCE,
        size=r.size or 0,
        sha256=r.sha256 or "",
    )


def _meta_to_row(m: DocumentMetadata) -> tuple:
    """The values of _COLUMNS for a row."""
    return (
        m.id,
        m.workspace,
        m.time,
        m.kind,
        m.title,
        m.comments,
        [tuple(x) for x in m.metadata],
        list(m.tags),
        m.object_id,
        m.parent_id,
        m.document_type,
        m.size,
        m.sha256,
    )


class CassandraDocumentStore:
    """DocumentStore (resources.librarian) over librarian.document + librarian.upload_log."""

    def __init__(self, connection: CassandraConnection):
        self.c = connection
        self.c.ensure_schema(
            KEYSPACE, schema(connection.create_keyspace_cql(KEYSPACE)), TABLES, ["document_object", "document_parent"]
        )
        ks = KEYSPACE
        self._get = f"SELECT {_COLUMNS} FROM {ks}.document WHERE workspace = ? AND id = ?"
        self._insert = (
            f"INSERT INTO {ks}.document ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS"
        )
        self._upsert = f"INSERT INTO {ks}.document ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        self._list = f"SELECT {_COLUMNS} FROM {ks}.document WHERE workspace = ?"
        self._taken = f"SELECT id FROM {ks}.document WHERE workspace = ? AND id IN ?"
        # id is the clustering column: many ids of a workspace are one read of its partition.
        self._get_in = f"SELECT {_COLUMNS} FROM {ks}.document WHERE workspace = ? AND id IN ?"
        # id is the clustering column: a page is a slice of the workspace's partition, in id order.
        self._page = f"SELECT {_COLUMNS} FROM {ks}.document WHERE workspace = ? AND id > ? LIMIT ?"
        self._children = f"SELECT {_COLUMNS} FROM {ks}.document WHERE workspace = ? AND parent_id = ?"
        self._page_ids = (
            f"SELECT id, parent_id, document_type FROM {ks}.document WHERE workspace = ? AND id > ? LIMIT ?"
        )
        self._delete = f"DELETE FROM {ks}.document WHERE workspace = ? AND id = ?"
        self._log = f"INSERT INTO {ks}.upload_log (workspace, seq, id, event, sha256) VALUES (?, now(), ?, ?, ?)"
        self._events = f"SELECT seq, id, event, sha256 FROM {ks}.upload_log WHERE workspace = ? LIMIT ?"
        self._events_after = (
            f"SELECT seq, id, event, sha256 FROM {ks}.upload_log WHERE workspace = ? AND seq > ? LIMIT ?"
        )

        processing = "id, document_id, time, flow, collection, tags"
        self._put_processing = f"INSERT INTO {ks}.processing (workspace, {processing}) VALUES (?, ?, ?, ?, ?, ?, ?)"
        self._delete_processing = f"DELETE FROM {ks}.processing WHERE workspace = ? AND id = ?"
        self._processing_after = f"SELECT {processing} FROM {ks}.processing WHERE workspace = ? AND id > ? LIMIT ?"
        self._processing_in = f"SELECT id FROM {ks}.processing WHERE workspace = ? AND id IN ?"

    def put_processing(self, workspace: str, request: ProcessingRequest) -> None:
        row = (
            workspace,
            request.id,
            request.document_id,
            request.time,
            request.flow,
            request.collection,
            list(request.tags),
        )
        self.c.execute(self._put_processing, row, f"writing processing request {request.id!r}")

    def delete_processing(self, workspace: str, id: str) -> None:
        self.c.execute(self._delete_processing, (workspace, id), f"deleting processing request {id!r}")

    def processing_after(self, workspace: str, after: str, limit: int) -> list[ProcessingRequest]:
        what = f"listing processing requests of workspace {workspace!r}"
        with self.c.errors(what):
            return [
                ProcessingRequest(
                    id=r.id,
                    document_id=r.document_id or "",
                    collection=r.collection or "",
                    time=_utc(r.time),
                    flow=r.flow or "",
                    tags=tuple(r.tags or ()),
                )
                for r in self.c.execute(self._processing_after, (workspace, after, limit), what, fetch_size=1000)
            ]

    def processing_present(self, workspace: str, ids: Sequence[str]) -> set[str]:
        reads = [
            (self._processing_in, (workspace, list(ids[i : i + TAKEN_CHUNK]))) for i in range(0, len(ids), TAKEN_CHUNK)
        ]
        found: set[str] = set()
        for rows in self.c.execute_many(reads, "reading which processing requests exist"):
            found.update(row.id for row in rows)
        return found

    def get(self, workspace: str, id: str) -> DocumentMetadata | None:
        rows = list(self.c.execute(self._get, (workspace, id), f"reading document {id!r}"))
        return _row_to_meta(rows[0]) if rows else None

    def get_many(self, workspace: str, ids: Sequence[str]) -> list[DocumentMetadata]:
        reads = [(self._get_in, (workspace, list(ids[i : i + TAKEN_CHUNK]))) for i in range(0, len(ids), TAKEN_CHUNK)]
        results = self.c.execute_many(reads, f"reading {len(ids)} documents of workspace {workspace!r}")
        return [_row_to_meta(row) for rows in results for row in rows]

    def insert(self, meta: DocumentMetadata, event: str | None) -> bool:
        try:
            result = self.c.execute(self._insert, _meta_to_row(meta), f"writing document {meta.id!r}")
            # An LWT's first column is "[applied]" (the driver's was_applied refuses our row factory).
            applied = bool(result.one()[0])
        except CassandraUnavailable as e:
            if not e.sent:
                raise
            applied = self._settle(meta, e)
        if not applied:
            return False
        if event:
            self.log_event(meta.workspace, meta.id, event, meta.sha256)
        return True

    def _settle(self, meta: DocumentMetadata, lost: CassandraUnavailable) -> bool:
        """Whether the insert whose reply was lost (`lost`) wrote the row: its connection may have
        died after the coordinator applied it, and the driver does not send a lightweight
        transaction again (replay_safe). A read at LOCAL_SERIAL finishes any proposal still in
        flight first, so a row it does not find was not written and never will be: then `lost` is
        raised as it is, and the caller may discard the bytes. A row with this write's object id
        is ours; one with another is another writer's (False)."""
        what = f"reading back document {meta.id!r}"
        for pause in (*SETTLE_PAUSES_S, None):
            try:
                rows = list(self.c.execute(self._get, (meta.workspace, meta.id), what, consistency="LOCAL_SERIAL"))
                break
            except LibrarianError as e:
                # An outage is read again (the driver may need a moment to reconnect); the rest not.
                if pause is None or not isinstance(e, StorageUnavailable):
                    raise OutcomeUnknown(f"{lost}; reading it back failed too: {e}") from None
                time.sleep(pause)
        if not rows:
            raise lost
        return rows[0].object_id == meta.object_id

    def upsert_many(self, metas: Sequence[DocumentMetadata]) -> None:
        # Children only: their ids are deterministic, so a plain INSERT (no Paxos round) is safe,
        # and rows of one workspace share a partition: unlogged batches, sent concurrently.
        rows = [(self._upsert, _meta_to_row(m), m.workspace) for m in metas]
        self.c.write_partitioned(rows, f"writing {len(rows)} child documents")

    def register_many(self, metas: Sequence[DocumentMetadata]) -> list[DocumentMetadata]:
        # Not atomic as a whole, unlike insert (a lightweight transaction a row would cost a Paxos
        # round each): the ids already taken are read, then the new rows written. Each row goes in
        # one batch with its 'added' event: both tables are keyed by workspace, so a batch is one
        # mutation of one partition, which a replica applies whole or not at all. An import cut
        # short (a lost reply, a killed process) therefore never leaves a row without its event,
        # which the run again would skip as taken, leaving the document to the sensor's sweep of
        # the whole table (at a million documents, 500 ticks). Rows went first, then the events,
        # until a cut between the two lost every event. A sensor may read an event a moment
        # before a second replica holds its row; the run it plans reads the row seconds later.
        reads: list[tuple[str, tuple[str, list[str]]]] = []
        for workspace in {m.workspace for m in metas}:
            ids = [m.id for m in metas if m.workspace == workspace]
            reads += [(self._taken, (workspace, ids[i : i + TAKEN_CHUNK])) for i in range(0, len(ids), TAKEN_CHUNK)]
        taken: set[tuple[str, str]] = set()
        for (_, (workspace, _)), rows in zip(reads, self.c.execute_many(reads, "reading which ids are taken")):
            taken.update((workspace, row.id) for row in rows)
        new = [m for m in metas if (m.workspace, m.id) not in taken]
        # One batch at a time: now() is taken per event, in batch order, so the log keeps the
        # given order, and no batch commits behind a later one a sensor may have read already.
        self.c.write_batches(_register_batches(new, self._upsert, self._log), f"registering {len(new)} documents")
        return new

    def _rows(self, cql: str, params: Sequence, what: str) -> list[DocumentMetadata]:
        with self.c.errors(what):
            return [_row_to_meta(r) for r in self.c.execute(cql, params, what, fetch_size=1000)]

    def rows(self, workspace: str, include_children: bool) -> list[DocumentMetadata]:
        docs = self._rows(self._list, (workspace,), f"listing documents of workspace {workspace!r}")
        if not include_children:
            docs = [d for d in docs if not d.parent_id and d.document_type == SOURCE]
        return docs

    def page_rows(self, workspace: str, after: str, limit: int) -> list[DocumentMetadata]:
        return self._rows(self._page, (workspace, after, limit), f"listing documents of workspace {workspace!r}")

    def children(self, workspace: str, parent_id: str) -> list[DocumentMetadata]:
        return self._rows(self._children, (workspace, parent_id), f"listing children of {parent_id!r}")

    def delete(self, workspace: str, ids: Sequence[str]) -> None:
        for id in ids:  # in the given order (leaves first), so a failure leaves the parents
            self.c.execute(self._delete, (workspace, id), f"deleting document {id!r}")

    def log_event(self, workspace: str, id: str, event: str, sha256: str) -> None:
        self.c.execute(self._log, (workspace, id, event, sha256), f"logging {event} of {id!r}")

    def events_since(self, workspace: str, cursor: str | None, limit: int) -> list[Upload]:
        if cursor is None:
            rows = self.c.execute(self._events, (workspace, limit), "reading the upload log")
        else:
            try:
                after = uuid.UUID(cursor)
                if after.version != 1:
                    raise ValueError
            except (ValueError, TypeError, AttributeError):
                raise LibrarianError(f"upload cursor {cursor!r} is not one this Cassandra librarian gave out") from None
            rows = self.c.execute(self._events_after, (workspace, after, limit), "reading the upload log")
        return [
            Upload(id=r.id, event=r.event, sha256=r.sha256 or "", time=_uuid_time(r.seq), cursor=str(r.seq))
            for r in rows
        ]

    def _put_record_cql(self, kind: str) -> tuple[str, list[str]]:
        names = [name for name, _ in record_columns(kind)]
        cql = f"INSERT INTO {KEYSPACE}.record_{kind} (workspace, {', '.join(names)}) VALUES (?, {', '.join('?' * len(names))})"
        return cql, names

    def put_record(self, kind: str, workspace: str, record: Record) -> None:
        cql, names = self._put_record_cql(kind)
        self.c.execute(
            cql,
            (workspace, *(getattr(record, name) for name in names)),
            f"writing the {kind} of {record.document_id!r}",
        )

    def put_records(self, kind: str, workspace: str, records: Sequence[Record]) -> None:
        cql, names = self._put_record_cql(kind)
        self.c.write_partitioned(
            ((cql, (workspace, *(getattr(r, name) for name in names)), workspace) for r in records),
            f"writing {len(records)} {kind} records",
            concurrency=BULK_IN_FLIGHT,
            max_rows=BULK_ROWS,
            max_bytes=BULK_BYTES,
        )

    def _records(self, kind: str, extra: str, params: tuple) -> list[Record]:
        cols = record_columns(kind)
        names = ", ".join(name for name, _ in cols)
        cql = f"SELECT {names} FROM {KEYSPACE}.record_{kind} WHERE workspace = ?{extra}"
        cls = RECORD_TYPES[kind]
        what = f"reading {kind} records"
        with self.c.errors(what):
            return [
                cls(**{name: (_utc(getattr(r, name)) if t is datetime else getattr(r, name)) for name, t in cols})
                for r in self.c.execute(cql, params, what, fetch_size=1000)
            ]

    def get_record(self, kind: str, workspace: str, document_id: str) -> Record | None:
        found = self._records(kind, " AND document_id = ?", (workspace, document_id))
        return found[0] if found else None

    def get_records(self, kind: str, workspace: str, document_ids: Sequence[str]) -> list[Record]:
        # document_id is the clustering column: each read is one slice of the workspace's partition.
        return [
            record
            for start in range(0, len(document_ids), TAKEN_CHUNK)
            for record in self._records(
                kind, " AND document_id IN ?", (workspace, list(document_ids[start : start + TAKEN_CHUNK]))
            )
        ]

    def list_records(self, kind: str, workspace: str) -> list[Record]:
        return self._records(kind, "", (workspace,))

    def page_records(self, kind: str, workspace: str, after: str, limit: int) -> list[Record]:
        # document_id is the clustering column: a slice of the workspace's partition, in order.
        return self._records(kind, " AND document_id > ? LIMIT ?", (workspace, after, limit))

    def page_record_ids(self, kind: str, workspace: str, after: str, limit: int) -> list[str]:
        record_columns(kind)
        cql = f"SELECT document_id FROM {KEYSPACE}.record_{kind} WHERE workspace = ? AND document_id > ? LIMIT ?"
        what = f"listing {kind} records of workspace {workspace!r}"
        with self.c.errors(what):
            return [r.document_id for r in self.c.execute(cql, (workspace, after, limit), what, fetch_size=5000)]

    def page_ids(self, workspace: str, after: str, limit: int) -> list[tuple[str, bool]]:
        what = f"listing documents of workspace {workspace!r}"
        with self.c.errors(what):
            rows = self.c.execute(self._page_ids, (workspace, after, limit), what, fetch_size=5000)
            return [(r.id, not r.parent_id and (r.document_type or SOURCE) == SOURCE) for r in rows]

    def delete_records(self, kind: str, workspace: str, document_ids: Sequence[str]) -> None:
        record_columns(kind)
        cql = f"DELETE FROM {KEYSPACE}.record_{kind} WHERE workspace = ? AND document_id = ?"
        self.c.execute_many(((cql, (workspace, i)) for i in document_ids), f"deleting {kind} records")

    def close(self) -> None:
        pass


def _register_batches(metas: Sequence[DocumentMetadata], upsert: str, log: str) -> list[list[tuple[str, tuple]]]:
    """The rows of register_many in batches of one workspace each: a document's row and its 'added'
    event together, up to BULK_ROWS rows and about BULK_BYTES of values a batch, in the given order."""
    batches: list[list[tuple[str, tuple]]] = []
    rows: list[tuple[str, tuple]] = []
    workspace, size = None, 0
    for m in metas:
        row, event = _meta_to_row(m), (m.workspace, m.id, "added", m.sha256)
        bytes_ = row_size(row) + row_size(event)
        if rows and (m.workspace != workspace or len(rows) + 2 > BULK_ROWS or size + bytes_ > BULK_BYTES):
            batches.append(rows)
            rows, size = [], 0
        rows += [(upsert, row), (log, event)]
        workspace, size = m.workspace, size + bytes_
    if rows:
        batches.append(rows)
    return batches
