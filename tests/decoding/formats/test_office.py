"""Office (formats/office.py): macro-enabled packages read as their plain kind."""

from __future__ import annotations

import pytest

from tests import docgen
from ud_assets.decoding import detect
from ud_assets.decoding.decoder import decode


def texts(result):
    return [e.text for e in result.elements]


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
