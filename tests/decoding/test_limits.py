"""check_input: hopeless documents are refused from their headers, with a message naming the cause."""

import io
import struct
import zipfile

import pytest

from tests import docgen
from ud_assets.decoding import detect
from ud_assets.decoding.formats import check_input
from ud_assets.decoding.limits import MAX_ZIP_ENTRIES, Limits, MiB
from ud_assets.decoding.model import ConfigError, DecodeError

DEFAULT = Limits()


def refused(data: bytes, mime: str, limits: Limits = DEFAULT) -> str:
    with pytest.raises(DecodeError) as caught:
        check_input(data, mime, limits)
    return str(caught.value)


# -- limits from the environment -------------------------------------------------------------


def test_limits_defaults_and_environment():
    assert Limits.from_env({}) == Limits(timeout_s=300, memory_mb=4096, max_bytes=512 * MiB, max_pages=5000)
    env = {
        "UD_DECODE_TIMEOUT_S": "2.5",
        "UD_DECODE_MEMORY_MB": "512",
        "UD_DECODE_MAX_BYTES": "1000",
        "UD_DECODE_MAX_PAGES": " 7 ",
    }
    assert Limits.from_env(env) == Limits(timeout_s=2.5, memory_mb=512, max_bytes=1000, max_pages=7)
    assert Limits.from_env({"UD_PARSE_NICENESS": "0"}).niceness == 0  # the parent's priority
    assert Limits.from_env({"UD_PARSE_NICENESS": "19"}).niceness == 19


@pytest.mark.parametrize(
    "name,value",
    [
        ("UD_DECODE_TIMEOUT_S", "soon"),
        ("UD_DECODE_MEMORY_MB", "0"),
        ("UD_DECODE_MAX_PAGES", "-3"),
        ("UD_DECODE_MAX_BYTES", "1.5"),
        ("UD_PARSE_NICENESS", "20"),
        ("UD_PARSE_NICENESS", "-1"),
        ("UD_PARSE_NICENESS", "low"),
    ],
)
def test_bad_limits_name_the_setting(name, value):
    with pytest.raises(ConfigError, match=name):
        Limits.from_env({name: value})


# -- documents that pass ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "make,mime",
    [
        (docgen.markdown, detect.MARKDOWN),
        (docgen.text_utf16, detect.PLAIN),
        (docgen.csv_utf16, detect.CSV),
        (docgen.tsv, detect.TSV),
        (docgen.html_cp1252, detect.HTML),
        (docgen.pdf_text, detect.PDF),
        (docgen.pdf_truncated, detect.PDF),  # damaged but maybe readable: the parser decides
        (docgen.xlsx, detect.XLSX),
        (docgen.xls, detect.XLS),
        (docgen.docx_with_headings_table_picture, detect.DOCX),
        (docgen.pptx_with_picture, detect.PPTX),
        (docgen.epub_with_image, detect.EPUB),
        (docgen.odt, detect.ODT),
        (docgen.rtf, detect.RTF),
        (docgen.eml_with_image_attachment, detect.EML),
        (docgen.png, "image/png"),
    ],
)
def test_ordinary_documents_pass(make, mime):
    check_input(make(), mime, DEFAULT)


# -- size, pages, encryption -------------------------------------------------------------------


def test_empty_document():
    assert refused(b"", detect.PLAIN) == "empty document (0 bytes)"


def test_oversize_by_max_bytes():
    message = refused(b"x" * 11, detect.PLAIN, Limits(max_bytes=10))
    assert message == "document is 11 bytes, above the limit of 10 (UD_DECODE_MAX_BYTES)"
    check_input(b"x" * 10, detect.PLAIN, Limits(max_bytes=10))


def test_pdf_with_too_many_pages():
    data = docgen.pdf_text(2)
    assert (
        refused(data, detect.PDF, Limits(max_pages=1)) == "PDF has 2 pages, above the limit of 1 (UD_DECODE_MAX_PAGES)"
    )
    check_input(data, detect.PDF, Limits(max_pages=2))


def test_pptx_with_too_many_slides():
    from pptx import Presentation

    deck = Presentation()
    for _ in range(3):
        deck.slides.add_slide(deck.slide_layouts[5])
    out = io.BytesIO()
    deck.save(out)
    assert (
        refused(out.getvalue(), detect.PPTX, Limits(max_pages=2))
        == "PPTX has 3 pages, above the limit of 2 (UD_DECODE_MAX_PAGES)"
    )
    check_input(out.getvalue(), detect.PPTX, Limits(max_pages=3))


def test_encrypted_pdf():
    assert refused(docgen.pdf_encrypted(), detect.PDF) == "PDF is password-protected"


@pytest.mark.parametrize("mime,label", [(detect.XLSX, "XLSX"), (detect.DOCX, "DOCX"), (detect.XLS, "XLS")])
def test_encrypted_office_document(mime, label):
    # An encrypted OOXML package is an OLE2 "CDFV2 Encrypted" container, whatever it was declared as.
    assert refused(docgen.xlsx_encrypted(), mime) == f"{label} is password-protected"


def test_encrypted_zip_members():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document/>")
    data = bytearray(out.getvalue())
    for signature in (b"PK\x03\x04", b"PK\x01\x02"):  # set the "encrypted" flag bit on every member
        start = 0
        while (start := data.find(signature, start)) >= 0:
            flag_at = start + (6 if signature == b"PK\x03\x04" else 8)
            data[flag_at] |= 1
            start += 4
    assert refused(bytes(data), detect.DOCX) == "DOCX is password-protected"


# -- mislabeled documents ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "make,mime,expected",
    [
        (docgen.pdf_text, detect.DOCX, "declared as DOCX but the bytes are PDF"),
        (docgen.docx_with_headings_table_picture, detect.PDF, "declared as PDF but the bytes are DOCX"),
        (docgen.xlsx, detect.DOCX, "declared as DOCX but the bytes are XLSX"),
        (docgen.docx_with_headings_table_picture, detect.PPTX, "declared as PPTX but the bytes are DOCX"),
        (docgen.markdown, detect.XLSX, "declared as XLSX but the bytes are TXT"),
        (docgen.pdf_text, detect.RTF, "declared as RTF but the bytes are PDF"),
        (docgen.pdf_text, "image/png", "declared as image/png but the bytes are PDF"),
        (docgen.png, detect.PLAIN, "declared as TXT but the bytes are image/png"),
        (docgen.xlsx, detect.CSV, "declared as CSV but the bytes are XLSX"),
    ],
)
def test_mislabeled_documents(make, mime, expected):
    assert refused(make(), mime) == expected


def test_a_doc_of_no_kind_we_know_goes_to_libreoffice():
    """An older word processor's file named .doc (WordPerfect 4.2 in Tika's corpus): LibreOffice
    reads it by its content, as it does for bare unstructured; a DOC whose bytes are another kind
    we know is still mislabeled."""
    wordperfect = b"\xffWPC" + bytes(range(256)) * 4
    check_input(wordperfect, detect.DOC, DEFAULT)
    assert refused(docgen.pdf_text(), detect.DOC) == "declared as DOC but the bytes are PDF"


def test_an_rtf_fragment_passes_and_text_named_rtf_does_not():
    check_input(b"{\\pard \\ql Simple table\\par}\n", detect.RTF, DEFAULT)
    assert refused(b"Plain words\n", detect.RTF) == "declared as RTF but the bytes are TXT"


@pytest.mark.parametrize(
    "mime,label",
    [
        (detect.PDF, "PDF"),
        (detect.DOCX, "DOCX"),
        (detect.XLSX, "XLSX"),
        (detect.EPUB, "EPUB"),
        (detect.XLS, "XLS"),
        (detect.PLAIN, "TXT"),
        (detect.HTML, "HTML"),
    ],
)
def test_random_bytes(mime, label):
    assert refused(docgen.random_bytes(), mime) == f"declared as {label} but the bytes are application/octet-stream"


def test_pdf_header_may_follow_junk():
    check_input(b"\n" * 100 + docgen.pdf_text(1), detect.PDF, DEFAULT)


# -- zip bombs ---------------------------------------------------------------------------------


def _package(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _declaring(data: bytes, member: str, size: int) -> bytes:
    """The package with `member`'s uncompressed size rewritten in its local and central headers."""
    data = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        local = archive.getinfo(member).header_offset
    struct.pack_into("<I", data, local + 22, size)
    central = data.find(b"PK\x01\x02")
    while central >= 0:
        name_length = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46 : central + 46 + name_length] == member.encode():
            struct.pack_into("<I", data, central + 24, size)
        central = data.find(b"PK\x01\x02", central + 4)
    return bytes(data)


def test_docx_zip_bomb_by_ratio():
    # word/document.xml claims 2 GB from a few hundred compressed bytes (a 2 GB run of zeros
    # deflates to ~2 MB; the headers are what check_input reads, so they are crafted to keep the
    # test fast).
    package = _package({"[Content_Types].xml": b"<Types/>", "word/document.xml": bytes(200_000)})
    bomb = _declaring(package, "word/document.xml", 2 * 1024**3)
    assert zipfile.ZipFile(io.BytesIO(bomb)).getinfo("word/document.xml").file_size == 2 * 1024**3
    message = refused(bomb, detect.DOCX)
    assert message.startswith("DOCX is a zip bomb: 2048 MB compressed ") and message.endswith(":1")


def test_xlsx_zip_bomb_beyond_the_memory_allowance():
    # A real bomb at a small scale: 80 MB of zeros really inflate from ~80 KB, above 64 MB.
    bomb = _package({"[Content_Types].xml": b"<Types/>", "xl/worksheets/sheet1.xml": bytes(80 * MiB)})
    assert len(bomb) < 200_000
    message = refused(bomb, detect.XLSX, Limits(memory_mb=64))
    assert message == "XLSX is a zip bomb: it inflates beyond 64 MB (derived from UD_DECODE_MEMORY_MB)"
    check_input(bomb, detect.XLSX, Limits(memory_mb=128))  # within a larger allowance, and below 100:1's floor


def test_zip_with_too_many_entries():
    members = {"[Content_Types].xml": b"<Types/>", **{f"xl/media/{i}.bin": b"" for i in range(MAX_ZIP_ENTRIES)}}
    message = refused(_package(members), detect.XLSX)
    assert message == f"XLSX is a zip bomb: {MAX_ZIP_ENTRIES + 1} entries (more than {MAX_ZIP_ENTRIES})"


def test_nested_archives():
    inner = _package({"a.txt": b"a"})
    for _ in range(3):
        inner = _package({"nested.zip": inner})
    package = _package(
        {"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<w/>", "word/embeddings/x.zip": inner}
    )
    assert refused(package, detect.DOCX) == "DOCX is a zip bomb: archives nested deeper than 2"
    shallow = _package(
        {"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<w/>", "word/embeddings/Sheet.xlsx": docgen.xlsx()}
    )
    check_input(shallow, detect.DOCX, DEFAULT)


def test_deeply_nested_markup_is_refused_with_its_cause():
    from ud_assets.decoding.formats.markup import MAX_MARKUP_DEPTH

    deep = b"<html><body>" + b"<div>" * 100_000 + b"deep" + b"</div>" * 100_000 + b"</body></html>"
    assert refused(deep, detect.HTML) == f"HTML is nested more than {MAX_MARKUP_DEPTH} elements deep"
    siblings = b"<html><body>" + b"<p>para<br>line</p><img src='x.png'>" * 20_000 + b"</body></html>"
    check_input(siblings, detect.HTML, DEFAULT)  # many elements, shallow: fine
    shallow = b"<html><body>" + b"<div>" * 500 + b"ok" + b"</div>" * 500 + b"</body></html>"
    check_input(shallow, detect.HTML, DEFAULT)
