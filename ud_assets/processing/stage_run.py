"""Where a stage's inputs come from, for one document: this run's result of the stage before it,
or else the generation's stored output (its elements, its stored sections), each read at most once.
The checks read back what was stored through it too, so a document's checks share their reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from resources.librarian import io_pool
from resources.model import (
    GRAPH_SOURCE,
    DocumentMetadata,
    Librarian,
    LibrarianError,
    Quad,
    StorageUnavailable,
    read_object,
)
from ud_assets.decoding.model import Element
from ud_assets.processing import elements
from ud_assets.processing.model import (
    ELEMENTS,
    SECTIONS,
    Attempt,
    Built,
    ChunkingOptions,
    ElementsResult,
    ImagesResult,
    MissingInput,
    Outcome,
    SectionsResult,
    StageResult,
)
from ud_assets.processing.parse_ahead import ParseAhead

PROBLEMS_NAMED = 3  # a check's verdict names this many of what it found wrong

T = TypeVar("T")


@dataclass
class StageRun:
    """One document's inputs for its stages: this run's results first, else storage, read once."""

    attempt: Attempt
    outcome: Outcome
    rewrite: bool  # write everything again (forced, or the current generation lost parts)
    chunking: ChunkingOptions
    ahead: ParseAhead | None = None
    progress: Callable[[str], None] = lambda message: None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _elements: list[Element] | None = None
    _sections_checked: bool = False
    _document_children: list[DocumentMetadata] | None = None
    _children: dict[str, DocumentMetadata] | None = None
    _texts: dict[str, str] | None = None
    _triples: dict[str, list[Quad]] = field(default_factory=dict)
    _derived: dict[str, Any] = field(default_factory=dict)

    def result(self, stage: str) -> StageResult | None:
        return self.outcome.results.get(stage)

    def elements(self) -> list[Element]:
        with self._lock:
            if self._elements is None:
                ran = self.result(ELEMENTS)
                assert ran is None or isinstance(ran, ElementsResult)
                self._elements = (ran or elements.load_elements(self.attempt)).elements
            return self._elements

    def built(self) -> Built:
        """Sections and images of the generation: pure functions of its elements, built once."""
        found = self.elements()
        with self._lock:
            if self.outcome.built is None:
                self.outcome.built = elements.build(self.attempt, found)
            return self.outcome.built

    def fresh(self, stage: str) -> bool:
        """Every child the stage stores was written by this run (none existed): nothing to clear."""
        result = self.result(stage)
        return isinstance(result, SectionsResult | ImagesResult) and result.fresh

    def stored_sections(self) -> None:
        """A stage that starts from stored sections finds every one of this generation (once)."""
        built = self.built()
        with self._lock:
            if self._sections_checked or self.result(SECTIONS) is not None or self.outcome.skipped:
                return
            stored = {c.id for c in self.attempt.librarian.list_children(self.attempt.document_id)}
            missing = [s.id for s in built.sections if s.id not in stored]
            if missing:
                raise MissingInput(
                    self.attempt.document_id,
                    f"{len(missing)} of {len(built.sections)} sections of generation "
                    f"{self.attempt.fingerprint[:12]} are not stored; materialize sections first",
                )
            self._sections_checked = True

    # -- read back, for the checks -------------------------------------------------------------

    def document_children(self) -> list[DocumentMetadata]:
        """The rows of the document's own children, as stored after this run's stages."""
        with self._lock:
            if self._document_children is None:
                self._document_children = self.attempt.librarian.list_children(self.attempt.document_id)
            return self._document_children

    def stored_children(self) -> dict[str, DocumentMetadata]:
        """The rows of the document's pages and sections, and of the images below them."""
        built, listed = self.built(), self.document_children()
        with self._lock:
            if self._children is None:
                lib = self.attempt.librarian
                rows = {c.id: c for c in listed}
                # Images sit below pages: read by id, all in one read, each only where it belongs.
                below = {r.id: r.parent for r in built.images}
                found = lib.get_metadata_many(list(below)) if below else {}
                rows.update({id: row for id, row in found.items() if row.parent_id == below[id]})
                self._children = rows
            return self._children

    def stored_texts(self) -> dict[str, str]:
        """The stored text of each of this generation's pages and sections whose object is readable
        (read side by side: for a small document the round trips are the cost)."""
        built, rows = self.built(), self.stored_children()
        with self._lock:
            if self._texts is None:
                lib = self.attempt.librarian
                present = [rows[s.id] for s in built.sections if s.id in rows]
                texts = (
                    io_pool().map(lambda row: _read_text(lib, row), present)
                    if len(present) > 1
                    else [_read_text(lib, row) for row in present]
                )
                self._texts = {row.id: text for row, text in zip(present, texts, strict=True) if text is not None}
            return self._texts

    def derived(self, name: str, compute: Callable[[], T]) -> T:
        """What a check derives from the generation (its chunks, the triples it should have),
        computed once: a check first names the entities whose triples it reads, then reads them."""
        with self._lock:
            if name in self._derived:
                return self._derived[name]
        value = compute()  # outside the lock: it may read the generation through this run
        with self._lock:
            return self._derived.setdefault(name, value)

    def stored_triples(self, subjects: Iterable[str]) -> dict[str, list[Quad]]:
        """Each subject's quads of the source graph as stored: those not read yet, all in one read
        (the checks share them: a section's triples are counted and their offsets compared)."""
        wanted = list(dict.fromkeys(subjects))
        with self._lock:
            unread = [s for s in wanted if s not in self._triples]
        if unread:
            lib = self.attempt.librarian
            found: dict[str, list[Quad]] = {s: [] for s in unread}
            for quad in lib.triples.query_subjects(unread, GRAPH_SOURCE, lib.collection):
                found[quad.s].append(quad)
            with self._lock:
                self._triples.update(found)
        with self._lock:
            return {s: self._triples[s] for s in wanted}


def _read_text(lib: Librarian, row: DocumentMetadata) -> str | None:
    """A child's stored text; None when its object is missing or unreadable (children_present names
    that). A server that is down is not a missing object: that propagates."""
    try:
        return read_object(lib.objects, row.object_id, row.size).decode("utf-8", errors="replace")
    except StorageUnavailable:
        raise
    except LibrarianError:
        return None


def named(problems: list[str]) -> str:
    """A check's verdict: how many things are wrong, and the first few, each naming its entity."""
    if not problems:
        return ""
    return f"{len(problems)} wrong: " + "; ".join(problems[:PROBLEMS_NAMED])
