"""What the stages pass to each other: one attempt at a generation, and each stage's typed result.

The stages (ud_assets.processing.*) are plain functions over a Librarian; none of them knows
Dagster. Each takes what it needs as arguments (the previous stage's result from this run, or the
current generation loaded from storage) and returns a typed result, so any subset of stages
composes: `runner.process_document` only decides where each input comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

from resources.model import DocumentMetadata, Librarian
from resources.records import Generation
from ud_assets.decoding.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from ud_assets.decoding.model import DecoderConfig, DocumentInfo, Element, ImageRecord, Section

DOCUMENT = "document"
ELEMENTS = "elements"
SECTIONS = "sections"
IMAGES = "images"
PROVENANCE = "provenance_triples"
CHUNKS = "chunks"
# The stages' names; processing/stages.py declares each stage and their order.

Metadata = dict[str, Any]  # one stage's materialization metadata, as plain values

GENERATION_TAG = "generation:"  # tag prefix of every child of a generation
CHUNK_GENERATION_TAG = "chunk-generation:"


def generation_tag(fingerprint: str) -> str:
    return GENERATION_TAG + fingerprint


@dataclass(frozen=True)
class ChunkingOptions:
    """TrustGraph's recursive chunker parameters (the defaults of its chunker)."""

    chunk_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP


class DocumentFailed(Exception):
    """The document could not be processed, by its own fault or a server's; the message names it.

    Only these are ever written to the failure ledger. An exception of any other type is a bug in
    this project and travels up unchanged, so the run fails with its traceback.
    """

    def __init__(
        self, document_id: str, cause: str, transient: bool = False, known: bool = False, fingerprint: str = ""
    ):
        super().__init__(f"{document_id}: {cause}")
        self.document_id = document_id
        self.cause = cause
        self.transient = transient  # a server was unavailable: worth retrying
        self.known = known  # already in the failure ledger for this generation
        self.fingerprint = fingerprint


class MissingInput(Exception):
    """A selected stage needs what an earlier stage stores, and storage lacks it.

    Neither the document's fault nor a bug: the run fails with the message (which says what to
    materialize first) and nothing is written to the failure ledger.
    """

    def __init__(self, document_id: str, what: str):
        super().__init__(f"{document_id}: {what}")
        self.document_id = document_id


@dataclass
class Attempt:
    """One document on its way to one generation: what every stage reads."""

    librarian: Librarian
    meta: DocumentMetadata
    info: DocumentInfo  # detected MIME type, fingerprint, strategy used (set when elements are known)
    config: DecoderConfig
    current: Generation | None  # the generation stored as current when the attempt began
    now: datetime | None = None  # the time written into provenance (tests pin it)
    # The failure ledger was read as the attempt began and held nothing for the document, so the
    # commit has nothing to clear (a delete of nothing still costs Cassandra a tombstone).
    ledger_empty: bool = False
    # The whole document, when the head read for its detection was all of it (a small one): the
    # parse takes these bytes instead of reading the object a second time.
    content: bytes | None = None

    @property
    def document_id(self) -> str:
        return self.info.id

    @property
    def fingerprint(self) -> str:
        return self.info.fingerprint

    @property
    def tag(self) -> str:
        """The tag every child of this generation carries."""
        return generation_tag(self.fingerprint)


@dataclass(frozen=True)
class DocumentResult:
    metadata: Metadata


@dataclass(frozen=True)
class ElementsResult:
    elements: list[Element]
    metadata: Metadata | None  # None when loaded from storage rather than produced by this run


@dataclass(frozen=True)
class Built:
    """Sections and images of a generation: pure functions of its elements, cheap to rebuild."""

    sections: list[Section]
    images: list[ImageRecord]


@dataclass(frozen=True)
class SectionsResult:
    written: int
    fresh: bool  # every section was written by this run (none existed): nothing to clear below them
    metadata: Metadata
    # The document's children of other generations as listed before this run wrote any (None:
    # not listed, a rewrite): what its commit removes, without listing them again.
    others: tuple[DocumentMetadata, ...] | None = None


@dataclass(frozen=True)
class ImagesResult:
    written: int
    fresh: bool
    metadata: Metadata


@dataclass(frozen=True)
class ProvenanceResult:
    triples_expected: int
    removed_children: list[str]  # an older generation's children removed at commit
    metadata: Metadata


@dataclass(frozen=True)
class ChunksResult:
    metadata: Metadata


TABLE_ROWS = 200  # rows a Table keeps; its total says how many there are


@dataclass(frozen=True)
class Table:
    """Rows a stage shows as a table (the Dagster layer renders it); columns: (name, type, description)."""

    columns: tuple[tuple[str, str, str], ...]
    rows: list[dict[str, Any]]
    total: int  # rows there are; `rows` may hold only the first ones


class StageResult(Protocol):
    """What every stage returns: its materialization metadata (None: loaded, not produced, this run).
    A stage's own result type adds what the stages after it and its checks read."""

    @property
    def metadata(self) -> Metadata | None: ...


@dataclass
class Outcome:
    """What processing one document produced: each stage's result, keyed by stage name, and the
    verdict of each check that read back what was stored (processing/stages.py declares both)."""

    document_id: str
    fingerprint: str = ""
    source_uri: str = ""  # where the document's own bytes are (what its sections, images and chunks come from)
    skipped: bool = False  # the generation was current and complete: nothing was redone
    repaired: list[str] = field(default_factory=list)  # what was missing from the current generation, rewritten
    results: dict[str, StageResult] = field(default_factory=dict)  # of the stages that ran in this run
    built: Built | None = None
    # "asset/check" -> what is wrong ("" when nothing), for the checks that were asked for.
    checks: dict[str, str] = field(default_factory=dict)

    def metadata(self, stage: str) -> Metadata | None:
        """The stage's materialization metadata, or None when it produced nothing this run."""
        result = self.results.get(stage)
        return None if result is None else result.metadata

    # Typed views of the results, for callers that know which stage they want.
    @property
    def sections(self) -> SectionsResult | None:
        return _typed(self.results.get(SECTIONS), SectionsResult)

    @property
    def images(self) -> ImagesResult | None:
        return _typed(self.results.get(IMAGES), ImagesResult)

    @property
    def provenance(self) -> ProvenanceResult | None:
        return _typed(self.results.get(PROVENANCE), ProvenanceResult)

    @property
    def chunks(self) -> ChunksResult | None:
        return _typed(self.results.get(CHUNKS), ChunksResult)


_T = TypeVar("_T")


def _typed(result: object, kind: type[_T]) -> _T | None:
    if result is not None and not isinstance(result, kind):
        raise TypeError(f"{type(result).__name__} stored where a {kind.__name__} belongs")
    return result
