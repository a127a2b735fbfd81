"""`import_documents`: `ud librarian import` as a Dagster job, the sources given as run config.

    ops:
      import_files:
        config:
          sources: ["/data/inbox", "s3://bucket/prefix"]
          include: ["*.pdf"]          # optional, like --include / --exclude / --id-prefix / --tag
          id_prefix: "inbox/"

The same import (ud_assets.processing.importing): bytes first, rows in batches through
register_documents, duplicates by sha256 skipped and reported, resumable by launching the run
again. Progress goes to the run's log every LOG_EVERY_S seconds; the summary, and every refused
file up to MAX_LOGGED, at the end. The documents added reach the upload log, so the sensor
`librarian_uploads` decodes them in batches as usual.
"""

import time

import dagster as dg
from pydantic import Field

from ud_assets.defs.resources import LibrarianResource

LOG_EVERY_S = 10.0
MAX_LOGGED = 100  # refused files (and duplicates) named in the log one by one


class ImportConfig(dg.Config):
    sources: list[str] = Field(description="Folders (on the run worker's machine) or s3://bucket/prefix URLs.")
    include: list[str] = Field(default=[], description="Import only files matching one of these globs.")
    exclude: list[str] = Field(default=[], description="Skip files matching one of these globs.")
    id_prefix: str = Field(default="", description="Put before every document id (the path below the source).")
    tags: list[str] = Field(default=[], description="Tags for every document imported.")


@dg.op(description="Import every file of the configured folders and S3 prefixes into the librarian.")
def import_files(context: dg.OpExecutionContext, config: ImportConfig, librarian: LibrarianResource) -> dg.Output[int]:
    from ud_assets.processing.importing import (
        DUPLICATE,
        REFUSED,
        ImportProgress,
        ImportSummary,
        Outcome,
        import_sources,
        open_source,
    )

    if not config.sources:
        raise dg.Failure(description="no sources configured (ops.import_files.config.sources)")
    sources = [open_source(spec, config.include, config.exclude) for spec in config.sources]
    logged = 0
    last = time.monotonic()

    def on_outcome(outcome: Outcome) -> None:
        nonlocal logged
        if outcome.status in (REFUSED, DUPLICATE) and logged < MAX_LOGGED:
            logged += 1
            log = context.log.warning if outcome.status == REFUSED else context.log.info
            log(f"{outcome.status}: {outcome.source}: {outcome.line()}")

    def on_progress(summary: ImportSummary) -> None:
        nonlocal last
        if time.monotonic() - last >= LOG_EVERY_S:
            last = time.monotonic()
            context.log.info(f"import: {ImportProgress.counts(summary)}")

    context.log.info(f"importing {', '.join(s.label for s in sources)}")
    summary = import_sources(librarian.get(), sources, config.id_prefix, config.tags, on_outcome, on_progress)
    for line in summary.lines():
        context.log.info(line)
    return dg.Output(
        summary.added,
        metadata={
            "files": summary.seen,
            "added": summary.added,
            "already_present": summary.present,
            "duplicates": summary.duplicates,
            "refused": summary.refused,
            "bytes_added": summary.bytes_added,
            "files_per_s": round(summary.rate, 1),
        },
    )


@dg.job(
    description="Import folders or S3 prefixes into the librarian (run config: ops.import_files.config.sources); "
    "resumable, duplicates skipped; the upload sensor decodes what it added."
)
def import_documents() -> None:
    import_files()
