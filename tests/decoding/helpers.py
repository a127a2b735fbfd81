"""Small builders of plain elements for the pure-core tests."""

from itertools import count

from ud_assets.decoding.model import Element, ImageData

_ids = count(1)


def el(
    category: str = "NarrativeText",
    text: str = "text",
    depth: int | None = None,
    html: str | None = None,
    page: int | None = None,
    image: bytes | None = None,
) -> Element:
    return Element(
        element_id=f"e{next(_ids)}",
        category=category,
        text=text,
        category_depth=depth,
        text_as_html=html,
        page_number=page,
        image=ImageData(image, "image/png") if image is not None else None,
    )


def T(text: str = "Heading", depth: int | None = None, page: int | None = None) -> Element:
    return el("Title", text, depth=depth, page=page)


def N(text: str = "Narrative.", page: int | None = None) -> Element:
    return el("NarrativeText", text, page=page)


def Tab(text: str = "a b", html: str | None = "<table><tr><td>a</td><td>b</td></tr></table>") -> Element:
    return el("Table", text, html=html)


def Img(page: int | None = None, data: bytes = b"\x89PNG fake") -> Element:
    return el("Image", "", page=page, image=data)
