"""Images (image/*): OCR by unstructured (tesseract, ocr_only), never a layout model from a hub."""

from __future__ import annotations

from .base import Format

# No warm_imports: a process about to decode an image warms every partitioner (isolation.warm_up).
FORMAT = Format(name="image", logic_version="1", mime_types=frozenset(), mime_prefixes=("image/",))
