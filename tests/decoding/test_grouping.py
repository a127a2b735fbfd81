"""Section strategies: upstream TrustGraph's cases, then the improvements of this project."""

import pytest

from ud_assets.decoding.grouping import (
    by_count,
    by_element_type,
    by_heading,
    by_size,
    heading_groups,
    page_groups,
    section_groups,
    whole_document,
)
from ud_assets.decoding.model import ConfigError, DecoderConfig

from .helpers import Img, N, T, Tab, el


def sizes(groups):
    return [len(g) for g in groups]


# --- upstream semantics ------------------------------------------------------------------------


def test_whole_document_keeps_the_same_objects_in_order():
    elements = [T(), N(), Tab()]
    groups = whole_document(elements)
    assert len(groups) == 1 and all(a is b for a, b in zip(groups[0], elements))
    assert whole_document([]) == []


@pytest.mark.parametrize(
    "pattern, expected",
    [("TNNTN", [3, 2]), ("NTN", [1, 2]), ("TTN", [1, 2]), ("NNN", [3])],
)
def test_heading_starts_a_section_at_every_title(pattern, expected):
    elements = [T() if c == "T" else N() for c in pattern]
    assert sizes(by_heading(elements)) == expected


def test_element_type_splits_between_tables_and_text():
    assert sizes(by_element_type([N(), N(), Tab(), N()])) == [2, 1, 1]
    assert sizes(by_element_type([Tab(), Tab()])) == [2]


def test_count_slices():
    assert sizes(by_count([N() for _ in range(7)], DecoderConfig(section_element_count=3))) == [3, 3, 1]


@pytest.mark.parametrize("n", [0, -1])
def test_count_must_be_positive(n):
    with pytest.raises(ConfigError):
        DecoderConfig(section_element_count=n)


def test_size_accumulates_until_limit():
    assert sizes(by_size([N("x" * 100) for _ in range(5)], DecoderConfig(section_max_size=250))) == [2, 2, 1]
    assert sizes(by_size([N("x" * 50) for _ in range(5)], DecoderConfig(section_max_size=120))) == [2, 2, 1]


def test_size_oversize_element_is_alone():
    groups = by_size([N("x" * 10), N("y" * 500), N("z" * 10)], DecoderConfig(section_max_size=100))
    assert [[e.text[0] for e in g] for g in groups] == [["x"], ["y"], ["z"]]


def test_unknown_strategy_is_rejected():
    with pytest.raises(ConfigError, match="Unknown section strategy"):
        DecoderConfig(section_strategy="chapters")


# --- improvements --------------------------------------------------------------------------------


def test_size_measures_assembled_text_with_table_html_and_separators():
    html = "<table>" + "<tr><td>cell</td></tr>" * 10 + "</table>"  # 227 chars, plain text only 40
    elements = [Tab("cell " * 8, html=html), N("x" * 40)]
    groups = by_size(elements, DecoderConfig(section_max_size=250))
    assert sizes(groups) == [1, 1]  # 227 + 2 + 40 > 250, though the plain texts would fit
    # separators count: 2 x 100 + 2 = 202 fits 202 exactly, 201 does not
    assert sizes(by_size([N("a" * 100), N("b" * 100)], DecoderConfig(section_max_size=202))) == [2]
    assert sizes(by_size([N("a" * 100), N("b" * 100)], DecoderConfig(section_max_size=201))) == [1, 1]


def test_heading_depth_gives_nested_sections_with_parents():
    h1, p1, h2a, p2a, h3, p3, h2b, h1b = (
        T("H1", 0),
        N("p1"),
        T("H2a", 1),
        N("p2a"),
        T("H3", 2),
        N("p3"),
        T("H2b", 1),
        T("H1b", 0),
    )
    groups = heading_groups([h1, p1, h2a, p2a, h3, p3, h2b, h1b])
    assert [g.elements[0].text for g in groups] == ["H1", "H2a", "H3", "H2b", "H1b"]
    assert [g.parent for g in groups] == [None, 0, 1, 0, None]
    assert [g.depth for g in groups] == [0, 1, 2, 1, 0]


def test_heading_preamble_before_first_title_is_its_own_section():
    groups = heading_groups([N("intro"), T("H", 0), N("body")])
    assert [[e.text for e in g.elements] for g in groups] == [["intro"], ["H", "body"]]
    assert groups[1].parent is None


def test_images_never_split_and_stay_with_the_element_before_them():
    a, img, b = N("a"), Img(), N("b")
    groups = section_groups([a, img, b], DecoderConfig(section_strategy="count", section_element_count=1))
    assert [[e.element_id for e in g.elements] for g in groups] == [[a.element_id, img.element_id], [b.element_id]]
    first = Img()
    groups = section_groups([first, T("H"), N("x")], DecoderConfig(section_strategy="heading"))
    assert groups[0].elements[0] is first


def test_pages_in_page_order_and_split_within_pages_only_when_asked():
    elements = [N("p2", page=2), N("p1", page=1), el("Title", "T", page=2), N("none")]
    numbers = [n for n, _ in page_groups(elements, DecoderConfig())]
    assert numbers == [1, 2]  # page None counts as page 1
    cfg = DecoderConfig(section_strategy="count", section_element_count=1, section_within_pages=True)
    split = dict(page_groups(elements, cfg))
    assert len(split[1].children) == 2 and len(split[2].children) == 2
    assert all(
        not g.children
        for _, g in page_groups(elements, DecoderConfig(section_strategy="count", section_element_count=1))
    )
