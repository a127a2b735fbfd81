"""HTML and Markdown data: URI images: their bytes on unstructured's Image elements."""

from __future__ import annotations

import urllib.parse

import pytest

from tests import docgen
from tests.decoding.images.helpers import partition, texts_around
from ud_assets.decoding import detect
from ud_assets.decoding.images import HTML_IMAGE_KWARGS, image_from_element, parse_data_uri


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
