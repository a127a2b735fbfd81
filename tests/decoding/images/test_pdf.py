"""PDF images: bytes, order and coordinates in unstructured's fast-strategy space."""

from __future__ import annotations

import io

import pytest

from tests import docgen
from tests.decoding.images.helpers import box, partition, pixels
from ud_assets.decoding import detect
from ud_assets.decoding.images import pdf_images


def test_pdf_images_count_order_types_sizes_pages():
    images = pdf_images(docgen.pdf_with_text_and_image())
    # The PNG is drawn first on page 1, but the JPEG is higher on the page.
    assert [(i.page_number, i.mime_type, i.width, i.height) for i in images] == [
        (1, "image/jpeg", 160, 120),
        (1, "image/png", 64, 48),
        (2, "image/png", 32, 24),
    ]
    assert [i.name for i in images] == ["page-1/image-2", "page-1/image-1", "page-2/image-1"]


def test_pdf_jpeg_keeps_its_embedded_bytes_and_png_its_pixels():
    jpeg, png, png2 = pdf_images(docgen.pdf_with_text_and_image())
    assert jpeg.data == docgen.pdf_jpeg()
    assert png.data.startswith(b"\x89PNG")
    assert pixels(png.data) == pixels(docgen.pdf_png())
    assert pixels(png2.data) == pixels(docgen.pdf_png2())


def test_pdf_coordinates_match_the_drawn_positions():
    images = pdf_images(docgen.pdf_with_text_and_image())
    for image, expected in zip(images, [docgen.PDF_JPEG_BOX, docgen.PDF_PNG_BOX, docgen.PDF_PNG2_BOX]):
        assert box(image) == pytest.approx(expected, abs=1.0)
        assert image.coordinates["system"] == "PixelSpace"
        assert (image.coordinates["layout_width"], image.coordinates["layout_height"]) == docgen.PDF_PAGE_SIZE


def test_pdf_coordinates_follow_unstructured_fast_convention():
    """unstructured's fast strategy measures y from the top of the page, in points."""
    data = docgen.pdf_with_text_and_image()
    elements = partition(data, detect.PDF, strategy="fast")
    heading = next(e for e in elements if e.text == docgen.PDF_HEADING)
    coordinates = heading.metadata.coordinates.to_dict()
    (x0, y0), (_, y1), _, _ = coordinates["points"]
    baseline_x, baseline_from_top = docgen.PDF_HEADING_BASELINE
    assert x0 == pytest.approx(baseline_x, abs=1.0)
    # The 20 pt heading's box straddles its baseline, 72 pt below the top edge.
    assert y0 < baseline_from_top < y1
    assert y1 - y0 == pytest.approx(20.0, abs=2.0)
    assert coordinates["system"] == "PixelSpace"
    jpeg = pdf_images(data)[0]
    assert (coordinates["layout_width"], coordinates["layout_height"]) == (
        jpeg.coordinates["layout_width"],
        jpeg.coordinates["layout_height"],
    )
    assert not any(e.category == "Image" for e in elements)  # fast gives no images of its own


def test_pdf_image_inside_a_form_xobject():
    (image,) = pdf_images(docgen.pdf_with_form_image())
    assert image.data == docgen.pdf_jpeg()
    assert box(image) == pytest.approx(docgen.PDF_FORM_IMAGE_BOX, abs=1.0)


def test_pdf_jpx_image_keeps_its_embedded_bytes():
    (image,) = pdf_images(docgen.pdf_with_jpx_image())
    assert image.data == docgen.jpeg2000()
    assert (image.mime_type, image.width, image.height) == ("image/jp2", 16, 8)
    assert box(image) == pytest.approx(docgen.PDF_JPX_BOX, abs=1.0)


def _reshape_first_page(data: bytes, rotate: int = 0, mediabox=None) -> bytes:
    import pikepdf

    pdf = pikepdf.open(io.BytesIO(data))
    page = pdf.pages[0]
    if rotate:
        page.Rotate = rotate
    if mediabox:
        page.MediaBox = pikepdf.Array(mediabox)
    out = io.BytesIO()
    pdf.save(out, static_id=True)
    return out.getvalue()


def _heading_box(data: bytes) -> tuple[float, float, float, float]:
    # pdfminer spaces out the letters of text it reads vertically (as on a rotated page).
    wanted = docgen.PDF_HEADING.replace(" ", "")
    heading = next(e for e in partition(data, detect.PDF) if e.text.replace(" ", "") == wanted)
    (x0, y0), (_, y1), (x1, _), _ = heading.metadata.coordinates.to_dict()["points"]
    return x0, y0, x1, y1


def test_pdf_coordinates_on_a_rotated_page():
    # Turned 90 degrees clockwise, the 612x792 page shows as 792x612 and the JPEG, 72..216 from
    # the left and 150..258 from the top, moves to 534..642 from the left and 72..216 from the top.
    data = _reshape_first_page(docgen.pdf_with_text_and_image(), rotate=90)
    jpeg = pdf_images(data)[0]
    assert jpeg.data == docgen.pdf_jpeg()
    assert box(jpeg) == pytest.approx((534.0, 72.0, 642.0, 216.0), abs=1.0)
    assert (jpeg.coordinates["layout_width"], jpeg.coordinates["layout_height"]) == (792.0, 612.0)
    # unstructured agrees: the heading, like the JPEG drawn from x=72, now starts 72 pt from the top.
    assert _heading_box(data)[1] == pytest.approx(box(jpeg)[1], abs=1.0)


def test_pdf_coordinates_relative_to_an_offset_mediabox():
    data = _reshape_first_page(docgen.pdf_with_text_and_image(), mediabox=[10, 20, 622, 812])
    jpeg = pdf_images(data)[0]
    x0, top, x1, bottom = docgen.PDF_JPEG_BOX
    # Measured from the MediaBox's corner: 10 pt further left, 20 pt further from the top.
    assert box(jpeg) == pytest.approx((x0 - 10, top + 20, x1 - 10, bottom + 20), abs=1.0)
    heading = _heading_box(data)
    assert heading[0] == pytest.approx(box(jpeg)[0], abs=1.0)  # both drawn from x=72
    assert heading[1] < docgen.PDF_HEADING_BASELINE[1] + 20 < heading[3]
