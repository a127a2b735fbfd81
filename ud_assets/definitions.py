"""The single entry point: every asset, check, job, sensor, schedule and resource of ud.

The Dagster layer lives in ud_assets/defs/ (one module per kind of definition); the stages it runs
live in ud_assets/processing/ and the pure decoder in ud_assets/decoding/. Loading this module
must stay cheap: it never imports unstructured or torch (the decoding step imports them when it runs).
"""

import warnings

import dagster as dg

from ud_assets.defs.assets import universal_decoder
from ud_assets.defs.importing import import_documents
from ud_assets.defs.jobs import decode_documents
from ud_assets.defs.resources import LibrarianResource
from ud_assets.defs.schedules import reprocess_after_upgrade
from ud_assets.defs.sensors import librarian_uploads
from ud_assets.defs.verification import verify_library_job, verify_library_schedule

with warnings.catch_warnings():
    # Code references are a beta API of Dagster: useful in the UI, not worth a warning per process.
    warnings.simplefilter("ignore", dg.BetaWarning)
    assets = dg.with_source_code_references([universal_decoder])

defs = dg.Definitions(
    assets=assets,  # with code references: the asset pages link to the function that computes them
    jobs=[decode_documents, verify_library_job, import_documents],
    sensors=[librarian_uploads],
    schedules=[reprocess_after_upgrade, verify_library_schedule],
    resources={"librarian": LibrarianResource()},
    executor=dg.in_process_executor,
)
