"""The `sections` stage: pages or sections as librarian child documents, with exact offsets."""

from __future__ import annotations

import time

from resources.model import Child, Quad
from ud_assets.decoding.model import Section
from ud_assets.decoding.provenance import TG_CHAR_LENGTH, TG_CHAR_OFFSET
from ud_assets.processing.model import TABLE_ROWS, Attempt, Built, Metadata, SectionsResult, Table
from ud_assets.processing.stage_run import StageRun, named

PREVIEW_CHARACTERS = 1500
TEXT_START = 80  # characters of a section's text shown in its row
SECTIONS_COLUMNS = (
    ("id", "string", "librarian child id (urn:page:… / urn:section:…)"),
    ("label", "string", ""),
    ("type", "string", "page | section"),
    ("page", "int", ""),
    ("char_offset", "int", "offset in the document text"),
    ("char_length", "int", ""),
    ("text", "string", f"the first {TEXT_START} characters"),
)


def sections_stage(attempt: Attempt, built: Built, rewrite: bool = False) -> SectionsResult:
    """Store the sections not stored yet (all of them, unless a run was cut short), in one batched write.

    rewrite: write every one again (forced, or repairing a generation whose objects went missing)."""
    started = time.perf_counter()
    lib = attempt.librarian
    listed = None if rewrite else lib.list_children(attempt.document_id)
    stored = {c.id for c in listed or ()}
    new = [
        Child(attempt.document_id, s.id, "text/plain", s.text.encode("utf-8"), s.type, s.label, (attempt.tag,))
        for s in built.sections
        if s.id not in stored
    ]
    lib.put_children(new, known_parents=[attempt.document_id])  # read by open_attempt
    metadata = sections_metadata(attempt, built.sections, len(new))
    metadata["sections_s"] = round(time.perf_counter() - started, 3)
    fresh = not rewrite and len(new) == len(built.sections)  # none of them existed before
    others = None if listed is None else tuple(c for c in listed if attempt.tag not in c.tags)
    return SectionsResult(len(new), fresh, metadata, others)


def offsets_subjects(run: StageRun) -> list[str]:
    """The entities whose stored triples check_offsets reads: each stored page or section."""
    texts = run.stored_texts()
    return [s.id for s in run.built().sections if s.id in texts]


def check_offsets(run: StageRun) -> str:
    """Read back what was stored: each page's or section's stored text against the document's text
    at its offsets, its stored charOffset/charLength triples against those offsets, and each element
    of it at its offset in the stored text.

    The document's text is the generation's own record: rebuilt from its stored elements. A section
    whose row or object is missing is children_present's to name; one whose triples are not stored
    yet (provenance not run) is triple_count_consistent's."""
    sections = run.built().sections
    texts = run.stored_texts()
    document_text = "\n\n".join(s.text for s in sections if s.leaf)
    triples = run.stored_triples(offsets_subjects(run))
    problems: list[str] = []
    for section in sections:
        stored = texts.get(section.id)
        if stored is None:
            continue
        start, length = section.char_offset, section.char_length
        recorded = _recorded_position(triples[section.id])
        if recorded is not None and recorded != (start, length):
            problems.append(
                f"{section.id} has charOffset/charLength {recorded} stored, ({start}, {length}) in the text"
            )
        if document_text[start : start + length] != stored:
            problems.append(f"{section.id}'s stored text is not the document's at {start}–{start + length}")
        for element in section.elements:
            if stored[element.offset : element.offset + element.length] != element.text:
                problems.append(f"element {element.element_id} is not at offset {element.offset} of {section.id}")
    return named(problems)


def _recorded_position(stored: list[Quad]) -> tuple[int | None, int | None] | None:
    """An entity's charOffset and charLength in its stored triples (None: no triples)."""
    found = {q.p: q.o.value for q in stored if q.p in (TG_CHAR_OFFSET, TG_CHAR_LENGTH)}
    if not found:
        return None
    offset, length = found.get(TG_CHAR_OFFSET), found.get(TG_CHAR_LENGTH)
    return (int(offset) if offset is not None else None, int(length) if length is not None else None)


def sections_metadata(attempt: Attempt, sections: list[Section], written: int) -> Metadata:
    first = next((s for s in sections if s.leaf and s.text.strip()), None)
    preview = ""
    if first is not None:
        snippet = first.text[:PREVIEW_CHARACTERS] + ("…" if len(first.text) > PREVIEW_CHARACTERS else "")
        preview = f"**{first.label}** (chars {first.char_offset}–{first.char_offset + first.char_length})\n\n{snippet}"
    return {
        "pages": sum(1 for s in sections if s.type == "page"),
        # What the UI shows of them: the table (its total counts pages and sections together).
        "sections": sections_table(sections),
        "tables": sum(s.table_count for s in sections if s.leaf),
        "images": sum(s.image_count for s in sections if s.leaf),
        "characters": sum(s.char_length for s in sections if s.leaf),
        "written": written,
        "mime_type": attempt.info.mime_type,
        "strategy_used": attempt.info.strategy_used,
        "preview": preview,
    }


def sections_table(sections: list[Section]) -> Table:
    return Table(
        SECTIONS_COLUMNS,
        [
            {
                "id": s.id,
                "label": s.label,
                "type": s.type,
                "page": s.page_number,
                "char_offset": s.char_offset,
                "char_length": s.char_length,
                "text": s.text[:TEXT_START].replace("\n", " "),
            }
            for s in sections[:TABLE_ROWS]
        ],
        len(sections),
    )
