"""`ud librarian add|import|list|show|rm`: manage the documents in the librarian.

The backend comes from the environment (resources.settings): the embedded one under UD_HOME,
or S3 + Cassandra when CASSANDRA_HOST is set. Failures print one line on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid

PROG = "ud librarian"


def add_librarian_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `librarian` command (with add, import, list, show, rm) to an argparse subparsers object."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", help="workspace (default: UD_WORKSPACE or 'default')")

    parser = subparsers.add_parser("librarian", help="add, list, show and remove documents in the librarian")
    commands = parser.add_subparsers(
        dest="librarian_command", required=True, metavar="{init,add,import,list,show,rm,process,unprocess}"
    )

    init = commands.add_parser(
        "init",
        parents=[common],
        help="create the librarian's storage if missing (bucket, keyspaces, tables); prints where it is",
        description="Create what the librarian stores into, if missing: the bucket, the librarian keyspace and "
        "the workspace's triple keyspace with their tables (or the embedded librarian's files). Every other "
        "command does this on first use; a deployment runs it once before its processes start, so that they "
        "do not all change the schema of a new Cassandra cluster at once.",
    )
    init.set_defaults(handler=cmd_init)

    add = commands.add_parser("add", parents=[common], help="store a file as a source document; prints its id")
    add.add_argument("file", metavar="FILE")
    add.add_argument("--id", help="document id (default: a new uuid4)")
    add.add_argument("--title", default=None, help="title (default: the file name)")
    add.add_argument("--kind", help="MIME type (default: detected from the bytes and the file name)")
    add.add_argument("--comments", default="")
    add.add_argument("--tag", action="append", default=[], dest="tags", help="a tag (repeatable)")
    add.add_argument(
        "--partition",
        action="store_true",
        help="also add the document's partition to the Dagster instance at DAGSTER_HOME now, so that "
        "`dagster asset materialize --partition ID` can run at once (else the sensor adds it within 30 s)",
    )
    add.set_defaults(handler=cmd_add)

    imp = commands.add_parser(
        "import",
        parents=[common],
        help="store every file of folders or S3 prefixes (resumable; duplicate bytes skipped)",
        description="Import the files below each SOURCE (a folder, recursively, or s3://bucket/prefix on the "
        "endpoint of AWS_ENDPOINT_URL_S3). A file's id is its path relative to SOURCE ('/'-separated), after "
        "--id-prefix; its kind is detected as `add` detects it. Files whose bytes (sha256) the librarian or the "
        "run already holds are skipped and reported, ids already imported with the same bytes count as present, "
        "so an interrupted import is resumed by running it again. The upload sensor decodes what was added.",
    )
    imp.add_argument("sources", nargs="+", metavar="SOURCE", help="a folder or s3://bucket/prefix")
    imp.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="only files whose path below SOURCE or name matches (repeatable; '*' also crosses '/')",
    )
    imp.add_argument(
        "--exclude", action="append", default=[], metavar="GLOB", help="skip matching files; wins over --include"
    )
    imp.add_argument("--id-prefix", default="", help="put before every id (e.g. 'archive-2024/')")
    imp.add_argument("--tag", action="append", default=[], dest="tags", help="a tag for every document (repeatable)")
    imp.add_argument("--report", metavar="FILE", help="write every file's outcome to FILE (JSON lines)")
    imp.set_defaults(handler=cmd_import)

    lst = commands.add_parser("list", parents=[common], help="list source documents (in id order, page by page)")
    lst.add_argument("--json", action="store_true", help="one JSON array of metadata")
    lst.add_argument("--page-size", type=int, default=1000, help="rows read from storage at a time (default 1000)")
    lst.add_argument(
        "--children", action="store_true", help="include child documents (pages, sections, images, chunks)"
    )
    lst.set_defaults(handler=cmd_list)

    show = commands.add_parser("show", parents=[common], help="show a document's metadata and children")
    show.add_argument("id", metavar="ID")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=cmd_show)

    rm = commands.add_parser("rm", parents=[common], help="remove a document, its children and their triples")
    rm.add_argument("id", metavar="ID")
    rm.set_defaults(handler=cmd_rm)

    process = commands.add_parser(
        "process",
        parents=[common],
        help="a processing request, as TrustGraph's add_processing: the document's triples also in COLLECTION",
    )
    process.add_argument("id", metavar="ID", help="the document")
    process.add_argument("--collection", required=True, help="where the document's triples go (besides UD_COLLECTION)")
    process.add_argument("--flow", default="", help="the TrustGraph flow named by the request (recorded only)")
    process.add_argument("--request-id", help="the request's id (default: a new uuid4); prints it")
    process.set_defaults(handler=cmd_process)

    unprocess = commands.add_parser(
        "unprocess", parents=[common], help="remove a processing request: its collection's copy goes with it"
    )
    unprocess.add_argument("request_id", metavar="REQUEST_ID")
    unprocess.set_defaults(handler=cmd_unprocess)
    return parser


def _fail(message: str) -> int:
    line = " ".join(str(message).split())  # one line, whatever the exception carried
    print(f"{PROG}: error: {line}", file=sys.stderr)
    return 1


def _run(args: argparse.Namespace, action) -> int:
    from resources.model import LibrarianError
    from resources.settings import load_settings, open_librarian

    try:
        librarian = open_librarian(load_settings(workspace=args.workspace))
    except LibrarianError as e:
        return _fail(str(e))
    try:
        return action(librarian)
    except LibrarianError as e:
        return _fail(str(e))
    except OSError as e:
        return _fail(f"{e.filename or ''}: {e.strerror or e}" if e.filename else str(e))
    except KeyboardInterrupt:
        return _fail("interrupted")
    finally:
        try:
            librarian.close()
        except Exception:
            pass


def _detect_kind(path: str) -> str:
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    from ud_assets.decoding.detect import detect_mime

    return detect_mime(head, filename=os.path.basename(path))


def cmd_init(args: argparse.Namespace) -> int:
    def action(librarian) -> int:
        print(f"librarian ready: workspace {librarian.workspace!r}, {librarian.description}")
        return 0

    return _run(args, action)


def cmd_add(args: argparse.Namespace) -> int:
    from ud_assets.defs.keys import partition_key_problem

    path = args.file
    if not os.path.isfile(path):
        return _fail(f"{path}: no such file")

    def action(librarian) -> int:
        kind = args.kind or _detect_kind(path)
        doc_id = args.id or str(uuid.uuid4())
        problem = partition_key_problem(doc_id)
        if problem:  # it could be stored, but never decoded: refuse it now, clearly
            return _fail(f"document id {doc_id!r} {problem}; choose another --id")
        title = os.path.basename(path) if args.title is None else args.title
        with open(path, "rb") as f:
            meta = librarian.add_document(doc_id, kind, f, title=title, comments=args.comments, tags=args.tags)
        if args.partition:
            problem = _add_partition(meta.id)
            if problem:
                return _fail(f"{meta.id} is stored, but its partition was not added: {problem}")
        print(meta.id)
        return 0

    return _run(args, action)


def cmd_import(args: argparse.Namespace) -> int:
    from resources.model import LibrarianError
    from ud_assets.processing.importing import (
        ImportProgress,
        ImportSummary,
        Outcome,
        count_entries,
        import_sources,
        open_source,
    )

    try:
        sources = [open_source(spec, args.include, args.exclude) for spec in args.sources]
    except LibrarianError as e:
        return _fail(str(e))

    def action(librarian) -> int:
        bar = sys.stderr.isatty()
        progress = ImportProgress(sys.stderr, bar)
        summary = ImportSummary()
        if bar:  # a bar needs its total: one listing pass first
            summary.total = count_entries(sources)
        report = open(args.report, "w", encoding="utf-8") if args.report else None

        def on_outcome(o: Outcome) -> None:
            if report is not None:
                report.write(json.dumps(o.__dict__, ensure_ascii=False) + "\n")

        try:
            import_sources(librarian, sources, args.id_prefix, args.tags, on_outcome, progress.update, summary)
        except KeyboardInterrupt:
            progress.done(summary)
            print("\n".join(summary.lines()))
            return _fail("interrupted; run the same command again to import the rest")
        finally:
            if report is not None:
                report.close()
        progress.done(summary)
        print("\n".join(summary.lines()))
        return 0

    return _run(args, action)


def _add_partition(document_id: str) -> str | None:
    """Add the document's dynamic partition to the Dagster instance (what the sensor does); the
    problem when there is no instance to add it to. Dagster is imported only here: it costs about
    1.3 s, which a plain `add` never pays."""
    home = os.environ.get("DAGSTER_HOME")
    if not home or not os.path.isfile(os.path.join(home, "dagster.yaml")):
        return "DAGSTER_HOME names no Dagster instance (a folder with dagster.yaml)"
    import dagster as dg

    from ud_assets.defs.partitions import PARTITIONS_NAME

    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions(PARTITIONS_NAME, [document_id])
    return None


def _meta_json(m) -> dict:
    return {
        "id": m.id,
        "workspace": m.workspace,
        "kind": m.kind,
        "title": m.title,
        "comments": m.comments,
        "time": m.time.isoformat(),
        "size": m.size,
        "sha256": m.sha256,
        "object_id": str(m.object_id),
        "parent_id": m.parent_id,
        "document_type": m.document_type,
        "tags": list(m.tags),
        "metadata": [list(t) for t in m.metadata],
    }


def cmd_list(args: argparse.Namespace) -> int:
    def action(librarian) -> int:
        # Page by page, printed as read: a library of millions never sits in memory at once.
        docs = librarian.iter_documents(include_children=args.children, page=args.page_size)
        if args.json:
            sys.stdout.write("[")
            for index, d in enumerate(docs):
                sys.stdout.write(("," if index else "") + "\n" + json.dumps(_meta_json(d), ensure_ascii=False))
            sys.stdout.write("\n]\n")
            return 0
        for d in docs:
            cols = [d.id, d.document_type, d.kind, str(d.size), d.time.strftime("%Y-%m-%dT%H:%M:%SZ"), d.title]
            if args.children:
                cols.insert(2, d.parent_id or "-")
            print("\t".join(cols))
        return 0

    return _run(args, action)


def cmd_show(args: argparse.Namespace) -> int:
    def action(librarian) -> int:
        meta = librarian.get_metadata(args.id)
        children = librarian.list_children(args.id)
        if args.json:
            out = _meta_json(meta) | {"children": [_meta_json(c) for c in children]}
            json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
            sys.stdout.write("\n")
            return 0
        for key, value in _meta_json(meta).items():
            if key == "metadata":
                value = "; ".join(" ".join(map(str, t)) for t in meta.metadata)
            elif key == "tags":
                value = ", ".join(meta.tags)
            print(f"{key}: {value}")
        print(f"children: {len(children)}")
        for c in children:
            print(f"  {c.id}\t{c.document_type}\t{c.kind}\t{c.size}\t{c.title}")
        return 0

    return _run(args, action)


def cmd_rm(args: argparse.Namespace) -> int:
    def action(librarian) -> int:
        n = librarian.remove_document(args.id)
        print(f"removed {args.id} ({n} document{'s' if n != 1 else ''})")
        return 0

    return _run(args, action)


def cmd_process(args: argparse.Namespace) -> int:
    def action(librarian) -> int:
        request = librarian.add_processing(args.id, args.collection, flow=args.flow, id=args.request_id)
        print(request.id)
        return 0

    return _run(args, action)


def cmd_unprocess(args: argparse.Namespace) -> int:
    def action(librarian) -> int:
        librarian.remove_processing(args.request_id)
        print(f"removed processing request {args.request_id}")
        return 0

    return _run(args, action)
