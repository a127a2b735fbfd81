import codecs

import pytest

from tests import docgen
from ud_assets.decoding import detect


@pytest.mark.parametrize(
    "data, name, expected",
    [
        (b"# Title\n\nSome text.\n", "notes.md", detect.MARKDOWN),
        (b"Title\n=====\n\nSome text.\n", "notes.rst", detect.RST),
        (b"a,b\n1,2\n", "t.csv", detect.CSV),
        (b"a\tb\n1\t2\n", "t.tsv", detect.TSV),
        (b"just words\n", "t.txt", detect.PLAIN),
        (b"<!DOCTYPE html><html><body><p>x</p></body></html>", None, detect.HTML),
        (b"%PDF-1.4\n%...", "misnamed.txt", detect.PDF),
    ],
)
def test_magic_refined_by_extension(data, name, expected):
    assert detect.detect_mime(data, name) == expected


def test_declared_kind_wins_unless_generic():
    assert detect.detect_mime(b"a,b\n", "x.txt", "text/csv; charset=utf-8") == detect.CSV
    assert detect.detect_mime(b"a,b\n", "x.csv", "application/octet-stream") == detect.CSV


@pytest.mark.parametrize(
    "raw, encoding",
    [
        (codecs.BOM_UTF16_LE + "naïve,café\n".encode("utf-16-le"), "utf-16-le"),
        ("naïve,café\n".encode("utf-16-le"), "utf-16-le"),
        ("naïve “café” résumé".encode("cp1252"), "cp1252"),
        ("naïve".encode(), "utf-8"),
    ],
)
def test_decode_text_in_common_encodings(raw, encoding):
    text, used = detect.decode_text(raw)
    assert used == encoding
    assert "naïve" in text


# -- the one rule: declared, libmagic's class, content, extension, libmagic's text guess ------

# libmagic calls this text/html (a `<table>` at the start).
README_MD = b'<table><tr><td><img src="logo.png"></td></tr></table>\n\n# Project\n\nIt <b>works</b>.\n'


@pytest.mark.parametrize(
    "data, name, declared, expected",
    [
        # XHTML, XML-declared HTML and inline XBRL: libmagic says XML, the root element says HTML.
        (docgen.xhtml_page(), "report.html", None, detect.HTML),
        (docgen.xhtml_page(), None, None, detect.HTML),
        (docgen.xhtml_page(), "report.xml", None, detect.HTML),
        (docgen.xhtml_page(), "report.html", "application/xml", detect.HTML),  # XML narrows to HTML
        (docgen.xhtml_page(), "report.html", "text/xml", detect.HTML),
        (docgen.xhtml_page(), "report.html", "application/xhtml+xml", detect.HTML),
        (docgen.ixbrl_page(), "10k.htm", None, detect.HTML),
        (docgen.xml_declared_html(), "notice.html", None, detect.HTML),
        (docgen.xhtml_page().decode().encode("utf-16"), "report.html", None, detect.HTML),
        # Real XML stays XML, whatever libmagic or the extension .xml says...
        (docgen.xml_catalog(), "books.xml", None, detect.XML),
        (docgen.xml_catalog(), None, None, detect.XML),
        (docgen.xml_catalog(), "books.xml", "application/xml", detect.XML),
        # ...unless the extension or the declared kind says HTML (XHTML is XML: HTML narrows it).
        (docgen.xml_catalog(), "books.html", None, detect.HTML),
        (docgen.xml_catalog(), "books.xml", "text/html", detect.HTML),
        # libmagic's guess at the kind of a text comes last: a README that opens with HTML tags.
        (README_MD, "README.md", None, detect.MARKDOWN),
        (README_MD, None, None, detect.HTML),
        # ...but never over an extension that names plain text (pandoc's testsuite.txt: Markdown
        # with a few tags, which the HTML partitioner would cut short).
        (README_MD, "README.txt", None, detect.PLAIN),
        # RTF without its {\rtf1 header, as pandoc writes fragments: the extension and "{\" say RTF.
        (b"{\\pard \\ql \\f0 \\sa180 Simple table\\par}\n", "tables.rtf", None, detect.RTF),
        (b"Plain words in a file named .rtf\n", "notes.rtf", None, detect.PLAIN),
        # A generic declared kind is narrowed; a specific one is kept even when the bytes disagree.
        (b"# Title\n\nText.\n", "notes.md", "text/plain", detect.MARKDOWN),
        (b"# Title\n\nText.\n", "notes.md", "application/octet-stream", detect.MARKDOWN),
        (b"a,b\n1,2\n", "t.txt", "text/csv", detect.CSV),
        (docgen.docx_with_headings_table_picture(), "r.pdf", "application/pdf", detect.PDF),
        (docgen.pdf_text(1), "r.html", "text/html", detect.HTML),
        (docgen.pdf_text(1), "r.txt", None, detect.PDF),  # libmagic's class beats the extension
        (docgen.xls(), "r.doc", None, detect.XLS),  # the container's streams beat the extension
        (docgen.xls(), "r.xls", "application/vnd.ms-office", detect.XLS),
        (docgen.xls(), "r.xls", "application/msword", "application/msword"),
        (b"int main(void) { return 0; }\n", "main.c", None, detect.PLAIN),
        (b"", "empty.csv", None, detect.CSV),
        (b"", None, None, detect.OCTET),
    ],
)
def test_one_rule_combines_declared_kind_libmagic_content_and_extension(data, name, declared, expected):
    assert detect.detect_mime(data, name, declared) == expected


@pytest.mark.parametrize(
    "head, expected",
    [
        ('<?xml version="1.0"?>\n<html><body/></html>', detect.HTML),
        ("<!-- c -->\n<!DOCTYPE html>\n<div>fragment</div>", detect.HTML),
        ('<?xml version="1.0"?><x:html xmlns:x="http://www.w3.org/1999/xhtml"/>', detect.HTML),
        ('<?xml version="1.0"?><body xmlns="http://www.w3.org/1999/xhtml"/>', detect.HTML),
        ('<?xml version="1.0"?><!DOCTYPE a [<!ENTITY e "<html>">]><a>&e;</a>', detect.XML),
        ('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>', detect.XML),
        ("<catalog/>", ""),  # no XML declaration: not enough to call it XML
        ("<p>para</p>", ""),
        ("plain words <html>", ""),
        ("", ""),
    ],
)
def test_markup_kind_reads_the_root_element(head, expected):
    assert detect.markup_kind(head.encode()) == expected


def test_ole_kind_reads_the_streams():
    assert detect.ole_kind(docgen.xls()) == detect.XLS
    assert detect.ole_kind(detect.OLE2_MAGIC + b"\0" * 600) == detect.OLE2  # damaged: the parser says why


@pytest.mark.parametrize(
    "data, name, declared, message",
    [
        (
            docgen.docx_with_headings_table_picture(),
            "r.pdf",
            "application/pdf",
            "declared as PDF but the bytes are DOCX",
        ),
        (docgen.pdf_text(1), "r.xml", "application/xml", "declared as XML but the bytes are PDF"),
        (docgen.pdf_text(1), "r.html", "text/html", "declared as HTML but the bytes are PDF"),
        (docgen.xls(), "r.doc", "application/msword", "declared as DOC but the bytes are XLS"),
        (docgen.pdf_text(1), "r.ppt", "application/vnd.ms-powerpoint", "declared as PPT but the bytes are PDF"),
    ],
)
def test_a_mislabeled_document_still_fails_clearly(data, name, declared, message):
    from ud_assets.decoding.formats import check_input
    from ud_assets.decoding.limits import Limits
    from ud_assets.decoding.model import DecodeError

    with pytest.raises(DecodeError) as raised:
        check_input(data, detect.detect_mime(data, name, declared), Limits())
    assert str(raised.value) == message


def test_binary_kinds_are_those_libmagic_knows_by_a_magic_number():
    assert [detect.is_binary_kind(k) for k in (detect.PDF, detect.DOCX, detect.OLE2, "image/png", detect.RTF)] == [
        True
    ] * 5
    kinds = (
        "image/svg+xml",
        detect.XML,
        detect.HTML,
        detect.PLAIN,
        detect.OCTET,
        "application/x-wine-extension-ini",
        "",
    )
    assert [detect.is_binary_kind(k) for k in kinds] == [False] * 7
