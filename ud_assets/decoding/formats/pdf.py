"""PDF: parsed by unstructured (pdfminer, or OCR), its pictures read with pypdfium2 (images/pdf.py)."""

from __future__ import annotations

from .. import detect
from .base import Format

FORMAT = Format(
    name="pdf",
    logic_version="1",
    mime_types=frozenset({detect.PDF}),
    warm_imports={detect.PDF: ("pdf",)},
    page_labels={detect.PDF: "Page"},
)
