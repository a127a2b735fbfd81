"""Generations and the failure ledger: when a document is current, how a generation becomes current.

Every child id is derived from the generation fingerprint (bytes, unstructured's version, decoder
options, decoder logic). A run writes the new generation beside the old one and only when all of
it is stored does it `commit`: record the generation and remove what older generations left. A
failure before that leaves the previous generation intact and queryable; re-running the same
generation skips what is already stored (same ids), so nothing doubles.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime

from resources.model import GRAPH_SOURCE, IMAGE, DocumentMetadata, Librarian, LibrarianError, Quad
from resources.records import Failure, Generation
from ud_assets.decoding import formats, ids
from ud_assets.decoding.model import Element, Section
from ud_assets.decoding.partitioning import unstructured_version
from ud_assets.processing.model import Attempt, DocumentFailed, generation_tag

ELEMENTS_NAMESPACE = uuid.UUID("5b0f2d7c-3a41-4e8e-9c1d-7e2a6f4b8d10")


def elements_object_id(workspace: str, document_id: str, fingerprint: str) -> uuid.UUID:
    """Where a generation's elements JSON lives in the object store (stable across re-runs).

    The workspace is part of it: workspaces may share a bucket, and the same document id with the
    same bytes in two workspaces must not share (nor delete) one object."""
    return uuid.uuid5(ELEMENTS_NAMESPACE, f"{workspace}\x1f{ids.entity_uuid(document_id, fingerprint, 'elements', 0)}")


# -- the up-to-date rule: the one place that decides whether a document needs decoding ----------


def deterministic_failure_of(recorded: Failure | None, fingerprint: str) -> Failure | None:
    """The ledger's entry when it is a deterministic failure of this very generation: such a
    failure repeats until the bytes, the decoder or its options change."""
    if recorded is not None and not recorded.transient and recorded.fingerprint == fingerprint:
        return recorded
    return None


def problems(librarian: Librarian, document_id: str, generation: Generation) -> list[str]:
    """What is missing from a stored generation, checked against what it recorded it consists of.

    Cheap enough to run before every skip: one read of the document's children, one per page or
    section holding images, one object HEAD and one read of the document's own triples. Nothing
    is scanned. (`ud verify` checks every row, object and triple.)"""
    lib, tag = librarian, generation_tag(generation.fingerprint)
    found: list[str] = []
    children = lib.list_children(document_id)
    others = [c.id for c in children if tag not in c.tags]
    if others:
        found.append(f"{len(others)} children of another generation")
    summary = json.loads(generation.summary_json or "{}")
    if "children" not in summary:  # recorded before generations kept what they consist of
        return found
    own = sum(1 for c in children if tag in c.tags)
    if own != summary["children"]:
        found.append(f"{summary['children'] - own} of {summary['children']} pages/sections missing")
    for parent, expected in summary["image_parents"].items():
        images = sum(1 for c in lib.list_children(parent) if c.document_type == IMAGE and tag in c.tags)
        if images != expected:
            found.append(f"{expected - images} of {expected} images of {parent} missing")
    if not lib.objects.exists(uuid.UUID(generation.elements_object_id)):
        found.append("the elements object is missing")
    doc_triples = len(lib.triples.query(s=ids.document_iri(document_id), g=GRAPH_SOURCE, collection=lib.collection))
    if doc_triples != summary["document_triples"]:
        found.append(f"{doc_triples} of {summary['document_triples']} document triples stored")
    return found


def current_problems(
    librarian: Librarian, document_id: str, fingerprint: str, current: Generation | None
) -> list[str] | None:
    """None when the stored generation is another one (or none); else what is missing from it ([] = complete)."""
    if current is None or current.fingerprint != fingerprint:
        return None
    return problems(librarian, document_id, current)


def is_current(librarian: Librarian, document_id: str, fingerprint: str, current: Generation | None) -> bool:
    """The up-to-date rule: the stored generation is this one, and all of it is there."""
    return current_problems(librarian, document_id, fingerprint, current) == []


def refuse_known_failure(attempt: Attempt, recorded: Failure | None) -> Failure | None:
    """Fail at once on the ledger's deterministic failure of this generation; else return what the
    ledger holds for the document, `recorded` (a transient failure, one of another generation, or None)."""
    known = deterministic_failure_of(recorded, attempt.fingerprint)
    if known is not None:
        raise DocumentFailed(
            attempt.document_id,
            f"{known.error} (known failure since {known.time:%Y-%m-%d %H:%M} UTC; retried when the document, "
            "the decoder or its options change, or with force)",
            known=True,
        )
    return recorded


# -- children of other generations --------------------------------------------------------------


def stale_children(
    attempt: Attempt, children: list[DocumentMetadata] | None = None, committed: bool = False
) -> list[str]:
    """Children that belong neither to this attempt's generation nor to the current one.

    After a commit the current generation is this one, so every other child is stale; before it,
    the current generation's children are still the ones readers use, and stay. committed: this
    run has just committed the attempt's generation (no need to read which one is current);
    children: the document's children as read after that, when the caller has them."""
    lib = attempt.librarian
    keep = {attempt.tag}
    if not committed:
        current = lib.get_generation(attempt.document_id)
        keep |= {generation_tag(current.fingerprint)} if current is not None else set()
    listed = lib.list_children(attempt.document_id) if children is None else children
    return [c.id for c in listed if not keep & set(c.tags)]


# -- commit -------------------------------------------------------------------------------------


def commit(
    attempt: Attempt, quads: list[Quad], summary: dict[str, object], others: Sequence[DocumentMetadata]
) -> list[str]:
    """Make the attempt's generation current: store its triples, record it, then remove older
    generations' children.

    The document-level triples of the previous generation are deleted first (they describe the
    document as it was); the generation's triples follow, those of its entities and the
    document's own in one write (a triple store orders each write's subject rows before its
    others: one write pays that wait once); the record follows; only then do older children go,
    so a crash in between leaves a current generation whose extra children the next commit
    removes. The caller has cleared the entities' earlier triples. others: the children of other
    generations as this run listed them before its writes (it adds only children of its own
    generation)."""
    lib, info = attempt.librarian, attempt.info
    doc_iri = ids.document_iri(info.id)
    lib.triples.delete_subjects([doc_iri], GRAPH_SOURCE, lib.collection)
    lib.triples.insert(quads, lib.collection)
    lib.set_generation(
        Generation(
            document_id=info.id,
            fingerprint=info.fingerprint,
            sha256=info.sha256,
            unstructured_version=info.unstructured_version,
            decoder_version=formats.decoder_version(info.mime_type),
            config_json=json.dumps(attempt.config.as_dict(), sort_keys=True),
            elements_object_id=str(elements_object_id(lib.workspace, info.id, info.fingerprint)),
            time=datetime.now(UTC),
            summary_json=json.dumps(summary),
        )
    )
    stale = [c.id for c in others if attempt.tag not in c.tags]
    for child_id in stale:
        lib.remove_document(child_id)
    if not attempt.ledger_empty:
        lib.clear_failure(info.id)
    return stale


def generation_diff(
    attempt: Attempt,
    sections: list[Section],
    elements: list[Element],
    others: Sequence[DocumentMetadata],
) -> dict[str, object] | None:
    """What a new generation changes: sections, elements and characters added/removed/changed.

    others: the document's children of other generations, as the caller listed them."""
    previous, lib = attempt.current, attempt.librarian
    if previous is None or previous.fingerprint == attempt.fingerprint:
        return None
    old_sections = {
        c.title: lib.get_content(c.id).decode("utf-8", errors="replace")
        for c in others
        if attempt.tag not in c.tags and c.document_type in ("page", "section")
    }
    new_sections = {s.label: s.text for s in sections if s.leaf}
    try:
        payload = b"".join(lib.objects.open(uuid.UUID(previous.elements_object_id)))
        old_elements = Counter((e["category"], e["text"]) for e in json.loads(payload)["elements"])
    except (LibrarianError, ValueError, KeyError):  # an old generation without stored elements: compare what is there
        old_elements = Counter()
    new_elements = Counter((e.category, e.text) for e in elements)
    old_paragraphs = Counter(p for text in old_sections.values() for p in text.split("\n\n"))
    new_paragraphs = Counter(p for text in new_sections.values() for p in text.split("\n\n"))
    return {
        "from_unstructured": previous.unstructured_version,
        "to_unstructured": attempt.info.unstructured_version,
        "sections_added": len(new_sections.keys() - old_sections.keys()),
        "sections_removed": len(old_sections.keys() - new_sections.keys()),
        "sections_changed": sum(
            1 for k in new_sections.keys() & old_sections.keys() if new_sections[k] != old_sections[k]
        ),
        "elements_added": sum((new_elements - old_elements).values()),
        "elements_removed": sum((old_elements - new_elements).values()),
        "characters_added": sum(len(p) * n for p, n in (new_paragraphs - old_paragraphs).items()),
        "characters_removed": sum(len(p) * n for p, n in (old_paragraphs - new_paragraphs).items()),
    }


# -- the failure ledger -------------------------------------------------------------------------


def record_failure(librarian: Librarian, document_id: str, error: DocumentFailed, version: str | None = None) -> None:
    """Write (or replace) the document's entry in the failure ledger; attempts count per content."""
    try:
        sha = librarian.get_metadata(document_id).sha256
    except LibrarianError:
        sha = ""
    previous = librarian.get_failure(document_id)
    attempts = previous.attempts + 1 if previous and previous.sha256 == sha else 1
    librarian.record_failure(
        Failure(
            document_id=document_id,
            time=datetime.now(UTC),
            sha256=sha,
            unstructured_version=version or unstructured_version(),
            decoder_version=formats.versions_label(),  # the kind may not be known: every version
            error=error.cause[:500],
            transient=error.transient,
            attempts=attempts,
            fingerprint=error.fingerprint,
        )
    )
