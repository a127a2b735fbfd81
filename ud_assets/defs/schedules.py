"""The schedule that re-decodes documents after an upgrade of unstructured, the decoder or its options."""

import json
import os
from collections.abc import Sequence

import dagster as dg

from ud_assets.defs.assets import batch_size
from ud_assets.defs.jobs import decode_documents
from ud_assets.defs.partitions import documents_partitions
from ud_assets.defs.resources import LibrarianResource
from ud_assets.defs.sensors import RANGE_END, RANGE_START, chunks, digest


def current_target(config_json: str) -> tuple[str, str, str]:
    """(unstructured's version, every decoder logic version as one label, the options): what a
    current generation was decoded with. The label names each format family's version above its
    first (ud_assets/decoding/formats/__init__.py), so a family's bump makes new run keys."""
    from importlib.metadata import version

    from ud_assets.decoding import formats

    return version("unstructured"), formats.versions_label(), config_json


GENERATIONS_PAGE = 5000


def stale_documents(generations, target: tuple[str, str, str]) -> list[str]:
    """Ids of documents whose current generation was made by another unstructured version or
    config, or by another version of the shared logic or of the document's own format family
    (a family's bump re-decodes that family's documents only)."""
    from ud_assets.decoding import formats

    unstructured, decoder, config_json = target
    return [
        g.document_id
        for g in generations
        if (g.unstructured_version, g.config_json) != (unstructured, config_json)
        or not formats.is_current(g.decoder_version, decoder)
    ]


def stale_in_library(lib, target: tuple[str, str, str], page: int = GENERATIONS_PAGE) -> list[str]:
    """The stale documents of the whole library, read page by page: only their ids are kept, so a
    library of millions is planned in the memory of its stale ids, not of its generation records."""
    stale: list[str] = []
    after = ""
    while True:
        generations = lib.generations_after(after, page)
        stale += stale_documents(generations, target)
        if len(generations) < page:
            return stale
        after = generations[-1].document_id


def plan_reprocessing(stale: list[str], partition_order: Sequence[str], target: tuple[str, str, str], batch: int):
    """Batch runs over contiguous partition ranges covering the stale documents.

    A range may include documents that are already current: the decoder skips them cheaply
    (same generation), so ranges keep runs few without re-doing work.
    """
    # One pass over the partitions in their order, picking the stale ones: no index of the whole
    # library beside the two lists it is given (a million documents: tens of MB, not hundreds).
    due = set(stale)
    ordered = [key for key in partition_order if key in due]
    del due
    tag = digest(target)
    runs = []
    for chunk in chunks(ordered, batch):
        run_key = f"reprocess:{target[0]}:{target[1]}:{tag}:{chunk[0]}:{chunk[-1]}"
        tags = {"ud/target-unstructured": target[0], "ud/reason": "upgrade"}
        if len(chunk) == 1:
            runs.append(dg.RunRequest(run_key=run_key, partition_key=chunk[0], tags=tags))
        else:
            runs.append(dg.RunRequest(run_key=run_key, tags={**tags, RANGE_START: chunk[0], RANGE_END: chunk[-1]}))
    return runs


def _default_config_json() -> str:
    from ud_assets.defs.config import DecoderOptions

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
    stale = stale_in_library(lib, target)
    if not stale:
        return dg.SkipReason(f"every document is current (unstructured {target[0]})")
    order = documents_partitions.get_partition_keys(dynamic_partitions_store=context.instance)
    return plan_reprocessing(stale, order, target, batch_size())
