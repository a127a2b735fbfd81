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
from resources.records import Failure
from ud_assets.decoding.model import DecodeError, DecoderConfig
from ud_assets.decoding.partitioning import unstructured_version
from ud_assets.processing.document import open_attempt
from ud_assets.processing.generations import current_problems, refuse_known_failure
from ud_assets.processing.model import Attempt, ChunkingOptions, DocumentFailed, Outcome, StageResult
from ud_assets.processing.parse_ahead import ParseAhead
from ud_assets.processing.stages import BY_NAME, NAMES, StageRun, check_key, execution_order

DEFAULT_CHUNKING = ChunkingOptions()


class _Unread:
    """The ledger entry of a document not read yet (None means read: no entry)."""


_UNREAD = _Unread()


def process_document(
    librarian: Librarian,
    document_id: str,
    config: DecoderConfig,
    stages: Iterable[str] = NAMES,
    version: str | None = None,
    now: datetime | None = None,
    progress: Callable[[str], None] = lambda message: None,
    force: bool = False,
    chunking: ChunkingOptions = DEFAULT_CHUNKING,
    ahead: ParseAhead | None = None,
    checks: Iterable[str] = (),
) -> Outcome:
    """Run the selected stages for one document.

    Raises DocumentFailed when the document (or an unavailable server) is the cause, MissingInput
    when a selected stage needs what was never stored; any other exception is a bug of this
    project and propagates unchanged. A document whose current generation is the one these inputs
    would produce, complete, is skipped unless force is set (the result would be identical).

    checks: the checks to evaluate (`asset/check`, stages.check_key) once the stages have run, by
    reading back what is stored; their verdicts are in Outcome.checks.
    """
    selected = set(stages)
    unknown = selected - set(NAMES)
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; the stages are {', '.join(NAMES)}")
    attempt: Attempt | None = None
    try:
        looked = ahead.looked(document_id) if ahead is not None else None
        attempt = open_attempt(librarian, document_id, config, version or unstructured_version(), now, looked)
        run = StageRun(attempt, Outcome(attempt.document_id), force, chunking, ahead, progress)
        _run(run, selected, force, looked.failure if looked is not None else _UNREAD)
        _evaluate_checks(run, set(checks))
        return run.outcome
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


def _run(run: StageRun, selected: set[str], force: bool, failure: Failure | _Unread | None = _UNREAD) -> None:
    """The selected stages in their declared order; a stage's inputs come from the StageRun."""
    attempt, outcome = run.attempt, run.outcome
    outcome.fingerprint = attempt.fingerprint
    outcome.source_uri = attempt.librarian.objects.uri(attempt.meta.object_id)
    order = execution_order(selected)
    for stage in (s for s in order if s.kind == "source"):
        outcome.results[stage.name] = stage.run(run)
    if all(stage.kind == "source" for stage in order):
        return
    recorded_failure = None
    if not force:
        if isinstance(failure, _Unread):
            failure = attempt.librarian.get_failure(attempt.document_id)
        recorded_failure = refuse_known_failure(attempt, failure)
        attempt.ledger_empty = recorded_failure is None
    # The generation's stages with work to do: none when it is current and complete.
    todo = [s for s in order if s.kind != "source"]
    # Parse-ahead looked at this very generation moments ago (a batch): its verdict stands.
    found_current = run.ahead is not None and run.ahead.found_current(attempt.document_id, attempt.fingerprint)
    missing: list[str] | None = (
        []
        if found_current and attempt.current is not None and attempt.current.fingerprint == attempt.fingerprint
        else current_problems(attempt.librarian, attempt.document_id, attempt.fingerprint, attempt.current)
    )
    if not force and missing == [] and any(s.kind == "generation" for s in todo):
        outcome.skipped = True
        todo = [s for s in todo if s.kind != "generation"]
        if recorded_failure is not None:
            # The generation is current and complete: a failure in the ledger is from a run that
            # failed after committing it (chunks), or of an older generation. A commit clears the
            # ledger; so does finding the generation whole.
            attempt.librarian.clear_failure(attempt.document_id)
    # A current generation with parts missing (lost in a crash, deleted behind our back) is rewritten whole.
    run.rewrite = force or bool(missing)
    outcome.repaired = missing or []
    if not todo:
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="beside") as pool:
        # A stage that runs beside (chunks) needs only what it follows: it is written while the
        # later stages are; a failure of any fails the document.
        beside: dict[str, Future[StageResult]] = {}
        for stage in todo:
            if stage.beside:
                beside[stage.name] = pool.submit(stage.run, run)
            else:
                outcome.results[stage.name] = stage.run(run)
        for name, future in beside.items():
            outcome.results[name] = future.result()


def _evaluate_checks(run: StageRun, wanted: set[str]) -> None:
    """Each wanted check of a stage that ran or was found current reads back what is stored."""
    if not wanted:
        return
    checks = [
        (check_key(stage.name, check.name), check)
        for stage in BY_NAME.values()
        if stage.name in run.outcome.results or (run.outcome.skipped and stage.kind == "generation")
        for check in stage.checks
        if check_key(stage.name, check.name) in wanted
    ]
    run.stored_triples(s for _, check in checks if check.reads_triples_of for s in check.reads_triples_of(run))
    for key, check in checks:
        run.outcome.checks[key] = check.verdict(run)
