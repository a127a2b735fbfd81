"""The `elements` stage: unstructured's elements of a generation, as JSON in the object store."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from resources.model import LibrarianError, StorageUnavailable, read_object
from ud_assets.decoding.decoder import (
    build_images,
    build_sections,
    element_from_json,
    element_to_json,
    partition_document,
)
from ud_assets.decoding.limits import Limits
from ud_assets.decoding.model import DecodeError, Element
from ud_assets.processing.generations import elements_object_id
from ud_assets.processing.model import Attempt, Built, ElementsResult, MissingInput

if TYPE_CHECKING:
    from ud_assets.processing.parse_ahead import ParseAhead


def elements_stage(
    attempt: Attempt, ahead: ParseAhead | None = None, progress: Callable[[str], None] = lambda message: None
) -> ElementsResult:
    """Partition the document (or take the parse done ahead) and store its elements."""
    info, meta = attempt.info, attempt.meta
    limits = Limits.from_env()
    if meta.size > limits.max_bytes:  # refused before a byte is read: never hold a huge object in memory
        raise DecodeError(f"document is {meta.size} bytes, above the limit of {limits.max_bytes} (UD_DECODE_MAX_BYTES)")
    started = time.perf_counter()
    parsed = ahead.take(info.id, info.fingerprint) if ahead is not None else None
    if parsed is not None:  # parsed in the background while the previous document was being stored
        elements = parsed.elements
        info.strategy_used = parsed.strategy_used
        info.notes.extend(parsed.notes)
        info.stats.update(parsed.stats)
    else:
        progress(f"partitioning {info.id} ({info.mime_type}, {meta.size} bytes)")
        # The object the attempt's row names, not the row read again: the bytes its fingerprint's
        # hash describes, even if the document is replaced meanwhile (a small one was read whole).
        data = attempt.content
        if data is None:
            data = read_object(attempt.librarian.objects, meta.object_id, meta.size)
        elements = partition_document(data, info, attempt.config, meta.title or None)
    elapsed = time.perf_counter() - started
    object_id = elements_object_id(attempt.librarian.workspace, info.id, info.fingerprint)
    payload = json.dumps(
        {
            "document_id": info.id,
            "generation": info.fingerprint,
            "unstructured_version": info.unstructured_version,
            "strategy_used": info.strategy_used,
            "elements": [element_to_json(e) for e in elements],
        },
        ensure_ascii=False,
    ).encode("utf-8")
    attempt.librarian.objects.put(object_id, payload, "application/json")
    counts = Counter(e.category for e in elements)
    return ElementsResult(
        elements,
        {
            "elements": len(elements),
            "by_category": dict(sorted(counts.items())),
            "tables": counts.get("Table", 0),
            "images": counts.get("Image", 0),
            "strategy_asked": attempt.config.strategy,
            "strategy_used": info.strategy_used,
            "notes": "; ".join(info.notes),
            "unstructured_version": info.unstructured_version,
            "partition_s": round(elapsed, 3),
            **{f"decoder_{k}": round(v, 3) for k, v in info.stats.items()},
            "elements_object_id": str(object_id),
            "uri": attempt.librarian.objects.uri(object_id),
            "json_bytes": len(payload),
        },
    )


def load_elements(attempt: Attempt) -> ElementsResult:
    """The elements this generation stored earlier (a later stage selected without `elements`)."""
    object_id = elements_object_id(attempt.librarian.workspace, attempt.document_id, attempt.fingerprint)
    try:
        payload = b"".join(attempt.librarian.objects.open(object_id))
    except StorageUnavailable:
        raise  # a server outage, not a missing input: retried as one
    except LibrarianError as exc:
        raise MissingInput(
            attempt.document_id,
            f"no stored elements for generation {attempt.fingerprint[:12]} ({exc}); materialize elements first",
        ) from exc
    stored = json.loads(payload)
    attempt.info.strategy_used = stored["strategy_used"]
    return ElementsResult([element_from_json(e) for e in stored["elements"]], None)


def build(attempt: Attempt, elements: list[Element]) -> Built:
    """Sections and images of the generation (pure and cheap: rebuilt rather than read back)."""
    sections, by_section = build_sections(attempt.info, attempt.config, elements)
    return Built(sections, build_images(attempt.info, sections, by_section))
