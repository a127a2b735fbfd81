"""The sensor on the librarian: new documents become partitions and are decoded in batches,
removed ones lose their partition and everything ud stored for them.

Two ways in, because ud is not the librarian's only writer:

- ud's own upload log (`uploads_since`): every document `ud librarian add`, the import or another
  ud process adds or removes, read from the cursor on. The fast path: a tick costs the new events.
- a sweep of the librarian's document table, one slice per tick (`SWEEP_ROWS` rows, in id order,
  the position kept in the cursor): documents another writer added (TrustGraph's librarian writes
  the row and the bytes, never ud's log) have no generation and no partition, and become new
  partitions; generations whose document row is gone (TrustGraph's `remove_document`) are cleaned
  up. A full sweep of N rows takes N / SWEEP_ROWS ticks: the worst-case delay for a document added
  outside ud (README, "Other writers").
"""

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import dagster as dg

from resources.model import DocumentNotFound, Librarian, Upload
from ud_assets.defs.assets import batch_size
from ud_assets.defs.jobs import decode_documents
from ud_assets.defs.keys import partition_key_problem
from ud_assets.defs.partitions import PARTITIONS_NAME, documents_partitions
from ud_assets.defs.resources import LibrarianResource
from ud_assets.processing.publication import COLLECTION_TAG, PROCESSING_TAG, requests_of, withdraw

MAX_EVENTS_PER_TICK = 5000  # bounds one tick's work whatever the backlog
SWEEP_ROWS = 2000  # librarian rows (sources and children) one read of the sweep takes (~50 ms on Cassandra)
SWEEP_BUDGET_S = 0.3  # how long a tick may go on sweeping (the tick's target is 1 s in all)
MAX_SWEEP_LOOKUPS = 200  # partition lookups (one query each) a tick's sweep may make
MAX_CLEANUPS_PER_TICK = 100
REQUEST_ROWS = 500  # processing requests (and publication records) a tick reads
# documents removed outside ud cleaned up in one tick (the rest in the next sweep)
PARTITION_REQUEST_CHUNK = 1000
RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"
T = TypeVar("T")


def chunks(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def digest(parts: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


PartitionsRequest = dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest


def plan_uploads(
    events: Sequence[Upload],
    has_partition: Callable[[str], bool],
    batch: int,
    decoded: Callable[[str, str], bool] = lambda doc_id, sha256: False,
) -> tuple[list[PartitionsRequest], list[dg.RunRequest], list[str]]:
    """Partition requests and run requests for a slice of the upload log (pure; tested directly).

    The last event of each id wins. New documents become partitions, added in log order in
    chunks of at most 1,000 keys, and are decoded in batch runs over contiguous ranges of those
    new keys. Documents whose partition already exists (re-uploaded under the same id) run on
    their own. Run keys carry the content hashes, so a repeated tick never runs twice and a
    re-upload with new content runs again. A document whose stored generation was decoded from
    these very bytes (decoded(id, sha256)) gets its partition but no run: another process decoded
    it already (`make demo` before `make dev`); the upgrade schedule handles version changes.
    """
    latest: dict[str, Upload] = {}
    for event in events:
        latest.pop(event.id, None)
        latest[event.id] = event
    new: list[Upload] = []
    existing: list[Upload] = []
    removed: list[str] = []
    refused: list[str] = []
    for doc_id, event in latest.items():
        problem = partition_key_problem(doc_id)
        if problem:
            refused.append(f"{doc_id!r} {problem}")
            continue
        if event.event == "removed":
            if has_partition(doc_id):
                removed.append(doc_id)
        elif has_partition(doc_id):
            existing.append(event)
        else:
            new.append(event)
    partition_requests: list[PartitionsRequest] = [
        documents_partitions.build_add_request([e.id for e in chunk]) for chunk in chunks(new, PARTITION_REQUEST_CHUNK)
    ]
    if removed:
        partition_requests.append(documents_partitions.build_delete_request(removed))
    runs: list[dg.RunRequest] = []
    due = [e for e in new if not decoded(e.id, e.sha256)]
    for chunk in chunks(due, batch):
        key = "upload:" + digest(f"{e.id}@{e.sha256}" for e in chunk)
        if len(chunk) == 1:
            runs.append(dg.RunRequest(run_key=key, partition_key=chunk[0].id))
        else:
            runs.append(dg.RunRequest(run_key=key, tags={RANGE_START: chunk[0].id, RANGE_END: chunk[-1].id}))
    for event in existing:
        if decoded(event.id, event.sha256):
            continue
        runs.append(dg.RunRequest(run_key=f"upload:{event.id}@{event.sha256}", partition_key=event.id))
    return partition_requests, runs, refused


@dataclass(frozen=True)
class SensorCursor:
    """Where the sensor is: in ud's upload log, and in the sweep of the document table."""

    log: str | None = None
    sweep: str = ""  # the last document id swept; "" starts a new sweep
    requests: str = ""  # the last processing request id read
    publications: str = ""  # the last document id whose publication record was checked

    @classmethod
    def parse(cls, text: str | None) -> "SensorCursor":
        if not text:
            return cls()
        if not text.startswith("{"):  # a cursor of an earlier version: the upload log's alone
            return cls(log=text)
        data = json.loads(text)
        return cls(
            log=data.get("log"),
            sweep=data.get("sweep", ""),
            requests=data.get("requests", ""),
            publications=data.get("publications", ""),
        )

    def dump(self) -> str:
        return json.dumps(dataclasses.asdict(self))


def plan_sweep(
    sources: Sequence[str],
    generations: Sequence[str],
    has_partition: Callable[[str], bool],
    max_lookups: int | None = None,
) -> tuple[list[str], list[str], str | None]:
    """(new, removed, stopped_after) for one slice of the document table, in id order (pure; tested
    directly): source documents with neither a generation nor a partition (another writer added
    them), and generations whose document is not among the slice's sources (another writer removed
    it). A document without a generation costs a partition lookup: after max_lookups of them the
    slice stops, and stopped_after is the last id it covered (None: the whole slice)."""
    decoded = set(generations)
    new: list[str] = []
    stopped_after: str | None = None
    lookups = 0
    covered: list[str] = []
    for document_id in sources:
        if document_id not in decoded and not partition_key_problem(document_id):
            if max_lookups is not None and lookups >= max_lookups:
                stopped_after = covered[-1] if covered else None
                break
            lookups += 1
            if not has_partition(document_id):
                new.append(document_id)
        covered.append(document_id)
    present = set(covered)
    limit = stopped_after if len(covered) < len(sources) else None
    if len(covered) < len(sources) and not covered:
        return new, [], ""  # not even the first document: nothing covered (max_lookups 0)
    removed = [d for d in generations if d not in present and (limit is None or d <= limit)]
    return new, removed, limit


def sweep_slice(lib: Librarian, after: str) -> tuple[list[str], list[str], str]:
    """Read one slice: the ids of its source documents, the ids of the generations in the same id
    range, and where the next slice starts ("" after the end of the table)."""
    sources, end = lib.source_ids_after(after, SWEEP_ROWS)
    generations: list[str] = []
    cursor = after
    while True:
        page = lib.generation_ids_after(cursor, SWEEP_ROWS)
        inside = [g for g in page if end is None or g <= end]
        generations.extend(inside)
        if len(page) < SWEEP_ROWS or len(inside) < len(page):
            break
        cursor = page[-1]
    return sources, generations, end or ""


def sweep(
    lib: Librarian, start: str, seen: set[str], has_partition: Callable[[str], bool]
) -> tuple[list[Upload], list[str], str]:
    """Slices of the document table from `start`, for up to SWEEP_BUDGET_S (a slice costs
    milliseconds on SQLite, ~0.1 s on Cassandra, so a tick covers many): the documents another
    writer added, the generations whose row another writer removed, and where the next tick goes
    on. At most MAX_SWEEP_LOOKUPS partition lookups in all; the sweep stops early for them."""
    began = time.monotonic()
    found: list[Upload] = []
    removed: list[str] = []
    position = start
    lookups_left = MAX_SWEEP_LOOKUPS
    while True:
        slice_began = time.monotonic()
        swept, generations, after = sweep_slice(lib, position)
        lookups = 0

        def counted(key: str) -> bool:
            nonlocal lookups
            lookups += 1
            return has_partition(key)

        candidates = [i for i in swept if i not in seen]
        new, gone, stopped_after = plan_sweep(candidates, generations, counted, lookups_left)
        lookups_left -= lookups
        for document_id in new:  # rare: read their rows for the run keys
            try:
                meta = lib.get_metadata(document_id)
            except DocumentNotFound:  # removed again since the slice was read
                continue
            found.append(Upload(meta.id, "added", meta.sha256, meta.time, ""))
        removed += [d for d in gone if d not in seen]
        if stopped_after is not None:  # too many undecoded documents to look up at once: resume there
            return found, removed, stopped_after or position
        position = after
        now = time.monotonic()
        # Another slice only if it, taking as long as this one, still ends within the budget.
        if not after or now + (now - slice_began) - began > SWEEP_BUDGET_S or lookups_left <= 0:
            return found, removed, position


@dg.sensor(
    job=decode_documents,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds new librarian documents to the 'documents' partitions and decodes them in batches; "
    "removes the partitions of removed documents. Reads ud's upload log, and sweeps the document table a "
    "slice per tick for what other writers (TrustGraph's librarian) added or removed.",
)
def librarian_uploads(context: dg.SensorEvaluationContext, librarian: LibrarianResource):
    lib = librarian.get()
    cursor = SensorCursor.parse(context.cursor)
    instance = context.instance

    def has_partition(key: str) -> bool:
        return instance.has_dynamic_partition(PARTITIONS_NAME, key)

    def decoded(key: str, sha256: str) -> bool:
        generation = lib.get_generation(key)
        return generation is not None and generation.sha256 == sha256

    events = lib.uploads_since(cursor.log, limit=MAX_EVENTS_PER_TICK)
    partition_requests, runs, refused = plan_uploads(events, has_partition, batch_size(), decoded)
    seen = {e.id for e in events}  # this tick's log already plans them

    found, removed, sweep_next = sweep(lib, cursor.sweep, seen, has_partition)
    new = [e.id for e in found]
    added_requests, added_runs, _ = plan_uploads(found, has_partition, batch_size())
    partition_requests += added_requests
    runs += [replace_run_key(run, "found:") for run in added_runs]
    removed = [d for d in removed if d not in seen][:MAX_CLEANUPS_PER_TICK]
    gone = []
    for document_id in removed:
        rows = lib.clean_up_removed(document_id)
        if lib.get_generation(document_id) is None:  # its row was really gone: cleaned up
            context.log.info(f"{document_id} was removed outside ud: {rows} child rows and its triples cleaned up")
            if has_partition(document_id):
                gone.append(document_id)
    if gone:
        partition_requests.append(documents_partitions.build_delete_request(gone))
    for message in refused:
        context.log.warning(f"upload not decoded: document id {message}")
    if new:
        context.log.info(f"{len(new)} documents added outside ud found by the sweep: {', '.join(new[:5])}...")
    request_runs, request_partitions, requests_next = plan_requests(lib, cursor.requests, has_partition)
    runs += request_runs
    if request_partitions:
        partition_requests.append(documents_partitions.build_add_request(request_partitions))
    publications_next = withdraw_removed_requests(lib, cursor.publications, context.log)
    next_cursor = SensorCursor(
        log=events[-1].cursor if events else cursor.log,
        sweep=sweep_next,
        requests=requests_next,
        publications=publications_next,
    )
    if not (runs or partition_requests):
        return dg.SensorResult(skip_reason=dg.SkipReason("no new uploads"), cursor=next_cursor.dump())
    return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=partition_requests, cursor=next_cursor.dump())


def replace_run_key(run: dg.RunRequest, prefix: str) -> dg.RunRequest:
    """The sweep's runs keyed apart from the log's (the same documents never meet in both)."""
    return run.with_replaced_attrs(run_key=prefix + (run.run_key or "").removeprefix("upload:"))


def plan_requests(
    lib: Librarian, after: str, has_partition: Callable[[str], bool]
) -> tuple[list[dg.RunRequest], list[str], str]:
    """Runs for the processing requests of one slice that are not honoured yet (their document's
    publication record lacks them), the partitions they need, and where the next slice starts.
    A run's key is the request id and the document's content hash: repeated ticks never run it
    twice, a new upload of the document runs it again."""
    requests = lib.processing_after(after, REQUEST_ROWS)
    runs: list[dg.RunRequest] = []
    partitions: list[str] = []
    for request in requests:
        if partition_key_problem(request.document_id):
            continue
        if request.id in requests_of(lib.get_publication(request.document_id)):
            continue
        try:
            meta = lib.get_metadata(request.document_id)
        except DocumentNotFound:  # a request for a document that is not (or no longer) there
            continue
        if not has_partition(request.document_id) and request.document_id not in partitions:
            partitions.append(request.document_id)
        runs.append(
            dg.RunRequest(
                run_key=f"processing:{request.id}@{meta.sha256 or meta.object_id}",
                partition_key=request.document_id,
                tags={PROCESSING_TAG: request.id, COLLECTION_TAG: request.collection},
            )
        )
    return runs, partitions, (requests[-1].id if len(requests) == REQUEST_ROWS else "")


def withdraw_removed_requests(lib: Librarian, after: str, log) -> str:
    """Copies published for requests that no longer exist (TrustGraph's remove_processing) are
    deleted, one slice of publication records per tick; where the next slice starts."""
    records = lib.publications_after(after, REQUEST_ROWS)
    asked = {r.document_id: requests_of(r) for r in records}
    present = lib.processing_present([i for requests in asked.values() for i in requests])
    for document_id, requests in asked.items():
        removed = [i for i in requests if i not in present]
        if removed:
            emptied = withdraw(lib, document_id, removed)
            log.info(
                f"{document_id}: processing requests {removed} removed; its triples left {emptied or 'no'} collection"
            )
    return records[-1].document_id if len(records) == REQUEST_ROWS else ""
