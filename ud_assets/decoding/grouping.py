"""Grouping elements into pages and sections.

Page-based formats (PDF, PPTX, XLSX, XLS) are grouped by page/slide/sheet. Every other format,
DOCX included, uses the section strategy: Word's rendered page breaks depend on whether Word
last saved the file, so page numbers in a DOCX are never used for grouping (they stay on the
elements). The strategies keep upstream TrustGraph's semantics, with these changes: heading
honours heading depth, size measures the assembled text, and images never decide a split (they
stay in the group of the element before them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .assembly import SEPARATOR, placed_text
from .model import ConfigError, DecoderConfig, Element


@dataclass
class Group:
    """Elements that become one page or section."""

    elements: list[Element]
    depth: int = 0
    parent: int | None = None  # index of the enclosing group (heading nesting)
    children: list[Group] = field(default_factory=list)  # sections inside a page


def whole_document(elements: Sequence[Element], config: DecoderConfig | None = None) -> list[list[Element]]:
    return [list(elements)] if elements else []


def by_heading(elements: Sequence[Element], config: DecoderConfig | None = None) -> list[list[Element]]:
    return [group.elements for group in heading_groups(elements)]


def heading_groups(elements: Sequence[Element]) -> list[Group]:
    """A new section at every Title; a Title closes open sections of equal or deeper level.

    The section's parent is the nearest open section of a shallower level, so nested headings
    give nested sections. Without any Title the whole document is one section.
    """
    groups: list[Group] = []
    open_stack: list[int] = []  # indexes of open heading sections, shallow to deep
    current: Group | None = None
    for element in elements:
        if element.category == "Title":
            depth = element.category_depth or 0
            while open_stack and groups[open_stack[-1]].depth >= depth:
                open_stack.pop()
            current = Group([element], depth=depth, parent=open_stack[-1] if open_stack else None)
            groups.append(current)
            open_stack.append(len(groups) - 1)
        else:
            if current is None:
                current = Group([], depth=0)
                groups.append(current)
            current.elements.append(element)
    return groups


def by_element_type(elements: Sequence[Element], config: DecoderConfig | None = None) -> list[list[Element]]:
    """A new section whenever the stream switches between tables and everything else."""
    groups: list[list[Element]] = []
    for element in elements:
        if groups and groups[-1][-1].is_table == element.is_table:
            groups[-1].append(element)
        else:
            groups.append([element])
    return groups


def by_count(elements: Sequence[Element], config: DecoderConfig) -> list[list[Element]]:
    n = config.section_element_count
    if n <= 0:
        raise ConfigError(f"section_element_count must be > 0, not {n}")
    return [list(elements[i : i + n]) for i in range(0, len(elements), n)]


def by_size(elements: Sequence[Element], config: DecoderConfig) -> list[list[Element]]:
    """Accumulate until the assembled text (separators and table HTML included) would pass the limit.

    Never splits an element; an element larger than the limit is a section of its own.
    """
    limit = config.section_max_size
    groups: list[list[Element]] = []
    current: list[Element] = []
    size = 0
    for element in elements:
        text = placed_text(element)
        added = len(text) + (len(SEPARATOR) if size and text else 0)
        if current and size + added > limit:
            groups.append(current)
            current, size = [], 0
            added = len(text)
        current.append(element)
        size += added
    if current:
        groups.append(current)
    return groups


STRATEGIES: dict[str, Callable[..., list[list[Element]]]] = {
    "whole-document": whole_document,
    "heading": by_heading,
    "element-type": by_element_type,
    "count": by_count,
    "size": by_size,
}


def section_groups(elements: Sequence[Element], config: DecoderConfig) -> list[Group]:
    """Sections of a non-page document (or of one page, with section_within_pages)."""
    if config.section_strategy not in STRATEGIES:
        raise ConfigError(f"Unknown section strategy {config.section_strategy!r}")
    text_elements = [el for el in elements if not el.is_image]
    if config.section_strategy == "heading":
        groups = heading_groups(text_elements)
    else:
        groups = [Group(g) for g in STRATEGIES[config.section_strategy](text_elements, config)]
    if not groups:
        groups = [Group([])] if elements else []
    return _reinsert_images(elements, groups)


def _reinsert_images(elements: Sequence[Element], groups: list[Group]) -> list[Group]:
    """Put each image in the group of the element just before it (the first group at the start)."""
    if not groups:
        return groups
    home = {id(el): index for index, group in enumerate(groups) for el in group.elements}
    rebuilt = [Group([], g.depth, g.parent) for g in groups]
    current = 0
    for element in elements:
        if not element.is_image:
            current = home[id(element)]
        rebuilt[current].elements.append(element)
    return rebuilt


def page_groups(elements: Sequence[Element], config: DecoderConfig) -> list[tuple[int, Group]]:
    """(page number, group) in page order; pages split into sections when section_within_pages."""
    pages: dict[int, list[Element]] = {}
    for element in elements:
        pages.setdefault(element.page_number or 1, []).append(element)
    result = []
    for number in sorted(pages):
        group = Group(pages[number])
        if config.section_within_pages and config.section_strategy != "whole-document":
            inner = section_groups(pages[number], config)
            if len(inner) > 1:
                group.children = inner
        result.append((number, group))
    return result
