"""Shared by the image tests: unstructured's own partition(), and reading ImageData back."""

from __future__ import annotations

import io

from ud_assets.decoding import detect


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
