"""The librarian: document bytes + metadata + child documents + provenance triples.

One implementation (LibrarianService) over three parts, whichever backend they come from:
- an ObjectStore (S3/MinIO, or files under UD_HOME/objects) holding bytes by object_id;
- a DocumentStore (Cassandra librarian.document + upload_log, or SQLite) holding metadata rows;
- a TripleStore (Cassandra quads_by_entity/quads_by_collection, or SQLite) holding provenance.

Writes go object first, metadata second, so a failure never leaves metadata pointing to nothing;
removals go triples, metadata (leaves first), objects, so a failed removal can be retried.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import logging
import os
import re
import threading
import typing
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import BinaryIO, TypeVar

from resources import faults
from resources.model import (
    DEFAULT_COLLECTION,
    DEFAULT_WORKSPACE,
    DOCUMENT_TYPES,
    GRAPH_SOURCE,
    SOURCE,
    Child,
    DocumentExists,
    DocumentMetadata,
    DocumentNotFound,
    DocumentStore,
    LibrarianError,
    ObjectStore,
    OutcomeUnknown,
    ProcessingRequest,
    TripleStore,
    Upload,
    document_iri,
)
from resources.records import Failure, Generation, Publication

log = logging.getLogger(__name__)

PROV_WAS_GENERATED_BY = "http://www.w3.org/ns/prov#wasGeneratedBy"
DEFAULT_GRAPH = ""
MAX_ID_LENGTH = 512
ADDED = "added"
REMOVED = "removed"
# Rows one register_documents / set_generations call hands its store at a time: one SQLite
# transaction, or one round of Cassandra batches; large enough that per-call costs vanish.
REGISTER_BATCH = 10_000
_SHA256 = re.compile(r"[0-9a-f]{64}")


# The decoder's per-document records, stored beside the document table (generation, failure).
RECORD_TYPES: dict[str, type] = {"generation": Generation, "failure": Failure, "publication": Publication}


CHILD_OBJECT_NAMESPACE = uuid.UUID("8f0c2a3e-4b1d-5c6e-9f7a-0b1c2d3e4f50")


@functools.cache  # resolving the type hints costs more than the record's round trip; an unknown kind is not cached
def record_columns(kind: str) -> tuple[tuple[str, type], ...]:
    """(field, python type) of a record type; document_id first (the key within a workspace)."""
    cls = RECORD_TYPES[kind]
    hints = typing.get_type_hints(cls)
    cols = tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))
    if cols[0][0] != "document_id" or any(t not in (str, int, bool, datetime) for _, t in cols):
        raise TypeError(f"record type {cls.__name__} needs document_id first and str/int/bool/datetime fields")
    return cols


IO_THREADS = 16
_io_pool: tuple[int, ThreadPoolExecutor] | None = None
_io_pool_lock = threading.Lock()


def io_pool() -> ThreadPoolExecutor:
    """The process's threads for concurrent object writes and reads (created once, not per call).

    Only requests that wait for nothing else run here, so callers may share it without deadlock.
    A forked child gets a pool of its own: the parent's threads do not exist in it."""
    global _io_pool
    with _io_pool_lock:
        if _io_pool is None or _io_pool[0] != os.getpid():
            _io_pool = (os.getpid(), ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="librarian-io"))
        return _io_pool[1]


def now_utc() -> datetime:
    """Now, to the millisecond (what a Cassandra timestamp keeps), timezone-aware UTC."""
    t = datetime.now(UTC)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def _to_millisecond(t: datetime) -> datetime:
    """t in UTC, to the millisecond; a naive t is taken as UTC (as the stores take it)."""
    t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def check_id(id: object, what: str = "document id") -> str:
    if not isinstance(id, str):
        raise LibrarianError(f"{what} must be a string, got {type(id).__name__}")
    if not id:
        raise LibrarianError(f"{what} is empty")
    if len(id) > MAX_ID_LENGTH:
        raise LibrarianError(f"{what} {id[:40]!r}... is {len(id)} characters long (at most {MAX_ID_LENGTH})")
    for ch in id:
        if unicodedata.category(ch) == "Cc":
            raise LibrarianError(f"{what} {id!r} contains a control character ({ch!r})")
    if ".." in id.replace("\\", "/").split("/"):
        # Ids never become paths or keys here, but they travel to tools that might use them so.
        raise LibrarianError(f"{what} {id!r} contains a '..' path segment")
    return id


def check_kind(kind: object) -> str:
    if not isinstance(kind, str) or not kind.strip():
        raise LibrarianError("kind (the document's MIME type) is required")
    if any(unicodedata.category(ch) == "Cc" for ch in kind) or len(kind) > 255:
        raise LibrarianError(f"kind {kind[:60]!r} is not a MIME type")
    return kind.strip()


class HashingReader:
    """A non-seekable reader that counts and hashes what passes through it, in order.

    Non-seekable on purpose: boto3's managed transfer then reads it sequentially, part by part.
    """

    def __init__(self, source: bytes | BinaryIO):
        if isinstance(source, (bytes, bytearray, memoryview)):
            source = io.BytesIO(bytes(source))
        if not hasattr(source, "read"):
            raise LibrarianError(f"content must be bytes or a binary file object, got {type(source).__name__}")
        self._src = source
        self._sha = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def read(self, n: int | None = -1) -> bytes:
        data = self._src.read() if n is None or n < 0 else self._src.read(n)
        if isinstance(data, str):
            raise LibrarianError("content must be opened in binary mode, got text")
        if data:
            self._sha.update(data)
            self.size += len(data)
        return data

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()


class LibrarianService:
    """The Librarian (resources.model.Librarian) of one workspace over any backend's parts."""

    def __init__(
        self,
        objects: ObjectStore,
        documents: DocumentStore,
        triples: TripleStore,
        workspace: str = DEFAULT_WORKSPACE,
        collection: str = DEFAULT_COLLECTION,
        on_close: Callable[[], None] | None = None,
        description: str = "",
    ):
        self.objects = objects
        self.documents = documents
        self.triples = triples
        self.workspace = check_id(workspace, "workspace")
        self.collection = collection
        self.description = description
        self._on_close = on_close
        self._closed = False
        if faults.ENABLED:  # crash tests' kill points (resources/faults.py); off unless UD_FAULTS is set
            faults.instrument(self)

    def __repr__(self) -> str:
        return f"<Librarian workspace={self.workspace!r} {self.description}>"

    def __enter__(self) -> LibrarianService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------------

    def add_document(
        self,
        id: str,
        kind: str,
        content: bytes | BinaryIO,
        title: str = "",
        comments: str = "",
        tags: Iterable[str] = (),
        metadata: Iterable[tuple[str, bool, str, bool, str, bool]] = (),
    ) -> DocumentMetadata:
        check_id(id)
        kind = check_kind(kind)
        meta_tuples = tuple(_metadata_tuple(m) for m in metadata)
        return self._store(
            id=id,
            kind=kind,
            content=content,
            title=title,
            comments=comments,
            tags=_tags(tags),
            metadata=meta_tuples,
            parent_id="",
            document_type=SOURCE,
        )

    def add_child_document(
        self,
        parent_id: str,
        id: str,
        kind: str,
        content: bytes | BinaryIO,
        document_type: str,
        title: str = "",
        tags: Iterable[str] = (),
    ) -> DocumentMetadata:
        check_id(parent_id, "parent id")
        check_id(id)
        kind = check_kind(kind)
        if document_type not in DOCUMENT_TYPES or document_type == SOURCE:
            allowed = ", ".join(t for t in DOCUMENT_TYPES if t != SOURCE)
            raise LibrarianError(f"document type {document_type!r} of child {id!r} is not one of {allowed}")
        if self.documents.get(self.workspace, parent_id) is None:
            raise DocumentNotFound(f"parent document {parent_id!r} not found in workspace {self.workspace!r}")
        return self._store(
            id=id,
            kind=kind,
            content=content,
            title=title,
            comments="",
            tags=_tags(tags),
            metadata=(),
            parent_id=parent_id,
            document_type=document_type,
        )

    def _store(
        self, *, id: str, content: bytes | BinaryIO, parent_id: str, document_type: str, **fields
    ) -> DocumentMetadata:
        if self.documents.get(self.workspace, id) is not None:
            raise DocumentExists(f"document {id!r} already exists in workspace {self.workspace!r}")
        object_id = self._child_object_id(id) if parent_id else uuid.uuid4()
        reader = HashingReader(content)
        self.objects.put(object_id, reader, fields["kind"])
        meta = DocumentMetadata(
            id=id,
            object_id=object_id,
            time=now_utc(),
            workspace=self.workspace,
            parent_id=parent_id,
            document_type=document_type,
            size=reader.size,
            sha256=reader.sha256,
            **fields,
        )
        try:
            inserted = self.documents.insert(meta, ADDED if document_type == SOURCE else None)
        except OutcomeUnknown:
            raise  # the row may point at the object: it stays (an object no row names is harmless)
        except BaseException:
            self._discard_object(object_id, id)
            raise
        if not inserted:  # lost a race with another writer of the same id
            self._discard_object(object_id, id)
            raise DocumentExists(f"document {id!r} already exists in workspace {self.workspace!r}")
        return meta

    def put_children(self, children: Sequence[Child], known_parents: Iterable[str] = ()) -> list[DocumentMetadata]:
        """Store many child documents at once, idempotently: objects written concurrently, then
        their rows in batches. A child's id and object key are deterministic, so writing the same
        child again replaces it with itself; unlike add_child_document, an existing id is not an
        error. Objects go first: a row never points to a missing object.

        Every parent must exist; those in known_parents (the caller has just stored or read them)
        are not read again, which for a small document is most of what storing its children costs."""
        children = list(children)
        if not children:
            return []
        for child in children:
            check_id(child.id)
            check_kind(child.kind)
            if child.document_type not in DOCUMENT_TYPES or child.document_type == SOURCE:
                raise LibrarianError(f"document type {child.document_type!r} of child {child.id!r} is not a child type")
        known = set(known_parents)
        parents = sorted({check_id(c.parent_id, "parent id") for c in children} - known)
        found = list(io_pool().map(lambda parent_id: self.documents.get(self.workspace, parent_id), parents))
        for parent_id, parent in zip(parents, found):
            if parent is None:
                raise DocumentNotFound(f"parent document {parent_id!r} not found in workspace {self.workspace!r}")
        time = now_utc()
        metas = [
            DocumentMetadata(
                id=c.id,
                kind=check_kind(c.kind),
                object_id=self._child_object_id(c.id),
                time=time,
                workspace=self.workspace,
                title=c.title,
                tags=_tags(c.tags),
                parent_id=c.parent_id,
                document_type=c.document_type,
                size=len(c.content),
                sha256=hashlib.sha256(c.content).hexdigest(),
            )
            for c in children
        ]
        if len(metas) == 1:  # a thread hand-off costs more than the one request
            self.objects.put(metas[0].object_id, children[0].content, metas[0].kind)
        else:
            list(
                io_pool().map(
                    lambda pair: self.objects.put(pair[0].object_id, pair[1].content, pair[0].kind),
                    zip(metas, children),
                )
            )
        self.documents.upsert_many(metas)
        return metas

    def register_documents(self, documents: Sequence[DocumentMetadata]) -> list[DocumentMetadata]:
        """Register source documents whose bytes are in the object store already, many at once: an
        import of an existing library, or of objects another tool uploaded. Each row is taken as
        given (object_id, size, sha256, time: the caller vouches for them; nothing is read from the
        object store) and logged as 'added', so the upload sensor decodes them like uploads.

        Written REGISTER_BATCH rows at a time (one transaction on the embedded store, large
        single-partition batches on Cassandra). An id already in the workspace is skipped, neither
        replaced nor logged again, so an import cut short is simply run again. Every record is
        checked before anything is written. Unlike add_document, an id registered concurrently by
        another writer is not guarded against on Cassandra (no lightweight transaction per row):
        do not import ids that are being uploaded at the same time. Returns the registered rows.
        """
        checked: list[DocumentMetadata] = []
        seen: set[str] = set()
        for meta in documents:
            check_id(meta.id)
            if meta.id in seen:
                raise LibrarianError(f"document {meta.id!r} is registered twice in one call")
            seen.add(meta.id)
            if meta.workspace != self.workspace:
                raise LibrarianError(
                    f"document {meta.id!r} belongs to workspace {meta.workspace!r}, not {self.workspace!r}"
                )
            if meta.document_type != SOURCE or meta.parent_id:
                raise LibrarianError(f"document {meta.id!r} is not a source document (children: put_children)")
            if not isinstance(meta.object_id, uuid.UUID):
                raise LibrarianError(f"object id of document {meta.id!r} is not a UUID")
            if meta.size < 0 or not _SHA256.fullmatch(meta.sha256):
                raise LibrarianError(f"document {meta.id!r} needs a size >= 0 and a lowercase hex sha256")
            _tags(meta.tags)
            for m in meta.metadata:
                _metadata_tuple(m)
            # Stored as add_document stores them: the kind stripped, the time in UTC to the
            # millisecond (what both stores keep), so the rows returned are the rows read back.
            kind = check_kind(meta.kind)
            time = _to_millisecond(meta.time)
            if kind != meta.kind or time != meta.time or time.tzinfo is not meta.time.tzinfo:
                meta = dataclasses.replace(meta, kind=kind, time=time)
            checked.append(meta)
        registered: list[DocumentMetadata] = []
        for start in range(0, len(checked), REGISTER_BATCH):
            registered += self.documents.register_many(checked[start : start + REGISTER_BATCH])
        return registered

    def _child_object_id(self, id: str) -> uuid.UUID:
        # A child's object key follows from its id: a write cut short and redone lands on the same
        # key instead of leaving an orphan object behind.
        return uuid.uuid5(CHILD_OBJECT_NAMESPACE, f"{self.workspace}\x1f{id}")

    def _discard_object(self, object_id: uuid.UUID, id: str) -> None:
        """Delete the object of a document that was not saved, unless a saved row references it.

        A row may: a child's object key follows from its id, so the writer that won a race for
        the id uses the same key; and a metadata write that timed out may have been applied.
        """
        try:
            existing = self.documents.get(self.workspace, id)
        except Exception as e:  # cannot tell: an orphan object is harmless, a dangling row is not
            log.warning("keeping object %s of unsaved document %r (metadata unreadable: %s)", object_id, id, e)
            return
        if existing is not None and existing.object_id == object_id:
            return
        try:
            self.objects.delete(object_id)
        except Exception as e:  # an orphan object is harmless; keep the original error
            log.warning("could not delete object %s of unsaved document %r: %s", object_id, id, e)

    # -- reading -------------------------------------------------------------------------------

    def get_metadata(self, id: str) -> DocumentMetadata:
        check_id(id)
        meta = self.documents.get(self.workspace, id)
        if meta is None:
            raise DocumentNotFound(f"document {id!r} not found in workspace {self.workspace!r}")
        return meta

    def get_metadata_many(self, ids: Sequence[str]) -> dict[str, DocumentMetadata]:
        for id in ids:
            check_id(id)
        return {meta.id: meta for meta in self.documents.get_many(self.workspace, list(dict.fromkeys(ids)))}

    def exists(self, id: str) -> bool:
        check_id(id)
        return self.documents.get(self.workspace, id) is not None

    def get_content(self, id: str) -> bytes:
        return b"".join(self.stream_content(id))

    def stream_content(self, id: str, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        if chunk_size <= 0:
            raise LibrarianError(f"chunk size must be positive, got {chunk_size}")
        meta = self.get_metadata(id)
        return self.objects.open(meta.object_id, chunk_size)

    def read_range(self, id: str, start: int, length: int) -> bytes:
        if start < 0 or length < 0:
            raise LibrarianError(f"invalid range start={start} length={length} for document {id!r}")
        meta = self.get_metadata(id)
        if length == 0 or start >= meta.size:
            return b""
        return self.objects.read_range(meta.object_id, start, min(length, meta.size - start))

    def list_documents(self, include_children: bool = False) -> list[DocumentMetadata]:
        docs = self.documents.rows(self.workspace, include_children)
        return sorted(docs, key=lambda d: (d.time, d.id))

    def iter_documents(self, include_children: bool = False, page: int = 1000) -> Iterator[DocumentMetadata]:
        """The workspace's documents in id order, read a page at a time: a library of millions is
        listed in the memory of one page."""
        if page <= 0:
            raise LibrarianError(f"page must be positive, got {page}")
        after = ""
        while True:
            rows = self.documents.page_rows(self.workspace, after, page)
            for row in rows:
                if include_children or (not row.parent_id and row.document_type == SOURCE):
                    yield row
            if len(rows) < page:
                return
            after = rows[-1].id

    def list_children(self, parent_id: str) -> list[DocumentMetadata]:
        check_id(parent_id, "parent id")
        return sorted(self.documents.children(self.workspace, parent_id), key=lambda d: (d.time, d.id))

    def uploads_since(self, cursor: str | None, limit: int = 1000) -> list[Upload]:
        if limit <= 0:
            raise LibrarianError(f"limit must be positive, got {limit}")
        return self.documents.events_since(self.workspace, cursor, limit)

    # -- processing requests (TrustGraph's librarian.processing) ----------------------------------

    def add_processing(
        self, document_id: str, collection: str, flow: str = "", id: str | None = None
    ) -> ProcessingRequest:
        """Ask for the document's triples in `collection`, as TrustGraph's add_processing does."""
        check_id(document_id)
        check_id(collection, "collection")
        request = ProcessingRequest(
            id=id or str(uuid.uuid4()), document_id=document_id, collection=collection, time=now_utc(), flow=flow
        )
        check_id(request.id, "processing request id")
        if self.documents.get(self.workspace, document_id) is None:
            raise DocumentNotFound(f"document {document_id!r} not found in workspace {self.workspace!r}")
        self.documents.put_processing(self.workspace, request)
        return request

    def remove_processing(self, id: str) -> None:
        check_id(id, "processing request id")
        self.documents.delete_processing(self.workspace, id)

    def processing_after(self, after: str = "", limit: int = 1000) -> list[ProcessingRequest]:
        if limit <= 0:
            raise LibrarianError(f"limit must be positive, got {limit}")
        return self.documents.processing_after(self.workspace, after, limit)

    def processing_present(self, ids: Sequence[str]) -> set[str]:
        return self.documents.processing_present(self.workspace, list(dict.fromkeys(ids)))

    # -- removing ------------------------------------------------------------------------------

    def remove_document(self, id: str) -> int:
        """Remove a document and, recursively, its children, their bytes and their triples."""
        return self._remove_tree(id, self.get_metadata(id))

    def clean_up_removed(self, id: str) -> int:
        """Remove what ud stored for a source document whose own row another writer removed
        (TrustGraph's librarian deletes the row and its bytes, nothing else): its children, their
        bytes and triples, the decoder's records and the generation's stored elements. Nothing when
        the document's row exists (it is back, or was never gone). Returns the rows removed."""
        if self.documents.get(self.workspace, id) is not None:
            return 0
        return self._remove_tree(id, None)

    def _remove_tree(self, id: str, root: DocumentMetadata | None) -> int:
        order: list[DocumentMetadata] = [root] if root is not None else []  # breadth first: parents first
        seen = {id}
        parents = [id]
        while parents:
            found = [c for c in self.documents.children(self.workspace, parents.pop(0)) if c.id not in seen]
            seen.update(c.id for c in found)
            order.extend(found)
            parents.extend(c.id for c in found)
        ids = [id, *(d.id for d in order if d.id != id)]
        subjects = set(ids) | {document_iri(i) for i in ids}
        for doc_id in ids:
            for q in self.triples.query(s=doc_id, p=PROV_WAS_GENERATED_BY, collection=self.collection):
                if q.o.is_iri:
                    subjects.add(q.o.value)
        collections = {self.collection}
        publication = self.get_publication(id)
        if publication is not None:  # copies in the collections processing requests asked for
            collections.update(json.loads(publication.requests_json).values())
        for collection in sorted(collections):
            for graph in (GRAPH_SOURCE, DEFAULT_GRAPH):
                self.triples.delete_subjects(sorted(subjects), graph, collection)
        generations = [g for g in (self.get_generation(i) for i in ids) if g is not None]
        for kind in RECORD_TYPES:
            self.documents.delete_records(kind, self.workspace, ids)
        self.documents.delete(self.workspace, list(reversed(ids)))  # leaves first: a retry finds the rest
        if root is not None and root.document_type == SOURCE and not root.parent_id:
            self.documents.log_event(self.workspace, root.id, REMOVED, root.sha256)
        doomed = [(d.object_id, d.id) for d in reversed(order)]
        for g in generations:  # the stored elements of each removed document's generation
            try:
                doomed.append((uuid.UUID(g.elements_object_id), g.document_id))
            except ValueError:
                pass
        for object_id, doc_id in doomed:
            try:
                self.objects.delete(object_id)
            except Exception as e:  # metadata is gone already; an orphan object is only garbage
                log.warning("could not delete object %s of removed document %r: %s", object_id, doc_id, e)
        return len(order)

    def with_content_hash(self, meta: DocumentMetadata) -> DocumentMetadata:
        """The document's metadata with its size and sha256. A row another writer made (TrustGraph's
        librarian) has neither: they are computed from the bytes once and written back, into the
        two columns TrustGraph does not read, so the generation's fingerprint names the content."""
        if meta.sha256:
            return meta
        digest, size = hashlib.sha256(), 0
        for chunk in self.objects.open(meta.object_id):
            digest.update(chunk)
            size += len(chunk)
        filled = dataclasses.replace(meta, size=size, sha256=digest.hexdigest())
        self.documents.upsert_many([filled])
        return filled

    def source_ids_after(self, after: str, limit: int) -> tuple[list[str], str | None]:
        """One slice of the workspace's rows in id order: the ids of the source documents among the
        next `limit` rows after `after` (children skipped), and the last id read, or None when the
        slice reached the end of the table. A sweep of the whole library in bounded memory and time."""
        if limit <= 0:
            raise LibrarianError(f"limit must be positive, got {limit}")
        rows = self.documents.page_ids(self.workspace, after, limit)
        return [i for i, source in rows if source], (rows[-1][0] if len(rows) == limit else None)

    def generation_ids_after(self, after: str, limit: int) -> list[str]:
        """The ids of the documents with a generation after `after`, in id order: generations_after's ids."""
        if limit <= 0:
            raise LibrarianError(f"limit must be positive, got {limit}")
        return self.documents.page_record_ids("generation", self.workspace, after, limit)

    # -- decoder records (resources.records) -----------------------------------------------------

    def set_generation(self, generation: Generation) -> None:
        """Record what produced a document's current children (replaces the previous record)."""
        check_id(generation.document_id)
        self.documents.put_record("generation", self.workspace, generation)

    def set_generations(self, generations: Sequence[Generation]) -> None:
        """set_generation for many documents at once (an import), REGISTER_BATCH records a request."""
        generations = list(generations)
        for g in generations:
            check_id(g.document_id)
        for start in range(0, len(generations), REGISTER_BATCH):
            self.documents.put_records("generation", self.workspace, generations[start : start + REGISTER_BATCH])

    def get_generation(self, document_id: str) -> Generation | None:
        check_id(document_id)
        return _optional(self.documents.get_record("generation", self.workspace, document_id), Generation)

    def get_generations(self, document_ids: Sequence[str]) -> dict[str, Generation]:
        return {g.document_id: g for g in self._records_of("generation", document_ids, Generation)}

    def list_generations(self) -> list[Generation]:
        records = [_typed(r, Generation) for r in self.documents.list_records("generation", self.workspace)]
        return sorted(records, key=lambda g: g.document_id)

    def generations_after(self, after: str = "", limit: int = 1000) -> list[Generation]:
        """A page of generations in document id order: the whole library in bounded memory, page by page."""
        if limit <= 0:
            raise LibrarianError(f"limit must be positive, got {limit}")
        return [_typed(r, Generation) for r in self.documents.page_records("generation", self.workspace, after, limit)]

    def record_failure(self, failure: Failure) -> None:
        """Record (or replace) why a document could not be decoded."""
        check_id(failure.document_id)
        self.documents.put_record("failure", self.workspace, failure)

    def clear_failure(self, document_id: str) -> None:
        check_id(document_id)
        self.documents.delete_records("failure", self.workspace, [document_id])

    def get_failure(self, document_id: str) -> Failure | None:
        check_id(document_id)
        return _optional(self.documents.get_record("failure", self.workspace, document_id), Failure)

    def get_failures(self, document_ids: Sequence[str]) -> dict[str, Failure]:
        return {f.document_id: f for f in self._records_of("failure", document_ids, Failure)}

    def _records_of(self, kind: str, document_ids: Sequence[str], cls: type[Record]) -> list[Record]:
        # A batch's records in a few reads (the backends read up to 500 ids at once), not one each.
        for document_id in document_ids:
            check_id(document_id)
        ids = list(dict.fromkeys(document_ids))
        return [_typed(r, cls) for r in self.documents.get_records(kind, self.workspace, ids)] if ids else []

    def list_failures(self) -> list[Failure]:
        records = [_typed(r, Failure) for r in self.documents.list_records("failure", self.workspace)]
        return sorted(records, key=lambda f: f.document_id)

    def get_publication(self, document_id: str) -> Publication | None:
        check_id(document_id)
        return _optional(self.documents.get_record("publication", self.workspace, document_id), Publication)

    def set_publication(self, publication: Publication) -> None:
        check_id(publication.document_id)
        self.documents.put_record("publication", self.workspace, publication)

    def clear_publication(self, document_id: str) -> None:
        check_id(document_id)
        self.documents.delete_records("publication", self.workspace, [document_id])

    def publications_after(self, after: str = "", limit: int = 1000) -> list[Publication]:
        if limit <= 0:
            raise LibrarianError(f"limit must be positive, got {limit}")
        return [
            _typed(r, Publication) for r in self.documents.page_records("publication", self.workspace, after, limit)
        ]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._on_close is not None:
            self._on_close()


Record = TypeVar("Record", Generation, Failure, Publication)


def _typed(record: object, cls: type[Record]) -> Record:
    """A record read back from a backend, as the type it was stored as (a mismatch is a backend bug)."""
    if not isinstance(record, cls):
        raise TypeError(f"expected a {cls.__name__} record, the backend returned {type(record).__name__}")
    return record


def _optional(record: object | None, cls: type[Record]) -> Record | None:
    return None if record is None else _typed(record, cls)


def _tags(tags: Iterable[str]) -> tuple[str, ...]:
    if isinstance(tags, str):
        raise LibrarianError("tags must be a list of strings, not a string")
    out = tuple(tags)
    for t in out:
        if not isinstance(t, str):
            raise LibrarianError(f"tag {t!r} is not a string")
    return out


def _metadata_tuple(m: Sequence) -> tuple[str, bool, str, bool, str, bool]:
    if len(m) != 6:
        raise LibrarianError(f"metadata entry {m!r} is not (s, s_is_iri, p, p_is_iri, o, o_is_iri)")
    s, si, p, pi, o, oi = m
    if not all(isinstance(x, str) for x in (s, p, o)):
        raise LibrarianError(f"metadata entry {m!r}: s, p and o must be strings")
    return (s, bool(si), p, bool(pi), o, bool(oi))
