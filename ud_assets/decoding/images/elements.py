"""unstructured elements that carry image bytes: HTML and Markdown `<img src="data:...">`, and
the DOCX and PPTX pictures of our own sub-partitioners (office.py)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import urllib.parse
from typing import TYPE_CHECKING

from ud_assets.decoding.geometry import Coordinates
from ud_assets.decoding.model import Element, ImageData, PartitionKwargs

from .describe import image_data

if TYPE_CHECKING:  # unstructured is imported only where it runs: importing it takes seconds
    from unstructured.documents.elements import CoordinatesMetadata
    from unstructured.documents.elements import Element as UnstructuredElement

# Keyword arguments for unstructured's partition() that keep the bytes of `<img src="data:...">`
# images of HTML and Markdown (and of an e-mail's HTML body) as metadata.image_base64.
# NEVER pass them for PDFs or images: there they switch the "auto" strategy to hi_res.
HTML_IMAGE_KWARGS: PartitionKwargs = {"extract_image_block_types": ["Image"], "extract_image_block_to_payload": True}

# Ad-hoc unstructured metadata field carrying the picture's name in its package.
NAME_FIELD = "image_name"


def image_from_element(element: UnstructuredElement) -> ImageData | None:
    """ImageData for an unstructured element that carries image bytes (metadata.image_base64, or
    an image_url that is a data: URI); None when it carries none (e.g. a remote URL)."""
    metadata = element.metadata
    declared = metadata.image_mime_type
    data: bytes | None = None
    if metadata.image_base64:
        try:
            data = base64.b64decode(metadata.image_base64)
        except (binascii.Error, ValueError):
            data = None
    elif metadata.image_url and metadata.image_url.strip().lower().startswith("data:"):
        parsed = parse_data_uri(metadata.image_url)
        if parsed:
            declared, data = parsed
    if not data:
        return None
    coordinates: Coordinates | None = None
    if metadata.coordinates is not None and metadata.coordinates.points:
        coordinates = coordinates_of(metadata.coordinates)
    name: str = getattr(metadata, NAME_FIELD, None) or metadata.image_path or ""
    return image_data(
        data,
        declared,
        page_number=metadata.page_number,
        coordinates=coordinates,
        element_id=element.id,
        name=name,
    )


def coordinates_of(coordinates: CoordinatesMetadata) -> Coordinates:
    """CoordinatesMetadata.to_dict() (unannotated upstream), with lists for the points."""
    system = coordinates.system
    return {
        "points": [list(point) for point in coordinates.points or ()],
        "system": None if system is None else type(system).__name__,
        "layout_width": None if system is None else system.width,
        "layout_height": None if system is None else system.height,
    }


def parse_data_uri(uri: str) -> tuple[str, bytes] | None:
    """(declared MIME type, bytes) of a data: URI, base64 or percent-encoded; None if malformed."""
    uri = uri.strip()
    header, comma, payload = uri.partition(",")
    if not comma or not header.lower().startswith("data:"):
        return None
    params = header[5:].split(";")
    mime = params[0].strip().lower() or "text/plain"
    try:
        if any(param.strip().lower() == "base64" for param in params[1:]):
            # HTML attributes may wrap base64 over several lines, and writers drop the padding.
            text = re.sub(r"\s+", "", urllib.parse.unquote(payload)).rstrip("=")
            return mime, base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        return mime, urllib.parse.unquote_to_bytes(payload)
    except (binascii.Error, ValueError):
        return None


def image_element(image: ImageData, ordinal_hint: str) -> Element:
    """An Image element for an image found outside unstructured (PDF objects, EPUB, e-mail)."""
    element_id = (
        image.element_id
        or hashlib.sha256(f"{ordinal_hint}|{image.name}|{hashlib.sha256(image.data).hexdigest()}".encode()).hexdigest()[
            :32
        ]
    )
    image.element_id = element_id
    return Element(
        element_id=element_id,
        category="Image",
        text="",
        page_number=image.page_number,
        coordinates=image.coordinates,
        image=image,
    )


def with_trailing_images(elements: list[Element], found: list[ImageData], hint: str = "img") -> list[Element]:
    already = {hashlib.sha256(el.image.data).hexdigest() for el in elements if el.image}
    extra = [
        image_element(image, f"{hint}|{index}")
        for index, image in enumerate(found)
        if hashlib.sha256(image.data).hexdigest() not in already
    ]
    return elements + extra
