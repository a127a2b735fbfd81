"""Text assembly with exact offsets.

A page or section's text is its elements' rendered texts joined by a blank line: tables as
their HTML, images never (they are counted and typed instead). Every element gets the offset
and length of exactly what was placed for it, so text[offset:offset + length] is that text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .model import Element, PlacedElement

SEPARATOR = "\n\n"


def placed_text(element: Element) -> str:
    """What the element contributes to its section's text ("" for images and blank elements)."""
    text = element.rendered()
    return text if text.strip() else ""


@dataclass
class Assembled:
    text: str
    elements: list[PlacedElement]
    element_types: list[str]
    table_count: int
    image_count: int


def assemble(elements: Sequence[Element]) -> Assembled:
    parts: list[str] = []
    placed: list[PlacedElement] = []
    position = 0
    for element in elements:
        text = placed_text(element)
        if text:
            if parts:
                position += len(SEPARATOR)
            placed.append(PlacedElement(element.element_id, element.category, position, len(text), text))
            parts.append(text)
            position += len(text)
        else:
            placed.append(PlacedElement(element.element_id, element.category, position, 0, ""))
    return Assembled(
        text=SEPARATOR.join(parts),
        elements=placed,
        element_types=sorted({el.category for el in elements}),
        table_count=sum(1 for el in elements if el.is_table),
        image_count=sum(1 for el in elements if el.is_image),
    )
