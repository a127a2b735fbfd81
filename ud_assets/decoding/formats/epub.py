"""EPUB: parsed by unstructured (pandoc), its pictures read from the zip (images/epub.py)."""

from __future__ import annotations

from dataclasses import replace

from .. import detect
from ..model import Element
from .base import Format
from .office import check_package


def add_images(elements: list[Element], data: bytes) -> list[Element]:
    """pandoc's Image elements name their file only: give them its bytes; append images never shown."""
    from .. import images

    found = images.epub_images(data)
    for element in elements:
        if element.is_image and element.image is None:
            url = element.extra.get("image_url") or ""
            match = images.epub_image_for_url(found, url) if url else None
            if match is not None:
                element.image = replace(match, element_id=element.element_id)
    return images.with_trailing_images(elements, found, "epub")


FORMAT = Format(
    name="epub",
    logic_version="1",
    mime_types=frozenset({detect.EPUB}),
    warm_imports={detect.EPUB: ("epub",)},
    add_images=add_images,
    check=check_package,  # a ZIP package, checked as Office's are
)
