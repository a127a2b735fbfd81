"""Images from documents without any ML model: PDF, DOCX, PPTX, HTML, Markdown, EPUB, e-mail."""

from __future__ import annotations

import email
import io
import logging
import struct
import urllib.parse
import zlib
from email import policy

import pytest

from tests import docgen
from ud_assets.decoding import detect
from ud_assets.decoding.images import (
    HTML_IMAGE_KWARGS,
    DocxPicturePartitioner,
    PptxPicturePartitioner,
    _docx_picture_rel_ids,
    describe_image,
    email_images,
    epub_image_for_url,
    epub_images,
    image_from_element,
    install_picture_partitioners,
    parse_data_uri,
    pdf_images,
    split_email,
)


def partition(data: bytes, content_type: str, **kwargs):
    from unstructured.partition.auto import partition as unstructured_partition

    kwargs.setdefault("strategy", "fast")
    return unstructured_partition(
        file=io.BytesIO(data),
        content_type=content_type,
        metadata_filename="doc" + detect.SUFFIXES.get(content_type, ""),
        languages=["eng"],
        **kwargs,
    )


def pixels(data: bytes) -> bytes:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.convert("RGB").tobytes()


def box(image) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) of an ImageData's top-left-origin coordinates."""
    (x0, y0), (_, y1), (x1, _), _ = image.coordinates["points"]
    return x0, y0, x1, y1


def texts_around(elements, index: int) -> tuple[str, str]:
    return elements[index - 1].text, elements[index + 1].text


# -- describe_image ------------------------------------------------------------------------------


def test_describe_image_sniffs_real_formats():
    from PIL import Image

    tiff = io.BytesIO()
    Image.new("L", (7, 5)).save(tiff, format="TIFF")
    assert describe_image(docgen.png(40, 30)) == ("image/png", 40, 30)
    assert describe_image(docgen.jpeg(12, 34)) == ("image/jpeg", 12, 34)
    assert describe_image(docgen.gif(8, 9)) == ("image/gif", 8, 9)
    assert describe_image(tiff.getvalue()) == ("image/tiff", 7, 5)
    assert describe_image(docgen.jpeg2000(16, 8)) == ("image/jp2", 16, 8)


@pytest.mark.parametrize("junk", [b"", b"not an image at all" * 50, b"(\x00\x00\x00" + b"\x01" * 60, b"\x89PNG\r\n\x1a\n" + b"\x00" * 10, b"%PDF-1.4\n"])
def test_describe_image_on_junk(junk):
    assert describe_image(junk) == ("application/octet-stream", None, None)


def test_describe_image_survives_a_decompression_bomb():
    # A valid PNG header claiming 100000 x 100000 pixels: Pillow refuses to open it.
    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    ihdr = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0)
    bomb = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")
    assert describe_image(bomb) == ("image/png", None, None)


# -- PDF -----------------------------------------------------------------------------------------


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
    (x0, y0), (_, y1), (x1, _), _ = coordinates["points"]
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


# -- DOCX and PPTX through partition() -----------------------------------------------------------


@pytest.fixture(scope="module")
def pictures_installed():
    install_picture_partitioners()
    install_picture_partitioners()  # idempotent


def test_install_picture_partitioners_registers_both(pictures_installed):
    from unstructured.partition.docx import DocxPartitionerOptions
    from unstructured.partition.pptx import PptxPartitionerOptions

    assert DocxPartitionerOptions._PicturePartitionerCls is DocxPicturePartitioner
    assert PptxPartitionerOptions._PicturePartitionerCls is PptxPicturePartitioner


@pytest.mark.parametrize("strategy", ["fast", "auto"])
def test_docx_picture_in_document_order(pictures_installed, strategy):
    elements = partition(docgen.docx_with_headings_table_picture(), detect.DOCX, strategy=strategy)
    assert [e.category for e in elements] == [
        "Title", "NarrativeText", "Title", "NarrativeText", "Table", "Image", "Title", "NarrativeText",
    ]
    index = [e.category for e in elements].index("Image")
    assert elements[index - 1].text.startswith("Part Weight")
    assert elements[index + 1].text == "Conclusion"
    image = image_from_element(elements[index])
    assert image.data == docgen.docx_picture()
    assert (image.mime_type, image.width, image.height) == ("image/png", 48, 36)
    assert image.name == docgen.DOCX_PICTURE_NAME
    assert image.element_id == elements[index].id
    assert image.coordinates is None and image.page_number is None
    assert elements[index].metadata.image_mime_type == "image/png"


def test_docx_alternate_content_fallback_is_not_a_second_picture():
    from lxml import etree

    xml = (
        '<w:p xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
        ' xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
        ' xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
        ' xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
        ' xmlns:v="urn:schemas-microsoft-com:vml"><w:r>'
        '<mc:AlternateContent><mc:Choice Requires="wps"><a:blip r:embed="rId7"/></mc:Choice>'
        '<mc:Fallback><v:imagedata r:id="rId7"/></mc:Fallback></mc:AlternateContent>'
        '<v:imagedata r:id="rId9"/><a:blip r:link="rId11"/></w:r></w:p>'
    )
    assert _docx_picture_rel_ids(etree.fromstring(xml)) == ["rId7", "rId9"]


@pytest.mark.parametrize("strategy", ["fast", "auto"])
def test_pptx_picture_in_slide_order_with_position(pictures_installed, strategy):
    elements = partition(docgen.pptx_with_picture(), detect.PPTX, strategy=strategy)
    categories = [e.category for e in elements]
    assert categories.count("Image") == 1
    index = categories.index("Image")
    assert texts_around(elements, index) == ("The chart shows the results.", "Footnote below the picture.")
    image = image_from_element(elements[index])
    assert image.data == docgen.pptx_picture()
    assert (image.mime_type, image.width, image.height, image.page_number) == ("image/jpeg", 64, 48, 2)
    assert image.name == docgen.PPTX_PICTURE_NAME
    assert image.element_id == elements[index].id
    assert box(image) == pytest.approx(docgen.PPTX_PICTURE_BOX_PT, abs=0.01)
    assert (image.coordinates["layout_width"], image.coordinates["layout_height"]) == docgen.PPTX_SLIDE_SIZE_PT
    assert image.coordinates["system"] == "PixelSpace"


def test_pptx_picture_in_a_moved_group(pictures_installed):
    elements = partition(docgen.pptx_with_grouped_picture(), detect.PPTX)
    (image,) = [image_from_element(e) for e in elements if e.category == "Image"]
    assert box(image) == pytest.approx(docgen.PPTX_GROUPED_BOX_PT, abs=0.01)


# -- HTML and Markdown ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, content_type",
    [(docgen.html_with_data_uri_image(), detect.HTML), (docgen.markdown_with_data_uri_image(), detect.MARKDOWN)],
    ids=["html", "markdown"],
)
@pytest.mark.parametrize("strategy", ["fast", "auto"])
def test_data_uri_image_bytes_with_html_image_kwargs(data, content_type, strategy):
    elements = partition(data, content_type, strategy=strategy, **HTML_IMAGE_KWARGS)
    index = next(i for i, e in enumerate(elements) if e.category == "Image" and e.text == "blue box")
    assert texts_around(elements, index) == ("Before the picture.", "After the picture.")
    image = image_from_element(elements[index])
    assert image.data == docgen.data_uri_picture()
    assert (image.mime_type, image.width, image.height) == ("image/png", 20, 10)
    assert image.element_id == elements[index].id


def test_data_uri_bytes_are_dropped_without_html_image_kwargs():
    elements = partition(docgen.html_with_data_uri_image(), detect.HTML)
    images = [e for e in elements if e.category == "Image"]
    assert [e.text for e in images] == ["blue box", "remote"]
    assert images[0].metadata.image_base64 is None and images[0].metadata.image_url is None
    assert image_from_element(images[0]) is None
    # A remote image keeps its URL but carries no bytes.
    assert images[1].metadata.image_url == "https://example.com/remote.png"
    assert image_from_element(images[1]) is None


def test_non_base64_data_uri_arrives_as_image_url():
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>'
    html = f'<html><body><p>Icon:</p><img src="data:image/svg+xml,{urllib.parse.quote(svg)}"></body></html>'
    elements = partition(html.encode(), detect.HTML, **HTML_IMAGE_KWARGS)
    (element,) = [e for e in elements if e.category == "Image"]
    assert element.metadata.image_url.startswith("data:image/svg+xml,")
    image = image_from_element(element)
    assert image.data == svg.encode()
    assert image.mime_type == "image/svg+xml"


def test_parse_data_uri():
    assert parse_data_uri("data:image/png;base64,AAEC") == ("image/png", b"\x00\x01\x02")
    assert parse_data_uri("data:image/png;base64,AA\n EC") == ("image/png", b"\x00\x01\x02")
    assert parse_data_uri("data:,a%20b") == ("text/plain", b"a b")
    assert parse_data_uri("data:image/png;base64,@@@") is None
    assert parse_data_uri("https://example.com/x.png") is None


# -- EPUB ----------------------------------------------------------------------------------------


def test_epub_images_in_spine_then_manifest_order():
    images = epub_images(docgen.epub_with_image())
    expected = docgen.epub_images_bytes()
    assert [i.name for i in images] == [
        "OEBPS/images/photo.jpg",  # first shown in chapter 1
        "OEBPS/images/figure.png",
        "OEBPS/images/cover.gif",  # only in the manifest
    ]
    assert [(i.mime_type, i.width, i.height) for i in images] == [
        ("image/jpeg", 50, 40),
        ("image/png", 30, 20),
        ("image/gif", 8, 8),
    ]
    assert all(i.data == expected[i.name] for i in images)


def test_epub_image_elements_point_at_zip_images():
    data = docgen.epub_with_image()
    images = epub_images(data)
    elements = partition(data, detect.EPUB)
    urls = [e.metadata.image_url for e in elements if e.category == "Image"]
    assert urls == ["images/cover.gif", "images/photo.jpg", "images/figure.png", "images/photo.jpg"]
    assert [epub_image_for_url(images, url).name for url in urls] == [
        "OEBPS/images/cover.gif",
        "OEBPS/images/photo.jpg",
        "OEBPS/images/figure.png",
        "OEBPS/images/photo.jpg",
    ]
    assert epub_image_for_url(images, "images/missing.png") is None


# -- E-mail --------------------------------------------------------------------------------------


def test_split_email_separates_body_and_attachments():
    parts = split_email(docgen.eml_with_image_attachment())
    assert [(a.filename, a.mime_type, a.declared_type, a.inline) for a in parts.attachments] == [
        (docgen.EML_IMAGE_NAME, "image/png", "image/png", False),
        (docgen.EML_TEXT_NAME, "text/plain", "text/plain", False),
    ]
    assert parts.attachments[0].data == docgen.eml_picture()
    assert parts.attachments[1].data == docgen.EML_TEXT.encode()
    body = email.message_from_bytes(parts.body, policy=policy.default)
    assert list(body.iter_attachments()) == []
    assert body.get_body(("plain",)).get_content() == docgen.EML_BODY
    assert body["Subject"] == "Chart" and body["Message-ID"] == "<chart-1@example.com>"


def test_email_images():
    (image,) = email_images(split_email(docgen.eml_with_image_attachment()))
    assert image.data == docgen.eml_picture()
    assert (image.mime_type, image.width, image.height, image.name) == ("image/png", 24, 16, docgen.EML_IMAGE_NAME)


def test_split_email_finds_inline_images_by_content_id():
    parts = split_email(docgen.eml_with_inline_image())
    (attachment,) = parts.attachments
    assert (attachment.content_id, attachment.inline, attachment.mime_type) == (docgen.EML_INLINE_CID, True, "image/png")
    (image,) = email_images(parts)
    assert image.name == f"cid:{docgen.EML_INLINE_CID}"
    assert image.data == docgen.eml_picture()
    body = email.message_from_bytes(parts.body, policy=policy.default)
    assert "Our logo is below." in body.get_body(("html",)).get_content()
    assert body.get_body(("plain",)).get_content() == "Our logo is below.\n"
    assert [p.get_content_type() for p in body.walk() if not p.is_multipart()] == ["text/plain", "text/html"]


def test_split_email_single_part_attachment_message():
    message = email.message.EmailMessage()
    message["Subject"] = "Just a picture"
    message.set_content(docgen.eml_picture(), maintype="image", subtype="png", filename="pic.png")
    parts = split_email(message.as_bytes())
    assert [(a.filename, a.mime_type) for a in parts.attachments] == [("pic.png", "image/png")]
    body = email.message_from_bytes(parts.body, policy=policy.default)
    assert body["Subject"] == "Just a picture" and body.get_content_type() == "text/plain"


class HiResReached(RuntimeError):
    """Raised by the spy standing in for unstructured's hi_res (layout model) path."""


@pytest.fixture
def hi_res_spy(monkeypatch):
    """Make unstructured's hi_res entry point raise instead of loading a layout model."""
    import unstructured.partition.pdf as unstructured_pdf

    calls = []

    def spy(*args, **kwargs):
        calls.append(kwargs.get("is_image"))
        raise HiResReached("hi_res reached")

    monkeypatch.setattr(unstructured_pdf, "_partition_pdf_or_image_local", spy)
    return calls


def test_original_message_with_image_attachment_reaches_hi_res(hi_res_spy):
    with pytest.raises(HiResReached):
        partition(docgen.eml_with_image_attachment(), detect.EML, strategy="auto")
    assert hi_res_spy == [True]  # the PNG attachment, partitioned as an image


def test_body_only_message_never_reaches_hi_res(hi_res_spy, caplog):
    parts = split_email(docgen.eml_with_image_attachment())
    with caplog.at_level(logging.WARNING):
        elements = partition(parts.body, detect.EML, strategy="auto")
    assert hi_res_spy == []
    assert [e.text for e in elements] == ["Hello team,", "The chart is attached.", "Regards,", "Ada"]
    assert not any(e.metadata.attached_to_filename for e in elements)
    assert "Skipping attachment" not in caplog.text
