"""What a format family declares (formats/__init__.py lists the families)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from unstructured.documents.elements import Element as UnstructuredElement

    from ..limits import Budget, Limits
    from ..model import DecoderConfig, Element, Partitioned

_Plan = TypeVar("_Plan")
_Part = TypeVar("_Part")


# unstructured hands audio and video to a speech-to-text model (Whisper), which it downloads on
# first use: never, here (the decoder is offline). They are refused, or skipped inside an e-mail
# with the skip in the document's notes, rather than transcribed.
NOT_TRANSCRIBED = "{kind} is not decoded: transcribing it needs a speech-to-text model, which ud never downloads"


def transcribed_by_a_model(mime: str) -> bool:
    """Whether unstructured would reach for a speech-to-text model to decode this kind."""
    return mime.startswith(("audio/", "video/"))


class _Partition(Protocol):
    def __call__(
        self,
        data: bytes,
        mime: str,
        config: DecoderConfig,
        strategy: str,
        filename: str | None,
        starting_page_number: int = 1,
    ) -> list[Element]: ...


class _PartitionBytes(Protocol):
    def __call__(
        self,
        data: bytes,
        mime: str,
        config: DecoderConfig,
        filename: str | None = None,
        *,
        budget: Budget | None = None,
    ) -> Partitioned: ...


@dataclass(frozen=True)
class Parser:
    """What a family's own code (Format.partition, Split.part) is handed by partitioning
    (format-free): unstructured's parse of bytes of a kind (data, kind, config, strategy, filename,
    the number of its first page), the whole parse of an inner document (data, kind, config,
    filename, budget), the checks before parsing, and `parsing(kind)`: what a parse runs inside
    (spaCy's loader, then a failure turned into the document's DecodeError or our DecoderBug)."""

    partition: _Partition
    partition_bytes: _PartitionBytes
    check_input: Callable[[bytes, str, Limits], None]
    parsing: Callable[[str], AbstractContextManager[None]]


@dataclass(frozen=True)
class Split(Generic[_Plan, _Part]):
    """How a family parses a large document as parts in concurrent children, merged back into
    exactly what one pass gives (isolation's client runs it; the family says what the parts are).

    - `min_bytes`: smaller documents are parsed whole without asking;
    - `plan`: (data, kind, config, filename, budget=) -> what the parts can be; it opens the
      untrusted document, so it runs in a child (a module-level function: a reusable one);
    - `ranges`: (plan, config, workers) -> the parts, or [] to parse the document whole;
    - `part`: (parser, data, kind, config, filename, plan, part) -> one part's result, in a child;
    - `merge`: (the parts' results in order, plan) -> the document's Partitioned.
    """

    min_bytes: int
    plan: Callable[..., _Plan]
    ranges: Callable[[_Plan, DecoderConfig, int], list[range]]
    part: Callable[[Parser, bytes, str, DecoderConfig, str | None, _Plan, range], _Part]
    merge: Callable[[list[_Part], _Plan], Partitioned]


@dataclass(frozen=True)
class Format:
    """One format family: the kinds it decodes and what format-free code asks about them.

    - `name`: the family's name, recorded with each generation (formats/__init__.py: decoder_version).
    - `logic_version`: bumped when a change in this family's decoding changes what a decode of its
      documents produces (ids, texts, offsets, triples); the upgrade schedule re-decodes this
      family's documents only. Starts at "1".
    - `mime_types`: the kinds it decodes; `mime_prefixes`: whole top-level types (e.g. "image/").
    - `warm_imports`: per kind, unstructured's partitioner modules a process decoding it imports
      beyond the text ones every format uses (warmup.warm_up); `warm_all`: those a batch's
      warm-up imports beyond them (the family's kinds warm everything when they name none).
    - `warm_documents`: per kind, a tiny document the warm-up parses once its partitioner modules
      are imported, so that forked children do not pay a first parse (spaCy's model, lazy imports).
    - `page_labels`: per page-based kind, the noun of its pages ("Page", "Slide", "Sheet").
    - `check`: its checks before parsing (data, kind, limits), raising DecodeError: mislabeled,
      encrypted, too many pages, a bomb (formats.check_input, after the size).
    - `prepare`: its quirks before unstructured's partition() (data, kind) -> the bytes to parse.
    - `add_images`: the images it finds outside unstructured, placed among the elements.
    - `strategy`: its documents may have no text layer: the strategy that runs for auto, fast or
      ocr_only asked (asked, data) -> strategy; hi_res applies to them too (strategy.resolve).
      None: the family's parsers read text, and run as fast whatever was asked.
    - `split`: how a large document of it is parsed in parts (Split), or None.
    - `data_uri_images`: the kinds whose `<img src="data:...">` bytes unstructured is asked to keep.
    - `partition_text`: its own reader of decoded text (text, kind, metadata_filename) -> unstructured's
      elements, in place of unstructured's partition() (delimited).
    - `partition`: its whole parse, in place of partitioning's (parser, data, kind, config, strategy,
      notes, filename, budget) -> Partitioned (e-mail: body and attachments; legacy Office: converted
      first, within the parse's budget).
    """

    name: str
    logic_version: str
    mime_types: frozenset[str]
    warm_imports: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    warm_all: tuple[str, ...] = ()
    warm_documents: Mapping[str, bytes] = field(default_factory=dict)
    page_labels: Mapping[str, str] = field(default_factory=dict)
    mime_prefixes: tuple[str, ...] = ()
    check: Callable[[bytes, str, Limits], None] | None = None
    prepare: Callable[[bytes, str], bytes] | None = None
    add_images: Callable[[list[Element], bytes], list[Element]] | None = None
    data_uri_images: frozenset[str] = frozenset()
    strategy: Callable[[str, bytes], str] | None = None
    split: Split[Any, Any] | None = None
    partition_text: Callable[[str, str, str], Sequence[UnstructuredElement]] | None = None
    partition: Callable[[Parser, bytes, str, DecoderConfig, str, list[str], str | None, Budget], Partitioned] | None = (
        None
    )

    def decodes(self, mime: str) -> bool:
        return mime in self.mime_types or mime.startswith(self.mime_prefixes)
