"""The librarian's vocabulary and interfaces, shared by every backend.

Two backends implement these interfaces with the same semantics:
- the real one: objects in S3/MinIO, metadata and triples in Apache Cassandra, laid out like
  TrustGraph's librarian and triple store so a TrustGraph deployment can read what we write;
- the embedded default: objects in a folder, metadata and triples in SQLite under UD_HOME.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import BinaryIO, Protocol, TypedDict
from urllib.parse import quote

from resources.records import Failure, Generation, Publication

Record = Generation | Failure | Publication  # the decoder's per-document records

DEFAULT_WORKSPACE = "default"
DEFAULT_COLLECTION = "default"
GRAPH_SOURCE = "urn:graph:source"

# document_type values, as TrustGraph's librarian uses them.
SOURCE = "source"
PAGE = "page"
SECTION = "section"
IMAGE = "image"
CHUNK = "chunk"
DOCUMENT_TYPES = (SOURCE, PAGE, SECTION, IMAGE, CHUNK)


_IRI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


def document_iri(document_id: str) -> str:
    """The IRI of a librarian document in provenance triples.

    TrustGraph's document ids are IRIs already (https://trustgraph.ai/doc/..., urn:page:...);
    other ids are placed under TrustGraph's doc namespace, percent-encoded.
    """
    if _IRI_SCHEME.match(document_id):
        return document_id
    return "https://trustgraph.ai/doc/" + quote(document_id, safe="")


class LibrarianError(Exception):
    """A librarian operation failed; the message names what failed (id, endpoint)."""


class DocumentNotFound(LibrarianError):
    pass


class DocumentExists(LibrarianError):
    pass


class StorageUnavailable(LibrarianError):
    """A server could not be reached (transient: worth retrying)."""


class OutcomeUnknown(StorageUnavailable):
    """A write's reply was lost and reading it back failed too: it may have been applied. What the
    write refers to (the bytes a document row points at) must stay."""


@dataclass(frozen=True)
class DocumentMetadata:
    """One row of TrustGraph's librarian.document table, plus size and sha256 of the bytes."""

    id: str
    kind: str
    object_id: uuid.UUID
    time: datetime
    workspace: str = DEFAULT_WORKSPACE
    title: str = ""
    comments: str = ""
    # TrustGraph: list<tuple<text,boolean,text,boolean,text,boolean>> = (s, s_is_iri, p, p_is_iri, o, o_is_iri)
    metadata: tuple[tuple[str, bool, str, bool, str, bool], ...] = ()
    tags: tuple[str, ...] = ()
    parent_id: str = ""
    document_type: str = SOURCE
    size: int = 0
    sha256: str = ""


@dataclass(frozen=True)
class Upload:
    """One event of the upload log (a source document added or removed), in log order."""

    id: str
    event: str  # "added" | "removed"
    sha256: str
    time: datetime
    cursor: str  # opaque; pass it back to uploads_since to resume after this event


@dataclass(frozen=True)
class Term:
    """An RDF object: an IRI, or a literal with optional datatype / language.

    is_triple marks an RDF-star quoted triple (<<s p o>>, TrustGraph otype 't'); its value is the
    JSON form TrustGraph's triple writer stores: build it with Term.quoted(), read it with as_triple().
    """

    value: str
    is_iri: bool = False
    datatype: str = ""
    language: str = ""
    is_triple: bool = False

    @property
    def otype(self) -> str:
        """TrustGraph's object type code: 'u' IRI, 'l' literal, 't' quoted triple."""
        return "t" if self.is_triple else ("u" if self.is_iri else "l")

    @classmethod
    def quoted(cls, s: str, p: str, o: Term) -> Term:
        """The quoted triple <<s p o>> as an object term (subject and predicate are IRIs)."""
        return cls(
            value=json.dumps(
                {"s": _term_json(Term(s, is_iri=True)), "p": _term_json(Term(p, is_iri=True)), "o": _term_json(o)}
            ),
            is_triple=True,
        )

    def as_triple(self) -> tuple[str, str, Term]:
        """(s, p, o) of a quoted triple term."""
        if not self.is_triple:
            raise ValueError("not a quoted triple")
        d: _QuotedTripleJSON = json.loads(self.value)
        return _json_term(d["s"]).value, _json_term(d["p"]).value, _json_term(d["o"])


class _TermJSON(TypedDict, total=False):
    """A term as trustgraph's serialize_triple lays it out: type i (iri; read from id too), l (value,
    datatype, language) or t (triple: the quoted triple's JSON)."""

    type: str
    iri: str
    id: str
    value: str
    datatype: str
    language: str
    triple: str


class _QuotedTripleJSON(TypedDict):
    s: _TermJSON
    p: _TermJSON
    o: _TermJSON


def _term_json(t: Term) -> _TermJSON:
    # The dict layout of trustgraph's serialize_triple (type i/l/t).
    if t.is_triple:
        return {"type": "t", "triple": t.value}
    if t.is_iri:
        return {"type": "i", "iri": t.value}
    d: _TermJSON = {"type": "l", "value": t.value}
    if t.datatype:
        d["datatype"] = t.datatype
    if t.language:
        d["language"] = t.language
    return d


def _json_term(d: _TermJSON) -> Term:
    kind = d.get("type")
    if kind == "t":
        return Term(d["triple"], is_triple=True)
    if kind == "l":
        return Term(d.get("value", ""), datatype=d.get("datatype", ""), language=d.get("language", ""))
    return Term(d.get("iri") or d.get("id") or "", is_iri=True)


@dataclass(frozen=True)
class Quad:
    s: str  # subject IRI
    p: str  # predicate IRI
    o: Term
    g: str = GRAPH_SOURCE


class BinaryReader(Protocol):
    """What object stores read uploads from: a binary file, or a reader that hashes as it goes."""

    def read(self, n: int = -1, /) -> bytes: ...


class ObjectStore(Protocol):
    """Bytes by object id (S3 key doc/{object_id} or a file under UD_HOME/objects)."""

    def put(self, object_id: uuid.UUID, data: bytes | BinaryReader, content_type: str) -> None: ...

    def open(self, object_id: uuid.UUID, chunk_size: int = 1 << 20) -> Iterator[bytes]: ...

    def read_range(self, object_id: uuid.UUID, start: int, length: int) -> bytes: ...

    def read(self, object_id: uuid.UUID) -> bytes:
        """The whole object in one request, for objects known to be small (a child's text, a small
        document: at most SMALL_OBJECT bytes); open() streams one of any size."""
        ...

    def size(self, object_id: uuid.UUID) -> int: ...

    def delete(self, object_id: uuid.UUID) -> None: ...

    def exists(self, object_id: uuid.UUID) -> bool: ...

    def uri(self, object_id: uuid.UUID) -> str:
        """Where a person finds the object: s3://bucket/doc/{id}, or a file:// path."""
        ...


# The largest object read in one request (ObjectStore.read); larger ones are streamed.
SMALL_OBJECT = 8 << 20


def read_object(objects: ObjectStore, object_id: uuid.UUID, size: int) -> bytes:
    """A whole object whose stored size is known: one request when it is small, streamed otherwise."""
    if size <= SMALL_OBJECT:
        return objects.read(object_id)
    return b"".join(objects.open(object_id))


class TripleStore(Protocol):
    def insert(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> int: ...

    def query(
        self,
        s: str | None = None,
        p: str | None = None,
        o: Term | None = None,
        g: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        limit: int | None = None,
    ) -> list[Quad]: ...

    def delete_subjects(
        self, subjects: Iterable[str], g: str = GRAPH_SOURCE, collection: str = DEFAULT_COLLECTION
    ) -> int: ...

    def count(self, collection: str = DEFAULT_COLLECTION, g: str | None = None) -> int: ...

    def query_subjects(
        self, subjects: Iterable[str], g: str = GRAPH_SOURCE, collection: str = DEFAULT_COLLECTION
    ) -> list[Quad]:
        """The quads of graph g whose subject is one of subjects, read from the store (a document's
        checks read all their entities at once: a request for many, not one each)."""
        ...

    def missing_object_rows(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> list[Quad]:
        """Those of the stored quads that TrustGraph's readers cannot find by their object (Cassandra:
        no role 'O' row in quads_by_entity, as literals written before issue #30); [] where a store has
        no such index."""
        ...

    def write_object_rows(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> int:
        """Make the quads findable by their object again (the repair of missing_object_rows); idempotent."""
        ...


@dataclass(frozen=True)
class Child:
    """A child document to store with LibrarianService.put_children."""

    parent_id: str
    id: str
    kind: str
    content: bytes
    document_type: str
    title: str = ""
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProcessingRequest:
    """One row of TrustGraph's librarian.processing table: process this document with this flow,
    its triples into this collection. Written by TrustGraph's librarian (add_processing) or by
    `ud librarian process`; honoured by the sensor (ud_assets/processing/publication.py)."""

    id: str
    document_id: str
    collection: str
    time: datetime
    flow: str = ""
    tags: tuple[str, ...] = ()


class DocumentStore(Protocol):
    """Metadata rows and the upload log of a librarian (one backend's tables)."""

    def get(self, workspace: str, id: str) -> DocumentMetadata | None: ...

    def get_many(self, workspace: str, ids: Sequence[str]) -> list[DocumentMetadata]:
        """The rows of those ids that exist, in no particular order: a few requests for many ids
        (a batch's documents), not a round trip each."""
        ...

    def insert(self, meta: DocumentMetadata, event: str | None) -> bool:
        """Insert the row unless (workspace, id) exists (then False); log `event` when given."""
        ...

    def upsert_many(self, metas: Sequence[DocumentMetadata]) -> None:
        """Write child rows, replacing rows of the same (workspace, id): batched, for many children."""
        ...

    def register_many(self, metas: Sequence[DocumentMetadata]) -> list[DocumentMetadata]:
        """Insert source rows whose (workspace, id) is not taken yet, then log an 'added' event for
        each inserted row, in the given order; returns the inserted ones. Batched: one call is one
        transaction (embedded) or a few large requests (Cassandra), not a round trip per row."""
        ...

    def rows(self, workspace: str, include_children: bool) -> list[DocumentMetadata]:
        """Every row of the workspace: source documents, and their children when asked."""
        ...

    def page_rows(self, workspace: str, after: str, limit: int) -> list[DocumentMetadata]:
        """Up to limit rows of the workspace (sources and children) with ids after `after`, in id order."""
        ...

    def children(self, workspace: str, parent_id: str) -> list[DocumentMetadata]: ...

    def delete(self, workspace: str, ids: Sequence[str]) -> None: ...

    def log_event(self, workspace: str, id: str, event: str, sha256: str) -> None: ...

    def events_since(self, workspace: str, cursor: str | None, limit: int) -> list[Upload]: ...

    # Processing requests (TrustGraph's librarian.processing rows).
    def put_processing(self, workspace: str, request: ProcessingRequest) -> None: ...

    def delete_processing(self, workspace: str, id: str) -> None: ...

    def processing_after(self, workspace: str, after: str, limit: int) -> list[ProcessingRequest]:
        """Up to limit requests of the workspace with ids after `after`, in id order."""
        ...

    def processing_present(self, workspace: str, ids: Sequence[str]) -> set[str]:
        """Which of these request ids exist."""
        ...

    # Decoder records (resources.records), one per (workspace, document_id) and record type.
    def put_record(self, kind: str, workspace: str, record: Record) -> None: ...

    def put_records(self, kind: str, workspace: str, records: Sequence[Record]) -> None:
        """put_record for many records of one kind at once, batched like register_many."""
        ...

    def get_record(self, kind: str, workspace: str, document_id: str) -> Record | None: ...

    def get_records(self, kind: str, workspace: str, document_ids: Sequence[str]) -> list[Record]:
        """The records of kind that exist for these documents, in a few reads for any number."""
        ...

    def list_records(self, kind: str, workspace: str) -> list[Record]: ...

    def page_records(self, kind: str, workspace: str, after: str, limit: int) -> list[Record]:
        """Up to `limit` records with document_id > after, in document_id order (bounded memory)."""
        ...

    def page_record_ids(self, kind: str, workspace: str, after: str, limit: int) -> list[str]:
        """The document ids of page_records alone (a sweep reads many and needs no more)."""
        ...

    def page_ids(self, workspace: str, after: str, limit: int) -> list[tuple[str, bool]]:
        """(id, whether it is a source document) of page_rows' rows, without the rest of the row."""
        ...

    def delete_records(self, kind: str, workspace: str, document_ids: Sequence[str]) -> None: ...

    def close(self) -> None: ...


class Librarian(Protocol):
    """Document bytes + metadata + child documents + provenance triples (resources.librarian.LibrarianService).

    Exactly what the decoding stages, the sensor, the schedule and the CLI use; the backends'
    parts (ObjectStore, DocumentStore, TripleStore) sit behind it."""

    workspace: str
    collection: str  # the triple-store collection this librarian's provenance lives in
    objects: ObjectStore
    triples: TripleStore

    def add_document(
        self,
        id: str,
        kind: str,
        content: bytes | BinaryIO,
        title: str = "",
        comments: str = "",
        tags: Iterable[str] = (),
        metadata: Iterable[tuple[str, bool, str, bool, str, bool]] = (),
    ) -> DocumentMetadata: ...

    def add_child_document(
        self,
        parent_id: str,
        id: str,
        kind: str,
        content: bytes | BinaryIO,
        document_type: str,
        title: str = "",
        tags: Iterable[str] = (),
    ) -> DocumentMetadata: ...

    def get_metadata(self, id: str) -> DocumentMetadata: ...

    def get_metadata_many(self, ids: Sequence[str]) -> dict[str, DocumentMetadata]:
        """The metadata of each of those documents that exists, by id (a missing one is left out)."""
        ...

    def exists(self, id: str) -> bool: ...

    def get_content(self, id: str) -> bytes: ...

    def stream_content(self, id: str, chunk_size: int = 1 << 20) -> Iterator[bytes]: ...

    def read_range(self, id: str, start: int, length: int) -> bytes: ...

    def list_documents(self, include_children: bool = False) -> list[DocumentMetadata]: ...

    def iter_documents(self, include_children: bool = False, page: int = 1000) -> Iterator[DocumentMetadata]: ...

    def list_children(self, parent_id: str) -> list[DocumentMetadata]: ...

    def remove_document(self, id: str) -> int: ...

    def clean_up_removed(self, id: str) -> int:
        """What ud stored for a document whose row another writer removed; 0 if the row exists."""
        ...

    def with_content_hash(self, meta: DocumentMetadata) -> DocumentMetadata:
        """meta with size and sha256, computed from the bytes (and stored) when another writer left them out."""
        ...

    def source_ids_after(self, after: str, limit: int) -> tuple[list[str], str | None]:
        """The source documents' ids among the next `limit` rows after `after`, and the last id read (None: the end)."""
        ...

    def generation_ids_after(self, after: str, limit: int) -> list[str]: ...

    def put_children(self, children: Sequence[Child], known_parents: Iterable[str] = ()) -> list[DocumentMetadata]:
        """Store child documents, idempotently; known_parents: parent ids the caller has just
        stored or read, not read again (every other parent must exist)."""
        ...

    def register_documents(self, documents: Sequence[DocumentMetadata]) -> list[DocumentMetadata]:
        """Register source documents whose bytes are in the object store already (an import),
        in batches; ids already present are skipped. Returns the registered ones."""
        ...

    def uploads_since(self, cursor: str | None, limit: int = 1000) -> list[Upload]: ...

    def add_processing(
        self, document_id: str, collection: str, flow: str = "", id: str | None = None
    ) -> ProcessingRequest: ...

    def remove_processing(self, id: str) -> None: ...

    def processing_after(self, after: str = "", limit: int = 1000) -> list[ProcessingRequest]: ...

    def processing_present(self, ids: Sequence[str]) -> set[str]: ...

    def get_publication(self, document_id: str) -> Publication | None: ...

    def set_publication(self, publication: Publication) -> None: ...

    def clear_publication(self, document_id: str) -> None: ...

    def publications_after(self, after: str = "", limit: int = 1000) -> list[Publication]: ...

    # The decoder's per-document records (resources.records).
    def set_generation(self, generation: Generation) -> None: ...

    def set_generations(self, generations: Sequence[Generation]) -> None: ...

    def get_generation(self, document_id: str) -> Generation | None: ...

    def get_generations(self, document_ids: Sequence[str]) -> dict[str, Generation]:
        """The current generation of each of those documents that has one, by document id."""
        ...

    def list_generations(self) -> list[Generation]: ...

    def generations_after(self, after: str = "", limit: int = 1000) -> list[Generation]: ...

    def record_failure(self, failure: Failure) -> None: ...

    def clear_failure(self, document_id: str) -> None: ...

    def get_failure(self, document_id: str) -> Failure | None: ...

    def get_failures(self, document_ids: Sequence[str]) -> dict[str, Failure]:
        """The failure-ledger entry of each of those documents that has one, by document id."""
        ...

    def list_failures(self) -> list[Failure]: ...

    def close(self) -> None: ...


@dataclass
class StoreSettings:
    """Where the librarian lives; read from the environment by resources.settings."""

    backend: str = "embedded"  # embedded | cassandra
    workspace: str = DEFAULT_WORKSPACE
    home: str = ".ud"
    bucket: str = "library"
    cassandra_hosts: list[str] = field(default_factory=list)
    cassandra_port: int = 9042
    extra: dict[str, str] = field(
        default_factory=dict
    )  # backend-specific settings (part of the shared librarian's key)
    # The triple-store collection the librarian's provenance triples live in (remove_document cleans it).
    collection: str = DEFAULT_COLLECTION
