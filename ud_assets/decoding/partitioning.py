"""Calling unstructured's partition() offline, and reducing its elements to plain data.

unstructured is imported inside the functions: loading it pulls spaCy (seconds), and code that
only describes the asset graph must never pay that. spaCy is loaded without torch
(spacy_loading.py).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from . import detect, formats
from .formats.base import NOT_TRANSCRIBED, Parser, transcribed_by_a_model
from .model import (
    ConfigError,
    DecodeError,
    DecoderBug,
    DecoderConfig,
    Element,
    ElementExtra,
    ImageData,
    Partitioned,
    PartitionKwargs,
)
from .spacy_loading import load_thinc_without_torch

if TYPE_CHECKING:
    from unstructured.documents.elements import Element as UnstructuredElement

log = logging.getLogger(__name__)

# The setting that points unstructured-inference at local layout-model weights.
LOCAL_WEIGHTS_SETTING = "UNSTRUCTURED_DEFAULT_MODEL_INITIALIZE_PARAMS_JSON_PATH"
_DEFAULT_LAYOUT_REPO = ("unstructured-io/yolo_x_layout", "yolox_l0.05.onnx")


def unstructured_version() -> str:
    from importlib.metadata import version

    return version("unstructured")


def layout_weights_available() -> bool:
    """True when hi_res can load its layout model without reaching a model hub."""
    configured = os.environ.get(LOCAL_WEIGHTS_SETTING)
    if configured:
        return os.path.isfile(configured)
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(*_DEFAULT_LAYOUT_REPO)
        return isinstance(cached, str) and os.path.isfile(cached)
    except (ImportError, ValueError, OSError):  # no huggingface_hub, or no usable cache: no weights
        return False


def resolve_strategy(config: DecoderConfig, mime: str, data: bytes) -> str:
    """The strategy partition() will really run: never one that reaches for a model hub.

    auto on a PDF with a text layer is fast; on a scanned PDF or an image, ocr_only (tesseract,
    installed locally). Other formats have their own parsers: their strategy is fast.
    """
    asked = config.strategy
    ocr_capable = formats.family_of(mime).ocr
    if asked == "hi_res":
        if not ocr_capable:
            return "fast"
        if not layout_weights_available():
            raise ConfigError(
                f"strategy hi_res needs local layout-model weights and none are installed; "
                f"set {LOCAL_WEIGHTS_SETTING} to a JSON file naming a local model_path, or use auto/fast/ocr_only"
            )
        return "hi_res"
    if not ocr_capable:
        return "fast"
    if asked == "auto":
        if mime.startswith("image/"):
            return "ocr_only"
        return "fast" if pdf_has_text(data) else "ocr_only"
    if asked == "fast" and mime.startswith("image/"):
        return "ocr_only"  # an image has no text layer to read
    return asked


def strategy_notes(config: DecoderConfig, strategy: str) -> list[str]:
    """What the decode records when the strategy run is not the one asked for (or auto chose it)."""
    if config.strategy == "auto" or strategy != config.strategy:
        return [f"strategy {config.strategy} ran as {strategy}"]
    return []


def pdf_has_text(data: bytes, pages_to_check: int = 5) -> bool:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    try:
        for index in range(min(len(pdf), pages_to_check)):
            page = pdf[index]
            textpage = page.get_textpage()
            try:
                if textpage.count_chars() > 0:
                    return True
            finally:
                textpage.close()
                page.close()
        return False
    finally:
        pdf.close()


def partition_bytes(
    data: bytes,
    mime: str,
    config: DecoderConfig,
    filename: str | None = None,
) -> Partitioned:
    """unstructured's elements for one document, as plain data, in document order."""
    if not data:
        raise DecodeError("empty document (0 bytes)")
    load_thinc_without_torch()  # outside the try: an environment that cannot load it is our fault
    with parser_failures(mime):
        return _partition_bytes(data, mime, config, filename)


@contextlib.contextmanager
def parser_failures(mime: str) -> Iterator[None]:
    """Whose fault a failure inside a parse is: the parser's on this document (DecodeError, with
    a short cause), or ours (DecoderBug: an import this installation lacks, or set-up around the
    parser that said so itself). The failure ledger records only the first kind."""
    try:
        yield
    except (DecodeError, ConfigError, DecoderBug):
        raise
    except ImportError as exc:  # a parser's dependency missing from this installation: not the document
        raise DecoderBug(f"{mime}: the parser could not import what it needs ({exc})") from exc
    except Exception as exc:  # any other parser failure is this document's error
        raise DecodeError(_describe_failure(exc, mime)) from exc


def _partition_bytes(data: bytes, mime: str, config: DecoderConfig, filename: str | None) -> Partitioned:
    strategy = resolve_strategy(config, mime, data)
    notes = strategy_notes(config, strategy)

    own = formats.family_of(mime).partition  # e-mail: body and attachments; legacy Office: converted first
    if own is not None:
        return own(PARSER, data, mime, config, strategy, notes, filename)

    elements = _partition(data, mime, config, strategy, filename)
    add_images = formats.family_of(mime).add_images  # found outside unstructured (PDF, EPUB)
    if add_images is not None:
        elements = add_images(elements, data)
    return Partitioned(elements, strategy, notes)


def _partition(
    data: bytes, mime: str, config: DecoderConfig, strategy: str, filename: str | None, starting_page_number: int = 1
) -> list[Element]:
    if transcribed_by_a_model(mime):
        raise DecodeError(NOT_TRANSCRIBED.format(kind=mime))
    from unstructured.partition.auto import partition

    from . import images

    family = formats.family_of(mime)
    if family.prepare is not None:  # e.g. office: picture partitioners, a .docm read as a .docx
        data = family.prepare(data, mime)
    suffix = detect.SUFFIXES.get(mime, os.path.splitext(filename or "")[1] or ".bin")
    kwargs: PartitionKwargs = {
        "content_type": mime,
        "metadata_filename": f"document{suffix}",
        "strategy": strategy,
        "languages": list(config.languages),
    }
    if starting_page_number != 1:
        kwargs["starting_page_number"] = starting_page_number
    if detect.is_text_kind(mime):
        # unstructured reads text as UTF-8 only; hand it UTF-8 whatever the source encoding.
        text, _encoding = detect.decode_text(data)
        if family.partition_text is not None:  # its own reader (delimited: CSV/TSV read tolerantly)
            return [to_element(el) for el in family.partition_text(text, mime, kwargs["metadata_filename"])]
        data = text.encode("utf-8")
        kwargs["encoding"] = "utf-8"
    if mime in family.data_uri_images:
        kwargs.update(images.HTML_IMAGE_KWARGS)  # keep the bytes of data: URI images
    if strategy == "hi_res":
        kwargs["skip_infer_table_types"] = []
        kwargs["infer_table_structure"] = True
        kwargs["extract_image_block_types"] = ["Image"]
        kwargs["extract_image_block_to_payload"] = True
    raw = partition(file=io.BytesIO(data), **kwargs)
    return [to_element(el) for el in raw]


def _describe_failure(exc: Exception, mime: str) -> str:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    lowered = message.lower()
    if "password" in lowered or "encrypt" in lowered:
        return f"{mime} is password-protected or encrypted ({message[:160]})"
    return f"{mime} could not be parsed: {type(exc).__name__}: {message[:200]}"


def to_element(el: UnstructuredElement) -> Element:
    """An unstructured element as plain, JSON-serialisable data."""
    from . import images
    from .images.elements import coordinates_of

    meta = el.metadata
    coordinates = None
    if meta.coordinates is not None:
        coordinates = coordinates_of(meta.coordinates)
        coordinates["points"] = [[float(x), float(y)] for x, y in coordinates["points"]]
    image = images.image_from_element(el) if el.category == "Image" else None
    extra: ElementExtra = {}
    if meta.page_name:
        extra["page_name"] = meta.page_name
    if meta.link_urls:
        extra["link_urls"] = meta.link_urls
    if meta.emphasized_text_contents:
        extra["emphasized_text_contents"] = meta.emphasized_text_contents
    if meta.image_url and not meta.image_url.startswith("data:"):  # a data: URI's bytes are the ImageData
        extra["image_url"] = meta.image_url
    return Element(
        element_id=str(el.id),
        category=el.category,
        text=el.text or "",
        page_number=meta.page_number,
        text_as_html=meta.text_as_html,
        category_depth=meta.category_depth,
        parent_id=meta.parent_id,
        coordinates=coordinates,
        image=image,
        extra=extra,
    )


# -- a large PDF parsed as page ranges, concurrently -------------------------------------------
# unstructured's fast strategy reads a PDF page by page (pdfminer); only the element hierarchy
# (parent_id) spans pages. So page ranges parsed apart, numbered from their first page and put
# back in order with the hierarchy linked over the whole document, give exactly the elements of
# one pass (tested: tests/decoding/test_partitioning.py and tests/decoding/test_isolation.py), in
# about 1/n of the time on n cores.

MIN_PAGES_PER_PART = 16  # below this a range's fork and sub-document cost more than they save
SPLIT_MIN_BYTES = 16 * 1024  # smaller PDFs (a page or a few) are parsed whole without asking


@dataclass
class PdfPlan:
    strategy: str
    notes: list[str]
    pages: int  # 0 when the page tree could not be read: parsed whole, failing with unstructured's own cause


@dataclass
class PdfPart:
    elements: list[Element]  # unstructured's elements of the range, without pictures
    images: list[ImageData]  # the range's pictures, found in the whole document


def plan_pdf(data: bytes, mime: str, config: DecoderConfig, filename: str | None = None) -> PdfPlan:
    """The strategy a PDF would be parsed with and its page count (opens the PDF: run it in a child)."""
    import pypdfium2 as pdfium

    strategy = resolve_strategy(config, mime, data)
    notes = strategy_notes(config, strategy)
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError:  # not loadable: the whole parse reports the cause
        return PdfPlan(strategy, notes, 0)
    try:
        return PdfPlan(strategy, notes, len(pdf))
    finally:
        pdf.close()


def pdf_page_ranges(plan: PdfPlan, config: DecoderConfig, workers: int) -> list[range]:
    """0-based page ranges to parse concurrently, or [] to parse the PDF whole.

    Only the fast strategy reads pages independently; automatic language detection looks at the
    whole document's text, so it keeps the document whole too."""
    if plan.strategy != "fast" or "auto" in config.languages:
        return []
    parts = min(workers, plan.pages // MIN_PAGES_PER_PART)
    if parts < 2:
        return []
    bounds = [round(i * plan.pages / parts) for i in range(parts + 1)]
    return [range(start, end) for start, end in itertools.pairwise(bounds)]


def partition_pdf_pages(
    data: bytes, mime: str, config: DecoderConfig, filename: str | None = None, *, pages: range, strategy: str
) -> PdfPart:
    """unstructured's elements of some pages of a PDF, numbered as in the whole document."""
    from . import images

    load_thinc_without_torch()  # outside the try, as in partition_bytes
    with parser_failures(mime):
        part = _pdf_subset(data, pages)
        elements = _partition(part, mime, config, strategy, filename, starting_page_number=pages.start + 1)
        return PdfPart(elements, images.pdf_images(data, pages))


def merge_pdf_parts(parts: list[PdfPart], plan: PdfPlan) -> Partitioned:
    """The parts' elements in page order, linked and with their pictures, as one pass gives them."""
    elements = [element for part in parts for element in part.elements]
    _link_hierarchy(elements)
    found = [image for part in parts for image in part.images]
    return Partitioned(formats.pdf.place_images(elements, found), plan.strategy, list(plan.notes))


def _pdf_subset(data: bytes, pages: range) -> bytes:
    import pypdfium2 as pdfium

    source, subset = pdfium.PdfDocument(data), pdfium.PdfDocument.new()
    try:
        subset.import_pages(source, list(pages))
        buffer = io.BytesIO()
        subset.save(buffer)
        return buffer.getvalue()
    finally:
        subset.close()
        source.close()


def _link_hierarchy(elements: list[Element]) -> None:
    """parent_id over the whole document with unstructured's own rule (each part saw its pages only)."""
    from types import SimpleNamespace

    from unstructured.partition.common.metadata import set_element_hierarchy

    views = [
        SimpleNamespace(
            id=e.element_id,
            category=e.category,
            metadata=SimpleNamespace(parent_id=None, category_depth=e.category_depth),
        )
        for e in elements
    ]
    # Stand-ins with just what the rule reads (id, category, metadata.parent_id/category_depth):
    # real elements would cost several times more on a long PDF.
    set_element_hierarchy(cast("list[UnstructuredElement]", views))
    for element, view in zip(elements, views):
        element.parent_id = view.metadata.parent_id


# What a family's own partition (Format.partition) calls back: this module's parse of a kind by
# unstructured, the whole parse of an inner document, and the checks before parsing.
PARSER = Parser(partition=_partition, partition_bytes=partition_bytes, check_input=formats.check_input)
