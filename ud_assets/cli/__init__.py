"""The `ud` command: decode local files, manage the librarian, inspect lineage.

Each command lives in its own module and imports what it needs when it runs, so `ud --help`
stays quick.
"""

from __future__ import annotations

import argparse

from ud_assets.cli.decode import add_decoder_options, cmd_decode
from ud_assets.cli.librarian import add_librarian_parser
from ud_assets.cli.library import cmd_export_provenance, cmd_failures, cmd_lineage
from ud_assets.cli.parity import add_parity_parser
from ud_assets.cli.verify import add_verify_parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ud", description=(__doc__ or "").splitlines()[0])
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

    failures = commands.add_parser(
        "failures", help="documents that could not be decoded, when, with which version, why"
    )
    failures.add_argument("--json", action="store_true")
    failures.set_defaults(handler=cmd_failures)

    add_librarian_parser(commands)
    add_verify_parser(commands)
    add_parity_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)
