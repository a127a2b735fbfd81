"""describe_image: MIME type and size of image bytes, from their headers."""

from __future__ import annotations

import io
import struct
import zlib

import pytest

from tests import docgen
from ud_assets.decoding.images import describe_image


def test_describe_image_sniffs_real_formats():
    from PIL import Image

    tiff = io.BytesIO()
    Image.new("L", (7, 5)).save(tiff, format="TIFF")
    assert describe_image(docgen.png(40, 30)) == ("image/png", 40, 30)
    assert describe_image(docgen.jpeg(12, 34)) == ("image/jpeg", 12, 34)
    assert describe_image(docgen.gif(8, 9)) == ("image/gif", 8, 9)
    assert describe_image(tiff.getvalue()) == ("image/tiff", 7, 5)
    assert describe_image(docgen.jpeg2000(16, 8)) == ("image/jp2", 16, 8)


@pytest.mark.parametrize(
    "junk",
    [
        b"",
        b"not an image at all" * 50,
        b"(\x00\x00\x00" + b"\x01" * 60,
        b"\x89PNG\r\n\x1a\n" + b"\x00" * 10,
        b"%PDF-1.4\n",
    ],
)
def test_describe_image_on_junk(junk):
    assert describe_image(junk) == ("application/octet-stream", None, None)


def test_describe_image_survives_a_decompression_bomb():
    # A valid PNG header claiming 100000 x 100000 pixels: Pillow refuses to open it.
    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    ihdr = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0)
    bomb = (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")
    )
    assert describe_image(bomb) == ("image/png", None, None)
