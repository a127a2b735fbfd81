"""Plain data of the decoding core: options, elements, sections, images, results."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Required, TypedDict

from .geometry import Coordinates
from .provenance import Triple

STRATEGIES = ("auto", "fast", "hi_res", "ocr_only")
SECTION_STRATEGIES = ("whole-document", "heading", "element-type", "count", "size")

# The version of the format-free logic (assembly, grouping, ids, provenance...): bumped whenever a
# change there changes what a decode of any document produces (ids, texts, offsets, triples), which
# re-decodes every document. A change to one format family's decoding bumps that family's own
# version instead (formats/__init__.py). A plain number: recorded versions read it before a ".".
SHARED_LOGIC_VERSION = "2"
COMPONENT = "universal-decoder"
COMPONENT_VERSION = "1.0.0"


class PartitionStats(TypedDict, total=False):
    """What one parse cost (isolation.IsolatedPartitioner.partition): `isolated` and `wall_s`
    always, the rest when it ran in a child."""

    isolated: Required[bool]
    wall_s: Required[float]
    work_s: float | None  # in the child, from fork to reply
    fork_overhead_ms: float | None
    spawn_ms: float | None  # fork until the child runs
    child_peak_rss_mb: float | None  # includes pages shared with the parent
    child_private_mb: float | None  # what this document cost
    parts: int  # a PDF parsed as page ranges side by side
    parts_work_s: float


class DecodeError(Exception):
    """A document could not be decoded; the message is short and names the cause."""

    # The cost of the isolated parse that failed; None when the error was raised in-process.
    stats: PartitionStats | None = None


class DecoderBug(RuntimeError):
    """ud's own code failed around a parser, not the parser on the document: setting up a child
    process (its limits, its plumbing), a converter's profile or folder, an import the parser
    needs. Never the document's fault: the run fails with the traceback, and nothing is recorded
    against the document in the failure ledger (processing/runner.py: document_failure)."""


class ConfigError(ValueError):
    """A decoder option is invalid."""

    stats: PartitionStats | None = None  # as DecodeError.stats


class DecoderConfigDict(TypedDict):
    """DecoderConfig as JSON (fingerprinted, stored with each generation)."""

    strategy: str
    languages: list[str]
    section_strategy: str
    section_element_count: int
    section_max_size: int
    section_within_pages: bool


@dataclass(frozen=True)
class DecoderConfig:
    """The spec's decoder options, with its names and defaults."""

    strategy: str = "auto"
    languages: tuple[str, ...] = ("eng",)
    section_strategy: str = "whole-document"
    section_element_count: int = 20
    section_max_size: int = 4000
    section_within_pages: bool = False

    def __post_init__(self) -> None:
        langs = self.languages
        if isinstance(langs, str):
            langs = langs.split(",")
        langs = tuple(lang.strip() for lang in langs if lang and lang.strip())
        object.__setattr__(self, "languages", langs or ("eng",))
        self.validate()

    def validate(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"strategy must be one of {', '.join(STRATEGIES)}, not {self.strategy!r}")
        if self.section_strategy not in SECTION_STRATEGIES:
            raise ConfigError(
                f"Unknown section strategy {self.section_strategy!r}; choose one of {', '.join(SECTION_STRATEGIES)}"
            )
        if int(self.section_element_count) <= 0:
            raise ConfigError(f"section_element_count must be > 0, not {self.section_element_count}")
        if int(self.section_max_size) <= 0:
            raise ConfigError(f"section_max_size must be > 0, not {self.section_max_size}")
        for lang in self.languages:
            if not lang.replace("_", "").isalnum():
                raise ConfigError(f"invalid OCR language code {lang!r}")

    @classmethod
    def from_options(cls, options: object) -> DecoderConfig:
        """From anything carrying the options as attributes of the same names (CLI arguments, run config)."""
        return cls(**{f.name: getattr(options, f.name) for f in fields(cls)})

    def as_dict(self) -> DecoderConfigDict:
        # Every field: the fingerprint is a function of this (tests/decoding/test_ids.py checks).
        return {
            "strategy": self.strategy,
            "languages": list(self.languages),
            "section_strategy": self.section_strategy,
            "section_element_count": self.section_element_count,
            "section_max_size": self.section_max_size,
            "section_within_pages": self.section_within_pages,
        }


class PartitionKwargs(TypedDict, total=False):
    """The keyword arguments of unstructured's partition() the decoder passes (besides `file`)."""

    content_type: str
    metadata_filename: str
    strategy: str
    languages: list[str]
    starting_page_number: int
    encoding: str
    extract_image_block_types: list[str]
    extract_image_block_to_payload: bool
    skip_infer_table_types: list[str]
    infer_table_structure: bool


class ElementExtra(TypedDict, total=False):
    """What an Element keeps beyond its own fields: some of unstructured's metadata (when set)
    and, for an e-mail, the attachment it was decoded from."""

    page_name: str  # an XLSX sheet's name
    link_urls: list[str]
    emphasized_text_contents: list[str]
    image_url: str  # never a data: URI (its bytes are ImageData)
    attachment: str  # the e-mail attachment the element was decoded from


@dataclass
class ImageData:
    """An image found in a document: its original bytes and where it sits."""

    data: bytes
    mime_type: str
    width: int | None = None
    height: int | None = None
    page_number: int | None = None
    coordinates: Coordinates | None = None
    element_id: str | None = None
    name: str = ""  # where it came from inside the container, e.g. word/media/image1.png


@dataclass
class Element:
    """An unstructured element, reduced to what the decoder uses (JSON-serialisable)."""

    element_id: str
    category: str
    text: str
    page_number: int | None = None
    text_as_html: str | None = None
    category_depth: int | None = None
    parent_id: str | None = None
    coordinates: Coordinates | None = None
    image: ImageData | None = None
    extra: ElementExtra = field(default_factory=ElementExtra)

    @property
    def is_image(self) -> bool:
        return self.category == "Image"

    @property
    def is_table(self) -> bool:
        return self.category == "Table"

    def rendered(self) -> str:
        """The text this element contributes to its section ("" for images)."""
        if self.is_image:
            return ""
        if self.is_table and self.text_as_html:
            return self.text_as_html
        return self.text or ""


@dataclass
class Partitioned:
    elements: list[Element]
    strategy_used: str
    notes: list[str] = field(default_factory=list)


@dataclass
class PlacedElement:
    element_id: str
    category: str
    offset: int  # in the section text
    length: int
    text: str


@dataclass
class Section:
    """A page or a section: the unit stored as a librarian child document and sent to chunking."""

    id: str
    type: str  # "page" | "section"
    label: str
    parent: str  # the document id, or the enclosing section for nested heading sections
    page_number: int | None
    char_offset: int  # in the whole-document text
    char_length: int
    text: str
    element_types: list[str]
    table_count: int
    image_count: int
    elements: list[PlacedElement]
    ordinal: int = 0
    depth: int = 0
    # False for a page split into sections (--section-within-pages): it spans its sections'
    # text and is not itself part of the joined document text (no text is ever counted twice).
    leaf: bool = True


@dataclass
class ImageRecord:
    id: str
    parent: str  # page or section id
    mime_type: str
    page_number: int | None
    width: int | None
    height: int | None
    coordinates: Coordinates | None
    element_id: str | None
    data: bytes
    sha256: str
    ordinal: int = 0


@dataclass
class DocumentInfo:
    id: str
    title: str
    mime_type: str
    sha256: str
    size: int
    unstructured_version: str
    strategy_asked: str
    strategy_used: str
    fingerprint: str
    notes: list[str] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)  # of the isolated parse: peak RSS, fork overhead...


@dataclass
class DecodeResult:
    document: DocumentInfo
    config: DecoderConfig
    elements: list[Element]
    sections: list[Section]
    images: list[ImageRecord]
    triples: list[Triple]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n\n".join(section.text for section in self.sections if section.leaf)
