"""What each partition's materialization shows in the UI, in Dagster's own conventions.

The stages return plain values; here they become Dagster metadata: `dagster/uri` for stored
objects, `dagster/row_count` for what a stage produced, sections and images as tables (so a
person finds any section's or image's document, page and position without leaving the UI), the
Markdown preview, and the generation every value belongs to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg

from ud_assets.processing.model import Outcome, Table
from ud_assets.processing.stages import Stage

TABLE_ROWS = 200  # rows shown per table; dagster/row_count says how many there are


def stage_metadata(stage: Stage, outcome: Outcome, values: Mapping[str, Any]) -> dict[str, Any]:
    """The materialization metadata of one stage of one document, from what the stage returned."""
    out: dict[str, Any] = {"generation": outcome.fingerprint}
    for name, value in values.items():
        if value is None:
            continue
        if name == "uri":
            out["dagster/uri"] = _uri(value)
        elif name == "preview":
            out[name] = dg.MetadataValue.md(value or "_(no text)_")
        elif isinstance(value, Table):
            out[name] = table(value)
        elif isinstance(value, dict | list):
            out[name] = dg.MetadataValue.json(value)
        else:
            out[name] = value
    if stage.children_of_source and outcome.source_uri:
        # Children of the source document in the librarian: the URI is the bytes they come from.
        out["dagster/uri"] = _uri(outcome.source_uri)
    count = values.get(stage.row_count) if stage.row_count else None
    if isinstance(count, Table):
        out["dagster/row_count"] = count.total
    elif isinstance(count, int):
        out["dagster/row_count"] = count
    return out


def _uri(value: str) -> dg.MetadataValue:
    return dg.MetadataValue.path(value) if value.startswith("file:") else dg.MetadataValue.url(value)


def table(value: Table) -> dg.TableMetadataValue:
    return dg.MetadataValue.table(
        records=[dg.TableRecord(row) for row in value.rows[:TABLE_ROWS]],
        schema=dg.TableSchema(
            columns=[dg.TableColumn(name, kind, description=about or None) for name, kind, about in value.columns]
        ),
    )


def failing_documents_table(failing: list[tuple[str, str]]) -> dg.TableMetadataValue:
    """One row per document that failed a check, with what was wrong."""
    return dg.MetadataValue.table(
        records=[dg.TableRecord({"document_id": doc, "detail": detail}) for doc, detail in failing[:TABLE_ROWS]],
        schema=dg.TableSchema(columns=[dg.TableColumn("document_id", "string"), dg.TableColumn("detail", "string")]),
    )
