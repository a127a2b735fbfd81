"""The universal decoder: bytes → elements → pages/sections → images → provenance triples.

Two steps, so an orchestrator can store what lies between them:
- `partition_document` runs unstructured (the expensive part) and returns plain elements;
- `build` turns elements into sections, images and triples (cheap, pure).
`decode` does both.
"""

from __future__ import annotations

import base64
import copy
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypedDict

from . import detect, formats, ids, provenance
from .assembly import SEPARATOR, assemble
from .geometry import Coordinates
from .grouping import Group, page_groups, section_groups
from .model import (
    COMPONENT,
    COMPONENT_VERSION,
    DecoderConfig,
    DecodeResult,
    DocumentInfo,
    Element,
    ElementExtra,
    ImageData,
    ImageRecord,
    PlacedElement,
    Section,
)
from .partitioning import unstructured_version


def describe_document(
    data: bytes,
    document_id: str,
    config: DecoderConfig,
    filename: str | None = None,
    declared_kind: str | None = None,
    title: str = "",
    version: str | None = None,
    mime: str | None = None,
) -> DocumentInfo:
    # mime: the kind already detected from these same bytes and name (libmagic costs about 0.3 ms
    # a small document: a batch detects once, when its document is read for the parse).
    mime = mime or detect.detect_mime(data, filename, declared_kind)
    digest = ids.sha256_hex(data)
    version = version or unstructured_version()
    return DocumentInfo(
        id=document_id,
        title=title or (filename or ""),
        mime_type=mime,
        sha256=digest,
        size=len(data),
        unstructured_version=version,
        strategy_asked=config.strategy,
        strategy_used="",
        fingerprint=ids.fingerprint(digest, version, config, mime),
    )


def partition_document(
    data: bytes, info: DocumentInfo, config: DecoderConfig, filename: str | None = None
) -> list[Element]:
    """unstructured's elements (plus images found without it); records the strategy used on info."""
    from .isolation.client import default_partitioner

    # Each document is parsed in a child forked from a warm process, with time and memory limits.
    parted, stats = default_partitioner().partition(data, info.mime_type, config, filename)
    info.strategy_used = parted.strategy_used
    info.notes.extend(parted.notes)
    info.stats.update({k: v for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return parted.elements


def decode(
    data: bytes,
    document_id: str,
    config: DecoderConfig | None = None,
    filename: str | None = None,
    declared_kind: str | None = None,
    title: str = "",
    now: datetime | None = None,
) -> DecodeResult:
    config = config or DecoderConfig()
    started = time.perf_counter()
    info = describe_document(data, document_id, config, filename, declared_kind, title)
    elements = partition_document(data, info, config, filename)
    partitioned = time.perf_counter()
    result = build(info, config, elements, now)
    result.timings = {"partition_s": partitioned - started, "build_s": time.perf_counter() - partitioned}
    return result


def build(
    info: DocumentInfo, config: DecoderConfig, elements: list[Element], now: datetime | None = None
) -> DecodeResult:
    sections, section_elements = build_sections(info, config, elements)
    images = build_images(info, sections, section_elements)
    triples = build_triples(info, sections, images, now)
    return DecodeResult(info, config, elements, sections, images, triples)


@dataclass
class _Draft:
    """A page or section before ids and offsets are given out."""

    kind: str  # "page" | "section"
    label: str
    parent: int | None  # index of the enclosing draft; None: the document
    page: int | None
    elements: list[Element]
    depth: int
    leaf: bool = True  # False for a page split into sections


def build_sections(
    info: DocumentInfo, config: DecoderConfig, elements: list[Element]
) -> tuple[list[Section], dict[str, list[Element]]]:
    """Pages or sections with exact offsets, and each one's elements (by section id)."""
    doc = info.id
    drafts: list[_Draft] = []

    noun = formats.page_label(info.mime_type)
    if noun is not None:
        for number, group in page_groups(elements, config):
            if group.children:
                drafts.append(_Draft("page", f"{noun} {number}", None, number, group.elements, 0, leaf=False))
                page_key = len(drafts) - 1
                for k, child in enumerate(_kept(group.children), start=1):
                    drafts.append(
                        _Draft("section", f"{noun} {number}, section {k}", page_key, number, child.elements, 1)
                    )
            elif _has_content(group):
                drafts.append(_Draft("page", f"{noun} {number}", None, number, group.elements, 0))
    else:
        groups = section_groups(elements, config)
        kept = _kept(groups)
        index_of = {id(g): i for i, g in enumerate(groups)}
        draft_of: dict[int, int] = {}
        for group in kept:
            draft_of[index_of[id(group)]] = len(drafts)
            parent = _nearest_kept_parent(groups, index_of[id(group)], draft_of)
            drafts.append(_Draft("section", "", parent, None, group.elements, group.depth))
        for number, draft in enumerate(drafts, start=1):
            draft.label = f"Section {number}"

    ordinals = {"page": 0, "section": 0}
    sections: list[Section] = []
    by_id: dict[str, list[Element]] = {}
    position = 0
    for draft in drafts:
        ordinals[draft.kind] += 1
        entity = ids.entity_id(doc, info.fingerprint, draft.kind, ordinals[draft.kind])
        parent_id = sections[draft.parent].id if draft.parent is not None else doc
        assembled = assemble(draft.elements)
        section = Section(
            id=entity,
            type=draft.kind,
            label=draft.label,
            parent=parent_id,
            page_number=draft.page,
            char_offset=position if draft.leaf else -1,
            char_length=len(assembled.text),
            text=assembled.text,
            element_types=assembled.element_types,
            table_count=assembled.table_count,
            image_count=assembled.image_count,
            elements=assembled.elements,
            ordinal=ordinals[draft.kind],
            depth=draft.depth,
            leaf=draft.leaf,
        )
        if draft.leaf:
            position += len(assembled.text) + len(SEPARATOR)
        sections.append(section)
        by_id[entity] = draft.elements
    _place_containers(sections)
    return sections, by_id


def _has_content(group: Group) -> bool:
    return any(el.is_image or el.rendered().strip() for el in group.elements)


def _kept(groups: list[Group]) -> list[Group]:
    """Groups with text or images; upstream dropped empty groups but numbered around them."""
    return [g for g in groups if _has_content(g)]


def _nearest_kept_parent(groups: list[Group], index: int, draft_of: dict[int, int]) -> int | None:
    parent = groups[index].parent
    while parent is not None and parent not in draft_of:
        parent = groups[parent].parent
    return draft_of.get(parent) if parent is not None else None


def _place_containers(sections: list[Section]) -> None:
    """A split page spans its sections: its text is theirs joined, its offset the first one's."""
    for container in (s for s in sections if not s.leaf):
        inner = [s for s in sections if s.parent == container.id]
        if not inner:
            continue
        container.char_offset = inner[0].char_offset
        end = inner[-1].char_offset + inner[-1].char_length
        container.char_length = end - container.char_offset
        container.text = SEPARATOR.join(s.text for s in inner)
        container.elements = [
            PlacedElement(e.element_id, e.category, s.char_offset - container.char_offset + e.offset, e.length, e.text)
            for s in inner
            for e in s.elements
        ]


def build_images(
    info: DocumentInfo, sections: list[Section], section_elements: dict[str, list[Element]]
) -> list[ImageRecord]:
    """One record per distinct image; the parent is the leaf page/section where it first appears."""
    records: list[ImageRecord] = []
    seen: dict[str, ImageRecord] = {}
    for section in sections:
        if not section.leaf:
            continue
        for element in section_elements[section.id]:
            image: ImageData | None = element.image
            if not element.is_image or image is None or not image.data:
                continue
            digest = ids.sha256_hex(image.data)
            if digest in seen:
                continue
            ordinal = len(records) + 1
            record = ImageRecord(
                id=ids.entity_id(info.id, info.fingerprint, "image", ordinal),
                parent=section.id,
                mime_type=image.mime_type,
                page_number=image.page_number or section.page_number,
                width=image.width,
                height=image.height,
                coordinates=image.coordinates,
                element_id=element.element_id,
                data=image.data,
                sha256=digest,
                ordinal=ordinal,
            )
            seen[digest] = record
            records.append(record)
    return records


def image_label(record: ImageRecord) -> str:
    if record.page_number:
        return f"Image {record.ordinal} from page {record.page_number}"
    return f"Image {record.ordinal}"


def build_triples(
    info: DocumentInfo, sections: list[Section], images: list[ImageRecord], now: datetime | None = None
) -> list[provenance.Triple]:
    started_at = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = ids.document_iri(info.id)
    agent = ids.agent_iri(COMPONENT)
    pages = [s for s in sections if s.type == "page"]
    triples = provenance.document_triples(
        doc, info.title, info.mime_type, page_count=len(pages) if formats.page_label(info.mime_type) else None
    )
    for section in sections:
        parent = doc if section.parent == info.id else section.parent
        activity = ids.activity_iri(info.id, info.fingerprint, section.type, section.ordinal)
        triples += provenance.activity_triples(activity, parent, agent, COMPONENT, COMPONENT_VERSION, started_at)
        triples += provenance.derived_entity_triples(
            section.id,
            section.type,
            parent,
            activity,
            section.label,
            page_number=section.page_number,
            char_offset=section.char_offset,
            char_length=section.char_length,
            mime_type=info.mime_type,
            element_types=section.element_types,
            table_count=section.table_count,
            image_count=section.image_count,
        )
    for record in images:
        activity = ids.activity_iri(info.id, info.fingerprint, "image", record.ordinal)
        triples += provenance.activity_triples(activity, record.parent, agent, COMPONENT, COMPONENT_VERSION, started_at)
        triples += provenance.derived_entity_triples(
            record.id,
            "image",
            record.parent,
            activity,
            image_label(record),
            page_number=record.page_number,
            mime_type=record.mime_type,
        )
        triples += provenance.image_detail_triples(
            record.id, record.element_id, record.width, record.height, len(record.data), record.coordinates
        )
    return _unique(triples)


def _unique(triples: list[provenance.Triple]) -> list[provenance.Triple]:
    """The agent's triples repeat for every activity; keep each triple once, in order."""
    return list(dict.fromkeys(triples))


# JSON forms -------------------------------------------------------------------------------------


class ImageDataJSON(TypedDict):
    """ImageData as stored with the elements; `data` is base64."""

    data: str
    mime_type: str
    width: int | None
    height: int | None
    page_number: int | None
    coordinates: Coordinates | None
    element_id: str | None
    name: str


class ElementJSON(TypedDict):
    """Element as stored (the `elements` object of a generation); read back by element_from_json."""

    element_id: str
    category: str
    text: str
    page_number: int | None
    text_as_html: str | None
    category_depth: int | None
    parent_id: str | None
    coordinates: Coordinates | None
    image: ImageDataJSON | None
    extra: ElementExtra


def element_to_json(element: Element) -> ElementJSON:
    # Every field of Element and ImageData (tests/decoding/test_decoder.py checks), copied as
    # dataclasses.asdict would, so the JSON never shares a list with the element.
    image = element.image
    return {
        "element_id": element.element_id,
        "category": element.category,
        "text": element.text,
        "page_number": element.page_number,
        "text_as_html": element.text_as_html,
        "category_depth": element.category_depth,
        "parent_id": element.parent_id,
        "coordinates": copy.deepcopy(element.coordinates),
        "image": None
        if image is None
        else {
            "data": base64.b64encode(image.data).decode("ascii"),
            "mime_type": image.mime_type,
            "width": image.width,
            "height": image.height,
            "page_number": image.page_number,
            "coordinates": copy.deepcopy(image.coordinates),
            "element_id": image.element_id,
            "name": image.name,
        },
        "extra": copy.deepcopy(element.extra),
    }


def element_from_json(data: ElementJSON) -> Element:
    image = data["image"]
    return Element(
        element_id=data["element_id"],
        category=data["category"],
        text=data["text"],
        page_number=data["page_number"],
        text_as_html=data["text_as_html"],
        category_depth=data["category_depth"],
        parent_id=data["parent_id"],
        coordinates=data["coordinates"],
        image=None
        if not image
        else ImageData(
            data=base64.b64decode(image["data"]),
            mime_type=image["mime_type"],
            width=image["width"],
            height=image["height"],
            page_number=image["page_number"],
            coordinates=image["coordinates"],
            element_id=image["element_id"],
            name=image["name"],
        ),
        extra=data["extra"],
    )


class DocumentSummaryJSON(TypedDict):
    id: str
    mime_type: str
    sha256: str
    unstructured_version: str
    strategy_used: str
    notes: list[str]  # what the decoder chose to leave out or do differently (a skipped attachment...)


class PlacedElementJSON(TypedDict):
    element_id: str
    category: str
    offset: int
    length: int
    text: str


class SectionJSON(TypedDict):
    id: str
    type: str
    label: str
    parent: str
    page_number: int | None
    char_offset: int
    char_length: int
    text: str
    element_types: list[str]
    table_count: int
    image_count: int
    elements: list[PlacedElementJSON]


class ImageRecordJSON(TypedDict):
    id: str
    parent: str
    mime_type: str
    page_number: int | None
    width: int | None
    height: int | None
    coordinates: Coordinates | None
    element_id: str | None
    bytes: int  # the image's size; its bytes are not part of this form


class DecodeResultJSON(TypedDict):
    """The `ud decode --format json` shape."""

    document: DocumentSummaryJSON
    sections: list[SectionJSON]
    images: list[ImageRecordJSON]
    triples: list[provenance.TripleDict]


def result_to_json(result: DecodeResult) -> DecodeResultJSON:
    """The `ud decode --format json` shape (images carry a byte count, not their bytes)."""
    info = result.document
    return {
        "document": {
            "id": info.id,
            "mime_type": info.mime_type,
            "sha256": info.sha256,
            "unstructured_version": info.unstructured_version,
            "strategy_used": info.strategy_used,
            "notes": list(info.notes),
        },
        "sections": [
            {
                "id": s.id,
                "type": s.type,
                "label": s.label,
                "parent": s.parent,
                "page_number": s.page_number,
                "char_offset": s.char_offset,
                "char_length": s.char_length,
                "text": s.text,
                "element_types": s.element_types,
                "table_count": s.table_count,
                "image_count": s.image_count,
                "elements": [
                    {
                        "element_id": e.element_id,
                        "category": e.category,
                        "offset": e.offset,
                        "length": e.length,
                        "text": e.text,
                    }
                    for e in s.elements
                ],
            }
            for s in result.sections
        ],
        "images": [
            {
                "id": r.id,
                "parent": r.parent,
                "mime_type": r.mime_type,
                "page_number": r.page_number,
                "width": r.width,
                "height": r.height,
                "coordinates": r.coordinates,
                "element_id": r.element_id,
                "bytes": len(r.data),
            }
            for r in result.images
        ],
        "triples": [t.as_dict() for t in result.triples],
    }
