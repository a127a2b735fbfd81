"""The `images` stage: embedded images, original bytes, as child documents of their page or section."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from resources.model import IMAGE, Child, DocumentMetadata
from ud_assets.decoding.model import ImageRecord
from ud_assets.processing.model import TABLE_ROWS, Attempt, Built, ImagesResult, Table
from ud_assets.processing.stage_run import StageRun, named

IMAGES_COLUMNS = (
    ("id", "string", "librarian child id"),
    ("parent", "string", "the page or section it belongs to"),
    ("page", "int", ""),
    ("mime_type", "string", ""),
    ("bytes", "int", ""),
    ("width", "int", ""),
    ("height", "int", ""),
    ("bounding_box", "string", "points in the page's coordinate system"),
)


def images_stage(attempt: Attempt, built: Built, rewrite: bool = False) -> ImagesResult:
    """Store the images not stored yet (or all of them: rewrite). Their parents must be stored already."""
    started = time.perf_counter()
    lib = attempt.librarian
    # Which are stored already: one read for all of them (a page of a PDF can hold dozens), not one each.
    stored = set() if rewrite or not built.images else set(lib.get_metadata_many([r.id for r in built.images]))
    new = [
        Child(r.parent, r.id, r.mime_type, r.data, IMAGE, f"Image {r.ordinal}", (attempt.tag,))
        for r in built.images
        if r.id not in stored
    ]
    lib.put_children(new, known_parents=[s.id for s in built.sections])  # stored or checked before
    return ImagesResult(
        len(new),
        not rewrite and len(new) == len(built.images),  # fresh: none of them existed before
        {
            "images": len(built.images),
            "written": len(new),
            "bytes": sum(len(r.data) for r in built.images),
            "by_mime_type": dict(Counter(r.mime_type for r in built.images)),
            "images_table": images_table(built.images),
            "store_s": round(time.perf_counter() - started, 3),
        },
    )


def missing_children(attempt: Attempt, built: Built, children: list[DocumentMetadata] | None = None) -> list[str]:
    """Ids of this generation's pages, sections and images that the librarian does not hold.

    children: the document's children as just read, when the caller has them."""
    lib = attempt.librarian
    listed = lib.list_children(attempt.document_id) if children is None else children
    stored = {c.id for c in listed}
    for parent in {r.parent for r in built.images}:
        stored |= {c.id for c in lib.list_children(parent)}
    return [i for i in [s.id for s in built.sections] + [r.id for r in built.images] if i not in stored]


def check_children_present(run: StageRun) -> str:
    """Read back: every page, section and image of the generation has its row, and its object.

    A page's or section's object is the one whose text the offset check reads (read once for both);
    an image's is looked up."""
    built, rows, texts = run.built(), run.stored_children(), run.stored_texts()
    objects = run.attempt.librarian.objects
    problems: list[str] = []
    for child_id in [s.id for s in built.sections] + [r.id for r in built.images]:
        row = rows.get(child_id)
        if row is None:
            problems.append(f"{child_id} has no row")
        elif child_id not in texts and not objects.exists(row.object_id):
            problems.append(f"{child_id} has no object ({row.object_id})")
    return named(problems)


def images_table(images: list[ImageRecord]) -> Table:
    return Table(
        IMAGES_COLUMNS,
        [
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
            for r in images[:TABLE_ROWS]
        ],
        len(images),
    )


def _box(coordinates: Mapping[str, Any] | None) -> str | None:
    if not coordinates:
        return None
    points = coordinates.get("points")
    if points:
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        return f"({min(xs):.0f}, {min(ys):.0f}) – ({max(xs):.0f}, {max(ys):.0f})"
    return json.dumps(coordinates, sort_keys=True)[:120]
