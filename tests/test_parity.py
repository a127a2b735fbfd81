"""The parity harness (ud_assets/parity.py) on a broad corpus: every supported format generated
here (several encodings, text and scanned PDFs, XHTML, e-mails with attachments, legacy Office made
by LibreOffice from the generated DOCX/PPTX) plus public documents shipped inside installed
packages. The decoder never fails a file bare unstructured decodes, and its texts differ only by a
documented improvement."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests import parity_corpus

# What each generated file must give: the verdict, and the improvement that explains a difference.
EXPECTED = {
    "generated/ebook/book.epub": "same",
    "generated/mail/attachments.eml": "same",  # both decode the PDF and DOCX attachments
    "generated/mail/inline.eml": "same",
    "generated/mail/picture.eml": "ud only",  # unstructured: "The fast strategy is not available for image files"
    "generated/markup/catalog.xml": "same",
    "generated/markup/cp1252.html": "same",
    "generated/markup/ixbrl-named.xml": "improved (kind)",
    "generated/markup/ixbrl.htm": "same",
    "generated/markup/notes.md": "same",
    "generated/markup/notes.rst": "same",
    "generated/markup/page.html": "same",
    "generated/markup/xhtml-named.xml": "improved (kind)",
    "generated/markup/xhtml.html": "same",
    "generated/markup/xml-declared.html": "same",
    "generated/office/book.xls": "same",
    "generated/office/book.xlsm": "same",
    "generated/office/book.xlsx": "same",
    "generated/office/deck.ppt": "same",
    "generated/office/deck.pptm": "same",
    "generated/office/deck.pptx": "same",
    "generated/office/report.doc": "same",
    "generated/office/report.docm": "ud only",  # python-docx: "is not a Word file"
    "generated/office/report.docx": "same",
    "generated/office/report.odt": "same",
    "generated/office/report.rtf": "same",
    "generated/pdf/pictures.pdf": "same",
    "generated/pdf/scanned.pdf": "improved (ocr)",
    "generated/pdf/text.pdf": "same",
    "generated/table/cp1252.csv": "ud only",  # unstructured reads CSV as UTF-8
    "generated/table/one-column.csv": "improved (delimited)",
    "generated/table/people.tsv": "same",
    "generated/table/ragged.csv": "ud only",  # pandas: "Expected 2 fields in line 3, saw 3"
    "generated/table/semicolon.csv": "same",
    "generated/table/utf16.csv": "ud only",  # unstructured reads CSV as UTF-8
    "generated/table/utf32.csv": "ud only",
    "generated/table/utf8-bom.csv": "same",
    "generated/table/utf8.csv": "same",
    "generated/text/cp1252.txt": "improved (encoding)",  # unstructured's guess reads "Naďve"
    "generated/text/utf16.txt": "same",
    "generated/text/utf32.txt": "same",
    "generated/text/utf8-bom.txt": "same",
    "generated/text/utf8.txt": "same",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("parity")
    files = parity_corpus.build(str(folder))
    return folder, files


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_decoder_is_never_worse_than_unstructured(corpus):
    folder, files = corpus
    completed = subprocess.run(
        [sys.executable, "-m", "ud_assets.cli", "parity", "--json", str(folder)],
        capture_output=True,
        text=True,
        timeout=590,
    )
    import json

    rows = json.loads(completed.stdout)
    assert sorted(row["file"] for row in rows) == files
    verdicts = {
        row["file"]: (f"improved ({row['improvement']})" if row["improvement"] else row["verdict"]) for row in rows
    }
    generated = {name: verdict for name, verdict in verdicts.items() if name.startswith("generated/")}
    assert generated == EXPECTED, completed.stderr[-3000:]
    public = {name: verdict for name, verdict in verdicts.items() if name.startswith("public/")}
    assert len(public) == len(parity_corpus.public_files()) >= 10
    assert not [name for name, verdict in public.items() if verdict in ("UD FAILS", "DIFFERS")], public
    # Every file unstructured decodes, the decoder decodes.
    assert all(row["ud"]["ok"] for row in rows if row["unstructured"]["ok"])
    summary = completed.stderr.strip().splitlines()[-1]
    assert summary.endswith("; 0 regressions"), summary
    assert completed.returncode == 0


def _side(ok=True, texts=(), kind="text/plain", error="", **extra):
    from ud_assets.parity import Side

    return Side(ok, error, kind, list(texts), **extra)


def test_compare_names_each_outcome(tmp_path):
    from ud_assets.parity import compare

    path = str(tmp_path / "a.txt")
    ok, other = _side(texts=["A", "B"]), _side(texts=["A", "C"])
    failed = _side(ok=False, error="DecodeError: broken")
    assert compare("a", path, ok, ok).verdict == "same"
    assert compare("a", path, failed, ok).verdict == "ud only"
    assert compare("a", path, ok, failed).verdict == "UD FAILS"
    assert compare("a", path, failed, failed).verdict == "both fail"
    row = compare("a", path, ok, other)
    assert (row.verdict, row.improvement, row.detail, row.regression) == (
        "DIFFERS",
        "",
        "2 vs 2 elements, -1 e.g. 'B', +1 e.g. 'C'",
        True,
    )
    # The same difference with another kind on each side is the detection improvement, when the
    # content shows the decoder's kind (here the XHTML root element).
    (tmp_path / "a.txt").write_text('<html xmlns="http://www.w3.org/1999/xhtml"><body><p>A</p></body></html>')
    row = compare("a", path, _side(texts=["A", "B"], kind="application/xml"), _side(texts=["A", "C"], kind="text/html"))
    assert (row.verdict, row.improvement, row.regression) == ("improved", "kind", False)


def test_parity_exits_non_zero_when_the_decoder_fails_a_file_unstructured_decodes(tmp_path):
    (tmp_path / "notes.txt").write_text("A paragraph long enough to be larger than the limit.\n")
    env = {**__import__("os").environ, "UD_DECODE_MAX_BYTES": "10"}
    completed = subprocess.run(
        [sys.executable, "-m", "ud_assets.cli", "parity", str(tmp_path)], capture_output=True, text=True, env=env
    )
    assert completed.returncode == 1
    lines = completed.stdout.splitlines()
    assert lines[2].startswith("| notes.txt | ok (1, ") and lines[2].endswith(
        " | UD FAILS | document is 53 bytes, above the limit of 10 (UD_DECODE_MAX_BYTES) |"
    )
    assert lines[-1] == "1 files: unstructured decodes 1, ud decodes 0; 1 UD FAILS; 1 regression"
