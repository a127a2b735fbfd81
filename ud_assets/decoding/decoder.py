"""The universal decoder: bytes → elements → pages/sections → images → provenance triples.

Two steps, so an orchestrator can store what lies between them:
- `partition_document` runs unstructured (the expensive part) and returns plain elements;
- `build` turns elements into sections, images and triples (cheap, pure).
`decode` does both.
"""

from __future__ import annotations

import base64
import time
from dataclasses import asdict
from datetime import datetime, timezone

from . import detect, ids, provenance
from .assembly import SEPARATOR, assemble
from .grouping import Group, page_groups, section_groups
from .model import (
    COMPONENT,
    COMPONENT_VERSION,
    DecoderConfig,
    DecodeResult,
    DocumentInfo,
    Element,
    ImageData,
    ImageRecord,
    PlacedElement,
    Section,
)
from .partitioning import unstructured_version

PAGE_LABELS = {detect.PDF: "Page", detect.PPTX: "Slide", detect.XLSX: "Sheet", detect.XLS: "Sheet"}


def describe_document(
    data: bytes,
    document_id: str,
    config: DecoderConfig,
    filename: str | None = None,
    declared_kind: str | None = None,
    title: str = "",
    version: str | None = None,
) -> DocumentInfo:
    mime = detect.detect_mime(data, filename, declared_kind)
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
        fingerprint=ids.fingerprint(digest, version, config),
    )


def partition_document(data: bytes, info: DocumentInfo, config: DecoderConfig, filename: str | None = None) -> list[Element]:
    """unstructured's elements (plus images found without it); records the strategy used on info."""
    from .isolation import default_partitioner

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


def build(info: DocumentInfo, config: DecoderConfig, elements: list[Element], now: datetime | None = None) -> DecodeResult:
    sections, section_elements = build_sections(info, config, elements)
    images = build_images(info, sections, section_elements)
    triples = build_triples(info, sections, images, now)
    return DecodeResult(info, config, elements, sections, images, triples)


def build_sections(
    info: DocumentInfo, config: DecoderConfig, elements: list[Element]
) -> tuple[list[Section], dict[str, list[Element]]]:
    """Pages or sections with exact offsets, and each one's elements (by section id)."""
    doc = info.id
    drafts: list[tuple[str, str, str | None, int | None, list[Element], int]] = []  # kind, label, parent key, page, elements, depth
    containers: dict[int, tuple[str, int]] = {}  # draft index of a split page -> (label, page)

    if info.mime_type in detect.PAGE_BASED:
        noun = PAGE_LABELS.get(info.mime_type, "Page")
        for number, group in page_groups(elements, config):
            if group.children:
                containers[len(drafts)] = (f"{noun} {number}", number)
                drafts.append(("page", f"{noun} {number}", None, number, group.elements, 0))
                page_key = len(drafts) - 1
                for k, child in enumerate(_kept(group.children), start=1):
                    drafts.append(("section", f"{noun} {number}, section {k}", page_key, number, child.elements, 1))
            elif _has_content(group):
                drafts.append(("page", f"{noun} {number}", None, number, group.elements, 0))
    else:
        groups = section_groups(elements, config)
        kept = _kept(groups)
        index_of = {id(g): i for i, g in enumerate(groups)}
        draft_of: dict[int, int] = {}
        for group in kept:
            draft_of[index_of[id(group)]] = len(drafts)
            parent = _nearest_kept_parent(groups, index_of[id(group)], draft_of)
            drafts.append(("section", "", parent, None, group.elements, group.depth))
        number = 0
        for i, draft in enumerate(drafts):
            number += 1
            drafts[i] = (draft[0], f"Section {number}", *draft[2:])

    ordinals = {"page": 0, "section": 0}
    sections: list[Section] = []
    by_id: dict[str, list[Element]] = {}
    position = 0
    for index, (kind, label, parent_key, page, group_elements, depth) in enumerate(drafts):
        ordinals[kind] += 1
        entity = ids.entity_id(doc, info.fingerprint, kind, ordinals[kind])
        parent = sections[parent_key].id if parent_key is not None else doc
        leaf = index not in containers
        assembled = assemble(group_elements)
        section = Section(
            id=entity,
            type=kind,
            label=label,
            parent=parent,
            page_number=page,
            char_offset=position if leaf else -1,
            char_length=len(assembled.text),
            text=assembled.text,
            element_types=assembled.element_types,
            table_count=assembled.table_count,
            image_count=assembled.image_count,
            elements=assembled.elements,
            ordinal=ordinals[kind],
            depth=depth,
            leaf=leaf,
        )
        if leaf:
            position += len(assembled.text) + len(SEPARATOR)
        sections.append(section)
        by_id[entity] = group_elements
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


def build_images(info: DocumentInfo, sections: list[Section], section_elements: dict[str, list[Element]]) -> list[ImageRecord]:
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
    started_at = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = ids.document_iri(info.id)
    agent = ids.agent_iri(COMPONENT)
    pages = [s for s in sections if s.type == "page"]
    triples = provenance.document_triples(
        doc, info.title, info.mime_type, page_count=len(pages) if info.mime_type in detect.PAGE_BASED else None
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
            record.id, "image", record.parent, activity, image_label(record),
            page_number=record.page_number, mime_type=record.mime_type,
        )
        triples += provenance.image_detail_triples(
            record.id, record.element_id, record.width, record.height, len(record.data), record.coordinates
        )
    return _unique(triples)


def _unique(triples: list[provenance.Triple]) -> list[provenance.Triple]:
    """The agent's triples repeat for every activity; keep each triple once, in order."""
    return list(dict.fromkeys(triples))


# JSON forms -------------------------------------------------------------------------------------


def element_to_json(element: Element) -> dict:
    data = asdict(element)
    if element.image is not None:
        data["image"] = {**asdict(element.image), "data": base64.b64encode(element.image.data).decode("ascii")}
    return data


def element_from_json(data: dict) -> Element:
    data = dict(data)
    image = data.pop("image", None)
    if image:
        image = ImageData(**{**image, "data": base64.b64decode(image["data"])})
    return Element(**data, image=image)


def result_to_json(result: DecodeResult) -> dict:
    """The `ud decode --format json` shape (images carry a byte count, not their bytes)."""
    info = result.document
    return {
        "document": {
            "id": info.id,
            "mime_type": info.mime_type,
            "sha256": info.sha256,
            "unstructured_version": info.unstructured_version,
            "strategy_used": info.strategy_used,
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
                "elements": [asdict(e) for e in s.elements],
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
