"""The `provenance_triples` stage: PROV-O triples of the generation, then its commit.

This is the last stage of a generation: once its triples are stored the generation is complete,
so it becomes current here (generations.commit) and older generations' children go.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

from resources.model import GRAPH_SOURCE, DocumentMetadata, Quad, Term
from ud_assets.decoding import ids
from ud_assets.decoding.decoder import build_triples
from ud_assets.decoding.model import COMPONENT as DECODER_COMPONENT
from ud_assets.decoding.model import Element
from ud_assets.decoding.provenance import RDF_TYPE, Triple
from ud_assets.processing.generations import commit, generation_diff
from ud_assets.processing.images import missing_children
from ud_assets.processing.model import Attempt, Built, MissingInput, ProvenanceResult
from ud_assets.processing.stage_run import StageRun, named


def provenance_stage(
    attempt: Attempt,
    built: Built,
    elements: list[Element],
    fresh_children: bool,
    other_generations: Sequence[DocumentMetadata] | None = None,
) -> ProvenanceResult:
    """Store the triples of the document, its sections and images, and make the generation current.

    fresh_children: every section and image was written by this very run, so none of them can
    have triples yet and there is nothing to clear first. other_generations: the document's
    children of other generations, when this run's sections stage listed them."""
    started = time.perf_counter()
    lib, document_id = attempt.librarian, attempt.document_id
    # The document's children, listed once for what needs them (the sections stage of this run
    # lists them when it runs): the check below, the change summary and the commit.
    listed = lib.list_children(document_id) if other_generations is None or not fresh_children else None
    if other_generations is None:
        other_generations = tuple(c for c in listed or () if attempt.tag not in c.tags)
    # Children this very run wrote are stored; others (a stage run on its own) are checked first.
    missing = set() if fresh_children else set(missing_children(attempt, built, listed))
    if missing:
        first = "sections" if missing & {s.id for s in built.sections} else "images"
        raise MissingInput(
            document_id,
            f"{len(missing)} children of generation {attempt.fingerprint[:12]} are "
            f"not stored; materialize {first} first",
        )
    quads = [to_quad(t) for t in build_triples(attempt.info, built.sections, built.images, attempt.now)]
    doc_iri = ids.document_iri(document_id)
    # Same ids on a re-run: clear this generation's subjects first, so nothing doubles.
    if not fresh_children:
        # Not the decoder agent's own description: every document shares it, and deleting it here
        # would take it away from the others being stored at the same time (and fail their check).
        entity_subjects = {q.s for q in quads} - {doc_iri, ids.agent_iri(DECODER_COMPONENT)}
        lib.triples.delete_subjects(sorted(entity_subjects), GRAPH_SOURCE, lib.collection)
    # Every triple is written by the commit, which replaces the document's own previous ones.
    sections = built.sections
    summary = {
        "pages": sum(1 for s in sections if s.type == "page"),
        "sections": sum(1 for s in sections if s.type == "section"),
        "tables": sum(s.table_count for s in sections if s.leaf),
        "images": len(built.images),
        "triples": len(quads),
        # What the generation consists of, so that a skip can check it is all there (generations.problems).
        "children": len(sections),
        "image_parents": dict(sorted(Counter(r.parent for r in built.images).items())),
        "document_triples": sum(1 for q in quads if q.s == doc_iri),
    }
    diff = generation_diff(attempt, sections, elements, other_generations)
    removed = commit(attempt, quads, summary, other_generations)
    subjects = {q.s for q in quads}
    # What a person can look up from the UI: how many entities of each type the generation holds.
    entities = Counter(q.o.value.rsplit("#", 1)[-1].rsplit("/", 1)[-1] for q in quads if q.p == RDF_TYPE)
    return ProvenanceResult(
        len(quads),
        removed,
        {
            "triples": len(quads),
            "graph": GRAPH_SOURCE,
            "subjects": len(subjects),
            "entities_by_type": dict(sorted(entities.items())),
            "document_iri": doc_iri,
            "store_s": round(time.perf_counter() - started, 3),
            "old_generation_children_removed": len(removed),
            **({"changes_from_previous_generation": diff} if diff else {}),
        },
    )


def to_quad(triple: Triple) -> Quad:
    obj = Term(triple.o, is_iri=True) if triple.o_type == "iri" else Term(triple.o, datatype=triple.datatype)
    return Quad(triple.s, triple.p, obj, triple.g)


def _expected_counts(run: StageRun) -> Counter[str]:
    """How many triples the generation's build gives each entity."""

    def compute() -> Counter[str]:
        built = run.built()
        return Counter(to_quad(t).s for t in build_triples(run.attempt.info, built.sections, built.images))

    return run.derived("triple_counts", compute)


def triple_count_subjects(run: StageRun) -> list[str]:
    """The entities whose stored triples check_triple_counts reads: every one the build gives triples."""
    return sorted(_expected_counts(run))


def check_triple_counts(run: StageRun) -> str:
    """Read back: the triple store holds exactly the triples built for each entity of the generation
    (every entity's partition read at once, shared with the offset checks)."""
    expected = _expected_counts(run)
    subjects = triple_count_subjects(run)
    triples = run.stored_triples(subjects)
    problems = []
    for subject in subjects:
        stored = len(triples[subject])
        if stored != expected[subject]:
            problems.append(f"{subject} has {stored} triples stored, {expected[subject]} built")
    return named(problems)
