"""Office documents unstructured reads itself: OOXML (DOCX, PPTX, XLSX), XLS and ODF (ODT),
with the DOCX and PPTX pictures of our sub-partitioners (images/office.py)."""

from __future__ import annotations

from .. import detect
from .base import Format

FORMAT = Format(
    name="office",
    logic_version="1",
    mime_types=frozenset({detect.DOCX, detect.PPTX, detect.XLSX, detect.XLS, detect.ODT}),
    warm_imports={
        detect.DOCX: ("docx",),
        detect.PPTX: ("pptx",),
        detect.XLSX: ("xlsx",),
        detect.XLS: ("xlsx",),
        detect.ODT: ("odt", "docx"),  # ODT goes through unstructured's DOCX partitioner
    },
    page_labels={detect.PPTX: "Slide", detect.XLSX: "Sheet", detect.XLS: "Sheet"},
)
