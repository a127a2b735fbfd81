"""The `ud` command: decode local files, manage the librarian, inspect lineage."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ud_assets.decoding.model import SECTION_STRATEGIES, STRATEGIES


def add_decoder_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strategy", choices=STRATEGIES, default="auto")
    parser.add_argument("--languages", default="eng", help="comma-separated OCR language codes")
    parser.add_argument("--section-strategy", choices=SECTION_STRATEGIES, default="whole-document")
    parser.add_argument("--section-element-count", type=int, default=20)
    parser.add_argument("--section-max-size", type=int, default=4000)
    parser.add_argument("--section-within-pages", action="store_true")


def decoder_config(args: argparse.Namespace):
    from ud_assets.decoding.model import DecoderConfig

    return DecoderConfig.from_options(args)


def cmd_decode(args: argparse.Namespace) -> int:
    from ud_assets.decoding.decoder import decode, result_to_json
    from ud_assets.decoding.model import ConfigError, DecodeError
    from ud_assets.decoding.serialize import to_nquads

    try:
        config = decoder_config(args)
    except ConfigError as exc:
        print(f"ud decode: {exc}", file=sys.stderr)
        return 2
    outputs, failures = [], 0
    for path in args.files:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
            result = decode(data, document_id=os.path.basename(path), config=config, filename=path,
                            title=os.path.basename(path))
        except (OSError, DecodeError, ConfigError) as exc:
            failures += 1
            print(f"ud decode: {path}: {exc}", file=sys.stderr)
            continue
        except Exception as exc:  # noqa: BLE001 - one bad file never stops the others
            failures += 1
            print(f"ud decode: {path}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                  file=sys.stderr)
            continue
        if args.format == "nquads":
            sys.stdout.write(to_nquads(result.triples))
        else:
            outputs.append(result_to_json(result))
    if args.format == "json" and outputs:
        json.dump(outputs[0] if len(args.files) == 1 else outputs, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    return 1 if failures else 0


def _with_librarian(action):
    """Run action(librarian) against the configured librarian; one-line errors, no traceback."""
    from resources.model import LibrarianError
    from resources.settings import open_librarian
    from ud_assets.lineage import LineageNotFound

    try:
        with open_librarian() as librarian:
            return action(librarian)
    except (LibrarianError, LineageNotFound) as exc:
        print(f"ud: {exc}", file=sys.stderr)
        return 1


def cmd_lineage(args: argparse.Namespace) -> int:
    from ud_assets.lineage import format_tree, lineage

    def show(librarian) -> int:
        result = lineage(librarian.triples, args.id, librarian.collection, depth=args.depth)
        print(json.dumps(result, indent=1, ensure_ascii=False) if args.json else format_tree(result))
        return 0

    return _with_librarian(show)


def cmd_export_provenance(args: argparse.Namespace) -> int:
    from ud_assets.decoding.provenance import Triple
    from ud_assets.decoding.serialize import serialize
    from ud_assets.lineage import document_quads

    def export(librarian) -> int:
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
    def show(librarian) -> int:
        failures = librarian.list_failures()
        if args.json:
            print(json.dumps([{**f.__dict__, "time": f.time.isoformat()} for f in failures], indent=1))
            return 0
        for f in failures:
            kind = "transient" if f.transient else "deterministic"
            print(f"{f.document_id}\t{f.time:%Y-%m-%d %H:%M:%S}\tunstructured {f.unstructured_version}\t{kind}"
                  f"\tx{f.attempts}\t{f.error}")
        if not failures:
            print("no failures", file=sys.stderr)
        return 0

    return _with_librarian(show)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ud", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    decode = commands.add_parser("decode", help="decode local files and print sections, images and triples")
    decode.add_argument("files", nargs="+", metavar="FILE")
    add_decoder_options(decode)
    decode.add_argument("--format", choices=("json", "nquads"), default="json")
    decode.set_defaults(handler=cmd_decode)

    trace = commands.add_parser("lineage", help="the chain of a document, page, section, image or chunk")
    trace.add_argument("id", help="a librarian id or an entity IRI (urn:page:..., urn:chunk:...)")
    trace.add_argument("--json", action="store_true")
    trace.add_argument("--depth", type=int, default=3, help="levels of children to show")
    trace.set_defaults(handler=cmd_lineage)

    export = commands.add_parser("export-provenance", help="a document's provenance as RDF (rdflib)")
    export.add_argument("id", help="the source document's librarian id")
    export.add_argument("--format", choices=("nquads", "trig", "turtle"), default="nquads")
    export.add_argument("--output", "-o", help="file to write (default: standard output)")
    export.set_defaults(handler=cmd_export_provenance)

    failures = commands.add_parser("failures", help="documents that could not be decoded, when, with which version, why")
    failures.add_argument("--json", action="store_true")
    failures.set_defaults(handler=cmd_failures)

    try:
        from ud_assets.cli_librarian import add_librarian_parser
    except ImportError:  # the librarian commands are optional while the package is being built
        pass
    else:
        add_librarian_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
