"""What a format family declares (formats/__init__.py lists the families)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from unstructured.documents.elements import Element as UnstructuredElement

    from ..limits import Limits
    from ..model import Element


@dataclass(frozen=True)
class Format:
    """One format family: the kinds it decodes and what format-free code asks about them.

    - `name`: the family's name, recorded with each generation (formats/__init__.py: decoder_version).
    - `logic_version`: bumped when a change in this family's decoding changes what a decode of its
      documents produces (ids, texts, offsets, triples); the upgrade schedule re-decodes this
      family's documents only. Starts at "1".
    - `mime_types`: the kinds it decodes; `mime_prefixes`: whole top-level types (e.g. "image/").
    - `warm_imports`: per kind, unstructured's partitioner modules a process decoding it imports
      beyond the text ones every format uses (isolation.warm_up).
    - `page_labels`: per page-based kind, the noun of its pages ("Page", "Slide", "Sheet").
    - `check`: its checks before parsing (data, kind, limits), raising DecodeError: mislabeled,
      encrypted, too many pages, a bomb (formats.check_input, after the size).
    - `prepare`: its quirks before unstructured's partition() (data, kind) -> the bytes to parse.
    - `add_images`: the images it finds outside unstructured, placed among the elements.
    - `data_uri_images`: the kinds whose `<img src="data:...">` bytes unstructured is asked to keep.
    - `partition_text`: its own reader of decoded text (text, kind, metadata_filename) -> unstructured's
      elements, in place of unstructured's partition() (delimited).
    """

    name: str
    logic_version: str
    mime_types: frozenset[str]
    warm_imports: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    page_labels: Mapping[str, str] = field(default_factory=dict)
    mime_prefixes: tuple[str, ...] = ()
    check: Callable[[bytes, str, Limits], None] | None = None
    prepare: Callable[[bytes, str], bytes] | None = None
    add_images: Callable[[list[Element], bytes], list[Element]] | None = None
    data_uri_images: frozenset[str] = frozenset()
    partition_text: Callable[[str, str, str], Sequence[UnstructuredElement]] | None = None

    def decodes(self, mime: str) -> bool:
        return mime in self.mime_types or mime.startswith(self.mime_prefixes)
