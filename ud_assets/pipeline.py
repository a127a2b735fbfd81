"""Decoding one librarian document, stage by stage, into the librarian and its triple store.

Plain Python over a Librarian (no Dagster here): the assets call `process_document` once per
partition key. Each stage's output is stored, so any later stage can start from storage.

Generations: every child id is derived from the generation fingerprint (bytes, unstructured's
version, decoder options, decoder logic). A run writes the new generation beside the old one and
only when all of it is stored does it `commit`: record the generation and remove what older
generations left. A failure before that leaves the previous generation intact and queryable;
re-running the same generation skips what is already stored (same ids), so nothing doubles.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from resources.librarian import Child
from resources.model import GRAPH_SOURCE, IMAGE, Librarian, LibrarianError, Quad, StorageUnavailable, Term
from resources.records import Failure, Generation
from ud_assets.decoding import ids
from ud_assets.decoding.decoder import (
    build_images,
    build_sections,
    build_triples,
    describe_document,
    element_from_json,
    element_to_json,
    partition_document,
)
from ud_assets.decoding.model import (
    DECODER_LOGIC_VERSION,
    ConfigError,
    DecodeError,
    DecoderConfig,
    DocumentInfo,
    Element,
    ImageRecord,
    Section,
)
from ud_assets.decoding.partitioning import unstructured_version
from ud_assets.decoding.provenance import RDF_TYPE, TG_CHUNK_TYPE

log = logging.getLogger(__name__)

STAGES = ("document", "elements", "sections", "images", "provenance_triples")
CHUNKS = "chunks"  # downstream of sections; its own generation (chunk size and overlap)
GENERATION_TAG = "generation:"
CHUNK_GENERATION_TAG = "chunk-generation:"


@dataclass(frozen=True)
class ChunkingOptions:
    chunk_size: int = 2000
    chunk_overlap: int = 100


class DocumentFailed(Exception):
    """One document could not be processed; the message names it and the cause."""

    def __init__(self, document_id: str, cause: str, transient: bool = False, known: bool = False,
                 fingerprint: str = ""):
        super().__init__(f"{document_id}: {cause}")
        self.document_id = document_id
        self.cause = cause
        self.transient = transient
        self.known = known  # already in the failure ledger for this generation
        self.fingerprint = fingerprint


@dataclass
class Outcome:
    """What processing one document produced: metadata per stage and the checks' inputs."""

    document_id: str
    metadata: dict[str, dict] = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)
    images: list[ImageRecord] = field(default_factory=list)
    offsets_exact: bool = True
    missing_children: list[str] = field(default_factory=list)
    triples_expected: int = 0
    triples_stored: int = 0
    stale_children: list[str] = field(default_factory=list)  # removed at commit
    stale_remaining: list[str] = field(default_factory=list)  # still there afterwards (should be none)
    committed: bool = False
    skipped: bool = False  # already current: nothing to do
    chunk_offsets_exact: bool = True
    fresh_sections: bool = False  # every section (image) was written by this run: none existed before
    fresh_images: bool = False


def elements_object_id(document_id: str, fingerprint: str) -> uuid.UUID:
    return ids.entity_uuid(document_id, fingerprint, "elements", 0)


def generation_tag(fingerprint: str) -> str:
    return GENERATION_TAG + fingerprint


def process_document(
    librarian: Librarian,
    document_id: str,
    config: DecoderConfig,
    stages: Iterable[str] = STAGES,
    version: str | None = None,
    now: datetime | None = None,
    progress: Callable[[str], None] = lambda message: None,
    force: bool = False,
    chunking: ChunkingOptions = ChunkingOptions(),
    ahead: "ParseAhead | None" = None,
) -> Outcome:
    """Run the selected stages for one document; raises DocumentFailed naming the cause.

    A document whose current generation is the one these inputs would produce is skipped
    (the result would be identical) unless force is set.
    """
    from concurrent.futures import ThreadPoolExecutor

    stages = set(stages)
    attempt: dict = {}
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chunks") as pool:
            chunking_started = []

            def chunk_beside(outcome: Outcome) -> None:
                # Chunks need only the stored sections: they are written while the images and
                # provenance are, and the step waits for both (a failure of either fails it).
                chunking_started.append(pool.submit(_chunk_stage, librarian, outcome, attempt, chunking, now))

            outcome = _process(attempt, librarian, document_id, config, stages, version or unstructured_version(),
                               now, progress, force, ahead, chunk_beside if CHUNKS in stages else None)
            if chunking_started:
                chunking_started[0].result()
            elif CHUNKS in stages:
                _chunk_stage(librarian, outcome, attempt, chunking, now)
        return outcome
    except DocumentFailed as failure:
        failure.fingerprint = failure.fingerprint or attempt.get("fingerprint", "")
        raise
    except Exception as exc:  # noqa: BLE001 - classified below, always naming the document
        failure = _classify(document_id, exc)
        failure.fingerprint = attempt.get("fingerprint", "")
        raise failure from exc


def _classify(document_id: str, exc: Exception) -> DocumentFailed:
    """A short, named cause; unavailable servers are transient (worth retrying)."""
    if isinstance(exc, (DecodeError, ConfigError)):
        return DocumentFailed(document_id, str(exc))
    if isinstance(exc, StorageUnavailable):
        return DocumentFailed(document_id, str(exc), transient=True)
    if isinstance(exc, LibrarianError):
        return DocumentFailed(document_id, str(exc))
    if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
        return DocumentFailed(document_id, f"storage unavailable: {type(exc).__name__}: {exc}", transient=True)
    if isinstance(exc, MemoryError):
        return DocumentFailed(document_id, "ran out of memory while decoding")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return DocumentFailed(document_id, f"{type(exc).__name__}: {first[:200]}")


def _process(attempt: dict, librarian, document_id, config, stages, version, now, progress, force, ahead=None,
             after_sections: Callable[[Outcome], None] | None = None) -> Outcome:
    outcome = Outcome(document_id)
    meta = librarian.get_metadata(document_id)
    if meta.parent_id:
        raise DocumentFailed(document_id, f"is a {meta.document_type} of {meta.parent_id}, not a source document")
    head = librarian.read_range(document_id, 0, 65536)
    info = describe_document(head, document_id, config, filename=meta.title, declared_kind=meta.kind,
                             title=meta.title, version=version)
    # The fingerprint covers the whole content: use the librarian's hash of all of it.
    info.sha256, info.size = meta.sha256, meta.size
    info.fingerprint = ids.fingerprint(meta.sha256, version, config)
    attempt["fingerprint"] = info.fingerprint
    attempt["info"], attempt["config"], attempt["meta"] = info, config, meta
    if "document" in stages:
        outcome.metadata["document"] = {
            "mime_type": info.mime_type,
            "declared_kind": meta.kind,
            "size_bytes": meta.size,
            "sha256": meta.sha256,
            "title": meta.title,
            "uploaded": meta.time.isoformat(),
            "generation": info.fingerprint,
        }
    if not stages & {"elements", "sections", "images", "provenance_triples", CHUNKS}:
        return outcome
    known = librarian.get_failure(document_id)
    if not force and known is not None and not known.transient and known.fingerprint == info.fingerprint:
        # A deterministic failure repeats until the bytes, the decoder or its options change.
        raise DocumentFailed(document_id, f"{known.error} (known failure since {known.time:%Y-%m-%d %H:%M} UTC; "
                                          "retried when the document, the decoder or its options change, or with force)",
                             known=True)
    previous = librarian.get_generation(document_id)
    if (not force and set(STAGES[1:]) <= stages and previous is not None and previous.fingerprint == info.fingerprint
            and all(generation_tag(info.fingerprint) in c.tags for c in librarian.list_children(document_id))):
        outcome.skipped = True
        for stage in STAGES[1:]:
            outcome.metadata[stage] = {"up_to_date": True, "generation": info.fingerprint,
                                       "decoded": previous.time.isoformat()}
        return outcome
    if not stages & {"elements", "sections", "images", "provenance_triples"}:
        return outcome  # chunks alone: they start from the stored sections

    started = time.perf_counter()
    elements = _elements(librarian, info, config, meta, "elements" in stages, outcome, progress, ahead)
    outcome.metadata.setdefault("elements", {})
    timings = {"partition_s": round(time.perf_counter() - started, 3)}

    sections, by_section = build_sections(info, config, elements)
    images = build_images(info, sections, by_section)
    outcome.sections, outcome.images = sections, images
    outcome.offsets_exact = offsets_exact(sections)
    tag = generation_tag(info.fingerprint)

    if "sections" in stages:
        t0 = time.perf_counter()
        written = _store_sections(librarian, document_id, sections, tag)
        outcome.fresh_sections = written == len(sections)
        timings["sections_s"] = round(time.perf_counter() - t0, 3)
        outcome.metadata["sections"] = _sections_metadata(sections, written, info, timings)
        if after_sections is not None:
            after_sections(outcome)
    if "images" in stages:
        t0 = time.perf_counter()
        written = _store_images(librarian, images, tag)
        outcome.fresh_images = written == len(images)
        outcome.metadata["images"] = {
            "images": len(images),
            "written": written,
            "bytes": sum(len(r.data) for r in images),
            "by_mime_type": dict(Counter(r.mime_type for r in images)),
            "image_ids": [r.id for r in images][:200],
            "store_s": round(time.perf_counter() - t0, 3),
        }
    if stages & {"sections", "images"}:
        outcome.missing_children = _missing_children(librarian, document_id, sections, images)

    if "provenance_triples" in stages:
        if outcome.missing_children:
            raise DocumentFailed(document_id, f"{len(outcome.missing_children)} children of this generation are "
                                              "missing; materialize sections and images first")
        t0 = time.perf_counter()
        triples = build_triples(info, sections, images, now)
        quads = [to_quad(t) for t in triples]
        entity_subjects = {q.s for q in quads} - {ids.document_iri(document_id)}
        # Same ids on a re-run: clear this generation's subjects first, so nothing doubles. Children
        # all written by this very run cannot have triples yet: nothing to clear then.
        if not (outcome.fresh_sections and outcome.fresh_images):
            librarian.triples.delete_subjects(sorted(entity_subjects), GRAPH_SOURCE, librarian.collection)
        librarian.triples.insert(quads, librarian.collection)
        outcome.triples_expected = len(quads)
        summary = {
            "pages": sum(1 for s in sections if s.type == "page"),
            "sections": sum(1 for s in sections if s.type == "section"),
            "tables": sum(s.table_count for s in sections if s.leaf),
            "images": len(images),
            "triples": len(quads),
        }
        diff = generation_diff(librarian, previous, info, sections, elements, tag) if previous else None
        outcome.stale_children = commit(librarian, info, config, tag, quads, summary)
        outcome.triples_stored = count_stored(librarian, {q.s for q in quads})
    if stages & {"sections", "provenance_triples"}:
        outcome.stale_remaining = [c.id for c in librarian.list_children(document_id) if tag not in c.tags]
        outcome.committed = True
        outcome.metadata["provenance_triples"] = {
            "triples": len(quads),
            "graph": GRAPH_SOURCE,
            "subjects": len({q.s for q in quads}),
            "store_s": round(time.perf_counter() - t0, 3),
            "old_generation_children_removed": len(outcome.stale_children),
            **({"changes_from_previous_generation": diff} if diff else {}),
        }
    return outcome


def _elements(librarian, info: DocumentInfo, config, meta, run_partition: bool, outcome: Outcome, progress,
              ahead: "ParseAhead | None" = None) -> list[Element]:
    object_id = elements_object_id(info.id, info.fingerprint)
    if not run_partition:
        try:
            payload = b"".join(librarian.objects.open(object_id))
        except Exception as exc:  # noqa: BLE001 - any miss means elements were never stored
            raise DocumentFailed(info.id, "no stored elements for this generation; materialize elements first") from exc
        stored = json.loads(payload)
        info.strategy_used = stored["strategy_used"]
        return [element_from_json(e) for e in stored["elements"]]
    from ud_assets.decoding.limits import Limits

    limits = Limits.from_env()
    if meta.size > limits.max_bytes:  # refused before a byte is read: never hold a huge object in memory
        raise DecodeError(f"document is {meta.size} bytes, above the limit of {limits.max_bytes} (UD_DECODE_MAX_BYTES)")
    started = time.perf_counter()
    parsed = ahead.take(info.id, info.fingerprint) if ahead is not None else None
    if parsed is not None:  # parsed in the background while the previous document was being stored
        elements, info.strategy_used, notes, stats = parsed
        info.notes.extend(notes)
        info.stats.update(stats)
    else:
        progress(f"partitioning {info.id} ({info.mime_type}, {meta.size} bytes)")
        data = librarian.get_content(info.id)
        elements = partition_document(data, info, config, meta.title or None)
    elapsed = time.perf_counter() - started
    payload = json.dumps(
        {
            "document_id": info.id,
            "generation": info.fingerprint,
            "unstructured_version": info.unstructured_version,
            "strategy_used": info.strategy_used,
            "elements": [element_to_json(e) for e in elements],
        },
        ensure_ascii=False,
    ).encode("utf-8")
    librarian.objects.put(object_id, payload, "application/json")
    counts = Counter(e.category for e in elements)
    outcome.metadata["elements"] = {
        "elements": len(elements),
        "by_category": dict(sorted(counts.items())),
        "tables": counts.get("Table", 0),
        "images": counts.get("Image", 0),
        "strategy_asked": config.strategy,
        "strategy_used": info.strategy_used,
        "notes": "; ".join(info.notes),
        "unstructured_version": info.unstructured_version,
        "partition_s": round(elapsed, 3),
        **{f"decoder_{k}": round(v, 3) for k, v in info.stats.items()},
        "elements_object_id": str(object_id),
        "json_bytes": len(payload),
    }
    return elements


def _store_sections(librarian, document_id: str, sections: list[Section], tag: str) -> int:
    """The sections not stored yet (all of them, unless a run was cut short), in one batched write."""
    stored = {c.id for c in librarian.list_children(document_id)}
    new = [Child(document_id, s.id, "text/plain", s.text.encode("utf-8"), s.type, s.label, (tag,))
           for s in sections if s.id not in stored]
    librarian.put_children(new)
    return len(new)


def _store_images(librarian, images: list[ImageRecord], tag: str) -> int:
    new = [Child(r.parent, r.id, r.mime_type, r.data, IMAGE, f"Image {r.ordinal}", (tag,))
           for r in images if not librarian.exists(r.id)]
    librarian.put_children(new)
    return len(new)


def _missing_children(librarian, document_id: str, sections: list[Section], images: list[ImageRecord]) -> list[str]:
    stored = {c.id for c in librarian.list_children(document_id)}
    for parent in {r.parent for r in images}:
        stored |= {c.id for c in librarian.list_children(parent)}
    return [i for i in [s.id for s in sections] + [r.id for r in images] if i not in stored]


def commit(librarian, info: DocumentInfo, config: DecoderConfig, tag: str, quads: list[Quad], summary: dict) -> list[str]:
    """Make the new generation current: record it, then remove older generations' children."""
    doc_iri = ids.document_iri(info.id)
    doc_quads = [q for q in quads if q.s == doc_iri]
    librarian.triples.delete_subjects([doc_iri], GRAPH_SOURCE, librarian.collection)
    librarian.triples.insert(doc_quads, librarian.collection)
    librarian.set_generation(
        Generation(
            document_id=info.id,
            fingerprint=info.fingerprint,
            sha256=info.sha256,
            unstructured_version=info.unstructured_version,
            decoder_version=DECODER_LOGIC_VERSION,
            config_json=json.dumps(config.as_dict(), sort_keys=True),
            elements_object_id=str(elements_object_id(info.id, info.fingerprint)),
            time=datetime.now(timezone.utc),
            summary_json=json.dumps(summary),
        )
    )
    stale = [c.id for c in librarian.list_children(info.id) if tag not in c.tags]
    for child_id in stale:
        librarian.remove_document(child_id)
    librarian.clear_failure(info.id)
    return stale


def generation_diff(librarian, previous: Generation, info: DocumentInfo, sections: list[Section],
                    elements: list[Element], tag: str) -> dict | None:
    """What a new generation changes: sections, elements and characters added/removed/changed."""
    if previous.fingerprint == info.fingerprint:
        return None
    old_sections = {
        c.title: librarian.get_content(c.id).decode("utf-8", errors="replace")
        for c in librarian.list_children(info.id)
        if tag not in c.tags and c.document_type in ("page", "section")
    }
    new_sections = {s.label: s.text for s in sections if s.leaf}
    try:
        payload = b"".join(librarian.objects.open(uuid.UUID(previous.elements_object_id)))
        old_elements = Counter((e["category"], e["text"]) for e in json.loads(payload)["elements"])
    except Exception:  # noqa: BLE001 - an old generation without stored elements: compare what is there
        old_elements = Counter()
    new_elements = Counter((e.category, e.text) for e in elements)
    old_paragraphs = Counter(p for text in old_sections.values() for p in text.split("\n\n"))
    new_paragraphs = Counter(p for text in new_sections.values() for p in text.split("\n\n"))
    return {
        "from_unstructured": previous.unstructured_version,
        "to_unstructured": info.unstructured_version,
        "sections_added": len(new_sections.keys() - old_sections.keys()),
        "sections_removed": len(old_sections.keys() - new_sections.keys()),
        "sections_changed": sum(1 for k in new_sections.keys() & old_sections.keys() if new_sections[k] != old_sections[k]),
        "elements_added": sum((new_elements - old_elements).values()),
        "elements_removed": sum((old_elements - new_elements).values()),
        "characters_added": sum(len(p) * n for p, n in (new_paragraphs - old_paragraphs).items()),
        "characters_removed": sum(len(p) * n for p, n in (old_paragraphs - new_paragraphs).items()),
    }


def record_failure(librarian, document_id: str, error: DocumentFailed, version: str | None = None) -> None:
    try:
        sha = librarian.get_metadata(document_id).sha256
    except LibrarianError:
        sha = ""
    previous = librarian.get_failure(document_id)
    attempts = previous.attempts + 1 if previous and previous.sha256 == sha else 1
    librarian.record_failure(
        Failure(
            document_id=document_id,
            time=datetime.now(timezone.utc),
            sha256=sha,
            unstructured_version=version or unstructured_version(),
            decoder_version=DECODER_LOGIC_VERSION,
            error=error.cause[:500],
            transient=error.transient,
            attempts=attempts,
            fingerprint=error.fingerprint,
        )
    )


def to_quad(triple) -> Quad:
    obj = Term(triple.o, is_iri=True) if triple.o_type == "iri" else Term(triple.o, datatype=triple.datatype)
    return Quad(triple.s, triple.p, obj, triple.g)


def count_stored(librarian, subjects: set[str]) -> int:
    """Triples stored for these subjects, read back (concurrently: one partition read each)."""
    from concurrent.futures import ThreadPoolExecutor

    def stored(subject: str) -> int:
        return len(librarian.triples.query(s=subject, g=GRAPH_SOURCE, collection=librarian.collection))

    with ThreadPoolExecutor(max_workers=16) as pool:
        return sum(pool.map(stored, sorted(subjects)))


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


def _sections_metadata(sections: list[Section], written: int, info: DocumentInfo, timings: dict) -> dict:
    first = next((s for s in sections if s.leaf and s.text.strip()), None)
    preview = ""
    if first is not None:
        snippet = first.text[:1500] + ("…" if len(first.text) > 1500 else "")
        preview = f"**{first.label}** (chars {first.char_offset}–{first.char_offset + first.char_length})\n\n{snippet}"
    return {
        "pages": sum(1 for s in sections if s.type == "page"),
        "sections": sum(1 for s in sections if s.type == "section"),
        "tables": sum(s.table_count for s in sections if s.leaf),
        "images": sum(s.image_count for s in sections if s.leaf),
        "characters": sum(s.char_length for s in sections if s.leaf),
        "written": written,
        "mime_type": info.mime_type,
        "strategy_used": info.strategy_used,
        "child_ids": [s.id for s in sections][:200],
        "positions": [
            {"id": s.id, "label": s.label, "page": s.page_number, "offset": s.char_offset, "length": s.char_length}
            for s in sections[:50]
        ],
        "preview": preview,
        **timings,
    }


def _current_sections(librarian, attempt: dict, outcome: Outcome) -> list[Section]:
    """This generation's sections: from this run, or rebuilt from the stored elements (cheap, pure)."""
    if outcome.sections:
        return outcome.sections
    info, config, meta = attempt["info"], attempt["config"], attempt["meta"]
    generation = librarian.get_generation(info.id)
    if generation is None or generation.fingerprint != info.fingerprint:
        raise DocumentFailed(info.id, "no current generation of sections to chunk; materialize sections first")
    elements = _elements(librarian, info, config, meta, False, Outcome(info.id), lambda m: None)
    sections, _ = build_sections(info, config, elements)
    return sections


def _chunk_stage(librarian, outcome: Outcome, attempt: dict, options: ChunkingOptions, now: datetime | None) -> None:
    """Chunks of every leaf page/section as librarian children, with exact offsets and provenance."""
    from ud_assets.decoding import chunking

    started = time.perf_counter()
    info = attempt["info"]
    generation = chunking.chunk_generation(info.fingerprint, options.chunk_size, options.chunk_overlap)
    tag = CHUNK_GENERATION_TAG + generation
    started_at = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    exact = True
    quads, new_chunks, leaves = [], [], []
    for section in (s for s in _current_sections(librarian, attempt, outcome) if s.leaf):
        chunks = chunking.chunk_text(section.text, options.chunk_size, options.chunk_overlap)
        exact &= all(section.text[c.offset : c.offset + c.length] == c.text for c in chunks)
        # Sections this run wrote have no chunks yet; others may (same or older chunk generation).
        stored = [] if outcome.fresh_sections else librarian.list_children(section.id)
        leaves.append((section, stored))
        have = {c.id for c in stored}
        for chunk in chunks:
            chunk_id = chunking.chunk_id(section.id, generation, chunk.index)
            if chunk_id not in have:
                new_chunks.append(Child(section.id, chunk_id, "text/plain", chunk.text.encode("utf-8"), "chunk",
                                        f"Chunk {chunk.index}", (tag,)))
            activity = chunking.chunk_activity_iri(section.id, generation, chunk.index)
            quads += [to_quad(t) for t in chunking.chunk_triples(
                chunk, chunk_id, section.id, activity, options.chunk_size, options.chunk_overlap, started_at)]
    from concurrent.futures import ThreadPoolExecutor

    # The chunks' objects and rows, and their triples, go side by side: neither needs the other.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chunk-children") as pool:
        children_written = pool.submit(librarian.put_children, new_chunks)
        if not outcome.fresh_sections:
            subjects = sorted({q.s for q in quads} - {ids.agent_iri(chunking.CHUNKER_COMPONENT)})
            librarian.triples.delete_subjects(subjects, GRAPH_SOURCE, librarian.collection)
        librarian.triples.insert(quads, librarian.collection)
        children_written.result()
    removed = 0
    for _section, stored in leaves:
        for old in stored:
            if old.document_type == "chunk" and tag not in old.tags:
                librarian.remove_document(old.id)
                removed += 1
    total, written = sum(1 for q in quads if q.p == RDF_TYPE and q.o.value == TG_CHUNK_TYPE), len(new_chunks)
    outcome.chunk_offsets_exact = exact
    outcome.metadata[CHUNKS] = {
        "chunks": total,
        "written": written,
        "old_chunks_removed": removed,
        "chunk_size": options.chunk_size,
        "chunk_overlap": options.chunk_overlap,
        "chunk_generation": generation,
        "chunk_s": round(time.perf_counter() - started, 3),
    }


def parse_workers() -> int:
    """Documents of a batch parsed at once (UD_PARSE_WORKERS, default 2), each in its own child."""
    from ud_assets.decoding.limits import Limits

    return Limits.from_env().workers


class ParseAhead:
    """Parses a batch's documents in the background, several at once, while finished ones are stored.

    Each parse runs in a forked child (decoding.isolation), so `workers` parses use as many cores
    while this process writes to the librarian. `in_completion_order` starts the largest documents
    first and hands documents back as their parses finish: a batch then costs about its longest
    parse plus that document's storage, instead of the sum of every parse and every store.
    At most `workers + lookahead` parsed documents wait in memory. Documents that would be
    skipped (up to date, or a known failure) are not parsed ahead.
    """

    def __init__(self, librarian, config: DecoderConfig, version: str, force: bool = False,
                 workers: int = 2, lookahead: int = 2):
        from concurrent.futures import ThreadPoolExecutor

        self.librarian, self.config, self.version, self.force = librarian, config, version, force
        from ud_assets.decoding.isolation import warm_up

        self.window = max(1, workers) + max(0, lookahead)
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="parse-ahead")
        self._futures: dict = {}
        self.waited: dict[str, float] = {}  # seconds the caller waited for each document's parse
        # A batch is worth warming for every format once, before its first parse (the first
        # parses wait for it): each child then starts with every parser imported.
        self._pool.submit(warm_up)

    def submit(self, document_id: str) -> None:
        if document_id not in self._futures:
            self._futures[document_id] = self._pool.submit(self._parse, document_id)

    def in_completion_order(self, document_ids: list[str]):
        """Yields every document id once, each as soon as its background parse has finished.

        The caller processes (and `take`s) each before asking for the next one."""
        from collections import deque
        from concurrent.futures import FIRST_COMPLETED, wait

        queue = deque(self.largest_first(document_ids))
        while queue or self._futures:
            while queue and len(self._futures) < self.window:
                self.submit(queue.popleft())
            started = time.perf_counter()
            done, _ = wait(list(self._futures.values()), return_when=FIRST_COMPLETED)
            # Of those finished, the one started first (dicts keep submission order).
            document_id = next(k for k, future in self._futures.items() if future in done)
            self.waited[document_id] = time.perf_counter() - started
            yield document_id
            self._futures.pop(document_id, None)  # not taken: skipped before its elements were needed

    def largest_first(self, document_ids: list[str]) -> list[str]:
        """Biggest first, so the longest parse starts at once and the rest fill the other workers.

        Size is a cheap proxy for parse time; a document whose metadata cannot be read keeps its
        place and fails when it is processed, with its cause."""
        from concurrent.futures import ThreadPoolExecutor

        def size(document_id: str) -> int:
            try:
                return self.librarian.get_metadata(document_id).size
            except Exception:  # noqa: BLE001 - reported by process_document, not here
                return 0

        with ThreadPoolExecutor(max_workers=8) as pool:
            sizes = dict(zip(document_ids, pool.map(size, document_ids)))
        return sorted(document_ids, key=lambda d: -sizes[d])

    def take(self, document_id: str, fingerprint: str):
        """(elements, strategy used, notes, stats) parsed ahead for this generation, or None.

        A failure of the background parse is raised here, as the parse's own failure."""
        future = self._futures.pop(document_id, None)
        if future is None:
            return None
        result = future.result()
        if result is None or result[0] != fingerprint:
            return None
        return result[1:]

    def _parse(self, document_id: str):
        from ud_assets.decoding.limits import Limits

        lib = self.librarian
        meta = lib.get_metadata(document_id)
        if meta.parent_id or meta.size > Limits.from_env().max_bytes:
            return None
        fingerprint = ids.fingerprint(meta.sha256, self.version, self.config)
        if not self.force:
            known, current = lib.get_failure(document_id), lib.get_generation(document_id)
            if (known is not None and not known.transient and known.fingerprint == fingerprint) or (
                    current is not None and current.fingerprint == fingerprint):
                return None
        data = lib.get_content(document_id)
        info = describe_document(data[:65536], document_id, self.config, filename=meta.title,
                                 declared_kind=meta.kind, title=meta.title, version=self.version)
        elements = partition_document(data, info, self.config, meta.title or None)
        return fingerprint, elements, info.strategy_used, info.notes, info.stats

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        self._pool.shutdown(wait=True)
