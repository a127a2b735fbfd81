"""The decoder end to end on every format of the spec's table, plus EPUB and EML."""

import json
import subprocess
import sys
from dataclasses import fields

import pytest

from tests import docgen
from ud_assets.decoding import detect
from ud_assets.decoding.decoder import decode, element_from_json, element_to_json, result_to_json
from ud_assets.decoding.model import ConfigError, DecodeError, DecoderConfig, Element, ImageData
from ud_assets.decoding.provenance import GRAPH_SOURCE, TG_IMAGE_TYPE, XSD_INTEGER

FORMATS = {
    # name: (generator, file name, expected mime, text expected somewhere, page-based)
    "pdf": (docgen.pdf_text, "r.pdf", detect.PDF, "Chapter 2", True),
    "docx": (docgen.docx_with_headings_table_picture, "r.docx", detect.DOCX, None, False),
    "pptx": (docgen.pptx_with_picture, "r.pptx", detect.PPTX, None, True),
    "xlsx": (docgen.xlsx, "r.xlsx", detect.XLSX, "North 1", True),
    "xls": (docgen.xls, "r.xls", detect.XLS, "East 1", True),
    "html": (docgen.html_cp1252, "r.html", detect.HTML, "Crème brûlée", False),
    "markdown": (docgen.markdown, "r.md", detect.MARKDOWN, "Revenue rose", False),
    "text": (docgen.text_utf16, "r.txt", detect.PLAIN, "Naïve café", False),
    "csv": (docgen.csv_utf16, "r.csv", detect.CSV, "São Paulo", False),
    "tsv": (docgen.tsv, "r.tsv", detect.TSV, "Grace", False),
    "rst": (docgen.rst, "r.rst", detect.RST, "fifteen percent", False),
    "rtf": (docgen.rtf, "r.rtf", detect.RTF, "fifteen percent", False),
    "odt": (docgen.odt, "r.odt", detect.ODT, "fifteen percent", False),
    "epub": (docgen.epub_with_image, "r.epub", detect.EPUB, None, False),
    "eml": (docgen.eml_with_image_attachment, "r.eml", detect.EML, None, False),
}


def assert_offsets_exact(result):
    text = result.text
    for section in result.sections:
        assert text[section.char_offset : section.char_offset + section.char_length] == section.text, section.label
        for element in section.elements:
            assert section.text[element.offset : element.offset + element.length] == element.text
    leaves = [s for s in result.sections if s.leaf]
    assert text == "\n\n".join(s.text for s in leaves)


@pytest.fixture(scope="module")
def decoded():
    cache = {}

    def get(name, **options):
        key = (name, tuple(sorted(options.items())))
        if key not in cache:
            generator, filename, *_ = FORMATS[name]
            cache[key] = decode(
                generator(),
                document_id=f"doc-{name}",
                filename=filename,
                config=DecoderConfig(**options),
                title=filename,
            )
        return cache[key]

    return get


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_format_decodes_with_exact_offsets(decoded, name):
    _generator, _filename, mime, needle, page_based = FORMATS[name]
    result = decoded(name)
    assert result.document.mime_type == mime
    assert result.sections, "no sections"
    assert_offsets_exact(result)
    assert {s.type for s in result.sections} == ({"page"} if page_based else {"section"})
    if needle:
        assert needle in result.text
    assert result.document.strategy_used == "fast"
    assert all(t.g == GRAPH_SOURCE for t in result.triples)


def test_pages_in_order_with_page_numbers(decoded):
    pdf = decoded("pdf")
    assert [s.page_number for s in pdf.sections] == [1, 2]
    assert [s.label for s in pdf.sections] == ["Page 1", "Page 2"]
    assert "Chapter 1" in pdf.sections[0].text and "Chapter 2" in pdf.sections[1].text
    xlsx = decoded("xlsx")
    assert [s.label for s in xlsx.sections] == ["Sheet 1", "Sheet 2"]
    assert all(s.table_count == 1 and "<table>" in s.text for s in xlsx.sections)


def test_tables_are_html_in_the_text(decoded):
    csv = decoded("csv")
    assert csv.sections[0].text.startswith("<table>") and "Malmö" in csv.sections[0].text
    assert decoded("html").sections[0].table_count == 1


def test_heading_strategy_nests_sections_by_depth(decoded):
    result = decoded("markdown", section_strategy="heading")
    labels = [s.label for s in result.sections]
    assert labels == [f"Section {i}" for i in range(1, len(labels) + 1)]  # no gaps
    by_first_line = {s.text.split("\n\n")[0]: s for s in result.sections}
    report, revenue, outlook, appendix = (by_first_line[h] for h in ("Annual Report", "Revenue", "Outlook", "Appendix"))
    assert revenue.parent == report.id and outlook.parent == report.id
    assert report.parent == "doc-markdown" and appendix.parent == "doc-markdown"
    assert revenue.table_count == 1
    assert_offsets_exact(result)


def test_section_within_pages_splits_pages_into_sections(decoded):
    result = decoded("pdf", section_strategy="count", section_element_count=1, section_within_pages=True)
    pages = [s for s in result.sections if s.type == "page"]
    inner = [s for s in result.sections if s.type == "section"]
    assert len(pages) == 2 and not any(p.leaf for p in pages)
    assert len(inner) >= 4 and {s.parent for s in inner} == {p.id for p in pages}
    assert_offsets_exact(result)


def test_size_strategy_bounds_the_assembled_text(decoded):
    result = decoded("markdown", section_strategy="size", section_max_size=80)
    assert len(result.sections) > 3
    for section in result.sections:
        assert len(section.text) <= 80 or len(section.elements) == 1


@pytest.mark.parametrize(
    "name, count, mimes",
    [
        ("pdf_images", 3, {"image/jpeg", "image/png"}),
        ("docx", 1, {"image/png"}),
        ("pptx", 1, {"image/jpeg", "image/png"}),
        ("html_images", 1, {"image/png"}),
        ("epub", 1, None),
        ("eml", 1, {"image/png"}),
    ],
)
def test_images_are_stored_with_their_parent_and_counted(name, count, mimes):
    generators = {
        "pdf_images": (docgen.pdf_with_text_and_image, "i.pdf"),
        "docx": (docgen.docx_with_headings_table_picture, "i.docx"),
        "pptx": (docgen.pptx_with_picture, "i.pptx"),
        "html_images": (docgen.html_with_data_uri_image, "i.html"),
        "epub": (docgen.epub_with_image, "i.epub"),
        "eml": (docgen.eml_with_image_attachment, "i.eml"),
    }
    generator, filename = generators[name]
    result = decode(generator(), document_id=name, filename=filename)
    assert len(result.images) >= count
    if mimes:
        assert {r.mime_type for r in result.images} <= mimes
    section_ids = {s.id for s in result.sections}
    for record in result.images:
        assert record.parent in section_ids
        assert record.width and record.height and record.data
    assert sum(s.image_count for s in result.sections if s.leaf) >= len(result.images)
    assert all("Image" in s.element_types for s in result.sections if s.image_count)
    image_types = [t for t in result.triples if t.o == TG_IMAGE_TYPE]
    assert len(image_types) == len(result.images)
    assert_offsets_exact(result)


def test_pdf_images_keep_original_bytes_and_bounding_boxes():
    result = decode(docgen.pdf_with_text_and_image(), document_id="p", filename="p.pdf")
    jpegs = [r for r in result.images if r.mime_type == "image/jpeg"]
    assert jpegs and jpegs[0].data == docgen.pdf_jpeg()
    assert jpegs[0].page_number == 1 and jpegs[0].coordinates["points"]


def test_ids_are_deterministic_and_change_with_the_input():
    data = docgen.markdown()
    first = decode(data, document_id="d", filename="d.md", config=DecoderConfig(section_strategy="heading"))
    again = decode(data, document_id="d", filename="d.md", config=DecoderConfig(section_strategy="heading"))
    assert [s.id for s in first.sections] == [s.id for s in again.sections]
    changed = decode(
        data + b"\nMore.\n", document_id="d", filename="d.md", config=DecoderConfig(section_strategy="heading")
    )
    assert not {s.id for s in first.sections} & {s.id for s in changed.sections}


def test_triples_are_typed_and_document_level_triples_are_in_the_source_graph(decoded):
    result = decoded("pdf")
    ints = [t for t in result.triples if t.p.endswith(("charOffset", "charLength", "pageNumber", "pageCount"))]
    assert ints and all(t.datatype == XSD_INTEGER for t in ints)
    doc_types = [t for t in result.triples if t.o == "https://trustgraph.ai/ns/Document"]
    assert doc_types and doc_types[0].g == GRAPH_SOURCE
    times = [t for t in result.triples if t.p.endswith("startedAtTime")]
    assert times and all(t.datatype.endswith("#dateTime") for t in times)


def test_json_shape(decoded):
    out = result_to_json(decoded("pdf"))
    assert set(out) == {"document", "sections", "images", "triples"}
    assert set(out["document"]) == {"id", "mime_type", "sha256", "unstructured_version", "strategy_used", "notes"}
    assert set(out["sections"][0]) >= {
        "id",
        "type",
        "label",
        "parent",
        "page_number",
        "char_offset",
        "char_length",
        "text",
        "element_types",
        "table_count",
        "image_count",
        "elements",
    }
    json.dumps(out)


@pytest.mark.parametrize("name", ["pdf", "docx", "pptx", "epub", "eml"])
def test_elements_round_trip_through_their_stored_json(decoded, name):
    elements = decoded(name).elements
    stored = [element_to_json(element) for element in elements]
    assert [element_from_json(json.loads(json.dumps(e))) for e in stored] == elements


def test_the_stored_json_of_an_element_has_every_field():
    # A field added to Element or ImageData must be added to their JSON forms too.
    stored = element_to_json(Element("e1", "Image", "", image=ImageData(b"\x89PNG", "image/png")))
    assert list(stored) == [f.name for f in fields(Element)]
    assert stored["image"] is not None and list(stored["image"]) == [f.name for f in fields(ImageData)]


@pytest.mark.parametrize(
    "data, filename, cause",
    [
        (b"", "empty.pdf", "empty document (0 bytes)"),
        (docgen.pdf_truncated(), "t.pdf", "application/pdf could not be parsed: pdfiumerror"),
        (docgen.pdf_encrypted(), "e.pdf", "password"),
        (docgen.xlsx_encrypted(), "e.xlsx", "password"),
        (docgen.random_bytes(), "r.docx", "declared as docx but the bytes are application/octet-stream"),
    ],
)
def test_bad_inputs_give_a_short_clear_error(data, filename, cause):
    with pytest.raises(DecodeError) as raised:
        decode(data, document_id=filename, filename=filename)
    message = str(raised.value)
    assert cause in message.lower()
    assert "\n" not in message and len(message) < 300


def test_a_pdf_with_a_wrong_extension_decodes_by_its_bytes():
    result = decode(docgen.pdf_text(1), document_id="wrong.docx", filename="wrong.docx")
    assert result.document.mime_type == detect.PDF
    assert [p.page_number for p in result.sections] == [1]


def test_hi_res_without_local_weights_names_the_setting():
    with pytest.raises(ConfigError, match="UNSTRUCTURED_DEFAULT_MODEL_INITIALIZE_PARAMS_JSON_PATH"):
        decode(docgen.pdf_text(1), document_id="h", filename="h.pdf", config=DecoderConfig(strategy="hi_res"))


NO_NETWORK = r"""
import socket, sys
def refuse(self, address, *args, **kwargs):
    raise OSError(f"network blocked in this test: {address}")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = lambda *a, **k: refuse(None, a[0] if a else None)
from ud_assets.decoding.decoder import decode
from tests import docgen
for gen, name in [(docgen.markdown, "n.md"), (docgen.pdf_text, "n.pdf"), (docgen.docx_with_headings_table_picture, "n.docx")]:
    r = decode(gen(), document_id=name, filename=name)
    print(name, len(r.sections), len(r.text))
"""


def test_decoding_works_with_network_access_blocked(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": "."}
    done = subprocess.run([sys.executable, "-c", NO_NETWORK], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 3 and all(int(line.split()[2]) > 0 for line in lines)
