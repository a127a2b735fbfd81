"""One document through the selected stages: where each stage's inputs come from, and nothing else.

A stage's input is the result of the stage before it when that stage ran in this run, or else the
generation's stored output (elements JSON, section children); when storage lacks it the run fails
with MissingInput naming what to materialize first. Any subset of stages therefore composes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime

from resources.model import Librarian, StorageUnavailable
from ud_assets.decoding.model import DecodeError, DecoderConfig
from ud_assets.decoding.partitioning import unstructured_version
from ud_assets.processing.chunks import chunks_stage
from ud_assets.processing.document import document_stage, open_attempt
from ud_assets.processing.elements import build, elements_stage, load_elements
from ud_assets.processing.generations import current_problems, refuse_known_failure, stale_children
from ud_assets.processing.images import images_stage, missing_children
from ud_assets.processing.model import (
    CHUNKS,
    DOCUMENT,
    ELEMENTS,
    GENERATION_STAGES,
    IMAGES,
    PROVENANCE,
    SECTIONS,
    STAGES,
    Attempt,
    ChunkingOptions,
    ChunksResult,
    DocumentFailed,
    Outcome,
)
from ud_assets.processing.parse_ahead import ParseAhead
from ud_assets.processing.provenance import provenance_stage
from ud_assets.processing.sections import require_stored_sections, sections_stage

DEFAULT_CHUNKING = ChunkingOptions()


def process_document(
    librarian: Librarian,
    document_id: str,
    config: DecoderConfig,
    stages: Iterable[str] = STAGES,
    version: str | None = None,
    now: datetime | None = None,
    progress: Callable[[str], None] = lambda message: None,
    force: bool = False,
    chunking: ChunkingOptions = DEFAULT_CHUNKING,
    ahead: ParseAhead | None = None,
) -> Outcome:
    """Run the selected stages for one document.

    Raises DocumentFailed when the document (or an unavailable server) is the cause, MissingInput
    when a selected stage needs what was never stored; any other exception is a bug of this
    project and propagates unchanged. A document whose current generation is the one these inputs
    would produce, complete, is skipped unless force is set (the result would be identical).
    """
    selected = set(stages)
    unknown = selected - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; the stages are {', '.join(STAGES)}")
    attempt: Attempt | None = None
    try:
        attempt = open_attempt(librarian, document_id, config, version or unstructured_version(), now)
        return _run(attempt, selected, force, chunking, ahead, progress)
    except DocumentFailed as failure:
        failure.fingerprint = failure.fingerprint or (attempt.fingerprint if attempt else "")
        raise
    except Exception as exc:
        cause = document_failure(document_id, exc)
        if cause is None:
            raise  # not the document's fault: the run fails with this traceback
        cause.fingerprint = attempt.fingerprint if attempt else ""
        raise cause from exc


def document_failure(document_id: str, exc: BaseException) -> DocumentFailed | None:
    """The ledger's rule: the failure as the document's own or an unavailable server's, or None.

    The failure ledger holds exactly two kinds of entry, and this is the only place that decides:

    - the document's own fault, deterministic (a later run of the same generation refuses it):
      it cannot be parsed, is encrypted, is over a limit, is mislabelled or empty where that is an
      error (all raised by the decoder as DecodeError), or its parse ran out of memory;
    - a server being unavailable (StorageUnavailable, a refused or timed-out connection), marked
      transient: retried with backoff, and again by the next run.

    Everything else is None and propagates with its traceback, never recorded against the document:
    a bug of ours (any other exception, DecoderBug from the set-up around a parser), an invalid
    option (ConfigError: the run's settings, not the document), a librarian refusal that is not a
    server being down (LibrarianError: our request or the librarian's state), a missing input.
    """
    if isinstance(exc, DecodeError):
        return DocumentFailed(document_id, str(exc))
    if isinstance(exc, MemoryError):
        return DocumentFailed(document_id, "ran out of memory while decoding")
    if isinstance(exc, StorageUnavailable):
        return DocumentFailed(document_id, str(exc), transient=True)
    if isinstance(exc, ConnectionError | TimeoutError):
        return DocumentFailed(document_id, f"storage unavailable: {type(exc).__name__}: {exc}", transient=True)
    return None


def _run(
    attempt: Attempt,
    selected: set[str],
    force: bool,
    chunking: ChunkingOptions,
    ahead: ParseAhead | None,
    progress: Callable[[str], None],
) -> Outcome:
    outcome = Outcome(attempt.document_id, attempt.fingerprint, attempt.librarian.objects.uri(attempt.meta.object_id))
    if DOCUMENT in selected:
        outcome.document = document_stage(attempt)
    if not selected - {DOCUMENT}:
        return outcome
    recorded_failure = refuse_known_failure(attempt) if not force else None
    # The stages of the generation that have work to do: none when it is current and complete.
    todo = selected & set(GENERATION_STAGES)
    missing = current_problems(attempt.librarian, attempt.document_id, attempt.fingerprint, attempt.current)
    if todo and not force and missing == []:
        outcome.skipped, todo = True, set()
        if recorded_failure is not None:
            # The generation is current and complete: a failure in the ledger is from a run that
            # failed after committing it (chunks), or of an older generation. A commit clears the
            # ledger; so does finding the generation whole.
            attempt.librarian.clear_failure(attempt.document_id)
    # A current generation with parts missing (lost in a crash, deleted behind our back) is rewritten whole.
    rewrite = force or bool(missing)
    outcome.repaired = missing or []
    if not todo and CHUNKS not in selected:
        return outcome

    elements = elements_stage(attempt, ahead, progress) if ELEMENTS in todo else load_elements(attempt)
    if ELEMENTS in todo:
        outcome.elements = elements
    built = outcome.built = build(attempt, elements.elements)

    if SECTIONS in todo:
        outcome.sections = sections_stage(attempt, built, rewrite)
    elif not outcome.skipped and (IMAGES in todo or CHUNKS in selected):
        require_stored_sections(attempt, built)
    fresh_sections = outcome.sections is not None and outcome.sections.fresh

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chunks") as pool:
        # Chunks need only the stored sections: they are written while images and provenance
        # are; a failure of either fails the document.
        chunked: Future[ChunksResult] | None = (
            pool.submit(chunks_stage, attempt, built.sections, fresh_sections, chunking, rewrite)
            if CHUNKS in selected
            else None
        )
        if IMAGES in todo:
            outcome.images = images_stage(attempt, built, rewrite)
        if PROVENANCE in todo:
            fresh = fresh_sections and outcome.images is not None and outcome.images.fresh
            outcome.provenance = provenance_stage(attempt, built, elements.elements, fresh)
        if chunked is not None:
            outcome.chunks = chunked.result()

    if todo & {SECTIONS, IMAGES, PROVENANCE}:
        # What the checks report is read back from the librarian: one read of the children for both.
        children = attempt.librarian.list_children(attempt.document_id)
        if todo & {SECTIONS, IMAGES}:
            outcome.missing_children = missing_children(attempt, built, children)
        if todo & {SECTIONS, PROVENANCE}:
            outcome.stale_children = stale_children(attempt, children, committed=outcome.provenance is not None)
    return outcome
