"""EPUB: parsed by unstructured (pandoc), its pictures read from the zip (images/epub.py)."""

from __future__ import annotations

from .. import detect
from .base import Format
from .office import check_package

FORMAT = Format(
    name="epub",
    logic_version="1",
    mime_types=frozenset({detect.EPUB}),
    warm_imports={detect.EPUB: ("epub",)},
    check=check_package,  # a ZIP package, checked as Office's are
)
