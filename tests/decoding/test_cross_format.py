"""The same content in every document format gives the same sections (heading strategy).

One Markdown text is written by pandoc as HTML, DOCX, ODT, RST, RTF and EPUB, and by LibreOffice
(from the DOCX) as PDF. Decoded with the `heading` strategy (a PDF's pages split by headings, so
that a one-page PDF can be compared at all), every format must give the sections a reader sees in
the text: each heading with the paragraphs and list items under it, whitespace normalised. A format
that differs is named with its sections and the expected ones.
"""

import re

import pytest

from tests import docgen
from ud_assets.decoding.decoder import decode
from ud_assets.decoding.model import DecoderConfig

CONTENT = """# Annual review

The year began with a plan to grow in every region.

## Revenue

Revenue grew by a fifth while costs fell slightly.

- Customers in new markets bought more products.
- Returns fell for the third year.

## Outlook

The board approved a plan to hire engineers and invest in research.
"""

# What a reader sees, section by section: written out here, not computed by the decoder.
EXPECTED = [
    "Annual review The year began with a plan to grow in every region.",
    "Revenue Revenue grew by a fifth while costs fell slightly. Customers in new markets bought more "
    "products. Returns fell for the third year.",
    "Outlook The board approved a plan to hire engineers and invest in research.",
]


def _documents() -> dict[str, bytes]:
    docx = docgen.pandoc(CONTENT, "docx")
    return {
        "md": CONTENT.encode(),
        "html": docgen.pandoc(CONTENT, "html"),
        "docx": docx,
        "odt": docgen.pandoc(CONTENT, "odt"),
        "rst": docgen.pandoc(CONTENT, "rst"),
        "rtf": docgen.pandoc(CONTENT, "rtf"),
        "epub": docgen.pandoc(CONTENT, "epub"),
        "pdf": docgen.libreoffice(docx, ".docx", "pdf"),
    }


@pytest.fixture(scope="module")
def documents() -> dict[str, bytes]:
    return _documents()


def _normalised(text: str) -> str:
    # List bullets are layout, not content: a PDF keeps the glyph (even mid-line, where its text
    # runs two items together); Markdown and RST write a dash or a star at the line's start.
    text = re.sub(r"(^|\s)[•·]\s+", r"\1", text)
    text = re.sub(r"^\s*[-*]\s+", "", text, flags=re.M)
    return re.sub(r"\s+", " ", text).strip()


@pytest.mark.parametrize("extension", ["md", "html", "docx", "odt", "rst", "rtf", "epub", "pdf"])
def test_every_format_gives_the_same_sections(documents, extension):
    config = DecoderConfig(strategy="fast", section_strategy="heading", section_within_pages=True)
    result = decode(
        documents[extension], document_id=f"review.{extension}", filename=f"review.{extension}", config=config
    )
    sections = [_normalised(s.text) for s in result.sections if s.leaf]
    assert sections == EXPECTED, f"{extension}: {sections}"
