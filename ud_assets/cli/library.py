"""`ud lineage`, `ud export-provenance`, `ud failures`: reading what the graph stored in the librarian."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from resources.model import Librarian


def _with_librarian(action: Callable[[Librarian], int]) -> int:
    """Run action(librarian) against the configured librarian; one-line errors, no traceback."""
    from resources.model import LibrarianError
    from resources.settings import open_librarian
    from ud_assets.processing.lineage import LineageNotFound

    try:
        with open_librarian() as librarian:
            return action(librarian)
    except (LibrarianError, LineageNotFound) as exc:
        print(f"ud: {exc}", file=sys.stderr)
        return 1


def cmd_lineage(args: argparse.Namespace) -> int:
    from ud_assets.processing.lineage import format_tree, lineage

    def show(librarian: Librarian) -> int:
        result = lineage(librarian.triples, args.id, librarian.collection, depth=args.depth)
        print(json.dumps(result, indent=1, ensure_ascii=False) if args.json else format_tree(result))
        return 0

    return _with_librarian(show)


def cmd_export_provenance(args: argparse.Namespace) -> int:
    from ud_assets.decoding.provenance import Triple
    from ud_assets.decoding.serialize import serialize
    from ud_assets.processing.lineage import document_quads

    def export(librarian: Librarian) -> int:
        quads = document_quads(librarian.triples, args.id, librarian.collection)
        triples = [Triple(q.s, q.p, q.o.value, "iri" if q.o.is_iri else "literal", q.o.datatype, q.g) for q in quads]
        text = serialize(triples, args.format)
        if args.output:
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(text)
        else:
            sys.stdout.write(text)
        return 0

    return _with_librarian(export)


def cmd_failures(args: argparse.Namespace) -> int:
    def show(librarian: Librarian) -> int:
        failures = librarian.list_failures()
        if args.json:
            print(json.dumps([{**f.__dict__, "time": f.time.isoformat()} for f in failures], indent=1))
            return 0
        for f in failures:
            kind = "transient" if f.transient else "deterministic"
            print(
                f"{f.document_id}\t{f.time:%Y-%m-%d %H:%M:%S}\tunstructured {f.unstructured_version}\t{kind}"
                f"\tx{f.attempts}\t{f.error}"
            )
        if not failures:
            print("no failures", file=sys.stderr)
        return 0

    return _with_librarian(show)
