"""The `sections` stage: pages or sections as librarian child documents, with exact offsets."""

from __future__ import annotations

import time

from resources.model import Child
from ud_assets.decoding.model import Section
from ud_assets.processing.model import Attempt, Built, Metadata, MissingInput, SectionsResult

PREVIEW_CHARACTERS = 1500


def sections_stage(attempt: Attempt, built: Built, rewrite: bool = False) -> SectionsResult:
    """Store the sections not stored yet (all of them, unless a run was cut short), in one batched write.

    rewrite: write every one again (forced, or repairing a generation whose objects went missing)."""
    started = time.perf_counter()
    lib = attempt.librarian
    stored = set() if rewrite else {c.id for c in lib.list_children(attempt.document_id)}
    new = [
        Child(attempt.document_id, s.id, "text/plain", s.text.encode("utf-8"), s.type, s.label, (attempt.tag,))
        for s in built.sections
        if s.id not in stored
    ]
    lib.put_children(new, known_parents=[attempt.document_id])  # read by open_attempt
    metadata = sections_metadata(attempt, built.sections, len(new))
    metadata["sections_s"] = round(time.perf_counter() - started, 3)
    fresh = not rewrite and len(new) == len(built.sections)  # none of them existed before
    return SectionsResult(len(new), fresh, offsets_exact(built.sections), metadata)


def require_stored_sections(attempt: Attempt, built: Built) -> None:
    """A stage that starts from stored sections (images, chunks) finds every one of this generation."""
    stored = {c.id for c in attempt.librarian.list_children(attempt.document_id)}
    missing = [s.id for s in built.sections if s.id not in stored]
    if missing:
        raise MissingInput(
            attempt.document_id,
            f"{len(missing)} of {len(built.sections)} sections of generation "
            f"{attempt.fingerprint[:12]} are not stored; materialize sections first",
        )


def offsets_exact(sections: list[Section]) -> bool:
    """Every element's text sits at its offset, and every section at its offset in the document text."""
    text = "\n\n".join(s.text for s in sections if s.leaf)
    for section in sections:
        if text[section.char_offset : section.char_offset + section.char_length] != section.text:
            return False
        for element in section.elements:
            if section.text[element.offset : element.offset + element.length] != element.text:
                return False
    return True


def sections_metadata(attempt: Attempt, sections: list[Section], written: int) -> Metadata:
    first = next((s for s in sections if s.leaf and s.text.strip()), None)
    preview = ""
    if first is not None:
        snippet = first.text[:PREVIEW_CHARACTERS] + ("…" if len(first.text) > PREVIEW_CHARACTERS else "")
        preview = f"**{first.label}** (chars {first.char_offset}–{first.char_offset + first.char_length})\n\n{snippet}"
    return {
        "pages": sum(1 for s in sections if s.type == "page"),
        "sections": sum(1 for s in sections if s.type == "section"),
        "tables": sum(s.table_count for s in sections if s.leaf),
        "images": sum(s.image_count for s in sections if s.leaf),
        "characters": sum(s.char_length for s in sections if s.leaf),
        "written": written,
        "mime_type": attempt.info.mime_type,
        "strategy_used": attempt.info.strategy_used,
        "preview": preview,
    }
