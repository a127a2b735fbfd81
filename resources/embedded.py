"""The embedded backend: objects as files, metadata + upload log + triples in SQLite.

Layout under UD_HOME (default ".ud"):
    objects/{object_id}     the bytes, written to a temp file then os.replace'd into place
    librarian.sqlite3       WAL mode; document, upload_log and quads tables

Several processes (Dagster run workers, a sensor, the CLI) may share one UD_HOME: SQLite's WAL
lets readers run beside the one writer, writes take the lock up front (BEGIN IMMEDIATE) and wait
for it (busy timeout), and object files only ever appear complete.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from resources.librarian import RECORD_TYPES, LibrarianService, now_utc, record_columns
from resources.model import (
    DEFAULT_COLLECTION,
    GRAPH_SOURCE,
    BinaryReader,
    DocumentMetadata,
    LibrarianError,
    ProcessingRequest,
    Quad,
    Record,
    StorageUnavailable,
    Term,
    Upload,
)

COPY_CHUNK = 1 << 20
SQLITE_NAME = "librarian.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS document (
    workspace TEXT NOT NULL,
    id TEXT NOT NULL,
    time_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    comments TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '[]',
    tags TEXT NOT NULL DEFAULT '[]',
    object_id TEXT NOT NULL,
    parent_id TEXT NOT NULL DEFAULT '',
    document_type TEXT NOT NULL DEFAULT 'source',
    size INTEGER NOT NULL DEFAULT 0,
    sha256 TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (workspace, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS document_parent ON document (workspace, parent_id);
CREATE INDEX IF NOT EXISTS document_object ON document (object_id);
CREATE TABLE IF NOT EXISTS upload_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace TEXT NOT NULL,
    id TEXT NOT NULL,
    event TEXT NOT NULL,
    sha256 TEXT NOT NULL DEFAULT '',
    time_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS upload_log_workspace ON upload_log (workspace, seq);
CREATE TABLE IF NOT EXISTS processing (
    workspace TEXT NOT NULL,
    id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    time_ms INTEGER NOT NULL,
    flow TEXT NOT NULL DEFAULT '',
    collection TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (workspace, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS quads (
    workspace TEXT NOT NULL,
    collection TEXT NOT NULL,
    d TEXT NOT NULL,
    s TEXT NOT NULL,
    p TEXT NOT NULL,
    o TEXT NOT NULL,
    otype TEXT NOT NULL,
    dtype TEXT NOT NULL DEFAULT '',
    lang TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (workspace, collection, d, s, p, o, otype, dtype, lang)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS quads_s ON quads (workspace, collection, s);
CREATE INDEX IF NOT EXISTS quads_p ON quads (workspace, collection, p);
CREATE INDEX IF NOT EXISTS quads_o ON quads (workspace, collection, o);
"""


class FileObjectStore:
    """ObjectStore over a folder: one file per object, named by its uuid."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StorageUnavailable(f"object folder {self.root} unusable: {e}") from e

    def _path(self, object_id: uuid.UUID) -> Path:
        return self.root / str(uuid.UUID(str(object_id)))  # a uuid, never a caller's name

    def put(self, object_id: uuid.UUID, data: bytes | BinaryReader, content_type: str) -> None:
        final = self._path(object_id)
        tmp = self.root / f".tmp-{final.name}-{os.getpid()}-{threading.get_ident()}"
        try:
            with open(tmp, "wb") as out:
                if isinstance(data, (bytes, bytearray, memoryview)):
                    out.write(data)
                else:
                    while chunk := data.read(COPY_CHUNK):
                        out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, final)
        except BaseException as e:
            tmp.unlink(missing_ok=True)
            if isinstance(e, OSError):
                raise LibrarianError(f"writing object {object_id} to {self.root} failed: {e}") from e
            raise

    def open(self, object_id: uuid.UUID, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        try:
            f = open(self._path(object_id), "rb")
        except FileNotFoundError:
            raise LibrarianError(f"object {object_id} missing from {self.root}") from None
        return _file_chunks(f, chunk_size)

    def read_range(self, object_id: uuid.UUID, start: int, length: int) -> bytes:
        if start < 0 or length < 0:
            raise LibrarianError(f"invalid range start={start} length={length} of object {object_id}")
        try:
            with open(self._path(object_id), "rb") as f:
                f.seek(start)
                return f.read(length)
        except FileNotFoundError:
            raise LibrarianError(f"object {object_id} missing from {self.root}") from None

    def read(self, object_id: uuid.UUID) -> bytes:
        try:
            return self._path(object_id).read_bytes()
        except FileNotFoundError:
            raise LibrarianError(f"object {object_id} missing from {self.root}") from None

    def size(self, object_id: uuid.UUID) -> int:
        try:
            return self._path(object_id).stat().st_size
        except FileNotFoundError:
            raise LibrarianError(f"object {object_id} missing from {self.root}") from None

    def delete(self, object_id: uuid.UUID) -> None:
        self._path(object_id).unlink(missing_ok=True)

    def uri(self, object_id: uuid.UUID) -> str:
        return self._path(object_id).resolve().as_uri()

    def exists(self, object_id: uuid.UUID) -> bool:
        return self._path(object_id).is_file()


def _file_chunks(f: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    with f:
        while chunk := f.read(chunk_size):
            yield chunk


_SQL_TYPES = {str: "TEXT", int: "INTEGER", bool: "INTEGER", datetime: "INTEGER"}


def _record_schema() -> list[str]:
    out = []
    for kind in RECORD_TYPES:
        cols = ", ".join(f"{name} {_SQL_TYPES[t]} NOT NULL" for name, t in record_columns(kind))
        out.append(
            f"CREATE TABLE IF NOT EXISTS record_{kind} (workspace TEXT NOT NULL, {cols}, "
            "PRIMARY KEY (workspace, document_id)) WITHOUT ROWID"
        )
    return out


class SqliteDatabase:
    """One SQLite connection (per process and store), serialised by a lock, WAL mode."""

    def __init__(self, path: str | os.PathLike, busy_timeout: float = 60.0):
        self.path = Path(path)
        self._lock = threading.RLock()
        self._pid = os.getpid()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
            self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise LibrarianError(f"SQLite database {self.path} could not switch to WAL mode (got {mode})")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            with self.write() as c:
                for statement in [*_SCHEMA.split(";"), *_record_schema()]:
                    if statement.strip():
                        c.execute(statement)
        except sqlite3.Error as e:
            raise StorageUnavailable(f"SQLite database {self.path} unusable: {e}") from e

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction holding SQLite's write lock from the start."""
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")

    def read(self, sql: str, params: Sequence = ()) -> list[tuple]:
        with self._lock:
            return self.conn.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self.conn.close()


def _ms(t: datetime) -> int:
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return round(t.timestamp() * 1000)


def _from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


_DOC_COLUMNS = (
    "workspace, id, time_ms, kind, title, comments, metadata, tags, object_id, parent_id, document_type, size, sha256"
)


def _row_to_meta(r: tuple) -> DocumentMetadata:
    return DocumentMetadata(
        workspace=r[0],
        id=r[1],
        time=_from_ms(r[2]),
        kind=r[3],
        title=r[4],
        comments=r[5],
        metadata=tuple(tuple(m) for m in json.loads(r[6])),
        tags=tuple(json.loads(r[7])),
        object_id=uuid.UUID(r[8]),
        parent_id=r[9],
        document_type=r[10],
        size=r[11],
        sha256=r[12],
    )


def _meta_to_row(m: DocumentMetadata) -> tuple:
    return (
        m.workspace,
        m.id,
        _ms(m.time),
        m.kind,
        m.title,
        m.comments,
        json.dumps([list(x) for x in m.metadata]),
        json.dumps(list(m.tags)),
        str(m.object_id),
        m.parent_id,
        m.document_type,
        m.size,
        m.sha256,
    )


# Ids per "id IN (...)" query: well under SQLite's limit on bound parameters (32,766 since 3.32).
_IN_CHUNK = 500


class SqliteDocumentStore:
    """DocumentStore (resources.librarian) over SQLite: document + upload_log tables."""

    def __init__(self, db: SqliteDatabase):
        self.db = db

    def get(self, workspace: str, id: str) -> DocumentMetadata | None:
        rows = self.db.read(f"SELECT {_DOC_COLUMNS} FROM document WHERE workspace = ? AND id = ?", (workspace, id))
        return _row_to_meta(rows[0]) if rows else None

    def get_many(self, workspace: str, ids: Sequence[str]) -> list[DocumentMetadata]:
        found: list[DocumentMetadata] = []
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = list(ids[start : start + _IN_CHUNK])
            sql = f"SELECT {_DOC_COLUMNS} FROM document WHERE workspace = ? AND id IN ({', '.join('?' * len(chunk))})"
            found.extend(_row_to_meta(r) for r in self.db.read(sql, (workspace, *chunk)))
        return found

    def insert(self, meta: DocumentMetadata, event: str | None) -> bool:
        row = _meta_to_row(meta)
        with self.db.write() as c:
            cur = c.execute(f"INSERT OR IGNORE INTO document ({_DOC_COLUMNS}) VALUES ({', '.join('?' * 13)})", row)
            if cur.rowcount != 1:
                return False
            if event:
                c.execute(
                    "INSERT INTO upload_log (workspace, id, event, sha256, time_ms) VALUES (?, ?, ?, ?, ?)",
                    (meta.workspace, meta.id, event, meta.sha256, _ms(meta.time)),
                )
        return True

    def upsert_many(self, metas: Sequence[DocumentMetadata]) -> None:
        rows = [_meta_to_row(m) for m in metas]
        with self.db.write() as c:
            c.executemany(f"INSERT OR REPLACE INTO document ({_DOC_COLUMNS}) VALUES ({', '.join('?' * 13)})", rows)

    def register_many(self, metas: Sequence[DocumentMetadata]) -> list[DocumentMetadata]:
        # One transaction: which ids are taken, the new rows and their log events, all or nothing.
        with self.db.write() as c:
            taken: set[tuple[str, str]] = set()
            for workspace in {m.workspace for m in metas}:
                ids = [m.id for m in metas if m.workspace == workspace]
                for start in range(0, len(ids), _IN_CHUNK):
                    chunk = ids[start : start + _IN_CHUNK]
                    found = c.execute(
                        f"SELECT id FROM document WHERE workspace = ? AND id IN ({', '.join('?' * len(chunk))})",
                        (workspace, *chunk),
                    )
                    taken.update((workspace, row[0]) for row in found)
            new = [m for m in metas if (m.workspace, m.id) not in taken]
            c.executemany(
                f"INSERT INTO document ({_DOC_COLUMNS}) VALUES ({', '.join('?' * 13)})", [_meta_to_row(m) for m in new]
            )
            c.executemany(
                "INSERT INTO upload_log (workspace, id, event, sha256, time_ms) VALUES (?, ?, 'added', ?, ?)",
                [(m.workspace, m.id, m.sha256, _ms(m.time)) for m in new],
            )
        return new

    def rows(self, workspace: str, include_children: bool) -> list[DocumentMetadata]:
        sql = f"SELECT {_DOC_COLUMNS} FROM document WHERE workspace = ?"
        if not include_children:
            sql += " AND parent_id = '' AND document_type = 'source'"
        return [_row_to_meta(r) for r in self.db.read(sql, (workspace,))]

    def page_rows(self, workspace: str, after: str, limit: int) -> list[DocumentMetadata]:
        sql = f"SELECT {_DOC_COLUMNS} FROM document WHERE workspace = ? AND id > ? ORDER BY id LIMIT ?"
        return [_row_to_meta(r) for r in self.db.read(sql, (workspace, after, limit))]

    def children(self, workspace: str, parent_id: str) -> list[DocumentMetadata]:
        rows = self.db.read(
            f"SELECT {_DOC_COLUMNS} FROM document WHERE workspace = ? AND parent_id = ?", (workspace, parent_id)
        )
        return [_row_to_meta(r) for r in rows]

    def delete(self, workspace: str, ids: Sequence[str]) -> None:
        with self.db.write() as c:
            c.executemany("DELETE FROM document WHERE workspace = ? AND id = ?", [(workspace, i) for i in ids])

    def log_event(self, workspace: str, id: str, event: str, sha256: str) -> None:
        with self.db.write() as c:
            c.execute(
                "INSERT INTO upload_log (workspace, id, event, sha256, time_ms) VALUES (?, ?, ?, ?, ?)",
                (workspace, id, event, sha256, _ms(now_utc())),
            )

    def events_since(self, workspace: str, cursor: str | None, limit: int) -> list[Upload]:
        after = 0
        if cursor is not None:
            if not (isinstance(cursor, str) and cursor.isdigit()):
                raise LibrarianError(f"upload cursor {cursor!r} is not one this embedded librarian gave out")
            after = int(cursor)
        rows = self.db.read(
            "SELECT seq, id, event, sha256, time_ms FROM upload_log WHERE workspace = ? AND seq > ? ORDER BY seq LIMIT ?",
            (workspace, after, limit),
        )
        return [Upload(id=r[1], event=r[2], sha256=r[3], time=_from_ms(r[4]), cursor=str(r[0])) for r in rows]

    def put_processing(self, workspace: str, request: ProcessingRequest) -> None:
        with self.db.write() as c:
            c.execute(
                "INSERT OR REPLACE INTO processing (workspace, id, document_id, time_ms, flow, collection, tags) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    workspace,
                    request.id,
                    request.document_id,
                    _ms(request.time),
                    request.flow,
                    request.collection,
                    json.dumps(list(request.tags)),
                ),
            )

    def delete_processing(self, workspace: str, id: str) -> None:
        with self.db.write() as c:
            c.execute("DELETE FROM processing WHERE workspace = ? AND id = ?", (workspace, id))

    def processing_after(self, workspace: str, after: str, limit: int) -> list[ProcessingRequest]:
        rows = self.db.read(
            "SELECT id, document_id, time_ms, flow, collection, tags FROM processing "
            "WHERE workspace = ? AND id > ? ORDER BY id LIMIT ?",
            (workspace, after, limit),
        )
        return [
            ProcessingRequest(
                id=r[0], document_id=r[1], time=_from_ms(r[2]), flow=r[3], collection=r[4], tags=tuple(json.loads(r[5]))
            )
            for r in rows
        ]

    def processing_present(self, workspace: str, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            rows = self.db.read(
                f"SELECT id FROM processing WHERE workspace = ? AND id IN ({', '.join('?' * len(chunk))})",
                (workspace, *chunk),
            )
            found.update(r[0] for r in rows)
        return found

    def put_record(self, kind: str, workspace: str, record: Record) -> None:
        self.put_records(kind, workspace, [record])

    def put_records(self, kind: str, workspace: str, records: Sequence[Record]) -> None:
        cols = record_columns(kind)
        names = ", ".join(name for name, _ in cols)
        rows = [(workspace, *[_to_sql(getattr(r, name), t) for name, t in cols]) for r in records]
        with self.db.write() as c:
            c.executemany(
                f"INSERT OR REPLACE INTO record_{kind} (workspace, {names}) VALUES (?, {', '.join('?' * len(cols))})",
                rows,
            )

    def _records(self, kind: str, where: str, params: Sequence) -> list[Record]:
        cols = record_columns(kind)
        names = ", ".join(name for name, _ in cols)
        rows = self.db.read(f"SELECT {names} FROM record_{kind} WHERE {where}", params)
        cls = RECORD_TYPES[kind]
        return [cls(**{name: _from_sql(v, t) for (name, t), v in zip(cols, r)}) for r in rows]

    def get_record(self, kind: str, workspace: str, document_id: str) -> Record | None:
        found = self._records(kind, "workspace = ? AND document_id = ?", (workspace, document_id))
        return found[0] if found else None

    def get_records(self, kind: str, workspace: str, document_ids: Sequence[str]) -> list[Record]:
        found: list[Record] = []
        for start in range(0, len(document_ids), _IN_CHUNK):
            chunk = list(document_ids[start : start + _IN_CHUNK])
            where = f"workspace = ? AND document_id IN ({', '.join('?' * len(chunk))})"
            found.extend(self._records(kind, where, (workspace, *chunk)))
        return found

    def list_records(self, kind: str, workspace: str) -> list[Record]:
        return self._records(kind, "workspace = ?", (workspace,))

    def page_records(self, kind: str, workspace: str, after: str, limit: int) -> list[Record]:
        return self._records(
            kind, "workspace = ? AND document_id > ? ORDER BY document_id LIMIT ?", (workspace, after, limit)
        )

    def page_record_ids(self, kind: str, workspace: str, after: str, limit: int) -> list[str]:
        record_columns(kind)  # validates kind
        rows = self.db.read(
            f"SELECT document_id FROM record_{kind} WHERE workspace = ? AND document_id > ? ORDER BY document_id LIMIT ?",
            (workspace, after, limit),
        )
        return [r[0] for r in rows]

    def page_ids(self, workspace: str, after: str, limit: int) -> list[tuple[str, bool]]:
        rows = self.db.read(
            "SELECT id, parent_id = '' AND document_type = 'source' FROM document "
            "WHERE workspace = ? AND id > ? ORDER BY id LIMIT ?",
            (workspace, after, limit),
        )
        return [(r[0], bool(r[1])) for r in rows]

    def delete_records(self, kind: str, workspace: str, document_ids: Sequence[str]) -> None:
        record_columns(kind)  # validates kind
        with self.db.write() as c:
            c.executemany(
                f"DELETE FROM record_{kind} WHERE workspace = ? AND document_id = ?",
                [(workspace, i) for i in document_ids],
            )

    def close(self) -> None:
        pass


def _to_sql(value, t):
    if t is datetime:
        return _ms(value)
    if t is bool:
        return int(bool(value))
    return value


def _from_sql(value, t):
    if t is datetime:
        return _from_ms(value)
    if t is bool:
        return bool(value)
    return value


def _quad_row(q: Quad) -> tuple[str, str, str, str, str, str, str]:
    o = q.o
    literal = not (o.is_iri or o.is_triple)
    return (q.g or "", q.s, q.p, o.value, o.otype, o.datatype if literal else "", o.language if literal else "")


def _row_to_quad(r: Sequence[str]) -> Quad:
    d, s, p, o, otype, dtype, lang = r
    return Quad(s=s, p=p, o=Term(o, is_iri=otype == "u", datatype=dtype, language=lang, is_triple=otype == "t"), g=d)


class SqliteTripleStore:
    """TripleStore over SQLite, one workspace (TrustGraph's keyspace) of the shared quads table."""

    def __init__(self, db: SqliteDatabase, workspace: str):
        self.db = db
        self.workspace = workspace

    def insert(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> int:
        rows = [(self.workspace, collection, *_quad_row(q)) for q in quads]
        if rows:
            with self.db.write() as c:
                c.executemany(
                    "INSERT OR IGNORE INTO quads (workspace, collection, d, s, p, o, otype, dtype, lang) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
        return len(rows)

    def query(
        self,
        s: str | None = None,
        p: str | None = None,
        o: Term | None = None,
        g: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        limit: int | None = None,
    ) -> list[Quad]:
        where = ["workspace = ?", "collection = ?"]
        params: list = [self.workspace, collection]
        for col, val in (("s", s), ("p", p), ("d", g)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        if o is not None:
            _, _, _, ov, otype, dtype, lang = _quad_row(Quad("", "", o))
            where += ["o = ?", "otype = ?", "dtype = ?", "lang = ?"]
            params += [ov, otype, dtype, lang]
        sql = f"SELECT d, s, p, o, otype, dtype, lang FROM quads WHERE {' AND '.join(where)} ORDER BY d, s, p, o, otype, dtype, lang"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [_row_to_quad(r) for r in self.db.read(sql, params)]

    def delete_subjects(
        self, subjects: Iterable[str], g: str = GRAPH_SOURCE, collection: str = DEFAULT_COLLECTION
    ) -> int:
        subjects = list(dict.fromkeys(subjects))
        total = 0
        with self.db.write() as c:
            for s in subjects:
                cur = c.execute(
                    "DELETE FROM quads WHERE workspace = ? AND collection = ? AND d = ? AND s = ?",
                    (self.workspace, collection, g or "", s),
                )
                total += cur.rowcount
        return total

    def query_subjects(
        self, subjects: Iterable[str], g: str = GRAPH_SOURCE, collection: str = DEFAULT_COLLECTION
    ) -> list[Quad]:
        subjects = list(dict.fromkeys(subjects))
        out: list[Quad] = []
        for start in range(0, len(subjects), 500):  # under SQLite's limit of bound parameters
            part = subjects[start : start + 500]
            sql = (
                "SELECT d, s, p, o, otype, dtype, lang FROM quads WHERE workspace = ? AND collection = ? AND d = ? "
                f"AND s IN ({', '.join('?' * len(part))})"
            )
            out.extend(_row_to_quad(r) for r in self.db.read(sql, [self.workspace, collection, g or "", *part]))
        return out

    def missing_object_rows(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> list[Quad]:
        """None: one table answers every pattern here (no per-role rows to lack)."""
        return []

    def write_object_rows(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> int:
        return 0

    def count(self, collection: str = DEFAULT_COLLECTION, g: str | None = None) -> int:
        sql = "SELECT COUNT(*) FROM quads WHERE workspace = ? AND collection = ?"
        params: list = [self.workspace, collection]
        if g is not None:
            sql += " AND d = ?"
            params.append(g)
        return self.db.read(sql, params)[0][0]


def open_embedded(home: str | os.PathLike, workspace: str, collection: str = DEFAULT_COLLECTION):
    """A LibrarianService over UD_HOME: objects/ + librarian.sqlite3."""
    home = Path(home)
    objects = FileObjectStore(home / "objects")
    db = SqliteDatabase(home / SQLITE_NAME)
    return LibrarianService(
        objects,
        SqliteDocumentStore(db),
        SqliteTripleStore(db, workspace),
        workspace=workspace,
        collection=collection,
        on_close=db.close,
        description=f"embedded at {home}",
    )
