"""E-mail (RFC 822): the body by unstructured, attachments split off and decoded apart (images/email.py)."""

from __future__ import annotations

from .. import detect
from .. import limits as limits_module
from .base import Format

FORMAT = Format(
    name="email",
    logic_version="1",
    mime_types=frozenset({detect.EML}),
    warm_imports={detect.EML: ("email",)},
    check=lambda data, mime, limits: limits_module.check_text(data, mime),
    data_uri_images=frozenset({detect.EML}),  # `<img src="data:...">` bytes kept (images/elements.py)
)
