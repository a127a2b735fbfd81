"""`ud decode FILE...`: decode local files without a librarian and print sections, images and triples."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ud_assets.decoding.model import SECTION_STRATEGIES, STRATEGIES, DecoderConfig


def add_decoder_options(parser: argparse.ArgumentParser) -> None:
    defaults = DecoderConfig()  # the one source of defaults, shared with the Dagster run config
    parser.add_argument("--strategy", choices=STRATEGIES, default=defaults.strategy)
    parser.add_argument("--languages", default=",".join(defaults.languages), help="comma-separated OCR language codes")
    parser.add_argument("--section-strategy", choices=SECTION_STRATEGIES, default=defaults.section_strategy)
    parser.add_argument("--section-element-count", type=int, default=defaults.section_element_count)
    parser.add_argument("--section-max-size", type=int, default=defaults.section_max_size)
    parser.add_argument("--section-within-pages", action="store_true", default=defaults.section_within_pages)


def decoder_config(args: argparse.Namespace) -> DecoderConfig:
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
            result = decode(
                data, document_id=os.path.basename(path), config=config, filename=path, title=os.path.basename(path)
            )
        except (OSError, DecodeError, ConfigError) as exc:
            failures += 1
            print(f"ud decode: {path}: {exc}", file=sys.stderr)
            continue
        except Exception:  # the decoder turns every fault of the document into a DecodeError: this is ours
            print(f"ud decode: {path}: failed in ud's own code, not by the document's fault:", file=sys.stderr)
            raise
        if args.format == "nquads":
            sys.stdout.write(to_nquads(result.triples))
        else:
            outputs.append(result_to_json(result))
    if args.format == "json" and outputs:
        json.dump(outputs[0] if len(args.files) == 1 else outputs, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    return 1 if failures else 0
