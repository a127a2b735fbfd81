"""Markup: HTML (with the bytes of its data: URI images, images/elements.py) and XML."""

from __future__ import annotations

from .. import detect
from .base import Format

FORMAT = Format(
    name="markup",
    logic_version="1",
    mime_types=frozenset({detect.HTML, detect.XML}),
    warm_imports={detect.HTML: (), detect.XML: ("xml",)},
)
