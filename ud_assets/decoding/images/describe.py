"""What image bytes are: their MIME type and size, sniffed by Pillow from the headers alone."""

from __future__ import annotations

import io
import warnings

from ud_assets.decoding import detect
from ud_assets.decoding.geometry import Coordinates
from ud_assets.decoding.model import ImageData

OCTET = detect.OCTET

# Pillow formats with real signatures; weakly-signed ones (TGA, DIB, PCX, MPEG...) claim junk.
_PIL_FORMATS = ("PNG", "JPEG", "MPO", "GIF", "TIFF", "BMP", "WEBP", "JPEG2000", "ICO", "WMF", "PSD", "AVIF", "HEIF")
_PIL_MIME = {"MPO": "image/jpeg", "WMF": "image/wmf", "HEIF": "image/heif"}


def describe_image(data: bytes) -> tuple[str, int | None, int | None]:
    """(MIME type, width, height) of image bytes; ("application/octet-stream", None, None) if
    Pillow cannot read them. Only headers are read, never pixels, so huge images are cheap."""
    from PIL import Image

    if not data:
        return OCTET, None, None
    Image.init()
    formats = [name for name in _PIL_FORMATS if name in Image.OPEN]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=formats) as image:
                mime = _PIL_MIME.get(image.format or "") or image.get_format_mimetype() or OCTET
                if image.format == "WMF" and data[40:44] == b" EMF":
                    mime = "image/emf"
                width, height = image.size
    except Image.DecompressionBombError:
        # A header claiming billions of pixels: say what it is, but not its size.
        sniffed = detect.sniff(data)
        return (sniffed if sniffed.startswith("image/") else OCTET), None, None
    except Exception:  # Pillow's plugins raise all kinds of errors on junk: it is "not an image"
        return OCTET, None, None
    if not mime.startswith("image/"):
        return OCTET, None, None
    return mime, width, height


def image_data(
    data: bytes,
    declared_mime: str | None = None,
    *,
    page_number: int | None = None,
    coordinates: Coordinates | None = None,
    element_id: str | None = None,
    name: str = "",
) -> ImageData:
    """ImageData for bytes, with the MIME type and size sniffed; the declared type is the
    fallback for images Pillow cannot read (e.g. SVG)."""
    mime, width, height = describe_image(data)
    if mime == OCTET:
        mime = detect.normalize(declared_mime) or (detect.sniff(data) if data else "") or OCTET
    return ImageData(
        data=data,
        mime_type=mime,
        width=width,
        height=height,
        page_number=page_number,
        coordinates=coordinates,
        element_id=element_id,
        name=name,
    )
