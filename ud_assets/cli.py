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

    return DecoderConfig(
        strategy=args.strategy,
        languages=tuple(args.languages.split(",")),
        section_strategy=args.section_strategy,
        section_element_count=args.section_element_count,
        section_max_size=args.section_max_size,
        section_within_pages=args.section_within_pages,
    )


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ud", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    decode = commands.add_parser("decode", help="decode local files and print sections, images and triples")
    decode.add_argument("files", nargs="+", metavar="FILE")
    add_decoder_options(decode)
    decode.add_argument("--format", choices=("json", "nquads"), default="json")
    decode.set_defaults(handler=cmd_decode)

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
