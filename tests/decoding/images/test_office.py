"""DOCX and PPTX pictures, through unstructured's partition() with our picture sub-partitioners."""

from __future__ import annotations

import pytest

from tests import docgen
from tests.decoding.images.helpers import box, partition, texts_around
from ud_assets.decoding import detect
from ud_assets.decoding.images import (
    DocxPicturePartitioner,
    PptxPicturePartitioner,
    image_from_element,
    install_picture_partitioners,
)
from ud_assets.decoding.images.office import _docx_picture_rel_ids


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
        "Title",
        "NarrativeText",
        "Title",
        "NarrativeText",
        "Table",
        "Image",
        "Title",
        "NarrativeText",
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
