"""`ud parity DIR`: bare unstructured and the decoder side by side on every file of a folder."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict


def add_parity_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parity = commands.add_parser(
        "parity",
        help="compare bare unstructured partition(strategy='fast') and the decoder on every file of DIR",
        description="Prints a table (file, unstructured, ud, verdict, differences) and a one-line summary; "
        "exits 1 when the decoder fails a file unstructured decodes, or the element texts differ "
        "without a documented improvement (ud_assets/parity.py, IMPROVEMENTS).",
    )
    parity.add_argument("folder", metavar="DIR")
    parity.add_argument("--json", action="store_true", help="the rows as JSON instead of the table")
    parity.set_defaults(handler=cmd_parity)


def cmd_parity(args: argparse.Namespace) -> int:
    from ud_assets import parity

    if not os.path.isdir(args.folder):
        print(f"ud parity: {args.folder}: not a folder", file=sys.stderr)
        return 2

    def progress(row: parity.Row) -> None:
        print(f"  {row.file}: {row.improvement or row.verdict}", file=sys.stderr, flush=True)

    rows = parity.run(args.folder, progress=progress)
    if args.json:
        json.dump([asdict(row) for row in rows], sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    else:
        print(parity.table(rows))
        print()
        print("improvements:")
        print(parity.improvements_legend())
        print()
    out = sys.stderr if args.json else sys.stdout
    print(parity.offsets_line(rows), file=out)
    print(parity.summary(rows), file=out)
    return 1 if any(row.regression for row in rows) else 0
