"""Is every row, object and triple of each document's current generation stored and readable?

The expected contents are rebuilt from the generation's own stored elements (pure and cheap), with
the options it recorded, and compared with what the librarian and the triple store hold: the
page/section and image rows, their objects, the number of triples of every entity, and the chunks
of every section with their objects and triples, and that TrustGraph's readers find each triple by
its object too (Cassandra: the role 'O' row of quads_by_entity, which literals lacked before issue
#30). `ud verify` prints the result; `--repair` rewrites the incomplete documents, and writes the
missing object rows of those that lack only them (no decoding again).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from resources.model import CHUNK, GRAPH_SOURCE, IMAGE, DocumentMetadata, Librarian, LibrarianError, Quad
from resources.records import Generation
from ud_assets.decoding import ids
from ud_assets.decoding.decoder import build_triples
from ud_assets.decoding.model import DecodeError, DecoderConfig
from ud_assets.processing.document import open_attempt
from ud_assets.processing.elements import build, load_elements
from ud_assets.processing.model import MissingInput
from ud_assets.processing.provenance import to_quad

OK, INCOMPLETE, OUTDATED = "ok", "incomplete", "outdated"
CHUNK_PROVENANCE = (f"{ids.TRUSTGRAPH_BASE}/activity/", f"{ids.TRUSTGRAPH_BASE}/agent/")
PAGE_SIZE = 500  # generations read per page: memory stays bounded whatever the library's size


@dataclass
class Verification:
    """One document's current generation against what it should consist of."""

    document_id: str
    status: str = OK  # ok | incomplete | outdated (the document changed since: re-decode, not repair)
    rows: int = 0  # child rows found (pages, sections, images, chunks)
    objects: int = 0  # objects found (the source, the elements, every child's)
    triples: int = 0  # triples found for the generation's entities
    object_rows_missing: int = 0  # of those, triples TrustGraph's readers cannot find by their object
    object_rows_written: int = 0  # object rows written by verify(..., write_object_rows=True)
    problems: list[str] = field(default_factory=list)

    def fail(self, problem: str) -> None:
        self.status, self.problems = INCOMPLETE, [*self.problems, problem]

    @property
    def lacks_only_object_rows(self) -> bool:
        """Incomplete only for triples without their object row: repaired by writing those rows."""
        return self.status == INCOMPLETE and self.object_rows_missing > 0 and len(self.problems) == 1


def generations(librarian: Librarian, document_ids: list[str] | None = None) -> Iterator[Generation]:
    """The named documents' generations, or the whole library's page by page (bounded memory)."""
    if document_ids:
        for document_id in document_ids:
            generation = librarian.get_generation(document_id)
            if generation is None:
                raise LibrarianError(f"document {document_id!r} has no decoded generation to verify")
            yield generation
        return
    after = ""
    while page := librarian.generations_after(after, PAGE_SIZE):
        yield from page
        after = page[-1].document_id


def verify(librarian: Librarian, generation: Generation, write_object_rows: bool = False) -> Verification:
    """Every row, object and triple of the generation, checked (reads only, concurrently).

    write_object_rows: write the object rows the generation's stored triples lack instead of
    reporting them (idempotent; the rest is still only read)."""
    lib, doc_id = librarian, generation.document_id
    result = Verification(doc_id)
    config = DecoderConfig(**json.loads(generation.config_json))  # the options this generation was made with
    try:
        attempt = open_attempt(lib, doc_id, config, generation.unstructured_version)
    except (LibrarianError, DecodeError) as exc:
        result.fail(f"the source document is unreadable: {exc}")
        return result
    if attempt.fingerprint != generation.fingerprint:
        result.status = OUTDATED
        result.problems.append("the document changed since this generation was decoded")
        return result
    with ThreadPoolExecutor(max_workers=16) as pool:
        objects = [attempt.meta.object_id]
        try:
            elements = load_elements(attempt).elements
        except MissingInput:
            result.fail("the elements object is missing")
            return result
        built = build(attempt, elements)
        expected_children = {s.id for s in built.sections} | {r.id for r in built.images}
        rows: dict[str, DocumentMetadata] = {c.id: c for c in lib.list_children(doc_id)}
        for below in pool.map(lib.list_children, [s.id for s in built.sections]):
            rows.update({c.id: c for c in below if c.document_type in (IMAGE, CHUNK)})
        missing = sorted(expected_children - rows.keys())
        if missing:
            result.fail(f"{len(missing)} page/section/image rows missing, e.g. {missing[0]}")
        result.rows = len(rows)
        objects += [c.object_id for c in rows.values()]
        present = list(pool.map(lib.objects.exists, objects))
        result.objects = sum(present) + 1  # and the elements object, read above
        if not all(present):
            result.fail(f"{present.count(False)} of {len(objects)} objects missing")
        # Content, not only presence: each child's bytes against the digest its row recorded when
        # the run stored them, and each page's or section's text against the document's text at
        # its offsets (rebuilt above from the stored elements).
        kept = [c for c, here in zip(rows.values(), present[1:], strict=True) if here]
        texts = {s.id: s.text for s in built.sections}

        def differs(row: DocumentMetadata) -> str | None:
            payload = b"".join(lib.objects.open(row.object_id))
            if hashlib.sha256(payload).hexdigest() != row.sha256:
                return f"{row.id} (its bytes are not those stored)"
            if row.id in texts and payload.decode("utf-8", errors="replace") != texts[row.id]:
                return f"{row.id} (its text is not the document's at its offsets)"
            return None

        changed = [d for d in pool.map(differs, kept) if d is not None]
        if changed:
            result.fail(f"{len(changed)} objects changed since they were stored, e.g. {changed[0]}")

        quads = [to_quad(t) for t in build_triples(attempt.info, built.sections, built.images)]
        expected = Counter(q.s for q in quads)
        chunks = [c for c in rows.values() if c.document_type == CHUNK]
        subjects = sorted(expected.keys() | {c.id for c in chunks})

        def stored(subject: str) -> list[Quad]:
            return lib.triples.query(s=subject, g=GRAPH_SOURCE, collection=lib.collection)

        found_quads = dict(zip(subjects, pool.map(stored, subjects), strict=True))
        found = {s: len(qs) for s, qs in found_quads.items()}
        result.triples = sum(found.values())
        # The chunks' activities and the chunker agent are written with the chunks, not built above: reached
        # from the chunks' triples (chunk -> activity -> agent), checked for their object rows only.
        linked: dict[str, list[Quad]] = {}
        hop = [c.id for c in chunks]
        for _ in range(2):
            nodes = {
                q.o.value
                for s in hop
                for q in found_quads.get(s) or linked.get(s, [])
                if q.o.is_iri and q.o.value.startswith(CHUNK_PROVENANCE)
            }
            hop = sorted(nodes - found_quads.keys() - linked.keys())
            linked.update(zip(hop, pool.map(stored, hop), strict=True))
        unfindable = lib.triples.missing_object_rows(
            (q for qs in (*found_quads.values(), *linked.values()) for q in qs), collection=lib.collection
        )
        if unfindable and write_object_rows:
            result.object_rows_written = lib.triples.write_object_rows(unfindable, collection=lib.collection)
        elif unfindable:
            result.object_rows_missing = len(unfindable)
            result.fail(
                f"{len(unfindable)} triples without their object row (TrustGraph's get_o/get_po miss them), "
                f"e.g. {unfindable[0].s} {unfindable[0].p}; `ud verify --repair` writes them"
            )
        short = [s for s, n in expected.items() if found[s] != n]
        if short:
            result.fail(
                f"{len(short)} entities with a wrong number of triples, e.g. {short[0]} "
                f"({found[short[0]]} stored, {expected[short[0]]} built)"
            )
        bare = [c.id for c in chunks if not found[c.id]]
        if bare:
            result.fail(f"{len(bare)} chunks without triples, e.g. {bare[0]}")
    return result
