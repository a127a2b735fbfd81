"""Calling unstructured's partition() offline, and reducing its elements to plain data.

unstructured is imported inside the functions: loading it pulls spaCy (seconds), and code that
only describes the asset graph must never pay that. spaCy is loaded without torch
(spacy_loading.py). Which strategy runs is strategy.py's; what a format family does differently,
its own module's (formats/).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from . import detect, formats, strategy
from .formats.base import NOT_TRANSCRIBED, Parser, transcribed_by_a_model
from .limits import Budget, Limits
from .model import (
    ConfigError,
    DecodeError,
    DecoderBug,
    DecoderConfig,
    Element,
    ElementExtra,
    Partitioned,
    PartitionKwargs,
)
from .spacy_loading import load_thinc_without_torch

if TYPE_CHECKING:
    from unstructured.documents.elements import Element as UnstructuredElement

log = logging.getLogger(__name__)


def unstructured_version() -> str:
    from importlib.metadata import version

    return version("unstructured")


def partition_bytes(
    data: bytes,
    mime: str,
    config: DecoderConfig,
    filename: str | None = None,
    *,
    budget: Budget | None = None,
) -> Partitioned:
    """unstructured's elements for one document, as plain data, in document order.

    `budget`: the parse's limits and deadline (isolation gives it; a call of its own is given the
    environment's limits, starting now), what a family that runs another program hands on."""
    if not data:
        raise DecodeError("empty document (0 bytes)")
    with parsing(mime):
        return _partition_bytes(data, mime, config, filename, budget)


@contextlib.contextmanager
def parsing(mime: str) -> Iterator[None]:
    """What a parse runs inside: spaCy loaded without torch, then parser_failures."""
    load_thinc_without_torch()  # outside the try: an environment that cannot load it is our fault
    with parser_failures(mime):
        yield


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


def _partition_bytes(
    data: bytes, mime: str, config: DecoderConfig, filename: str | None, budget: Budget | None
) -> Partitioned:
    family = formats.family_of(mime)
    chosen = strategy.resolve(family.strategy, config, data)
    notes = strategy.notes(config, chosen)

    own = family.partition  # e-mail: body and attachments; legacy Office: converted first
    if own is not None:
        return own(PARSER, data, mime, config, chosen, notes, filename, budget or Budget.start(Limits.from_env()))

    elements = _partition(data, mime, config, chosen, filename)
    add_images = family.add_images  # found outside unstructured (PDF, EPUB)
    if add_images is not None:
        elements = add_images(elements, data)
    return Partitioned(elements, chosen, notes)


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


# What a family's own code (Format.partition, Split.part) calls back: this module's parse of a kind
# by unstructured, the whole parse of an inner document, the checks before parsing, and what a
# parse runs inside.
PARSER = Parser(partition=_partition, partition_bytes=partition_bytes, check_input=formats.check_input, parsing=parsing)
