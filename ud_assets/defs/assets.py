"""The asset graph: document → elements → sections → images → provenance_triples.

The six assets share one step (a multi-asset): a document is read, partitioned and written
once per generation, and a run over a batch of partitions pays the process start-up
(unstructured's imports, spaCy) once. Each asset is still its own node in the lineage graph,
selectable on its own; later stages then start from what earlier ones stored in the librarian.

One bad document never blocks the others: each good partition gets its materializations as
it finishes, the bad ones are recorded in the failure ledger, and the step fails at the end
naming them, so their partitions show as failed with the cause.
"""

import os
import time
from collections.abc import Callable, Generator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from importlib.metadata import version as package_version
from typing import Any

import dagster as dg

from resources.model import Librarian
from ud_assets.decoding import formats
from ud_assets.decoding.model import ConfigError, DecoderConfig
from ud_assets.defs.checks import CHECK_SPECS, check_results, wanted_checks
from ud_assets.defs.config import DecoderOptions
from ud_assets.defs.metadata import stage_metadata
from ud_assets.defs.partitions import documents_partitions
from ud_assets.defs.resources import LibrarianResource
from ud_assets.processing.model import ChunkingOptions, DocumentFailed, MissingInput, Outcome
from ud_assets.processing.parse_ahead import ParseAhead
from ud_assets.processing.stages import BY_NAME, STAGES, Stage

GROUP = "universal_decoder"
DECODE_RUN_TAG = "ud/decode"  # runs carrying it share the run queue's decoding limit
TRANSIENT_ATTEMPTS = 3
PARSE_LOOKAHEAD = 2  # parsed documents that may wait, beyond one per parse worker, while others are stored
PROGRESS_EVERY_S = 5.0  # how often a batch logs which document it is at


def batch_size() -> int:
    """Partitions per run in backfills (UD_BATCH_SIZE, default 50)."""
    return max(1, int(os.environ.get("UD_BATCH_SIZE", "50")))


def elements_code_version() -> str:
    # importlib.metadata reads the installed version without importing unstructured.
    return f"unstructured-{package_version('unstructured')}+decoder-{formats.versions_label()}"


OWNERS = ["team:ud"]


def storage_kinds() -> tuple[set[str], set[str]]:
    """(where bytes live, where rows and triples live), as kinds shown in the UI, from the environment."""
    from resources.settings import load_settings

    if load_settings().backend == "cassandra":
        return {"s3"}, {"cassandra"}
    return {"sqlite"}, {"sqlite"}


_BYTES, _ROWS = storage_kinds()


def _spec(stage: Stage) -> dg.AssetSpec:
    """A stage's asset spec, from its declaration (processing/stages.py)."""
    kinds = {"python"} | (_BYTES if "bytes" in stage.stores else set()) | (_ROWS if "rows" in stage.stores else set())
    return dg.AssetSpec(
        stage.name,
        deps=list(stage.after),
        description=stage.description,
        group_name=GROUP,
        skippable=True,
        code_version=elements_code_version() if stage.parser_output else formats.versions_label(),
        kinds=kinds | ({"unstructured"} if stage.parser_output else set()),
        owners=OWNERS,
    )


ASSET_SPECS = [_spec(stage) for stage in STAGES]


@dg.multi_asset(
    name="universal_decoder",
    specs=ASSET_SPECS,
    check_specs=CHECK_SPECS,
    can_subset=True,
    partitions_def=documents_partitions,
    backfill_policy=dg.BackfillPolicy.multi_run(max_partitions_per_run=batch_size()),
    pool="decoding",
)
def universal_decoder(context: dg.AssetExecutionContext, config: DecoderOptions, librarian: LibrarianResource):
    from ud_assets.decoding.partitioning import unstructured_version
    from ud_assets.processing.parse_ahead import parse_workers

    selected = {key.to_user_string() for key in context.selected_asset_keys}
    keys = list(context.partition_keys)
    stages = [stage.name for stage in STAGES if stage.name in selected]
    batch = Batch(
        librarian=librarian.get(),
        keys=keys,
        config=config.to_decoder_config(),
        stages=stages,
        checks=wanted_checks(set(context.selected_asset_check_keys)),
        chunking=config.to_chunking_options(),
        force=config.force,
        version=unstructured_version(),
        tags=dict(context.run.tags),  # a run of a processing request publishes into its collection
        group_linger_s=group_linger_s(librarian.store_settings().backend),
    )
    # With more than one document, several are parsed at once while finished ones are stored.
    if len(keys) > 1 and "elements" in stages:
        batch.ahead = ParseAhead(
            batch.librarian,
            batch.config,
            batch.version,
            batch.force,
            workers=parse_workers(),
            lookahead=PARSE_LOOKAHEAD,
        )
    try:
        done = yield from _process_batch(context, batch)
    finally:
        if batch.ahead is not None:
            batch.ahead.close()

    yield from check_results(batch.checks, done.outcomes)
    if done.failures:
        lines = [str(f) for f in done.failures]
        raise dg.Failure(
            description=f"{len(done.failures)} of {len(keys)} documents failed: " + "; ".join(lines)[:2000],
            metadata={
                "failed": dg.MetadataValue.json({f.document_id: f.cause for f in done.failures}),
                "succeeded": len(done.outcomes),
            },
            allow_retries=any(f.transient for f in done.failures),
        )


@dataclass
class Batch:
    """What one run of the step processes: its documents, its selection, and its options."""

    librarian: Librarian
    keys: list[str]
    config: DecoderConfig
    stages: list[str]  # in declaration order
    checks: set[str]  # stages.check_key of each selected check
    chunking: ChunkingOptions
    force: bool
    version: str  # unstructured's
    tags: dict[str, str]  # the run's
    ahead: ParseAhead | None = None  # parses the next documents while earlier ones are stored
    group_linger_s: float = 0.0  # how long a document's triples may wait for others' (0: never)


@dataclass
class Done:
    """What a batch produced: the documents processed, and those that failed by their own fault."""

    outcomes: list[Outcome] = field(default_factory=list)
    failures: list[DocumentFailed] = field(default_factory=list)


def store_workers(grouping: bool) -> int:
    """Documents of a batch in storage at once (UD_STORE_WORKERS): by default 32 where their
    triples are written together (most of them are waiting for the others' there), else 4."""
    return max(1, int(os.environ.get("UD_STORE_WORKERS", "32" if grouping else "4")))


def group_linger_s(backend: str) -> float:
    """The longest a document's triples wait for other documents' to be written with them
    (UD_GROUP_LINGER_S; 0 writes each document's on its own). By default 1 s on Cassandra, where a
    write of many documents' quads costs the server a fraction of a write each, and 0 on the
    embedded librarian, where grouping measured no faster and only delayed each document."""
    default = "1.0" if backend == "cassandra" else "0"
    return max(0.0, float(os.environ.get("UD_GROUP_LINGER_S", default)))


def group_settle_s() -> float:
    """Once the batch can start no other document, how long waiting triples wait for one more
    document's (UD_GROUP_SETTLE_S, 0.02 s) while a document in storage has not reached its insert."""
    return max(0.0, float(os.environ.get("UD_GROUP_SETTLE_S", "0.02")))


def _process_batch(context: dg.AssetExecutionContext, batch: Batch) -> Generator[dg.AssetMaterialization, None, Done]:
    """Each document through the stages, several at once; their materializations as each finishes.

    A small document's storage is mostly waiting for round trips (object PUTs, Cassandra writes,
    the generation's commit): `store_workers()` documents are stored side by side, while the
    parse-ahead children parse the next ones, so a batch costs about its parsing, not the sum of
    every document's storage latency. A bug of ours in any document stops new ones being started;
    those already running finish and are materialized, then the run fails with the bug."""
    from resources.grouped_inserts import GroupedInserts, grouping_inserts
    from ud_assets.processing.generations import record_failure
    from ud_assets.processing.runner import process_document

    lib, keys, ahead, result = batch.librarian, batch.keys, batch.ahead, Done()
    grouping = len(keys) > 1 and batch.group_linger_s > 0
    width = store_workers(grouping) if len(keys) > 1 else 1
    # Documents stored side by side write their triples together (resources/grouped_inserts.py):
    # a write of many documents' quads costs the triple store a fraction of one write each.
    grouped = (
        GroupedInserts(lib.triples, linger_s=batch.group_linger_s, settle_s=group_settle_s())
        if grouping and width > 1
        else None
    )

    def process_and_publish(key: str) -> Outcome:
        # The document's own view of the group: its inserts are known as its own (its chunks' and
        # provenance's may wait at once, and the group waits for every other document in storage).
        doc_lib = grouping_inserts(lib, grouped.for_document(key)) if grouped is not None else lib
        outcome = process_document(
            doc_lib,
            key,
            batch.config,
            batch.stages,
            version=batch.version,
            progress=context.log.debug,
            force=batch.force,
            chunking=batch.chunking,
            ahead=ahead,
            checks=batch.checks,
        )
        _publish(doc_lib, key, outcome, batch.stages, batch.tags)
        return outcome

    def store(key: str) -> tuple[Outcome, float]:
        started = time.perf_counter()
        try:
            return _with_retries(partial(process_and_publish, key), context), round(time.perf_counter() - started, 3)
        finally:
            if ahead is not None:
                ahead.release(key)
            if grouped is not None:
                grouped.document_ended()

    # Parsed ahead, documents come back as their parses finish (largest started first).
    order = ahead.in_completion_order(keys) if ahead is not None else iter(keys)
    running: dict[Future[tuple[Outcome, float]], str] = {}
    bug: BaseException | None = None
    last_progress = 0.0
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="store") as pool:
        index = 0
        while True:
            if bug is None and len(running) < width:
                key = next(order, None)
                if key is not None:
                    index += 1
                    now = time.perf_counter()
                    # Every log line is a stored event: a batch of small documents says where it
                    # is every few seconds, not once per document.
                    if index in (1, len(keys)) or now - last_progress >= PROGRESS_EVERY_S:
                        context.log.info(f"[{index}/{len(keys)}] {key}")
                        last_progress = now
                    if grouped is not None:
                        grouped.document_started()
                    running[pool.submit(store, key)] = key
                    continue
                if grouped is not None and key is None:
                    grouped.drain()  # the last documents: only those in storage can still join
            if not running:
                break
            if grouped is not None:
                grouped.set_open(False)  # no document starts before one of these ends: none can join
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            if grouped is not None:
                grouped.set_open(True)
            for future in done:
                key = running.pop(future)
                try:
                    outcome, elapsed = future.result()
                except (MissingInput, ConfigError) as refused:
                    # The selection lacks a stage whose output is not stored, or an option is
                    # invalid: the person's next step, neither a bug nor the document's fault.
                    said = str(refused) if isinstance(refused, MissingInput) else f"{key}: {refused}"
                    bug = bug or dg.Failure(description=said, allow_retries=False)
                    continue
                except DocumentFailed as failure:
                    result.failures.append(failure)
                    context.log.error(f"document {failure}")
                    try:
                        if not failure.known:
                            record_failure(lib, key, failure)
                    except Exception as exc:  # the ledger must not hide the document's own error
                        context.log.warning(f"could not record the failure of {key}: {exc}")
                    continue
                except Exception as exc:  # a bug of ours: never recorded against the document
                    bug = bug or exc
                    continue
                result.outcomes.append(outcome)
                yield from _materializations(context, key, batch.stages, outcome, elapsed, ahead)
    if grouped is not None and grouped.inserts:
        context.log.info(f"triples: {grouped.inserts} inserts of {len(keys)} documents in {grouped.writes} writes")
    if bug is not None:
        raise bug
    return result


def _publish(lib: Librarian, key: str, outcome: Outcome, stages: list[str], tags: dict[str, str]) -> None:
    """The copies of the document's triples in the collections processing requests asked for:
    refreshed after a new generation, and added for the request this run honours
    (processing/publication.py). A storage outage is the document's transient failure."""
    from resources.librarian import now_utc
    from resources.model import ProcessingRequest, StorageUnavailable
    from ud_assets.processing import publication

    if "provenance_triples" not in stages and "chunks" not in stages:  # the copies follow the triples
        return
    try:
        if not outcome.skipped or outcome.chunks is not None:  # triples written (chunks run every time)
            publication.refresh(lib, key)
        if tags.get(publication.PROCESSING_TAG):
            request = ProcessingRequest(
                id=tags[publication.PROCESSING_TAG],
                document_id=key,
                collection=tags.get(publication.COLLECTION_TAG) or lib.collection,
                time=now_utc(),
            )
            publication.publish(lib, request)
    except StorageUnavailable as exc:
        raise DocumentFailed(key, str(exc), transient=True) from exc


def _materializations(context, key, stages, outcome, elapsed, ahead):
    if outcome.repaired:
        context.log.warning(f"{key}: the stored generation was incomplete ({'; '.join(outcome.repaired)}); rewritten")
    if outcome.skipped:
        context.log.info(f"{key} is up to date (generation {outcome.fingerprint[:12]}): nothing decoded again")
    for stage in stages:
        values = outcome.metadata(stage)
        metadata = (
            stage_metadata(BY_NAME[stage], outcome, values)
            if values is not None
            else _stored_metadata(context, stage, key, outcome.fingerprint)
        )
        metadata["document_id"] = key
        if outcome.repaired and values is not None:
            metadata["repaired"] = "; ".join(outcome.repaired)  # the stored generation was incomplete
        if stage == stages[-1]:
            metadata["document_s"] = elapsed
            if ahead is not None:
                metadata["parse_wait_s"] = round(ahead.waited.get(key, 0.0), 3)
        yield dg.AssetMaterialization(asset_key=stage, partition=key, metadata=metadata)


def _stored_metadata(context: dg.AssetExecutionContext, stage: str, key: str, fingerprint: str) -> dict[str, Any]:
    """The metadata of the run that stored this generation's stage, for a stage that was up to date.

    A run that finds a document current still materializes its partition (a backfill counts only
    what its runs materialize), but with the metadata of the generation that is stored, so the
    partition page never hides the real counts, tables and preview behind an "up to date" stub."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(stage), asset_partitions=[key]), limit=1
    ).records
    stored = records[0].asset_materialization if records else None
    metadata: dict[str, Any] = {}
    if stored is not None and getattr(stored.metadata.get("generation"), "value", None) == fingerprint:
        metadata.update(stored.metadata)
    metadata.update({"generation": fingerprint, "up_to_date": True})
    return metadata


def _with_retries(attempt: Callable[[], Outcome], context: dg.AssetExecutionContext) -> Outcome:
    """Retry a document whose storage was unavailable, with backoff; other failures are final."""
    for n in range(TRANSIENT_ATTEMPTS):
        try:
            return attempt()
        except DocumentFailed as failure:
            if not failure.transient or n == TRANSIENT_ATTEMPTS - 1:
                raise
            delay = 0.5 * 2**n
            context.log.warning(f"{failure}; retrying in {delay:.1f}s")
            time.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")
