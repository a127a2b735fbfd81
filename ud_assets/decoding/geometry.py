"""Where an element or image sits on its page: plain data shared by the model and provenance."""

from __future__ import annotations

from typing import TypedDict


class Coordinates(TypedDict):
    """Where an element or image sits on its page, as unstructured's CoordinatesMetadata.to_dict().

    `points`: the box's corners as [x, y] (top-left, bottom-left, bottom-right, top-right); in
    "PixelSpace", PDF points from the top-left corner of a layout_width x layout_height page."""

    points: list[list[float]]
    system: str | None
    layout_width: float | None
    layout_height: float | None
