"""Formats beyond the spec's table, and detection that follows the content (issue 13):
XHTML and inline XBRL decode as HTML, real XML stays XML, legacy Office through LibreOffice,
tolerant CSV/TSV."""

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


# -- legacy Office through LibreOffice ----------------------------------------------------------


@pytest.fixture(scope="module")
def legacy():
    """.doc and .ppt made by LibreOffice from docgen's DOCX and PPTX, and all four decoded."""
    made = {"doc": docgen.doc(), "ppt": docgen.ppt()}
    sources = {"doc": docgen.docx_with_headings_table_picture(), "ppt": docgen.pptx_with_picture()}
    decoded = {}
    for kind in ("doc", "ppt"):
        decoded[kind] = decode(made[kind], f"r.{kind}", filename=f"r.{kind}")
        decoded[kind + "x"] = decode(sources[kind], f"r.{kind}x", filename=f"r.{kind}x")
    return made, decoded


def texts(result):
    return [e.text for e in result.elements]


def test_a_doc_decodes_as_its_docx_does(legacy):
    _made, decoded = legacy
    doc, docx = decoded["doc"], decoded["docx"]
    assert doc.document.mime_type == detect.DOC
    assert (
        texts(doc)
        == texts(docx)
        == [
            "Introduction",
            "This document introduces the widget.",
            "Details",
            "The widget has three parts.",
            "Part Weight Gear 10 g Spring 2 g",
            "",
            "Conclusion",
            "The widget works.",
        ]
    )
    assert [s.text for s in doc.sections] == [s.text for s in docx.sections]
    assert [s.type for s in doc.sections] == ["section"]
    # The picture comes out as DOCX's do: its bytes, type and size, in the same place.
    assert [(i.mime_type, i.width, i.height, i.data) for i in doc.images] == [
        ("image/png", 48, 36, docgen.docx_picture())
    ]
    assert [e.category for e in doc.elements] == [e.category for e in docx.elements]


def test_a_ppt_decodes_as_its_pptx_does(legacy):
    _made, decoded = legacy
    ppt, pptx = decoded["ppt"], decoded["pptx"]
    assert ppt.document.mime_type == detect.PPT
    assert texts(ppt) == texts(pptx)
    assert [(s.type, s.label, s.page_number) for s in ppt.sections] == [("page", "Slide 1", 1), ("page", "Slide 2", 2)]
    assert [s.text for s in ppt.sections] == [s.text for s in pptx.sections]
    assert [(i.mime_type, i.width, i.height, i.page_number) for i in ppt.images] == [("image/jpeg", 64, 48, 2)]
    assert [(i.mime_type, i.width, i.height, i.page_number) for i in pptx.images] == [("image/jpeg", 64, 48, 2)]


def test_a_damaged_doc_fails_naming_the_document_and_libreoffices_reason(legacy):
    made, _decoded = legacy
    damaged = made["doc"][: len(made["doc"]) // 2]
    with pytest.raises(DecodeError) as raised:
        decode(damaged, "half.doc", filename="uploads/half.doc")
    assert str(raised.value) == (
        "LibreOffice could not convert 'half.doc' (DOC) to DOCX: LibreOffice wrote no output "
        "(damaged, encrypted or not a document of this kind): Error: source file could not be loaded"
    )


def _soffice_processes(marker: str) -> list[int]:
    """Processes whose command line names `marker` (a private profile's folder)."""
    import os

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def test_conversion_has_a_time_limit_and_leaves_no_process_or_profile(legacy, tmp_path, monkeypatch):
    import tempfile

    from ud_assets.decoding import legacy_office

    made, _decoded = legacy
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(DecodeError) as raised:
        legacy_office.convert(made["doc"], detect.DOC, "slow.doc", timeout_s=0.05, memory_mb=4096)
    assert (
        str(raised.value)
        == "LibreOffice could not convert 'slow.doc' (DOC) to DOCX: timed out after 0.05 s (UD_DECODE_TIMEOUT_S)"
    )
    assert _soffice_processes(str(tmp_path)) == []
    assert list(tmp_path.iterdir()) == []


def test_conversion_has_a_memory_limit(legacy, monkeypatch):
    from ud_assets.decoding import legacy_office

    made, _decoded = legacy
    monkeypatch.setattr(legacy_office, "SOFFICE_BASE_MB", 100)  # far below what LibreOffice needs to start
    with pytest.raises(
        DecodeError,
        match=r"^LibreOffice could not convert 'big.doc' \(DOC\) to DOCX: LibreOffice ran out of memory \(UD_DECODE_MEMORY_MB, plus 100 MB for LibreOffice\)",
    ):
        legacy_office.convert(made["doc"], detect.DOC, "big.doc", timeout_s=120, memory_mb=1)


def test_parallel_conversions_each_have_a_private_profile(legacy, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from ud_assets.decoding import legacy_office

    made, _decoded = legacy
    commands = []
    real_run = legacy_office._run

    def recording_run(command, *args):
        commands.append(command)
        return real_run(command, *args)

    monkeypatch.setattr(legacy_office, "_run", recording_run)
    jobs = [(made["doc"], detect.DOC), (made["ppt"], detect.PPT), (made["doc"], detect.DOC)]
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda job: legacy_office.convert(job[0], job[1], None, 240, 4096), jobs))
    assert [r[:2] for r in results] == [b"PK"] * 3
    profiles = {next(arg for arg in command if arg.startswith("-env:UserInstallation=")) for command in commands}
    assert len(profiles) == 3  # each conversion started (and restarted once) on its own profile
    assert len(commands) == 6


def test_without_libreoffice_the_error_says_how_to_install_it(monkeypatch):
    from ud_assets.decoding import legacy_office

    monkeypatch.setattr(legacy_office, "soffice_path", lambda: None)
    with pytest.raises(DecodeError) as raised:
        legacy_office.convert(b"x", detect.PPT, "deck.ppt", timeout_s=10, memory_mb=100)
    assert str(raised.value) == (
        "LibreOffice could not convert 'deck.ppt' (PPT) to PPTX: LibreOffice is not installed "
        "(make setup installs libreoffice-*-nogui)"
    )


@pytest.mark.parametrize(
    "generator, name, source, source_name, mime",
    [
        (docgen.docm, "r.docm", docgen.docx_with_headings_table_picture, "r.docx", detect.DOCX),
        (docgen.pptm, "r.pptm", docgen.pptx_with_picture, "r.pptx", detect.PPTX),
        (docgen.xlsm, "r.xlsm", docgen.xlsx, "r.xlsx", detect.XLSX),
    ],
)
def test_macro_enabled_packages_decode_as_their_plain_kind(generator, name, source, source_name, mime):
    # unstructured reads .pptm and .xlsm, and refuses .docm ("is not a Word file"): we read all three.
    macro, plain = decode(generator(), name, filename=name), decode(source(), source_name, filename=source_name)
    assert macro.document.mime_type == mime
    assert texts(macro) == texts(plain)
    assert texts(macro) != []
    assert [(i.mime_type, i.data) for i in macro.images] == [(i.mime_type, i.data) for i in plain.images]


# -- tolerant CSV/TSV ---------------------------------------------------------------------------


def cells(result):
    """The table's rows of cells, from the HTML of its one Table element."""
    import re

    (table,) = [e for e in result.elements if e.category == "Table"]
    return [re.findall(r"<td>(.*?)</td>|<td/>", row) for row in re.findall(r"<tr>(.*?)</tr>", table.text_as_html)]


RAGGED = "name,city\nAda,London\nGrace,New York,USA\nAlan\n"
RAGGED_ROWS = [["name", "city", ""], ["Ada", "London", ""], ["Grace", "New York", "USA"], ["Alan", "", ""]]


@pytest.mark.parametrize(
    "text, name, rows",
    [
        (RAGGED, "r.csv", RAGGED_ROWS),  # pandas: "Expected 2 fields in line 3, saw 3"
        (RAGGED.replace(",", "\t"), "r.tsv", RAGGED_ROWS),
        (
            "name;city\nAda;London, UK\nGrace;New York\n",
            "r.csv",
            [["name", "city"], ["Ada", "London, UK"], ["Grace", "New York"]],
        ),
        ("name|city\nAda|London\n\nGrace|Paris\n", "r.csv", [["name", "city"], ["Ada", "London"], ["Grace", "Paris"]]),
        ('name,note\nAda,"says ""hi"", twice"\n', "r.csv", [["name", "note"], ["Ada", 'says "hi", twice']]),
        ("name\nAda\nGrace\n", "r.csv", [["name"], ["Ada"], ["Grace"]]),
        ("pebble velvet\nüber\n", "r.csv", [["pebble velvet"], ["über"]]),
        ("name,city\r\nN/A,007\r\n", "r.csv", [["name", "city"], ["N/A", "007"]]),
    ],
)
def test_delimited_text_is_a_table_with_every_cell(text, name, rows):
    result = decode(text.encode("utf-8"), name, filename=name)
    assert cells(result) == rows
    assert [e.category for e in result.elements] == ["Table"]


@pytest.mark.parametrize(
    "encoding, bom",
    [
        ("utf-8", "\ufeff"),
        ("utf-16", ""),  # with its byte-order mark
        ("utf-16-le", ""),
        ("utf-16-be", ""),
        ("utf-32", ""),
        ("utf-32-le", ""),
        ("utf-32-be", ""),
        ("cp1252", ""),
    ],
)
def test_delimited_text_in_any_encoding(encoding, bom):
    text = bom + "name,city\nZoë,Malmö\nJosé,São Paulo,Brasil\n"
    result = decode(text.encode(encoding), "r.csv", filename="r.csv")
    assert result.document.mime_type == detect.CSV
    assert cells(result) == [["name", "city", ""], ["Zoë", "Malmö", ""], ["José", "São Paulo", "Brasil"]]


def test_a_regular_csv_gives_exactly_unstructureds_element():
    import io

    from unstructured.partition.auto import partition

    data = b"Region,Sales,Code\nNorth,10,007\nSouth,,N/A\n"
    (bare,) = partition(file=io.BytesIO(data), content_type="text/csv", metadata_filename="document.csv")
    (ours,) = decode(data, "r.csv", filename="r.csv").elements
    assert (ours.category, ours.text, ours.text_as_html, ours.element_id) == (
        bare.category,
        bare.text,
        bare.metadata.text_as_html,
        bare.id,
    )


@pytest.mark.parametrize(
    "text, delimiter",
    [
        ("a,b\n1,2\n", ","),
        ("a;b\n1;2,5\n3;4\n", ";"),
        ("a\tb\n1\t2\n", "\t"),
        ("a|b\n1|2\n", "|"),
        ("a,b;c\n1,2;3\n", ","),  # a tie goes to the earlier candidate
        ("name\nSmith, John\nAda\n", None),
        ("", None),
    ],
)
def test_sniff_delimiter(text, delimiter):
    from ud_assets.decoding.delimited import sniff_delimiter

    assert sniff_delimiter(text) == delimiter


@pytest.mark.parametrize("data, name", [(b" \t\n\r\n", "blank.csv"), ("\ufeff\n\n".encode("utf-16"), "blank.tsv")])
def test_a_file_of_blank_lines_has_no_table(data, name):
    with pytest.raises(DecodeError) as raised:
        decode(data, name, filename=name)
    label = name.rsplit(".", 1)[1].upper()
    assert str(raised.value) == f"{label} has no columns: it holds only blank lines"


def test_a_table_beyond_the_cell_limit_is_refused():
    from ud_assets.decoding.delimited import read_rows

    with pytest.raises(DecodeError) as raised:
        read_rows("a,b\n1,2\n3,4,5,6\n", ",", max_cells=10)
    assert str(raised.value) == "the table exceeds the maximum of 10 cells (CSV_MAX_CELLS): at least 3 rows x 4 columns"
    assert read_rows("a,b\n1,2\n3,4,5\n", ",", max_cells=9) == [["a", "b", ""], ["1", "2", ""], ["3", "4", "5"]]
