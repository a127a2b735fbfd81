"""formats/pdf.py's split: a large PDF's page ranges, parsed apart and merged back (the pure parts)."""

import pytest

from tests import docgen
from ud_assets.decoding import detect
from ud_assets.decoding.formats.pdf import (
    MIN_PAGES_PER_PART,
    PdfPlan,
    merge_parts,
    page_ranges,
    partition_pages,
    plan,
)
from ud_assets.decoding.model import DecoderConfig
from ud_assets.decoding.partitioning import PARSER

CONFIG = DecoderConfig()
FAST = PdfPlan("fast", [], 36)


@pytest.fixture(scope="module")
def long_pdf() -> bytes:
    return docgen.long_pdf()


@pytest.mark.parametrize(
    ("pages", "workers", "expected"),
    [
        (2 * MIN_PAGES_PER_PART - 1, 2, []),  # too few pages for two ranges
        (2 * MIN_PAGES_PER_PART, 1, []),  # one worker: nothing runs side by side
        (2 * MIN_PAGES_PER_PART, 2, [range(0, 16), range(16, 32)]),
        (301, 2, [range(0, 150), range(150, 301)]),
        (50, 3, [range(0, 17), range(17, 33), range(33, 50)]),
        (40, 8, [range(0, 20), range(20, 40)]),  # never a range under MIN_PAGES_PER_PART
    ],
)
def test_page_ranges_cover_every_page_once_in_order(pages, workers, expected):
    ranges = page_ranges(PdfPlan("fast", [], pages), CONFIG, workers)
    assert ranges == expected
    assert [p for r in ranges for p in r] == (list(range(pages)) if ranges else [])
    assert all(len(r) >= MIN_PAGES_PER_PART for r in ranges)


def test_only_the_page_by_page_fast_strategy_is_split():
    assert page_ranges(PdfPlan("ocr_only", [], 300), CONFIG, 2) == []
    assert page_ranges(PdfPlan("hi_res", [], 300), CONFIG, 2) == []
    # Automatic language detection reads the whole document's text.
    assert page_ranges(PdfPlan("fast", [], 300), DecoderConfig(languages=("auto",)), 2) == []
    assert page_ranges(PdfPlan("fast", [], 0), CONFIG, 2) == []  # unreadable page tree


def test_plan_reads_strategy_and_page_count(long_pdf):
    made = plan(long_pdf, detect.PDF, CONFIG)
    assert (made.strategy, made.pages) == ("fast", docgen.LONG_PDF_PAGES)
    assert made.notes == ["strategy auto ran as fast"]
    assert plan(b"%PDF-1.7\n" + b"\x00garbage" * 100, detect.PDF, DecoderConfig(strategy="fast")).pages == 0


def test_a_range_is_numbered_as_in_the_whole_document(long_pdf):
    part = partition_pages(PARSER, long_pdf, detect.PDF, CONFIG, None, FAST, range(18, 36))
    assert {e.page_number for e in part.elements} == set(range(19, 37))
    assert any("Page 19 paragraph 0" in e.text for e in part.elements if e.page_number == 19)
    assert {i.page_number for i in part.images} == {20, 25, 30, 35}  # its own pictures only


def test_merge_links_text_to_a_heading_in_the_previous_range(long_pdf):
    ranges = [range(0, 18), range(18, 36)]
    parts = [partition_pages(PARSER, long_pdf, detect.PDF, CONFIG, None, FAST, r) for r in ranges]
    # Page 19 has no heading: parsed alone, its text has no parent.
    first_of_second = [e for e in parts[1].elements if e.page_number == 19]
    assert first_of_second and all(e.parent_id is None for e in first_of_second)
    merged = merge_parts(parts, PdfPlan("fast", ["note"], 36))
    by_id = {e.element_id: e for e in merged.elements}
    page_19 = [e for e in merged.elements if e.page_number == 19 and e.category != "Image"]
    parents = {by_id[e.parent_id].text for e in page_19 if e.parent_id}
    assert parents == {"Chapter 18 Findings"}
    assert merged.strategy_used == "fast" and merged.notes == ["note"]
    assert sum(1 for e in merged.elements if e.category == "Image") == len(parts[0].images) + len(parts[1].images) == 7
