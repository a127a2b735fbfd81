"""`make screenshots`: the README's pictures of the Dagster UI, taken from a freshly decoded workspace.

Starts the same environment as the browser tests (tests/ui/harness.py: `dagster dev -w
workspace.yaml` on a free port, a temporary instance and embedded librarian), uploads every sample
with `ud librarian add`, lets the sensor decode them, then writes with a headless Chromium:

  asset-graph.png      the asset graph (document → elements → sections → images → provenance_triples, chunks)
  partition-page.png   the `sections` partition of a PDF (samples/report.pdf) with its metadata

    python scripts/screenshots.py [--out docs/screenshots] [--pdf report.pdf]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.ui.harness import SAMPLES, dagster_dev, launch_browser  # noqa: E402
from tests.ui.pages import open_partition, partition_state  # noqa: E402

DECODE_TIMEOUT = 600
VIEWPORT = {"width": 1600, "height": 900}


def asset_graph(page, out: Path) -> None:
    page.goto("/asset-groups/universal_decoder")
    graph_node = page.get_by_text("provenance_triples", exact=True).last
    graph_node.wait_for()
    page.get_by_role("button", name="Hide navigation").click()  # the left-hand menu: more room for the graph
    page.wait_for_timeout(1500)  # the graph re-fits its zoom to the new width
    page.screenshot(path=str(out))


def partition_page(page, pdf: str, out: Path) -> None:
    open_partition(page, "sections", pdf)
    state = partition_state(page)
    if state != "materialized":
        raise SystemExit(f"sections/{pdf} shows {state!r}, not materialized")
    page.screenshot(path=str(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--pdf", default="report.pdf", help="the sample whose sections partition is shown")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    samples = sorted(p for p in SAMPLES.iterdir() if p.is_file() and not p.name.startswith("."))

    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ud-screenshots-") as base, dagster_dev(Path(base)) as server:
        print(f"dagster dev on {server.url} ({time.monotonic() - started:.0f}s)")
        for path in samples:
            server.upload(path)
        print(f"uploaded {len(samples)} samples; the sensor decodes them")
        server.wait_partitions("provenance_triples", [p.name for p in samples], DECODE_TIMEOUT)
        print(f"decoded ({time.monotonic() - started:.0f}s)")
        with sync_playwright() as playwright:
            browser = launch_browser(playwright)
            try:
                page = browser.new_page(base_url=server.url, viewport=VIEWPORT)
                asset_graph(page, args.out / "asset-graph.png")
                partition_page(page, args.pdf, args.out / "partition-page.png")
            finally:
                browser.close()
    for name in ("asset-graph.png", "partition-page.png"):
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
