"""Images (image/*): OCR by unstructured (tesseract, ocr_only), never a layout model from a hub."""

from __future__ import annotations

from .. import detect
from .. import limits as limits_module
from ..limits import Limits
from .base import Format


def check(data: bytes, mime: str, limits: Limits) -> None:
    if not detect.sniff(data).startswith("image/"):
        limits_module.mislabeled(mime, data)


def strategy(asked: str, data: bytes) -> str:
    """auto and fast read an image by OCR: it has no text layer to read."""
    return "ocr_only" if asked in ("auto", "fast") else asked


# No warm_imports: a process about to decode an image warms every partitioner (warmup.warm_up).
FORMAT = Format(
    name="image",
    logic_version="1",
    mime_types=frozenset(),
    mime_prefixes=("image/",),
    warm_all=("image",),
    check=check,
    strategy=strategy,
)
