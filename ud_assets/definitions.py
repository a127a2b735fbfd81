"""The single entry point: every asset, job, sensor, schedule and resource of ud.

Loading this module must stay cheap: it never imports unstructured or torch (the decoding step
imports them when it runs).
"""

import dagster as dg

from resources.dagster_resources import LibrarianResource
from ud_assets.assets import universal_decoder
from ud_assets.jobs import decode_documents
from ud_assets.sensors import librarian_uploads, reprocess_after_upgrade

defs = dg.Definitions(
    assets=[universal_decoder],
    jobs=[decode_documents],
    sensors=[librarian_uploads],
    schedules=[reprocess_after_upgrade],
    resources={"librarian": LibrarianResource()},
    executor=dg.in_process_executor,
)
