"""PDF: parsed by unstructured (pdfminer, or OCR), its pictures read with pypdfium2 (images/pdf.py).

A large PDF is parsed as page ranges in concurrent children, then merged (Split, below).
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from .. import detect, strategy
from .. import limits as limits_module
from ..images.elements import image_element
from ..limits import Budget, Limits
from ..model import DecodeError, DecoderConfig, Element, ImageData, Partitioned
from .base import Format, Parser, Split

if TYPE_CHECKING:
    from unstructured.documents.elements import Element as UnstructuredElement


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


def has_text(data: bytes, pages_to_check: int = 5) -> bool:
    """Whether one of the first pages has a text layer."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    try:
        for index in range(min(len(pdf), pages_to_check)):
            page = pdf[index]
            textpage = page.get_textpage()
            try:
                if textpage.count_chars() > 0:
                    return True
            finally:
                textpage.close()
                page.close()
        return False
    finally:
        pdf.close()


def choose_strategy(asked: str, data: bytes) -> str:
    """auto on a PDF with a text layer is fast; on a scanned PDF, ocr_only (tesseract, installed locally)."""
    if asked == "auto":
        return "fast" if has_text(data) else "ocr_only"
    return asked


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


# -- a large PDF parsed as page ranges, concurrently -------------------------------------------
# unstructured's fast strategy reads a PDF page by page (pdfminer); only the element hierarchy
# (parent_id) spans pages. So page ranges parsed apart, numbered from their first page and put
# back in order with the hierarchy linked over the whole document, give exactly the elements of
# one pass (tested: tests/decoding/formats/test_pdf.py and tests/decoding/test_isolation.py), in
# about 1/n of the time on n cores.

MIN_PAGES_PER_PART = 16  # below this a range's fork and sub-document cost more than they save
SPLIT_MIN_BYTES = 16 * 1024  # smaller PDFs (a page or a few) are parsed whole without asking


@dataclass
class PdfPlan:
    strategy: str
    notes: list[str]
    pages: int  # 0 when the page tree could not be read: parsed whole, failing with unstructured's own cause


@dataclass
class PdfPart:
    elements: list[Element]  # unstructured's elements of the range, without pictures
    images: list[ImageData]  # the range's pictures, found in the whole document


def plan(
    data: bytes, mime: str, config: DecoderConfig, filename: str | None = None, *, budget: Budget | None = None
) -> PdfPlan:
    """The strategy a PDF would be parsed with and its page count (opens the PDF: run it in a child)."""
    import pypdfium2 as pdfium

    chosen = strategy.resolve(choose_strategy, config, data)
    notes = strategy.notes(config, chosen)
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError:  # not loadable: the whole parse reports the cause
        return PdfPlan(chosen, notes, 0)
    try:
        return PdfPlan(chosen, notes, len(pdf))
    finally:
        pdf.close()


def page_ranges(plan: PdfPlan, config: DecoderConfig, workers: int) -> list[range]:
    """0-based page ranges to parse concurrently, or [] to parse the PDF whole.

    Only the fast strategy reads pages independently; automatic language detection looks at the
    whole document's text, so it keeps the document whole too."""
    if plan.strategy != "fast" or "auto" in config.languages:
        return []
    parts = min(workers, plan.pages // MIN_PAGES_PER_PART)
    if parts < 2:
        return []
    bounds = [round(i * plan.pages / parts) for i in range(parts + 1)]
    return [range(start, end) for start, end in itertools.pairwise(bounds)]


def partition_pages(
    parser: Parser, data: bytes, mime: str, config: DecoderConfig, filename: str | None, plan: PdfPlan, pages: range
) -> PdfPart:
    """unstructured's elements of some pages of a PDF, numbered as in the whole document."""
    from ..images.pdf import pdf_images

    with parser.parsing(mime):
        part = _subset(data, pages)
        elements = parser.partition(part, mime, config, plan.strategy, filename, pages.start + 1)
        return PdfPart(elements, pdf_images(data, pages))


def merge_parts(parts: list[PdfPart], plan: PdfPlan) -> Partitioned:
    """The parts' elements in page order, linked and with their pictures, as one pass gives them."""
    elements = [element for part in parts for element in part.elements]
    _link_hierarchy(elements)
    found = [image for part in parts for image in part.images]
    return Partitioned(place_images(elements, found), plan.strategy, list(plan.notes))


def _subset(data: bytes, pages: range) -> bytes:
    import pypdfium2 as pdfium

    source, subset = pdfium.PdfDocument(data), pdfium.PdfDocument.new()
    try:
        subset.import_pages(source, list(pages))
        buffer = io.BytesIO()
        subset.save(buffer)
        return buffer.getvalue()
    finally:
        subset.close()
        source.close()


def _link_hierarchy(elements: list[Element]) -> None:
    """parent_id over the whole document with unstructured's own rule (each part saw its pages only)."""
    from types import SimpleNamespace

    from unstructured.partition.common.metadata import set_element_hierarchy

    views = [
        SimpleNamespace(
            id=e.element_id,
            category=e.category,
            metadata=SimpleNamespace(parent_id=None, category_depth=e.category_depth),
        )
        for e in elements
    ]
    # Stand-ins with just what the rule reads (id, category, metadata.parent_id/category_depth):
    # real elements would cost several times more on a long PDF.
    set_element_hierarchy(cast("list[UnstructuredElement]", views))
    for element, view in zip(elements, views):
        element.parent_id = view.metadata.parent_id


def warm_document() -> bytes:
    """A one-page PDF with a text layer, written by hand (no PDF writer is a dependency): the
    warm-up parses it so that children start with the PDF partitioner exercised."""
    stream = b"BT /F1 12 Tf 72 720 Td (Warm-up text for the PDF partitioner.) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


FORMAT = Format(
    name="pdf",
    logic_version="1",
    mime_types=frozenset({detect.PDF}),
    warm_imports={detect.PDF: ("pdf",)},
    warm_documents={detect.PDF: warm_document()},
    page_labels={detect.PDF: "Page"},
    check=check,
    add_images=add_images,
    strategy=choose_strategy,
    split=Split(min_bytes=SPLIT_MIN_BYTES, plan=plan, ranges=page_ranges, part=partition_pages, merge=merge_parts),
)
