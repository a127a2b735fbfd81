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
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from functools import partial
from importlib.metadata import version as package_version
from typing import Any

import dagster as dg

from resources.model import Librarian
from ud_assets.decoding import formats
from ud_assets.decoding.model import ConfigError
from ud_assets.defs.checks import CHECK_SPECS, check_results
from ud_assets.defs.config import DecoderOptions
from ud_assets.defs.metadata import stage_metadata
from ud_assets.defs.partitions import documents_partitions
from ud_assets.defs.resources import LibrarianResource
from ud_assets.processing.model import DocumentFailed, MissingInput, Outcome

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


def _spec(
    key: str, description: str, kinds: set[str], deps: tuple[str, ...] = (), code_version: str | None = None
) -> dg.AssetSpec:
    return dg.AssetSpec(
        key,
        deps=list(deps),
        description=description,
        group_name=GROUP,
        skippable=True,
        code_version=code_version or formats.versions_label(),
        kinds={"python", *kinds},
        owners=OWNERS,
    )


ASSET_SPECS = [
    _spec(
        "document",
        "The librarian's source document: metadata, detected MIME type, size, sha256 (bytes stay in the object store).",
        _BYTES | _ROWS,
    ),
    _spec(
        "elements",
        "unstructured's elements of the document, stored as JSON in the object store.",
        {"unstructured"} | _BYTES,
        deps=("document",),
        code_version=elements_code_version(),
    ),
    _spec(
        "sections",
        "Pages or sections with their text and exact offsets: librarian child documents (page | section).",
        _BYTES | _ROWS,
        deps=("elements",),
    ),
    _spec(
        "images",
        "Embedded images with their original bytes: librarian child documents (image) of their page or section.",
        _BYTES | _ROWS,
        deps=("sections",),
    ),
    _spec(
        "chunks",
        "Chunks of every page/section (TrustGraph's recursive chunker, exact offsets, tables kept whole): "
        "librarian child documents (chunk) of their section, with their provenance triples.",
        _BYTES | _ROWS,
        deps=("sections",),
    ),
    _spec(
        "provenance_triples",
        "PROV-O/TrustGraph provenance of the document, its pages/sections and images, in urn:graph:source.",
        _ROWS,
        deps=("images",),
    ),
]


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
    from ud_assets.processing.model import STAGES
    from ud_assets.processing.parse_ahead import ParseAhead, parse_workers

    lib = librarian.get()
    decoder_config = config.to_decoder_config()
    selected = {key.to_user_string() for key in context.selected_asset_keys}
    stages = [stage for stage in STAGES if stage in selected]
    chunking = config.to_chunking_options()
    keys = list(context.partition_keys)
    outcomes: list[Outcome] = []
    failures: list[DocumentFailed] = []
    version = unstructured_version()
    # With more than one document, several are parsed at once while finished ones are stored.
    ahead = (
        ParseAhead(lib, decoder_config, version, config.force, workers=parse_workers(), lookahead=PARSE_LOOKAHEAD)
        if len(keys) > 1 and "elements" in stages
        else None
    )
    try:
        yield from _process_batch(
            context, lib, keys, decoder_config, stages, chunking, config.force, version, ahead, outcomes, failures
        )
    finally:
        if ahead is not None:
            ahead.close()

    selected_checks = {(key.asset_key.to_user_string(), key.name) for key in context.selected_asset_check_keys}
    yield from check_results(selected_checks, outcomes)
    if failures:
        lines = [str(f) for f in failures]
        raise dg.Failure(
            description=f"{len(failures)} of {len(keys)} documents failed: " + "; ".join(lines)[:2000],
            metadata={
                "failed": dg.MetadataValue.json({f.document_id: f.cause for f in failures}),
                "succeeded": len(outcomes),
            },
            allow_retries=any(f.transient for f in failures),
        )


def store_workers() -> int:
    """Documents of a batch stored at once (UD_STORE_WORKERS, default 4)."""
    return max(1, int(os.environ.get("UD_STORE_WORKERS", "4")))


def _process_batch(context, lib, keys, decoder_config, stages, chunking, force, version, ahead, outcomes, failures):
    """Each document through the stages, several at once; their materializations as each finishes.

    A small document's storage is mostly waiting for round trips (object PUTs, Cassandra writes,
    the generation's commit): `store_workers()` documents are stored side by side, while the
    parse-ahead children parse the next ones, so a batch costs about its parsing, not the sum of
    every document's storage latency. A bug of ours in any document stops new ones being started;
    those already running finish and are materialized, then the run fails with the bug."""
    from ud_assets.processing.generations import record_failure
    from ud_assets.processing.runner import process_document

    request = dict(context.run.tags)  # a run of a processing request publishes into its collection

    def process_and_publish(key: str) -> Outcome:
        outcome = process_document(
            lib,
            key,
            decoder_config,
            stages,
            version=version,
            progress=context.log.debug,
            force=force,
            chunking=chunking,
            ahead=ahead,
        )
        _publish(lib, key, outcome, stages, request)
        return outcome

    def store(key: str) -> tuple[Outcome, float]:
        started = time.perf_counter()
        try:
            return _with_retries(partial(process_and_publish, key), context), round(time.perf_counter() - started, 3)
        finally:
            if ahead is not None:
                ahead.release(key)

    # Parsed ahead, documents come back as their parses finish (largest started first).
    order = ahead.in_completion_order(keys) if ahead is not None else iter(keys)
    width = store_workers() if len(keys) > 1 else 1
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
                    running[pool.submit(store, key)] = key
                    continue
            if not running:
                break
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
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
                    failures.append(failure)
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
                outcomes.append(outcome)
                yield from _materializations(context, key, stages, outcome, elapsed, ahead)
    if bug is not None:
        raise bug


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
            stage_metadata(stage, outcome, values)
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
