"""The `chunks` stage: chunks of every leaf page/section as child documents, with exact offsets.

Chunks have a generation of their own (the sections' generation plus chunk size and overlap), so
changing the chunker's parameters re-chunks without re-decoding.
"""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from resources.model import CHUNK, GRAPH_SOURCE, Child, DocumentMetadata, Quad
from ud_assets.decoding import chunking, ids
from ud_assets.decoding.model import Section
from ud_assets.decoding.provenance import RDF_TYPE, TG_CHAR_LENGTH, TG_CHAR_OFFSET, TG_CHUNK_TYPE
from ud_assets.processing.model import CHUNK_GENERATION_TAG, Attempt, ChunkingOptions, ChunksResult
from ud_assets.processing.provenance import to_quad
from ud_assets.processing.stage_run import StageRun, named


def chunks_stage(
    attempt: Attempt, sections: list[Section], fresh_sections: bool, options: ChunkingOptions, rewrite: bool = False
) -> ChunksResult:
    """Chunk the generation's sections (stored already) and store chunks and their triples.

    fresh_sections: every section was written by this run, so none has chunks yet (no reads)."""
    started = time.perf_counter()
    lib = attempt.librarian
    generation = chunking.chunk_generation(attempt.fingerprint, options.chunk_size, options.chunk_overlap)
    tag = CHUNK_GENERATION_TAG + generation
    started_at = (attempt.now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    quads: list[Quad] = []
    new_chunks: list[Child] = []
    stored_below: list[DocumentMetadata] = []
    for section in (s for s in sections if s.leaf):
        chunks = chunking.chunk_text(section.text, options.chunk_size, options.chunk_overlap)
        # Sections this run wrote have no chunks yet; others may (same or older chunk generation).
        stored = [] if fresh_sections else lib.list_children(section.id)
        stored_below += stored
        have = {c.id for c in stored}
        for chunk in chunks:
            chunk_id = chunking.chunk_id(section.id, generation, chunk.index)
            if rewrite or chunk_id not in have:
                new_chunks.append(
                    Child(
                        section.id,
                        chunk_id,
                        "text/plain",
                        chunk.text.encode("utf-8"),
                        CHUNK,
                        f"Chunk {chunk.index}",
                        (tag,),
                    )
                )
            activity = chunking.chunk_activity_iri(section.id, generation, chunk.index)
            quads += [
                to_quad(t)
                for t in chunking.chunk_triples(
                    chunk, chunk_id, section.id, activity, options.chunk_size, options.chunk_overlap, started_at
                )
            ]

    # The chunks' objects and rows, and their triples, go side by side: neither needs the other.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chunk-children") as pool:
        # Their parents are the generation's sections, stored before this stage runs.
        children_written = pool.submit(lib.put_children, new_chunks, [s.id for s in sections])
        if not fresh_sections:
            subjects = sorted({q.s for q in quads} - {ids.agent_iri(chunking.CHUNKER_COMPONENT)})
            lib.triples.delete_subjects(subjects, GRAPH_SOURCE, lib.collection)
        lib.triples.insert(quads, lib.collection)
        children_written.result()
    removed = 0
    for old in stored_below:
        if old.document_type == CHUNK and tag not in old.tags:
            lib.remove_document(old.id)
            removed += 1
    total = sum(1 for q in quads if q.p == RDF_TYPE and q.o.value == TG_CHUNK_TYPE)
    return ChunksResult(
        {
            "chunks": total,
            "written": len(new_chunks),
            "old_chunks_removed": removed,
            "chunk_size": options.chunk_size,
            "chunk_overlap": options.chunk_overlap,
            "chunk_generation": generation,
            "chunk_s": round(time.perf_counter() - started, 3),
        },
    )


def _expected_chunks(run: StageRun) -> tuple[str, list[Section], dict[str, list[chunking.Chunk]]]:
    """The current chunk generation, the stored leaf sections and each one's chunks, as the stage builds them."""

    def compute() -> tuple[str, list[Section], dict[str, list[chunking.Chunk]]]:
        options, texts = run.chunking, run.stored_texts()
        generation = chunking.chunk_generation(run.attempt.fingerprint, options.chunk_size, options.chunk_overlap)
        sections = [s for s in run.built().sections if s.leaf and s.id in texts]
        chunks = {s.id: chunking.chunk_text(s.text, options.chunk_size, options.chunk_overlap) for s in sections}
        return generation, sections, chunks

    return run.derived("chunks", compute)


def chunk_subjects(run: StageRun) -> list[str]:
    """The entities whose stored triples check_chunk_offsets reads: each chunk expected."""
    generation, _, chunks = _expected_chunks(run)
    return [chunking.chunk_id(section_id, generation, c.index) for section_id, found in chunks.items() for c in found]


def check_chunk_offsets(run: StageRun) -> str:
    """Read back: every chunk of the current chunk generation has its row, its offsets stored as
    triples, and its row's digest is that of its stored section's text at those offsets.

    The digest, recorded from the bytes the run stored, stands for the chunk's object: reading
    every chunk's object would double the check's cost per document; `ud verify` compares each
    object's bytes with its row's digest."""
    lib = run.attempt.librarian
    texts = run.stored_texts()
    generation, sections, chunks = _expected_chunks(run)
    expected = chunk_subjects(run)
    triples = run.stored_triples(expected)
    # Every expected chunk's row in one read by id, instead of listing each section's children.
    stored = lib.get_metadata_many(expected) if expected else {}
    problems: list[str] = []
    for section in sections:
        section_text = texts[section.id]
        for chunk in chunks[section.id]:
            chunk_id = chunking.chunk_id(section.id, generation, chunk.index)
            row = stored.get(chunk_id)
            if row is None or row.parent_id != section.id or row.document_type != CHUNK:
                problems.append(f"{chunk_id} has no row")
                continue
            found = {q.p: q.o.value for q in triples[chunk_id] if q.p in (TG_CHAR_OFFSET, TG_CHAR_LENGTH)}
            if set(found) != {TG_CHAR_OFFSET, TG_CHAR_LENGTH}:
                problems.append(f"{chunk_id} has no charOffset/charLength stored")
                continue
            start, length = int(found[TG_CHAR_OFFSET]), int(found[TG_CHAR_LENGTH])
            at_offsets = section_text[start : start + length].encode("utf-8")
            if hashlib.sha256(at_offsets).hexdigest() != row.sha256:
                problems.append(f"{chunk_id}'s stored text is not {section.id}'s at {start}–{start + length}")
    return named(problems)
