"""Markup: HTML (with the bytes of its data: URI images, images/elements.py) and XML."""

from __future__ import annotations

import re

from .. import detect
from .. import limits as limits_module
from ..limits import Limits
from ..model import DecodeError
from .base import Format

# HTML parsers stop building the tree far below this depth and drop what lies deeper, silently:
# refuse such documents with a reason instead of returning a decode that lost its content.
MAX_MARKUP_DEPTH = 1_000
_VOID_TAGS = frozenset(b"area base br col embed hr img input link meta source track wbr param keygen".split())
_TAG = re.compile(rb"<(/?)([A-Za-z][A-Za-z0-9:-]*)[^<>]*?(/?)>")


def check(data: bytes, mime: str, limits: Limits) -> None:
    limits_module.check_text(data, mime)
    check_nesting(data, mime)


def check_nesting(data: bytes, mime: str) -> None:
    """Refuse markup nested deeper than MAX_MARKUP_DEPTH (one linear pass over the tags)."""
    depth = deepest = 0
    for closing, name, self_closing in _TAG.findall(data):
        if closing:
            depth = max(0, depth - 1)
        elif not self_closing and name.lower() not in _VOID_TAGS:
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_MARKUP_DEPTH:
                label = "HTML" if mime == detect.HTML else "XML"
                raise DecodeError(f"{label} is nested more than {MAX_MARKUP_DEPTH} elements deep")


WARM_HTML = b"<html><body><h1>Warm</h1><p>Up.</p></body></html>"  # parsed by the warm-up (warmup.py)

FORMAT = Format(
    name="markup",
    logic_version="1",
    mime_types=frozenset({detect.HTML, detect.XML}),
    warm_imports={detect.HTML: (), detect.XML: ("xml",)},
    warm_documents={detect.HTML: WARM_HTML},
    check=check,
    data_uri_images=frozenset({detect.HTML}),  # `<img src="data:...">` bytes kept (images/elements.py)
)
