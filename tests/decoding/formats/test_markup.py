"""Markup (formats/markup.py), where detection follows the content (issue 13): XHTML and inline
XBRL decode as HTML, real XML stays XML."""

from __future__ import annotations

import pytest

from tests import docgen
from ud_assets.decoding import detect
from ud_assets.decoding.decoder import decode
from ud_assets.decoding.model import DecodeError


def elements(result):
    return [(e.category, e.text) for e in result.elements]


# -- markup: the root element decides -----------------------------------------------------------

XHTML_ELEMENTS = [
    ("Title", "Annual report"),
    ("NarrativeText", "Sales rose in every quarter of the year."),
    ("Table", "Quarter Sales Q1 12"),
]


@pytest.mark.parametrize("name", ["report.html", "report.xhtml", "report.xml", None])
def test_xhtml_decodes_as_html_whatever_its_name(name):
    result = decode(docgen.xhtml_page(), "report", filename=name)
    assert result.document.mime_type == detect.HTML
    assert elements(result) == XHTML_ELEMENTS
    assert result.text == (
        "Annual report\n\nSales rose in every quarter of the year.\n\n"
        "<table><tr><th>Quarter</th><th>Sales</th></tr><tr><td>Q1</td><td>12</td></tr></table>"
    )


def test_inline_xbrl_decodes_as_html_with_its_facts_in_the_text():
    result = decode(docgen.ixbrl_page(), "10k", filename="10k.htm", declared_kind="application/xml")
    assert result.document.mime_type == detect.HTML
    assert elements(result) == [
        ("Title", "Results of operations"),
        ("NarrativeText", "Net revenue was 1,234 million dollars."),
    ]


def test_xml_declared_html_with_an_undeclared_prefix_decodes():
    # As XML this fails: "Namespace prefix ix on nonNumeric is not defined".
    result = decode(docgen.xml_declared_html(), "notice", filename="notice.html")
    assert result.document.mime_type == detect.HTML
    assert elements(result) == [("Title", "Notice"), ("UncategorizedText", "The Example Corp annual meeting.")]


def test_real_xml_stays_xml():
    result = decode(docgen.xml_catalog(), "books", filename="books.xml")
    assert result.document.mime_type == detect.XML
    assert elements(result) == [("Title", "Dune"), ("Title", "Frank Herbert")]


def test_a_mislabeled_document_fails_naming_both_kinds():
    with pytest.raises(DecodeError, match=r"^declared as PDF but the bytes are HTML$"):
        decode(docgen.xhtml_page(), "report", filename="report.pdf", declared_kind="application/pdf")
