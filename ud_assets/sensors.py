"""Automation: a sensor on new librarian uploads and a schedule that re-decodes after upgrades."""

import hashlib
import json
import os
from collections.abc import Iterable

import dagster as dg

from resources.dagster_resources import LibrarianResource
from ud_assets.assets import batch_size
from ud_assets.jobs import decode_documents
from ud_assets.partitions import documents_partitions, partition_key_problem

MAX_EVENTS_PER_TICK = 5000  # bounds one tick's work whatever the backlog
PARTITION_REQUEST_CHUNK = 1000
RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"


def _chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _digest(parts: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def plan_uploads(events, has_partition, batch: int):
    """Partition requests and run requests for a slice of the upload log (pure; tested directly).

    The last event of each id wins. New documents become partitions, added in log order in
    chunks of at most 1,000 keys, and are decoded in batch runs over contiguous ranges of those
    new keys. Documents whose partition already exists (re-uploaded under the same id) run on
    their own. Run keys carry the content hashes, so a repeated tick never runs twice and a
    re-upload with new content runs again.
    """
    latest: dict[str, object] = {}
    for event in events:
        latest.pop(event.id, None)
        latest[event.id] = event
    new, existing, removed, refused = [], [], [], []
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
    partition_requests = [documents_partitions.build_add_request([e.id for e in chunk])
                          for chunk in _chunks(new, PARTITION_REQUEST_CHUNK)]
    if removed:
        partition_requests.append(documents_partitions.build_delete_request(removed))
    runs = []
    for chunk in _chunks(new, batch):
        key = "upload:" + _digest(f"{e.id}@{e.sha256}" for e in chunk)
        if len(chunk) == 1:
            runs.append(dg.RunRequest(run_key=key, partition_key=chunk[0].id))
        else:
            runs.append(dg.RunRequest(run_key=key, tags={RANGE_START: chunk[0].id, RANGE_END: chunk[-1].id}))
    for event in existing:
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
        return instance.has_dynamic_partition(documents_partitions.name, key)

    partition_requests, runs, refused = plan_uploads(events, has_partition, batch_size())
    for message in refused:
        context.log.warning(f"upload not decoded: document id {message}")
    return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=partition_requests, cursor=events[-1].cursor)


def current_target(config_json: str) -> tuple[str, str, str]:
    from importlib.metadata import version

    from ud_assets.decoding.model import DECODER_LOGIC_VERSION

    return version("unstructured"), DECODER_LOGIC_VERSION, config_json


def stale_documents(generations, target: tuple[str, str, str]) -> list[str]:
    """Ids of documents whose current generation was made by another version or config."""
    unstructured, decoder, config_json = target
    return [
        g.document_id
        for g in generations
        if (g.unstructured_version, g.decoder_version, g.config_json) != (unstructured, decoder, config_json)
    ]


def plan_reprocessing(stale: list[str], partition_order: list[str], target: tuple[str, str, str], batch: int):
    """Batch runs over contiguous partition ranges covering the stale documents.

    A range may include documents that are already current: the decoder skips them cheaply
    (same generation), so ranges keep runs few without re-doing work.
    """
    position = {key: i for i, key in enumerate(partition_order)}
    ordered = sorted((k for k in stale if k in position), key=position.__getitem__)
    tag = _digest(target)
    runs = []
    for chunk in _chunks(ordered, batch):
        run_key = f"reprocess:{target[0]}:{target[1]}:{tag}:{chunk[0]}:{chunk[-1]}"
        tags = {"ud/target-unstructured": target[0], "ud/reason": "upgrade"}
        if len(chunk) == 1:
            runs.append(dg.RunRequest(run_key=run_key, partition_key=chunk[0], tags=tags))
        else:
            runs.append(dg.RunRequest(run_key=run_key, tags={**tags, RANGE_START: chunk[0], RANGE_END: chunk[-1]}))
    return runs


def _default_config_json() -> str:
    from ud_assets.config import DecoderOptions

    return json.dumps(DecoderOptions().to_decoder_config().as_dict(), sort_keys=True)


@dg.schedule(
    job=decode_documents,
    cron_schedule=os.environ.get("UD_REPROCESS_CRON", "0 2 * * *"),
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Re-decodes, in batches, the documents decoded by another unstructured version, decoder "
    "version or decoder config than the current ones (e.g. after an upgrade).",
)
def reprocess_after_upgrade(context: dg.ScheduleEvaluationContext, librarian: LibrarianResource):
    lib = librarian.get()
    target = current_target(_default_config_json())
    stale = stale_documents(lib.list_generations(), target)
    if not stale:
        return dg.SkipReason(f"every document is current (unstructured {target[0]})")
    order = documents_partitions.get_partition_keys(dynamic_partitions_store=context.instance)
    return plan_reprocessing(stale, order, target, batch_size())
