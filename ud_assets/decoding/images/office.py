"""DOCX and PPTX pictures, through unstructured's picture-partitioner hooks: without them it drops
every picture; with them the `Image` elements sit in document order between the text elements."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .describe import OCTET, describe_image
from .elements import NAME_FIELD

if TYPE_CHECKING:  # unstructured and its python-docx/pptx are imported where they run
    from docx.text.paragraph import Paragraph
    from lxml import etree  # no type hints: Any to mypy
    from pptx.shapes.picture import Picture
    from unstructured.documents.elements import CoordinatesMetadata, Image
    from unstructured.partition.docx import DocxPartitionerOptions
    from unstructured.partition.pptx import PptxPartitionerOptions

_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_V = "urn:schemas-microsoft-com:vml"
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
EMU_PER_POINT = 12700


class DocxPicturePartitioner:
    """unstructured DOCX picture sub-partitioner: an `Image` element per picture of a paragraph,
    carrying the picture's bytes and its part name (e.g. word/media/image1.png)."""

    @classmethod
    def iter_elements(cls, paragraph: Paragraph, opts: DocxPartitionerOptions) -> Iterator[Image]:
        for rel_id in _docx_picture_rel_ids(paragraph._p):
            part = paragraph.part.related_parts.get(rel_id)
            blob = part.blob if part is not None else b""
            if not blob:
                continue
            yield _image_element(
                blob,
                name=str(part.partname).lstrip("/"),
                origin="docx",
                filename=opts.metadata_file_path,
                last_modified=opts.last_modified,
                page_number=opts.metadata_page_number,
            )


def _docx_picture_rel_ids(p_element: etree._Element) -> list[str]:
    """Relationship ids of the pictures in a paragraph, in document order: DrawingML blips and
    legacy VML image data; the VML fallback of an mc:AlternateContent is skipped, since it
    repeats the picture of its DrawingML choice."""
    rel_ids: list[str] = []
    for node in p_element.iter(f"{{{_A}}}blip", f"{{{_V}}}imagedata"):
        if any(ancestor.tag == f"{{{_MC}}}Fallback" for ancestor in node.iterancestors()):
            continue
        rel_id = node.get(f"{{{_R}}}embed") or node.get(f"{{{_R}}}id")
        if rel_id:  # a linked (r:link) picture has no bytes in the package
            rel_ids.append(rel_id)
    return rel_ids


class PptxPicturePartitioner:
    """unstructured PPTX picture sub-partitioner: an `Image` element per picture shape, with its
    bytes, part name (e.g. ppt/media/image1.png) and position on the slide (points, top-left)."""

    @classmethod
    def iter_elements(cls, picture: Picture, opts: PptxPartitionerOptions) -> Iterator[Image]:
        from pptx.exc import PythonPptxError

        try:
            rel_id = picture._pic.blip_rId
            if rel_id is None:  # a linked picture (r:link) or none: no bytes in the package
                return
            part = picture.part.related_part(rel_id)
            blob = part.blob
        except (KeyError, ValueError, PythonPptxError):  # a dangling, external or malformed relationship
            return
        if not blob:
            return
        yield _image_element(
            blob,
            name=str(part.partname).lstrip("/"),
            origin="pptx",
            filename=opts.metadata_file_path,
            last_modified=opts.last_modified,
            page_number=opts.page_number,
            coordinates=_pptx_coordinates(picture),
        )


def _pptx_coordinates(picture: Picture) -> CoordinatesMetadata | None:
    """CoordinatesMetadata of the picture on its slide, in points from the top-left corner."""
    from unstructured.documents.coordinates import PixelSpace
    from unstructured.documents.elements import CoordinatesMetadata

    try:
        # EMUs, as floats: a grouped shape's are scaled below.
        x, y, cx, cy = (float(int(v)) for v in (picture.left, picture.top, picture.width, picture.height))
        presentation = picture.part.package.presentation_part.presentation
        slide_width, slide_height = int(presentation.slide_width), int(presentation.slide_height)
    except (TypeError, AttributeError):
        return None
    # A shape in a group is placed in the group's child space: map it out, group by group.
    for group in picture._element.iterancestors(f"{{{_P}}}grpSp"):
        xfrm = group.find(f"{{{_P}}}grpSpPr/{{{_A}}}xfrm")
        if xfrm is None:
            continue
        off, ext = xfrm.find(f"{{{_A}}}off"), xfrm.find(f"{{{_A}}}ext")
        ch_off, ch_ext = xfrm.find(f"{{{_A}}}chOff"), xfrm.find(f"{{{_A}}}chExt")
        if None in (off, ext, ch_off, ch_ext):
            continue
        scale_x = int(ext.get("cx")) / int(ch_ext.get("cx")) if int(ch_ext.get("cx")) else 1.0
        scale_y = int(ext.get("cy")) / int(ch_ext.get("cy")) if int(ch_ext.get("cy")) else 1.0
        x = int(off.get("x")) + (x - int(ch_off.get("x"))) * scale_x
        y = int(off.get("y")) + (y - int(ch_off.get("y"))) * scale_y
        cx, cy = cx * scale_x, cy * scale_y
    x0, y0 = x / EMU_PER_POINT, y / EMU_PER_POINT
    x1, y1 = (x + cx) / EMU_PER_POINT, (y + cy) / EMU_PER_POINT
    points = tuple((round(px, 3), round(py, 3)) for px, py in ((x0, y0), (x0, y1), (x1, y1), (x1, y0)))
    system = PixelSpace(width=slide_width / EMU_PER_POINT, height=slide_height / EMU_PER_POINT)
    return CoordinatesMetadata(points=points, system=system)


def _image_element(
    blob: bytes,
    *,
    name: str,
    origin: str,
    filename: str | None,
    last_modified: str | None,
    page_number: int | None,
    coordinates: CoordinatesMetadata | None = None,
) -> Image:
    from unstructured.documents.elements import ElementMetadata, Image

    mime = describe_image(blob)[0]
    metadata = ElementMetadata(
        image_base64=base64.b64encode(blob).decode("ascii"),
        image_mime_type=mime if mime != OCTET else None,
        coordinates=coordinates,
        filename=filename,
        last_modified=last_modified,
        page_number=page_number,
    )
    setattr(metadata, NAME_FIELD, name)  # an ad-hoc field: unstructured keeps it
    return Image(text="", metadata=metadata, detection_origin=origin)


def install_picture_partitioners() -> None:
    """Register the DOCX and PPTX picture sub-partitioners with unstructured (process-wide;
    calling it again changes nothing). Without them unstructured drops every picture."""
    from unstructured.partition import docx as unstructured_docx
    from unstructured.partition import pptx as unstructured_pptx

    unstructured_docx.register_picture_partitioner(DocxPicturePartitioner)
    unstructured_pptx.register_picture_partitioner(PptxPicturePartitioner)
