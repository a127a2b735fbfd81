"""PDF images: every image object of the pages, read with pypdfium2, with coordinates in the
space unstructured's fast strategy gives text elements, so they can be placed among them."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ud_assets.decoding.geometry import Coordinates
from ud_assets.decoding.model import ImageData

from .describe import OCTET, describe_image, image_data

if TYPE_CHECKING:  # imported where it runs; pypdfium2 ships no type hints (its names are Any to mypy)
    import pypdfium2 as pdfium

logger = logging.getLogger(__name__)

# A point of PDF user space to pdfminer's layout space.
_ToLayout = Callable[[float, float], tuple[float, float]]


def pdf_images(data: bytes, pages: range | None = None) -> list[ImageData]:
    """Every image object of every page (or of `pages`, 0-based indexes; form XObjects included),
    in page order, then top to bottom, then left to right.

    JPEG (DCTDecode) and JPEG 2000 (JPXDecode) images keep their embedded bytes; other images
    are their decoded pixels saved as PNG. Coordinates are PDF points from the page's top-left
    corner, exactly as unstructured's fast strategy places text elements (pdfminer's layout
    space: relative to the MediaBox, /Rotate applied).
    """
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    images: list[ImageData] = []
    pdf = pdfium.PdfDocument(data)
    try:
        for page_index in pages if pages is not None else range(len(pdf)):
            page = pdf[page_index]
            try:
                to_layout, layout_width, layout_height = _pdf_layout_transform(page)
                found: list[tuple[tuple[float, float], ImageData]] = []  # (top, left) of each image
                objects = page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE])
                for number, obj in enumerate(objects, start=1):
                    name = f"page-{page_index + 1}/image-{number}"
                    try:
                        image_bytes = _pdf_image_bytes(obj)
                        box = _pdf_image_box(obj, to_layout, layout_height)
                    except (
                        Exception
                    ) as exc:  # pypdfium2 and Pillow fail in many ways on a broken image: it must not lose the others
                        logger.warning("skipping PDF image %s: %s", name, exc)
                        continue
                    if image_bytes is None:
                        continue
                    x0, y0, x1, y1 = box
                    coordinates: Coordinates = {
                        "points": [[x0, y0], [x0, y1], [x1, y1], [x1, y0]],
                        "system": "PixelSpace",
                        "layout_width": layout_width,
                        "layout_height": layout_height,
                    }
                    image = image_data(image_bytes, page_number=page_index + 1, coordinates=coordinates, name=name)
                    found.append(((y0, x0), image))
                found.sort(key=lambda item: item[0])
                images.extend(image for _, image in found)
            finally:
                page.close()
    finally:
        pdf.close()
    return images


def _pdf_image_bytes(obj: pdfium.PdfImage) -> bytes | None:
    """The embedded JPEG / JPEG 2000 as is; otherwise the decoded pixels as a lossless PNG."""
    from PIL import Image

    complex_filters = obj.get_filters(skip_simple=True)
    if complex_filters in (["DCTDecode"], ["JPXDecode"]):
        embedded = bytes(obj.get_data(decode_simple=True))
        if describe_image(embedded)[0] != OCTET:
            return embedded
    width, height = obj.get_px_size()
    if width * height > Image.MAX_IMAGE_PIXELS:
        # Decoding would allocate width*height*4 bytes: treat it as a decompression bomb.
        logger.warning("skipping a %dx%d PDF image: larger than Pillow's MAX_IMAGE_PIXELS", width, height)
        return None
    # The stored pixels, without the page's transform or soft mask.
    bitmap = obj.get_bitmap(render=False)
    image = bitmap.to_pil()
    if image.mode == "RGBX":
        image = image.convert("RGB")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _pdf_layout_transform(page: pdfium.PdfPage) -> tuple[_ToLayout, float, float]:
    """pdfminer's page matrix (MediaBox origin moved to 0,0 and /Rotate applied, as in
    PDFPageInterpreter.process_page) and the resulting layout width and height."""
    x0, y0, x1, y1 = (float(value) for value in page.get_mediabox())
    rotation: int = page.get_rotation() % 360
    if rotation == 90:
        matrix = (0, -1, 1, 0, -y0, x1)
    elif rotation == 180:
        matrix = (-1, 0, 0, -1, x1, y1)
    elif rotation == 270:
        matrix = (0, 1, -1, 0, y1, -x0)
    else:
        matrix = (1, 0, 0, 1, -x0, -y0)

    def to_layout(x: float, y: float) -> tuple[float, float]:
        a, b, c, d, e, f = matrix
        return a * x + c * y + e, b * x + d * y + f

    width, height = (abs(y1 - y0), abs(x1 - x0)) if rotation in (90, 270) else (abs(x1 - x0), abs(y1 - y0))
    return to_layout, float(width), float(height)


def _pdf_image_box(
    obj: pdfium.PdfImage, to_layout: _ToLayout, layout_height: float
) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) of the image with the origin at the top-left of the page."""
    corners = list(obj.get_quad_points())
    # Objects inside form XObjects are placed in their form's space: apply each form's matrix.
    container = obj.container
    while container is not None:
        matrix = container.get_matrix()
        corners = [matrix.on_point(x, y) for x, y in corners]
        container = container.container
    corners = [to_layout(x, y) for x, y in corners]
    xs = [x for x, _ in corners]
    ys = [layout_height - y for _, y in corners]
    return round(min(xs), 3), round(min(ys), 3), round(max(xs), 3), round(max(ys), 3)
