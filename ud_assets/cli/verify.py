"""`ud verify [--repair] [--workspace W] [DOC_ID...]`: is every decoded document's generation all there?

Prints a row per document that is not complete (every row with --all), then a summary, and exits 1
when something is missing. --repair re-materializes the incomplete documents: through Dagster when
DAGSTER_HOME names an instance (the runs show in the UI), else directly. A document whose only lack
is triples without their object row (Cassandra, written before issue #30: TrustGraph's get_o/get_po
miss them) gets those rows written instead, from its stored triples, without decoding it again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from resources.model import Librarian, LibrarianError
from resources.records import Generation

PROG = "ud verify"


def add_verify_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("verify", help="check every row, object and triple of decoded documents")
    parser.add_argument("ids", nargs="*", metavar="DOC_ID", help="documents to check (default: the whole library)")
    parser.add_argument(
        "--repair",
        action="store_true",
        help="re-materialize the incomplete documents (those lacking only object rows get them written)",
    )
    parser.add_argument("--workspace", help="workspace (default: UD_WORKSPACE or 'default')")
    parser.add_argument("--all", action="store_true", help="print complete documents too")
    parser.set_defaults(handler=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    from resources.settings import load_settings, open_librarian

    try:
        with open_librarian(load_settings(workspace=args.workspace)) as lib:
            return _verify(lib, args)
    except LibrarianError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1


def _verify(lib: Librarian, args: argparse.Namespace) -> int:
    from ud_assets.processing.verify import INCOMPLETE, OK, OUTDATED, generations, verify

    counts = {OK: 0, INCOMPLETE: 0, OUTDATED: 0}
    incomplete: list[str] = []
    object_rows_only: list[str] = []  # repaired by writing the rows, not by decoding again
    print("document\tstatus\trows\tobjects\ttriples\tproblems")
    for generation in generations(lib, args.ids):
        result = verify(lib, generation)
        counts[result.status] += 1
        if result.lacks_only_object_rows:
            object_rows_only.append(result.document_id)
        elif result.status == INCOMPLETE:
            incomplete.append(result.document_id)
        if result.status != OK or args.all:
            print(
                f"{result.document_id}\t{result.status}\t{result.rows}\t{result.objects}\t{result.triples}\t"
                f"{'; '.join(result.problems)}"
            )
    total = sum(counts.values())
    print(
        f"{total} documents verified: {counts[OK]} complete, {counts[INCOMPLETE]} incomplete, "
        f"{counts[OUTDATED]} changed since decoded",
        file=sys.stderr,
    )
    if not incomplete and not object_rows_only:
        return 0
    if not args.repair:
        print(
            f"{PROG}: {len(incomplete) + len(object_rows_only)} incomplete; run `ud verify --repair` to rewrite them",
            file=sys.stderr,
        )
        return 1
    rows = 0
    for doc in object_rows_only:  # each document's stored triples: memory bounded by one document
        rows += verify(lib, lib_generation(lib, doc), write_object_rows=True).object_rows_written
    if object_rows_only:
        print(f"wrote {rows} missing object rows of {len(object_rows_only)} documents", file=sys.stderr)
    repaired = _repair(lib, incomplete) if incomplete else 0
    still = [doc for doc in incomplete if verify(lib, lib_generation(lib, doc)).status != OK]
    if incomplete:
        print(
            f"repaired {repaired - len(still)} of {len(incomplete)}{' through Dagster' if _instance_home() else ''}",
            file=sys.stderr,
        )
    still += [doc for doc in object_rows_only if verify(lib, lib_generation(lib, doc)).status != OK]
    return 1 if still else 0


def lib_generation(lib: Librarian, document_id: str) -> Generation:
    generation = lib.get_generation(document_id)
    if generation is None:
        raise LibrarianError(f"document {document_id!r} lost its generation during the repair")
    return generation


def _instance_home() -> str | None:
    home = os.environ.get("DAGSTER_HOME")
    return home if home and os.path.isfile(os.path.join(home, "dagster.yaml")) else None


def _options(generation: Generation) -> dict[str, object]:
    """The run config that rewrites this very generation: its own recorded options, forced."""
    recorded = json.loads(generation.config_json)
    return {**recorded, "languages": ",".join(recorded.get("languages", ["eng"])), "force": True}


def _repair(lib: Librarian, document_ids: list[str]) -> int:
    """Rewrite each document's generation whole (force, with the options it was made with): a run per
    document in the Dagster instance when there is one, so the UI shows what was repaired; else here."""
    if _instance_home():
        import dagster as dg

        from ud_assets.definitions import defs
        from ud_assets.defs.partitions import PARTITIONS_NAME

        job = defs.resolve_job_def("decode_documents")
        with dg.DagsterInstance.get() as instance:
            instance.add_dynamic_partitions(PARTITIONS_NAME, document_ids)
            done = 0
            for document_id in document_ids:
                config = _options(lib_generation(lib, document_id))
                result = job.execute_in_process(
                    instance=instance,
                    partition_key=document_id,
                    raise_on_error=False,
                    run_config={"ops": {"universal_decoder": {"config": config}}},
                    tags={"ud/reason": "repair"},
                )
                done += result.success
            return done
    from ud_assets.decoding.model import DecoderConfig
    from ud_assets.processing.model import DocumentFailed
    from ud_assets.processing.runner import process_document
    from ud_assets.processing.stages import NAMES

    done = 0
    for document_id in document_ids:
        generation = lib_generation(lib, document_id)
        try:
            process_document(
                lib,
                document_id,
                DecoderConfig(**json.loads(generation.config_json)),
                NAMES,
                version=generation.unstructured_version,
                force=True,
            )
            done += 1
        except DocumentFailed as failure:
            print(f"{PROG}: {failure}", file=sys.stderr)
    return done
