"""What a format family declares (formats/__init__.py lists the families)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from unstructured.documents.elements import Element as UnstructuredElement

    from ..limits import Limits
    from ..model import DecoderConfig, Element, Partitioned


# unstructured hands audio and video to a speech-to-text model (Whisper), which it downloads on
# first use: never, here (the decoder is offline). They are refused, or skipped inside an e-mail
# with the skip in the document's notes, rather than transcribed.
NOT_TRANSCRIBED = "{kind} is not decoded: transcribing it needs a speech-to-text model, which ud never downloads"


def transcribed_by_a_model(mime: str) -> bool:
    """Whether unstructured would reach for a speech-to-text model to decode this kind."""
    return mime.startswith(("audio/", "video/"))


@dataclass(frozen=True)
class Parser:
    """What a family's own partition (Format.partition) is handed by partitioning (format-free):
    unstructured's parse of bytes of a kind (data, kind, config, strategy, filename), the whole
    parse of an inner document (data, kind, config, filename) and the checks before parsing."""

    partition: Callable[[bytes, str, DecoderConfig, str, str | None], list[Element]]
    partition_bytes: Callable[[bytes, str, DecoderConfig, str | None], Partitioned]
    check_input: Callable[[bytes, str, Limits], None]


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
    - `ocr`: its documents may have no text layer: the strategies that read pixels (ocr_only,
      hi_res) apply to them (partitioning.resolve_strategy); other families' parsers run as fast.
    - `data_uri_images`: the kinds whose `<img src="data:...">` bytes unstructured is asked to keep.
    - `partition_text`: its own reader of decoded text (text, kind, metadata_filename) -> unstructured's
      elements, in place of unstructured's partition() (delimited).
    - `partition`: its whole parse, in place of partitioning's (parser, data, kind, config, strategy,
      notes, filename) -> Partitioned (e-mail: body and attachments; legacy Office: converted first).
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
    ocr: bool = False
    partition_text: Callable[[str, str, str], Sequence[UnstructuredElement]] | None = None
    partition: Callable[[Parser, bytes, str, DecoderConfig, str, list[str], str | None], Partitioned] | None = None

    def decodes(self, mime: str) -> bool:
        return mime in self.mime_types or mime.startswith(self.mime_prefixes)
