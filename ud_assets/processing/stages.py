"""The declaration list: one `Stage` per stage, the only place that knows which stages there are.

A stage's declaration says everything the rest of the project reads about it: its name and the
stages it comes after (the asset graph's lineage), its result type, how the UI describes it and
what it stores (the Dagster layer turns these into an asset spec), which value of its result
counts its rows, the checks that read back what it stored, and the function that runs it. The
runner (processing/runner.py) and the Dagster layer (defs/) only iterate over `STAGES`. Adding a
stage is a module with its function and its checks, and one declaration here.

A stage's function takes a `StageRun` (processing/stage_run.py): where every input comes from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from ud_assets.processing import chunks, document, elements, images, provenance, sections
from ud_assets.processing.generations import stale_children
from ud_assets.processing.model import (
    CHUNKS,
    DOCUMENT,
    ELEMENTS,
    IMAGES,
    PROVENANCE,
    SECTIONS,
    ChunksResult,
    DocumentResult,
    ElementsResult,
    ImagesResult,
    ProvenanceResult,
    SectionsResult,
    StageResult,
)
from ud_assets.processing.stage_run import StageRun

Stores = Literal["bytes", "rows"]  # the object store; the document table and the triple store


@dataclass(frozen=True)
class Check:
    """A check of what a stage stored, read back from storage.

    verdict: what is wrong, naming the entity ("" when nothing). It runs after the run's stages
    for every document whose check was asked for, whether its generation was decoded now or found
    current, so a corruption of what is stored is named by the next run that checks it."""

    name: str
    description: str
    verdict: Callable[[StageRun], str]
    # The entities whose stored triples the verdict reads: the triples of every check asked for
    # are read together before any verdict (one request per 20 entities, not one per check).
    reads_triples_of: Callable[[StageRun], Iterable[str]] | None = None


@dataclass(frozen=True)
class Stage:
    name: str
    description: str  # what the asset is, as the UI shows it
    after: tuple[str, ...]  # the stages it follows in the asset graph (its lineage)
    result: type[StageResult]
    run: Callable[[StageRun], StageResult]
    stores: frozenset[Stores]
    # generation: part of the decoded generation, so skipped when the current one is complete;
    # source: about the source document only, run before anything is decoded or loaded;
    # own: keeps a generation of its own and runs each time it is selected (chunks).
    kind: Literal["source", "generation", "own"] = "generation"
    row_count: str | None = None  # the result metadata value that counts its rows (a number or a Table)
    children_of_source: bool = False  # it stores child documents: their URI is the source's bytes
    beside: bool = False  # runs in a thread of its own beside the stages after it (it needs only `after`)
    parser_output: bool = False  # what unstructured returned: its version is part of the stage's code version
    checks: tuple[Check, ...] = ()


def _no_stale_children(run: StageRun) -> str:
    # Before provenance commits this generation, the current one's children are still in use.
    committed = run.outcome.skipped or run.result(PROVENANCE) is not None
    stale = stale_children(run.attempt, run.document_children(), committed)
    return f"{len(stale)} children of another generation: {', '.join(stale[:3])}" if stale else ""


def _run_document(run: StageRun) -> DocumentResult:
    return document.document_stage(run.attempt)


def _run_elements(run: StageRun) -> ElementsResult:
    return elements.elements_stage(run.attempt, run.ahead, run.progress)


def _run_sections(run: StageRun) -> SectionsResult:
    return sections.sections_stage(run.attempt, run.built(), run.rewrite)


def _run_images(run: StageRun) -> ImagesResult:
    run.stored_sections()
    return images.images_stage(run.attempt, run.built(), run.rewrite)


def _run_provenance(run: StageRun) -> ProvenanceResult:
    fresh = run.fresh(SECTIONS) and run.fresh(IMAGES)
    sections = run.result(SECTIONS)
    others = sections.others if isinstance(sections, SectionsResult) else None
    return provenance.provenance_stage(run.attempt, run.built(), run.elements(), fresh, others)


def _run_chunks(run: StageRun) -> ChunksResult:
    run.stored_sections()
    return chunks.chunks_stage(run.attempt, run.built().sections, run.fresh(SECTIONS), run.chunking, run.rewrite)


STAGES: tuple[Stage, ...] = (
    Stage(
        DOCUMENT,
        "The librarian's source document: metadata, detected MIME type, size, sha256 (bytes stay in the object store).",
        after=(),
        result=DocumentResult,
        run=_run_document,
        stores=frozenset({"bytes", "rows"}),
        kind="source",
    ),
    Stage(
        ELEMENTS,
        "unstructured's elements of the document, stored as JSON in the object store.",
        after=(DOCUMENT,),
        result=ElementsResult,
        run=_run_elements,
        stores=frozenset({"bytes"}),
        row_count="elements",
        parser_output=True,
    ),
    Stage(
        SECTIONS,
        "Pages or sections with their text and exact offsets: librarian child documents (page | section).",
        after=(ELEMENTS,),
        result=SectionsResult,
        run=_run_sections,
        stores=frozenset({"bytes", "rows"}),
        row_count="sections",
        children_of_source=True,
        checks=(
            Check(
                "offsets_exact",
                "Read back: every stored section's text is the document's at its offsets and its stored "
                "charOffset/charLength, and every element sits at its offset in the stored text.",
                sections.check_offsets,
                sections.offsets_subjects,
            ),
            Check(
                "no_stale_children",
                "No page, section or image of an earlier generation is left in the librarian.",
                _no_stale_children,
            ),
        ),
    ),
    Stage(
        IMAGES,
        "Embedded images with their original bytes: librarian child documents (image) of their page or section.",
        after=(SECTIONS,),
        result=ImagesResult,
        run=_run_images,
        stores=frozenset({"bytes", "rows"}),
        row_count="images",
        children_of_source=True,
        checks=(
            Check(
                "children_present",
                "Read back: every page, section and image of the generation has its row and its object.",
                images.check_children_present,
            ),
        ),
    ),
    Stage(
        CHUNKS,
        "Chunks of every page/section (TrustGraph's recursive chunker, exact offsets, tables kept whole): "
        "librarian child documents (chunk) of their section, with their provenance triples.",
        after=(SECTIONS,),
        result=ChunksResult,
        run=_run_chunks,
        stores=frozenset({"bytes", "rows"}),
        kind="own",
        row_count="chunks",
        children_of_source=True,
        beside=True,
        checks=(
            Check(
                "chunk_offsets_exact",
                "Read back: every chunk of the current chunk generation is stored, and its stored text sits "
                "at its stored charOffset in its stored section.",
                chunks.check_chunk_offsets,
                chunks.chunk_subjects,
            ),
        ),
    ),
    Stage(
        PROVENANCE,
        "PROV-O/TrustGraph provenance of the document, its pages/sections and images, in urn:graph:source.",
        after=(IMAGES,),
        result=ProvenanceResult,
        run=_run_provenance,
        stores=frozenset({"rows"}),
        row_count="triples",
        checks=(
            Check(
                "triple_count_consistent",
                "Read back: the triple store holds exactly the triples built for each of the document's entities.",
                provenance.check_triple_counts,
                provenance.triple_count_subjects,
            ),
        ),
    ),
)

BY_NAME: dict[str, Stage] = {stage.name: stage for stage in STAGES}
NAMES: tuple[str, ...] = tuple(stage.name for stage in STAGES)


def check_key(stage: str, check: str) -> str:
    """How a check is named in an Outcome: `asset/check`."""
    return f"{stage}/{check}"


def ancestors(name: str) -> set[str]:
    """Every stage the named one follows, directly or through others."""
    found: set[str] = set()
    todo = list(BY_NAME[name].after)
    while todo:
        stage = todo.pop()
        if stage not in found:
            found.add(stage)
            todo += BY_NAME[stage].after
    return found


def execution_order(selected: set[str]) -> list[Stage]:
    """The selected stages in the order they run: the declaration order, except that a stage that
    runs beside the others starts as soon as the selected stages it follows have run."""
    order = [stage for stage in STAGES if stage.name in selected and not stage.beside]
    for stage in (s for s in STAGES if s.name in selected and s.beside):
        follows = ancestors(stage.name)
        positions = [i for i, s in enumerate(order) if s.name in follows]
        order.insert(max(positions) + 1 if positions else 0, stage)
    return order
