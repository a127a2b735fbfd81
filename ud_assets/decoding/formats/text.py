"""Text: Markdown, reStructuredText, RTF, plain text and JSON."""

from __future__ import annotations

from .. import detect
from .. import limits as limits_module
from ..limits import Limits
from .base import Format


def check(data: bytes, mime: str, limits: Limits) -> None:
    if mime == detect.RTF:
        if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\"):  # {\rtf1, or a fragment such as pandoc writes
            limits_module.mislabeled(mime, data)
    else:
        limits_module.check_text(data, mime)


# Its parse loads spaCy's language model, so that the children do not pay it (warmup.py).
WARM_MARKDOWN = b"# Warm-up\n\nThis sentence loads the language model. So does this one.\n"

FORMAT = Format(
    name="text",
    # 2: a .txt is plain text whatever tags libmagic spots in it (it was read as HTML, losing words in
    # angle brackets); an .rtf opening with "{\\" is RTF (pandoc's fragments were read as text).
    logic_version="2",
    mime_types=frozenset({detect.MARKDOWN, detect.PLAIN, detect.RST, detect.RTF, detect.JSON}),
    warm_imports={
        detect.MARKDOWN: (),
        detect.PLAIN: (),
        detect.RST: ("rst",),
        detect.RTF: ("rtf",),
        detect.JSON: ("json",),
    },
    warm_documents={detect.MARKDOWN: WARM_MARKDOWN},
    check=check,
    data_uri_images=frozenset({detect.MARKDOWN}),  # `<img src="data:...">` bytes kept (images/elements.py)
)
