import codecs

import pytest

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
