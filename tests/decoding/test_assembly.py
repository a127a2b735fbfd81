"""Text assembly (upstream cases T1-T6) and exact element offsets."""

from ud_assets.decoding.assembly import assemble

from .helpers import Img, N, Tab, el


def test_paragraphs_joined_by_blank_line():
    assert assemble([N("Paragraph one."), N("Paragraph two.")]).text == "Paragraph one.\n\nParagraph two."


def test_table_html_is_kept():
    out = assemble([N("Intro"), Tab("a b", "<table><tr><td>a</td></tr></table>")])
    assert out.text == "Intro\n\n<table><tr><td>a</td></tr></table>"
    assert out.table_count == 1


def test_table_without_html_falls_back_to_text():
    assert assemble([Tab("a b", None)]).text == "a b"


def test_image_excluded_but_counted_and_typed():
    out = assemble([N("x"), Img(), N("y")])
    assert out.text == "x\n\ny"
    assert out.image_count == 1
    assert out.element_types == ["Image", "NarrativeText"]


def test_empty():
    out = assemble([])
    assert (out.text, out.element_types, out.table_count, out.image_count) == ("", [], 0, 0)


def test_every_element_has_an_exact_offset_including_empty_ones():
    elements = [N("  "), N("first"), el("PageBreak", ""), Img(), Tab("t", "<table/>"), N("last")]
    out = assemble(elements)
    assert out.text == "first\n\n<table/>\n\nlast"
    assert [p.element_id for p in out.elements] == [e.element_id for e in elements]
    for placed in out.elements:
        assert out.text[placed.offset : placed.offset + placed.length] == placed.text
    assert [p.length for p in out.elements] == [0, 5, 0, 0, 8, 4]
    assert out.elements[4].offset == 7
