"""The `images` stage: embedded images, original bytes, as child documents of their page or section."""

from __future__ import annotations

import time
from collections import Counter

from resources.model import IMAGE, Child, DocumentMetadata
from ud_assets.processing.model import Attempt, Built, ImagesResult


def images_stage(attempt: Attempt, built: Built, rewrite: bool = False) -> ImagesResult:
    """Store the images not stored yet (or all of them: rewrite). Their parents must be stored already."""
    started = time.perf_counter()
    lib = attempt.librarian
    new = [
        Child(r.parent, r.id, r.mime_type, r.data, IMAGE, f"Image {r.ordinal}", (attempt.tag,))
        for r in built.images
        if rewrite or not lib.exists(r.id)
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
