"""A scheduled check that the library is whole: every decoded document's rows, objects and triples.

It runs `processing.verify` over the library page by page (bounded memory) and fails visibly,
with a table of the incomplete documents, when anything is missing; `ud verify --repair` (or a
forced materialization of those partitions) rewrites them.
"""

import os

import dagster as dg

from ud_assets.defs.metadata import failing_documents_table
from ud_assets.defs.resources import LibrarianResource


@dg.op(description="Verify every decoded document's generation: rows, objects and triples.")
def verify_library(context: dg.OpExecutionContext, librarian: LibrarianResource) -> dg.Output[int]:
    from ud_assets.processing.verify import INCOMPLETE, OK, generations, verify

    lib = librarian.get()
    checked, incomplete = 0, []
    for generation in generations(lib):
        result = verify(lib, generation)
        checked += 1
        if result.status == INCOMPLETE:
            incomplete.append((result.document_id, "; ".join(result.problems)))
        if checked % 1000 == 0:
            context.log.info(f"{checked} documents verified, {len(incomplete)} incomplete")
    metadata = {"documents_checked": checked, "documents_incomplete": len(incomplete)}
    if incomplete:
        raise dg.Failure(
            description=f"{len(incomplete)} of {checked} documents are incomplete; run `ud verify --repair` "
            f"or materialize them with force: " + ", ".join(doc for doc, _ in incomplete[:20]),
            metadata={**metadata, "incomplete_documents": failing_documents_table(incomplete)},
            allow_retries=False,
        )
    context.log.info(f"all {checked} documents complete ({OK})")
    return dg.Output(checked, metadata=metadata)


@dg.job(description="Check that every decoded document is whole in the librarian (ud verify, scheduled).")
def verify_library_job() -> None:
    verify_library()


verify_library_schedule = dg.ScheduleDefinition(
    name="verify_library_weekly",
    job=verify_library_job,
    cron_schedule=os.environ.get("UD_VERIFY_CRON", "0 4 * * 0"),
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Weekly: fails visibly, naming the documents, when any generation has rows, objects or "
    "triples missing.",
)
