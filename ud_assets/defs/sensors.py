"""The sensor on new librarian uploads: new documents become partitions and are decoded in batches."""

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import dagster as dg

from resources.model import Upload
from ud_assets.defs.assets import batch_size
from ud_assets.defs.jobs import decode_documents
from ud_assets.defs.keys import partition_key_problem
from ud_assets.defs.partitions import PARTITIONS_NAME, documents_partitions
from ud_assets.defs.resources import LibrarianResource

MAX_EVENTS_PER_TICK = 5000  # bounds one tick's work whatever the backlog
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


@dg.sensor(
    job=decode_documents,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds new librarian uploads to the 'documents' partitions and decodes them in batches; "
    "removes the partitions of removed documents.",
)
def librarian_uploads(context: dg.SensorEvaluationContext, librarian: LibrarianResource):
    lib = librarian.get()
    events = lib.uploads_since(context.cursor or None, limit=MAX_EVENTS_PER_TICK)
    if not events:
        return dg.SkipReason("no new uploads")
    instance = context.instance

    def has_partition(key: str) -> bool:
        return instance.has_dynamic_partition(PARTITIONS_NAME, key)

    def decoded(key: str, sha256: str) -> bool:
        generation = lib.get_generation(key)
        return generation is not None and generation.sha256 == sha256

    partition_requests, runs, refused = plan_uploads(events, has_partition, batch_size(), decoded)
    for message in refused:
        context.log.warning(f"upload not decoded: document id {message}")
    return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=partition_requests, cursor=events[-1].cursor)
