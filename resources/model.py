"""The librarian's vocabulary and interfaces, shared by every backend.

Two backends implement these interfaces with the same semantics:
- the real one: objects in S3/MinIO, metadata and triples in Apache Cassandra, laid out like
  TrustGraph's librarian and triple store so a TrustGraph deployment can read what we write;
- the embedded default: objects in a folder, metadata and triples in SQLite under UD_HOME.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import BinaryIO, Protocol

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


class LibrarianError(Exception):
    """A librarian operation failed; the message names what failed (id, endpoint)."""


class DocumentNotFound(LibrarianError):
    pass


class DocumentExists(LibrarianError):
    pass


class StorageUnavailable(LibrarianError):
    """A server could not be reached (transient: worth retrying)."""


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
    """An RDF object: an IRI, or a literal with optional datatype / language."""

    value: str
    is_iri: bool = False
    datatype: str = ""
    language: str = ""


@dataclass(frozen=True)
class Quad:
    s: str  # subject IRI
    p: str  # predicate IRI
    o: Term
    g: str = GRAPH_SOURCE


class ObjectStore(Protocol):
    """Bytes by object id (S3 key doc/{object_id} or a file under UD_HOME/objects)."""

    def put(self, object_id: uuid.UUID, data: bytes | BinaryIO, content_type: str) -> None: ...

    def open(self, object_id: uuid.UUID, chunk_size: int = 1 << 20) -> Iterator[bytes]: ...

    def read_range(self, object_id: uuid.UUID, start: int, length: int) -> bytes: ...

    def size(self, object_id: uuid.UUID) -> int: ...

    def delete(self, object_id: uuid.UUID) -> None: ...

    def exists(self, object_id: uuid.UUID) -> bool: ...


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

    def delete_subjects(self, subjects: Iterable[str], g: str = GRAPH_SOURCE, collection: str = DEFAULT_COLLECTION) -> int: ...

    def count(self, collection: str = DEFAULT_COLLECTION, g: str | None = None) -> int: ...


class Librarian(Protocol):
    """Document bytes + metadata + child documents + provenance triples."""

    workspace: str
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

    def exists(self, id: str) -> bool: ...

    def get_content(self, id: str) -> bytes: ...

    def stream_content(self, id: str, chunk_size: int = 1 << 20) -> Iterator[bytes]: ...

    def read_range(self, id: str, start: int, length: int) -> bytes: ...

    def list_documents(self, include_children: bool = False) -> list[DocumentMetadata]: ...

    def list_children(self, parent_id: str) -> list[DocumentMetadata]: ...

    def remove_document(self, id: str) -> int: ...

    def uploads_since(self, cursor: str | None, limit: int = 1000) -> list[Upload]: ...

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
    extra: dict = field(default_factory=dict)
