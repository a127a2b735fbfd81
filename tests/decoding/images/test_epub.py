"""EPUB images: the zip's image items in reading order, matched to pandoc's Image elements."""

from __future__ import annotations

from tests import docgen
from tests.decoding.images.helpers import partition
from ud_assets.decoding import detect
from ud_assets.decoding.images import epub_image_for_url, epub_images


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
