"""What each partition's materialization shows in the UI, in Dagster's own conventions.

The stages return plain values; here they become Dagster metadata: `dagster/uri` for stored
objects, `dagster/row_count` for what a stage produced, sections and images as tables (so a
person finds any section's or image's document, page and position without leaving the UI), the
Markdown preview, and the generation every value belongs to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import dagster as dg

from ud_assets.decoding.model import ImageRecord, Section
from ud_assets.processing.model import CHUNKS, ELEMENTS, IMAGES, PROVENANCE, SECTIONS, Outcome

TABLE_ROWS = 200  # rows shown per table; dagster/row_count says how many there are
TEXT_START = 80  # characters of a section's text shown in its row

# The stage metadata value that counts the stage's rows.
ROW_COUNTS = {ELEMENTS: "elements", IMAGES: "images", CHUNKS: "chunks", PROVENANCE: "triples"}

SECTIONS_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("id", "string", description="librarian child id (urn:page:… / urn:section:…)"),
        dg.TableColumn("label", "string"),
        dg.TableColumn("type", "string", description="page | section"),
        dg.TableColumn("page", "int"),
        dg.TableColumn("char_offset", "int", description="offset in the document text"),
        dg.TableColumn("char_length", "int"),
        dg.TableColumn("text", "string", description=f"the first {TEXT_START} characters"),
    ]
)
IMAGES_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("id", "string", description="librarian child id"),
        dg.TableColumn("parent", "string", description="the page or section it belongs to"),
        dg.TableColumn("page", "int"),
        dg.TableColumn("mime_type", "string"),
        dg.TableColumn("bytes", "int"),
        dg.TableColumn("width", "int"),
        dg.TableColumn("height", "int"),
        dg.TableColumn("bounding_box", "string", description="points in the page's coordinate system"),
    ]
)


def stage_metadata(stage: str, outcome: Outcome, values: Mapping[str, Any]) -> dict[str, Any]:
    """The materialization metadata of one stage of one document, from what the stage returned."""
    out: dict[str, Any] = {"generation": outcome.fingerprint}
    for name, value in values.items():
        if value is None:
            continue
        if name == "uri":
            out["dagster/uri"] = _uri(value)
        elif name == "preview":
            out[name] = dg.MetadataValue.md(value or "_(no text)_")
        elif isinstance(value, dict | list):
            out[name] = dg.MetadataValue.json(value)
        else:
            out[name] = value
    if stage in (SECTIONS, IMAGES, CHUNKS) and outcome.source_uri:
        # Children of the source document in the librarian: the URI is the bytes they come from.
        out["dagster/uri"] = _uri(outcome.source_uri)
    if stage in ROW_COUNTS and isinstance(values.get(ROW_COUNTS[stage]), int):
        out["dagster/row_count"] = values[ROW_COUNTS[stage]]
    if stage == SECTIONS and outcome.built is not None:
        out["dagster/row_count"] = len(outcome.built.sections)
        out["sections"] = sections_table(outcome.built.sections)
    if stage == IMAGES and outcome.built is not None:
        out["images_table"] = images_table(outcome.built.images)
    return out


def _uri(value: str) -> dg.MetadataValue:
    return dg.MetadataValue.path(value) if value.startswith("file:") else dg.MetadataValue.url(value)


def sections_table(sections: list[Section]) -> dg.TableMetadataValue:
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord(
                {
                    "id": s.id,
                    "label": s.label,
                    "type": s.type,
                    "page": s.page_number,
                    "char_offset": s.char_offset,
                    "char_length": s.char_length,
                    "text": s.text[:TEXT_START].replace("\n", " "),
                }
            )
            for s in sections[:TABLE_ROWS]
        ],
        schema=SECTIONS_SCHEMA,
    )


def images_table(images: list[ImageRecord]) -> dg.TableMetadataValue:
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord(
                {
                    "id": r.id,
                    "parent": r.parent,
                    "page": r.page_number,
                    "mime_type": r.mime_type,
                    "bytes": len(r.data),
                    "width": r.width,
                    "height": r.height,
                    "bounding_box": _box(r.coordinates),
                }
            )
            for r in images[:TABLE_ROWS]
        ],
        schema=IMAGES_SCHEMA,
    )


def _box(coordinates: Mapping[str, Any] | None) -> str | None:
    if not coordinates:
        return None
    points = coordinates.get("points")
    if points:
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        return f"({min(xs):.0f}, {min(ys):.0f}) – ({max(xs):.0f}, {max(ys):.0f})"
    return json.dumps(coordinates, sort_keys=True)[:120]


def failing_documents_table(failing: list[tuple[str, str]]) -> dg.TableMetadataValue:
    """One row per document that failed a check, with what was wrong."""
    return dg.MetadataValue.table(
        records=[dg.TableRecord({"document_id": doc, "detail": detail}) for doc, detail in failing[:TABLE_ROWS]],
        schema=dg.TableSchema(columns=[dg.TableColumn("document_id", "string"), dg.TableColumn("detail", "string")]),
    )
