"""PDF: parsed by unstructured (pdfminer, or OCR), its pictures read with pypdfium2 (images/pdf.py)."""

from __future__ import annotations

from .. import detect
from .. import limits as limits_module
from ..limits import Limits
from ..model import DecodeError
from .base import Format


def check(data: bytes, mime: str, limits: Limits) -> None:
    if b"%PDF" not in data[:1024]:  # the header may follow up to 1 KiB of junk
        limits_module.mislabeled(detect.PDF, data)
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise DecodeError("PDF is password-protected") from None
        return  # damaged: pdfminer is more lenient than PDFium, let the parser try
    try:
        pages = len(pdf)
    finally:
        pdf.close()
    limits_module.check_pages(pages, "PDF", limits)


FORMAT = Format(
    name="pdf",
    logic_version="1",
    mime_types=frozenset({detect.PDF}),
    warm_imports={detect.PDF: ("pdf",)},
    page_labels={detect.PDF: "Page"},
    check=check,
)
