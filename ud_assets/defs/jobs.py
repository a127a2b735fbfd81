"""The job that decodes documents: the whole asset graph, in one process per run."""

import dagster as dg

from ud_assets.defs.assets import DECODE_RUN_TAG, universal_decoder

decode_documents = dg.define_asset_job(
    "decode_documents",
    selection=dg.AssetSelection.assets(universal_decoder),
    # One step does all six assets; running it in the run worker saves a process per run.
    executor_def=dg.in_process_executor,
    tags={DECODE_RUN_TAG: "true"},
    description="Decode librarian documents into pages/sections, images and provenance triples.",
)
