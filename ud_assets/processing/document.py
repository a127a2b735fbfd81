"""The `document` stage: what the librarian holds about a source document, and the attempt it starts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from resources.model import DocumentMetadata, Librarian
from resources.records import Generation
from ud_assets.decoding import ids
from ud_assets.decoding.decoder import describe_document
from ud_assets.decoding.model import DecoderConfig
from ud_assets.processing.model import Attempt, DocumentFailed, DocumentResult

DETECTION_BYTES = 65536  # what MIME detection reads: the head of the document, never all of it


class Read(Protocol):
    """A document's row, head and stored generation, as read moments ago (parse_ahead.Looked)."""

    @property
    def meta(self) -> DocumentMetadata: ...
    @property
    def head(self) -> bytes: ...
    @property
    def generation(self) -> Generation | None: ...
    @property
    def mime_type(self) -> str | None: ...  # the kind detected from this head and row, if it was


@dataclass(frozen=True)
class _Reading:
    meta: DocumentMetadata
    head: bytes
    generation: Generation | None
    mime_type: str | None = None


def _read_source(librarian: Librarian, document_id: str) -> Read:
    """A source document's row, head and current generation, read in that order; a child document
    is refused before any of its bytes are read."""
    # A row TrustGraph's librarian wrote has no sha256: computed here once (the fingerprint needs it).
    meta = librarian.with_content_hash(librarian.get_metadata(document_id))
    if meta.parent_id:
        raise DocumentFailed(document_id, f"is a {meta.document_type} of {meta.parent_id}, not a source document")
    head = librarian.objects.read_range(meta.object_id, 0, min(DETECTION_BYTES, meta.size)) if meta.size else b""
    return _Reading(meta, head, librarian.get_generation(document_id))


def open_attempt(
    librarian: Librarian,
    document_id: str,
    config: DecoderConfig,
    version: str,
    now: datetime | None = None,
    read: Read | None = None,
) -> Attempt:
    """Detect the document's kind from its head and name the generation to produce.

    read: the row, head and generation already read for this document (by parse-ahead, in a
    batch, which hands over source documents only); else _read_source reads them."""
    found = read if read is not None else _read_source(librarian, document_id)
    meta = found.meta
    info = describe_document(
        found.head,
        document_id,
        config,
        filename=meta.title,
        declared_kind=meta.kind,
        title=meta.title,
        version=version,
        mime=found.mime_type,
    )
    # The fingerprint covers the whole content: use the librarian's hash of all of it.
    info.sha256, info.size = meta.sha256, meta.size
    info.fingerprint = ids.fingerprint(meta.sha256, version, config, info.mime_type)
    whole = found.head if len(found.head) == meta.size else None  # read from its start: all of it
    return Attempt(librarian, meta, info, config, found.generation, now, content=whole)


def document_stage(attempt: Attempt) -> DocumentResult:
    meta, info = attempt.meta, attempt.info
    return DocumentResult(
        {
            "mime_type": info.mime_type,
            "declared_kind": meta.kind,
            "size_bytes": meta.size,
            "sha256": meta.sha256,
            "title": meta.title,
            "uploaded": meta.time.isoformat(),
            "generation": info.fingerprint,
            "uri": attempt.librarian.objects.uri(meta.object_id),
        }
    )
