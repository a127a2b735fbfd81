"""`ud parity` over the public corpus (tests/corpus/public, SOURCES.md there): documents other
projects made (Apache Tika, Docling, pandoc, python-docx, python-pptx, pdf.js, unstructured), run
the way a user runs it: the `ud` console script, a fresh process with a plain environment (no
pytest, nothing of tests/ importable). Issue #25: no regression against bare unstructured, every
difference named by an improvement of `IMPROVEMENTS`, every element offset exact, and each file's
verdict as recorded here, so that any change of a verdict (better or worse) is seen and recorded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "public"
BIN = Path(sys.executable).parent  # the project's environment: the `ud` console script

# Regressions found on this corpus and not fixed yet: file -> the cause. `ud parity` counts them;
# each must stay exactly as recorded (when one is fixed, move its file to EXPECTED).
KNOWN_REGRESSIONS: dict[str, str] = {}  # none: the four this corpus found are fixed (see FIXED)

# Regressions this corpus found, fixed; they stay "same" (a test per rule in tests/decoding).
FIXED = {
    # A WordPerfect 4.2 document named .doc: a DOC without the OLE2 header was refused; bytes of no
    # kind we know now go to LibreOffice, which reads them by their content (limits.check_input).
    "office/testWordPerfect_42.doc": "same",
    # pandoc's RTF output without the {\rtf1 header was read as text, control words and all; an
    # .rtf whose text opens with "{\\" is RTF (detect.detect_mime).
    "office/tables.rtf": "same",
    # Plain text named .txt with a few tags was read as HTML (libmagic's guess narrowed the .txt's
    # text/plain), losing words in angle brackets; a .txt is now plain text.
    "text/ansi-test.txt": "same",
    "text/testsuite.txt": "same",
}

# Each file's verdict: same | improved (NAME) | ud only | both fail (and the known regressions).
EXPECTED = {
    "LICENSES/Apache-2.0.txt": "same",
    "LICENSES/GPL-2.0-or-later-pandoc.txt": "same",
    "LICENSES/MIT-docling.txt": "same",
    "LICENSES/MIT-python-docx.txt": "same",
    "LICENSES/MIT-python-pptx.txt": "same",
    "LICENSES/NOTICE-apache-tika.txt": "same",
    "SOURCES.md": "same",
    "ebook/epub_purvis_poetry.epub": "same",
    "ebook/testEPUB.epub": "same",
    "ebook/testEPUB_xml_ext.epub": "same",
    "mail/eml_simple.eml": "same",
    "mail/eml_with_attachment.eml": "same",
    "mail/test-incremental-updates.eml": "same",
    "mail/testEML_embedded_xhtml_and_img.eml": "ud only",  # unstructured: "The fast strategy is not available for image files"
    "mail/testEmailWithPNGAtt.eml": "ud only",  # the same (a PNG attachment)
    "mail/testGroupWiseEml.eml": "same",
    "mail/testLotusEml.eml": "same",
    "mail/testRFC822_dkim.eml": "same",
    "mail/testRFC822_multipart_attachments.eml": "same",
    "mail/testRFC822_x-.eml": "same",
    "mail/testThunderbirdEml.eml": "same",
    "mail/unstructured-mime-attach-mp3.eml": "ud only",  # unstructured: Whisper cannot be loaded offline for the MP3
    "markup/big-preamble.html": "same",
    "markup/escaped_characters.md": "same",
    "markup/example_03.html": "same",
    "markup/html-reader.html": "same",
    "markup/html_rich_table_cells.html": "same",
    "markup/ipa20200022300.xml": "same",
    "markup/jats-reader.xml": "both fail",  # both: XMLSyntaxError, xlink:href redefined
    "markup/nested.md": "same",
    "markup/resume.html": "same",
    "markup/rst-reader.rst": "same",
    "markup/s5-fancy.html": "same",
    "markup/tables.rst": "same",
    "markup/testArabicMisleadingCharset.html": "same",
    "markup/testBrokenHTMLContainingRFC822.html": "same",
    "markup/testEXCEL2003.xml": "same",
    "markup/testHTML.html": "same",
    "markup/testHTMLNoisyMetaEncoding_1.html": "same",
    "markup/testHTML_charset_utf16le.html": "same",
    "markup/testHTML_utf8.html": "same",
    "markup/testMARKDOWN.md": "same",
    "markup/testTEI.xml": "same",
    "markup/testXHTML.html": "same",
    "markup/testXML.xml": "same",
    "markup/testXXE.xml": "same",
    "markup/test_ignore_IBM420.html": "ud only",  # unstructured: "Unable to determine file encoding"
    "markup/undeclared_entity.xml": "both fail",  # both: XMLSyntaxError
    "markup/wiki.md": "same",
    "markup/wiki_duck.html": "same",
    "markup/writer.markdown": "same",
    "markup/writer.rst": "same",
    "office/CVLKRA-KYC_Download_File_Structure_V3.1.xlsx": "same",
    "office/Strict.docx": "both fail",  # both: python-docx has no Strict OOXML relationship
    "office/equations.docx": "same",
    "office/footnotes.docx": "same",
    "office/greek_heading_styles.doc": "same",
    "office/hdr-header-footer.docx": "same",
    "office/i18n_blocks.docx": "same",
    "office/jxl.xls": "same",
    "office/legacy_sample.doc": "same",
    "office/legacy_sample.ppt": "same",
    "office/legacy_sample.xls": "same",
    "office/lorem_ipsum.docx": "same",
    "office/no-slides.pptx": "same",
    "office/par-hyperlinks.docx": "same",
    "office/password.xls": "both fail",  # both: password-protected
    "office/powerpoint_bad_text.pptx": "same",
    "office/powerpoint_sample.pptx": "same",
    "office/shp-embedded-xlsx.xlsx": "same",
    "office/shp-groupshape.pptx": "same",
    "office/sld-notes.pptx": "same",
    "office/table.odt": "same",
    "office/tables.docx": "same",
    "office/tbl-cell.pptx": "same",
    "office/tbl-having-tables.docx": "same",
    "office/test.doc": "same",
    "office/test.docx": "same",
    "office/test.pptx": "same",
    "office/testComment.doc": "same",
    "office/testComment.docx": "same",
    "office/testComment.ppt": "same",
    "office/testControlCharacters.doc": "same",
    "office/testEXCEL-formats.xls": "same",
    "office/testEXCEL-formats.xlsx": "same",
    "office/testEXCEL.strict.xlsx": "same",
    "office/testEXCEL.xls": "same",
    "office/testEXCEL.xlsx": "same",
    "office/testEXCEL_4.xls": "both fail",  # both: Excel 4 / 5 / 95 workbooks are not read
    "office/testEXCEL_5.xls": "both fail",
    "office/testEXCEL_95.xls": "both fail",
    "office/testEXCEL_big_numbers.xls": "same",
    "office/testEXCEL_dateFormats.xls": "same",
    "office/testEXCEL_dateFormats.xlsx": "same",
    "office/testEXCEL_macro.xlsm": "same",
    "office/testEXCEL_phonetic.xls": "same",
    "office/testEXCEL_protected_passtika.xls": "both fail",  # both: password-protected
    "office/testEXCEL_protected_passtika.xlsx": "both fail",  # both: password-protected
    "office/testFooter.odt": "same",
    "office/testODFwithOOo3.odt": "same",
    "office/testODTEncrypted.odt": "both fail",  # both: password-protected
    "office/testODTnotaZipFile.odt": "same",
    "office/testOpenOffice2.odt": "same",
    "office/testOptionalHyphen.ppt": "same",
    "office/testPPT.ppt": "same",
    "office/testPPT.pptm": "same",
    "office/testPPT.pptx": "same",
    "office/testPPT_macros.pptm": "same",
    "office/testPPT_masterText.ppt": "same",
    "office/testPPT_masterText.pptx": "same",
    "office/testPPT_various.ppt": "same",
    "office/testPPT_various.pptx": "same",
    "office/testRTF-ms932.rtf": "same",
    "office/testRTF.rtf": "same",
    "office/testRTFCorruptListOverride.rtf": "same",
    "office/testRTFHyperlink.rtf": "same",
    "office/testRTFInvalidUnicode.rtf": "same",
    "office/testRTFJapanese.rtf": "same",
    "office/testRTFListMicrosoftWord.rtf": "same",
    "office/testRTFTableCellSeparation.rtf": "same",
    "office/testRTFUmlautSpaces.rtf": "same",
    "office/testRTFWindowsCodepage1250.rtf": "same",
    "office/testRTFWord2010CzechCharacters.rtf": "same",
    "office/testWORD.doc": "same",
    "office/testWORD.docx": "same",
    "office/testWORD6.doc": "same",
    "office/testWORD_features.doc": "same",
    "office/testWORD_macros.docm": "ud only",  # python-docx: "is not a Word file" (macro-enabled content type)
    "office/testWORD_numbered_list.doc": "same",
    "office/testWORD_numbered_list.docx": "same",
    "office/testWORD_protected_passtika.docx": "both fail",  # both: password-protected
    "office/testWORD_tabular_symbol.doc": "same",
    "office/testWORD_text_box.docx": "same",
    "office/testWORD_truncated.docx": "both fail",  # both: not a readable ZIP
    "office/testWORD_various.doc": "same",
    "office/testWORD_various.docx": "same",
    "office/text_document_01.odt": "same",
    "office/track_changes_deletion.docx": "same",
    "office/unicode.docx": "same",
    "office/unicode.odt": "same",
    "office/unit_test_headers_numbered.docx": "same",
    "office/unstructured-fake-power-point.ppt": "same",
    "office/unstructured-fake.doc": "same",
    "office/word_tables.docx": "same",
    "office/xlsx_01.xlsx": "same",
    "office/xlsx_02_sample_sales_data.xlsm": "same",
    "office/xlsx_06_edge_cases_.xlsx": "same",
    "pdf/ArabicCIDTrueType.pdf": "same",
    "pdf/TrueType_without_cmap.pdf": "same",
    "pdf/alphatrans.pdf": "same",
    "pdf/bad-PageLabels.pdf": "same",
    "pdf/bitmap-p32-eof.pdf": "same",
    "pdf/code_and_formula.pdf": "same",
    "pdf/empty.pdf": "same",
    "pdf/empty_protected.pdf": "same",
    "pdf/encrypted-attachment.pdf": "same",
    "pdf/hello_world_rotated.pdf": "same",
    "pdf/helloworld-bad.pdf": "same",
    "pdf/invisible_text_layer.pdf": "same",
    "pdf/ocr_test.pdf": "improved (ocr)",
    "pdf/ocr_test_rotated_90.pdf": "improved (ocr)",
    "pdf/pdfjsbad1586.pdf": "same",
    "pdf/right_to_left_01.pdf": "same",
    "pdf/scan-bad.pdf": "same",
    "pdf/testAnnotations.pdf": "same",
    "pdf/testContentStreamSpaceGlyphs.pdf": "same",
    "pdf/testExtraSpaces.pdf": "same",
    "pdf/testOCR.pdf": "improved (ocr)",  # no text layer: the decoder OCRs it
    "pdf/testOptionalHyphen.pdf": "same",
    "pdf/testOverlappingText.pdf": "same",
    "pdf/testPDF.pdf": "same",
    "pdf/testPDFTwoTextBoxes.pdf": "same",
    "pdf/testPDF_JBIG2.pdf": "same",
    "pdf/testPDF_Version.11.x.PDFA-1b.pdf": "same",
    "pdf/testPDF_Version.4.x.pdf": "same",
    "pdf/testPDF_acroform3.pdf": "same",
    "pdf/testPDF_bad_page_303226.pdf": "same",
    "pdf/testPDF_incrementalUpdates.pdf": "same",
    "pdf/testPDF_malformedXFA.pdf": "same",
    "pdf/testPDF_no_extract_no_accessibility_owner_empty.pdf": "same",
    "pdf/testPDF_protected.pdf": "improved (complex-pdf)",  # unstructured: is_pdf_too_complex (page 39) -> 0 elements
    "pdf/testPDF_rotated.pdf": "same",
    "pdf/testPageNumber.pdf": "same",
    "pdf/testUnicodePassword.pdf": "improved (password)",  # unstructured returns 0 elements; ud: "PDF is password-protected"
    "pdf/tracemonkey_a11y.pdf": "same",
    "pdf/unstructured-a1977-backus-p21.pdf": "same",
    "pdf/xref_command_missing.pdf": "same",
    "table/01.csv": "same",
    "table/csv-comma-in-cell.csv": "same",
    "table/csv-comma.csv": "same",
    "table/csv-inconsistent-header.csv": "ud only",  # pandas: "Expected 3 fields in line 2, saw 4"
    "table/csv-pipe.csv": "same",
    "table/csv-semicolon.csv": "same",
    "table/csv-tab.csv": "same",
    "table/csv-too-many-columns.csv": "ud only",  # pandas: "Expected 4 fields in line 3, saw 5"
    "table/foo.csv": "same",
    "table/test-columnar.csv": "same",
    "table/testCSV.csv": "same",
    "text/english.cp500.txt": "same",
    "text/french.txt": "same",
    "text/multi-language.txt": "improved (encoding)",  # cp1252 text
    "text/russian.cp866.txt": "same",
    "text/testRFC822_simple_inline_body.txt": "same",
    "text/testTXTNonASCIIUTF8.txt": "same",
    "text/testTXT_win-1252.txt": "same",
    **KNOWN_REGRESSIONS,
    **FIXED,
}


def plain_env(tmp_path: Path) -> dict[str, str]:
    """What a person's shell gives: PATH with the project's environment, a HOME, no PYTHONPATH."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "DO_NOT_TRACK": "true",
        "UD_HOME": str(tmp_path / "ud"),
    }


def verdict(row: dict) -> str:
    return f"improved ({row['improvement']})" if row["improvement"] else row["verdict"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_ud_parity_over_the_public_corpus(tmp_path, record_property):
    done = subprocess.run(
        [str(BIN / "ud"), "parity", "--json", str(CORPUS)],
        env=plain_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=880,
        check=False,
    )
    rows = json.loads(done.stdout)
    offsets, summary = done.stderr.strip().splitlines()[-2:]
    record_property("summary", summary)
    print(f"\n{offsets}\n{summary}")
    verdicts = {row["file"]: verdict(row) for row in rows}
    # Every file of the corpus has a row, and every row the verdict recorded for it.
    assert sorted(verdicts) == sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file())
    changed = {name: (EXPECTED.get(name), got) for name, got in verdicts.items() if EXPECTED.get(name) != got}
    assert not changed, f"verdicts changed (expected, now): {changed}\n{done.stderr[-3000:]}"
    # No regression but the known ones; every other difference is a listed improvement.
    regressions = {
        row["file"]: row["detail"] for row in rows if row["verdict"] in ("UD FAILS", "DIFFERS", "BAD OFFSETS")
    }
    assert sorted(regressions) == sorted(KNOWN_REGRESSIONS), regressions
    from ud_assets.parity import IMPROVEMENTS

    for row in rows:
        if row["verdict"] == "improved":
            assert row["improvement"] in IMPROVEMENTS, row["file"]
    # Every element offset of every file the decoder decodes slices exactly its text.
    assert not [row["file"] for row in rows if row["ud"]["offset_errors"]]
    decoded = sum(row["ud"]["ok"] for row in rows)
    assert offsets.startswith("element offsets: exact for all ") and offsets.endswith(
        f" elements of the {decoded} files ud decodes"
    ), offsets
    assert summary.endswith(f"; {len(KNOWN_REGRESSIONS)} regression{'s' if len(KNOWN_REGRESSIONS) != 1 else ''}")
    assert done.returncode == (1 if KNOWN_REGRESSIONS else 0), done.stderr[-3000:]
