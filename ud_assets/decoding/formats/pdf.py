"""PDF: parsed by unstructured (pdfminer, or OCR), its pictures read with pypdfium2 (images/pdf.py)."""

from __future__ import annotations

from .. import detect
from .. import limits as limits_module
from ..images.elements import image_element
from ..limits import Limits
from ..model import DecodeError, Element, ImageData
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


def _top(element: Element) -> float:
    points = (element.coordinates.get("points") if element.coordinates else None) or []
    return min((p[1] for p in points), default=float("inf"))


def place_images(elements: list[Element], found: list[ImageData]) -> list[Element]:
    """PDF pictures placed among their page's elements, top to bottom."""
    if not found:
        return elements
    by_page: dict[int, list[Element]] = {}
    for index, image in enumerate(found):
        by_page.setdefault(image.page_number or 1, []).append(image_element(image, f"pdf|{index}"))
    merged: list[Element] = []
    pages = sorted({el.page_number or 1 for el in elements} | set(by_page))
    for page in pages:
        page_elements = [el for el in elements if (el.page_number or 1) == page]
        for picture in by_page.get(page, []):
            top = _top(picture)
            position = next((i for i, el in enumerate(page_elements) if _top(el) > top), len(page_elements))
            page_elements.insert(position, picture)
        merged.extend(page_elements)
    return merged


def add_images(elements: list[Element], data: bytes) -> list[Element]:
    """Every image object of the PDF (pypdfium2), placed among its page's elements."""
    from ..images.pdf import pdf_images

    return place_images(elements, pdf_images(data))


FORMAT = Format(
    name="pdf",
    logic_version="1",
    mime_types=frozenset({detect.PDF}),
    warm_imports={detect.PDF: ("pdf",)},
    page_labels={detect.PDF: "Page"},
    check=check,
    add_images=add_images,
    ocr=True,
)
