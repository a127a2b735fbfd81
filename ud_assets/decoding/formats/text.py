"""Text: Markdown, reStructuredText, RTF, plain text and JSON."""

from __future__ import annotations

from .. import detect
from .base import Format

FORMAT = Format(
    name="text",
    logic_version="1",
    mime_types=frozenset({detect.MARKDOWN, detect.PLAIN, detect.RST, detect.RTF, detect.JSON}),
    warm_imports={
        detect.MARKDOWN: (),
        detect.PLAIN: (),
        detect.RST: ("rst",),
        detect.RTF: ("rtf",),
        detect.JSON: ("json",),
    },
)
