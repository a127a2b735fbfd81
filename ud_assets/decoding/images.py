"""Images in documents, found without any ML model.

unstructured only extracts image bytes with its `hi_res` strategy, which needs layout-model
weights we cannot download. So the bytes come from the containers themselves:

- PDF: every image object, read with pypdfium2 (`pdf_images`).
- DOCX, PPTX: picture sub-partitioners plugged into unstructured's own hooks, so the `Image`
  elements sit in document order between the text elements (`install_picture_partitioners`).
- HTML, Markdown: unstructured makes `Image` elements for `<img src="data:...">` and keeps the
  bytes when asked to (see `HTML_IMAGE_KWARGS`); `image_from_element` turns them into ImageData.
- EPUB: the image items of the zip (`epub_images`).
- E-mail: attachments are split off before unstructured sees the message (`split_email`),
  because an image attachment would send unstructured's partition to `hi_res`.

Heavy libraries are imported inside the functions so importing this module stays cheap.
"""

from __future__ import annotations

import base64
import binascii
import io
import logging
import posixpath
import re
import urllib.parse
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator

from ud_assets.decoding import detect
from ud_assets.decoding.model import ImageData

logger = logging.getLogger(__name__)

OCTET = detect.OCTET

# Keyword arguments for unstructured's partition() that keep the bytes of `<img src="data:...">`
# images of HTML and Markdown (and of an e-mail's HTML body) as metadata.image_base64.
# NEVER pass them for PDFs or images: there they switch the "auto" strategy to hi_res.
HTML_IMAGE_KWARGS: dict[str, Any] = {"extract_image_block_types": ["Image"], "extract_image_block_to_payload": True}

# Ad-hoc unstructured metadata field carrying the picture's name in its package.
NAME_FIELD = "image_name"

# -- describing image bytes --------------------------------------------------------------------

# Pillow formats with real signatures; weakly-signed ones (TGA, DIB, PCX, MPEG...) claim junk.
_PIL_FORMATS = ("PNG", "JPEG", "MPO", "GIF", "TIFF", "BMP", "WEBP", "JPEG2000", "ICO", "WMF", "PSD", "AVIF", "HEIF")
_PIL_MIME = {"MPO": "image/jpeg", "WMF": "image/wmf", "HEIF": "image/heif"}


def describe_image(data: bytes) -> tuple[str, int | None, int | None]:
    """(MIME type, width, height) of image bytes; ("application/octet-stream", None, None) if
    Pillow cannot read them. Only headers are read, never pixels, so huge images are cheap."""
    from PIL import Image

    if not data:
        return OCTET, None, None
    Image.init()
    formats = [name for name in _PIL_FORMATS if name in Image.OPEN]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=formats) as image:
                mime = _PIL_MIME.get(image.format or "") or image.get_format_mimetype() or OCTET
                if image.format == "WMF" and data[40:44] == b" EMF":
                    mime = "image/emf"
                width, height = image.size
    except Image.DecompressionBombError:
        # A header claiming billions of pixels: say what it is, but not its size.
        sniffed = detect.sniff(data)
        return (sniffed if sniffed.startswith("image/") else OCTET), None, None
    except Exception:  # noqa: BLE001 - any unreadable bytes are simply "not an image"
        return OCTET, None, None
    if not mime.startswith("image/"):
        return OCTET, None, None
    return mime, width, height


def image_data(data: bytes, declared_mime: str | None = None, **fields: Any) -> ImageData:
    """ImageData for bytes, with the MIME type and size sniffed; the declared type is the
    fallback for images Pillow cannot read (e.g. SVG)."""
    mime, width, height = describe_image(data)
    if mime == OCTET:
        mime = detect.normalize(declared_mime) or (detect.sniff(data) if data else "") or OCTET
    return ImageData(data=data, mime_type=mime, width=width, height=height, **fields)


# -- PDF -----------------------------------------------------------------------------------------


def pdf_images(data: bytes, pages: range | None = None) -> list[ImageData]:
    """Every image object of every page (or of `pages`, 0-based indexes; form XObjects included),
    in page order, then top to bottom, then left to right.

    JPEG (DCTDecode) and JPEG 2000 (JPXDecode) images keep their embedded bytes; other images
    are their decoded pixels saved as PNG. Coordinates are PDF points from the page's top-left
    corner, exactly as unstructured's fast strategy places text elements (pdfminer's layout
    space: relative to the MediaBox, /Rotate applied).
    """
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    images: list[ImageData] = []
    pdf = pdfium.PdfDocument(data)
    try:
        for page_index in pages if pages is not None else range(len(pdf)):
            page = pdf[page_index]
            try:
                to_layout, layout_width, layout_height = _pdf_layout_transform(page)
                found = []
                objects = page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE])
                for number, obj in enumerate(objects, start=1):
                    name = f"page-{page_index + 1}/image-{number}"
                    try:
                        image_bytes = _pdf_image_bytes(obj)
                        box = _pdf_image_box(obj, to_layout, layout_height)
                    except Exception as exc:  # noqa: BLE001 - one broken image must not lose the others
                        logger.warning("skipping PDF image %s: %s", name, exc)
                        continue
                    if image_bytes is None:
                        continue
                    x0, y0, x1, y1 = box
                    coordinates = {
                        "points": [[x0, y0], [x0, y1], [x1, y1], [x1, y0]],
                        "system": "PixelSpace",
                        "layout_width": layout_width,
                        "layout_height": layout_height,
                    }
                    found.append(image_data(image_bytes, page_number=page_index + 1, coordinates=coordinates, name=name))
                found.sort(key=lambda image: (image.coordinates["points"][0][1], image.coordinates["points"][0][0]))
                images.extend(found)
            finally:
                page.close()
    finally:
        pdf.close()
    return images


def _pdf_image_bytes(obj) -> bytes | None:
    """The embedded JPEG / JPEG 2000 as is; otherwise the decoded pixels as a lossless PNG."""
    from PIL import Image

    complex_filters = obj.get_filters(skip_simple=True)
    if complex_filters in (["DCTDecode"], ["JPXDecode"]):
        embedded = bytes(obj.get_data(decode_simple=True))
        if describe_image(embedded)[0] != OCTET:
            return embedded
    width, height = obj.get_px_size()
    if width * height > Image.MAX_IMAGE_PIXELS:
        # Decoding would allocate width*height*4 bytes: treat it as a decompression bomb.
        logger.warning("skipping a %dx%d PDF image: larger than Pillow's MAX_IMAGE_PIXELS", width, height)
        return None
    # The stored pixels, without the page's transform or soft mask.
    bitmap = obj.get_bitmap(render=False)
    image = bitmap.to_pil()
    if image.mode == "RGBX":
        image = image.convert("RGB")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _pdf_layout_transform(page):
    """pdfminer's page matrix (MediaBox origin moved to 0,0 and /Rotate applied, as in
    PDFPageInterpreter.process_page) and the resulting layout width and height."""
    x0, y0, x1, y1 = page.get_mediabox()
    rotation = page.get_rotation() % 360
    if rotation == 90:
        matrix = (0, -1, 1, 0, -y0, x1)
    elif rotation == 180:
        matrix = (-1, 0, 0, -1, x1, y1)
    elif rotation == 270:
        matrix = (0, 1, -1, 0, y1, -x0)
    else:
        matrix = (1, 0, 0, 1, -x0, -y0)

    def to_layout(x: float, y: float) -> tuple[float, float]:
        a, b, c, d, e, f = matrix
        return a * x + c * y + e, b * x + d * y + f

    width, height = (abs(y1 - y0), abs(x1 - x0)) if rotation in (90, 270) else (abs(x1 - x0), abs(y1 - y0))
    return to_layout, float(width), float(height)


def _pdf_image_box(obj, to_layout, layout_height: float) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) of the image with the origin at the top-left of the page."""
    corners = list(obj.get_quad_points())
    # Objects inside form XObjects are placed in their form's space: apply each form's matrix.
    container = obj.container
    while container is not None:
        matrix = container.get_matrix()
        corners = [matrix.on_point(x, y) for x, y in corners]
        container = container.container
    corners = [to_layout(x, y) for x, y in corners]
    xs = [x for x, _ in corners]
    ys = [layout_height - y for _, y in corners]
    return tuple(round(value, 3) for value in (min(xs), min(ys), max(xs), max(ys)))


# -- DOCX and PPTX pictures, through unstructured's picture-partitioner hooks -------------------

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
    def iter_elements(cls, paragraph, opts) -> Iterator[Any]:
        for rel_id in _docx_picture_rel_ids(paragraph._p):
            part = paragraph.part.related_parts.get(rel_id)
            blob = getattr(part, "blob", None)
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


def _docx_picture_rel_ids(p_element) -> list[str]:
    """Relationship ids of the pictures in a paragraph, in document order: DrawingML blips and
    legacy VML image data; the VML fallback of an mc:AlternateContent is skipped, since it
    repeats the picture of its DrawingML choice."""
    rel_ids = []
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
    def iter_elements(cls, picture, opts) -> Iterator[Any]:
        try:
            part = picture.part.related_part(picture._pic.blip_rId)
            blob = part.blob
        except Exception:  # noqa: BLE001 - a linked or empty picture has no bytes to give
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


def _pptx_coordinates(picture):
    """CoordinatesMetadata of the picture on its slide, in points from the top-left corner."""
    from unstructured.documents.coordinates import PixelSpace
    from unstructured.documents.elements import CoordinatesMetadata

    try:
        x, y, cx, cy = (int(v) for v in (picture.left, picture.top, picture.width, picture.height))
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


def _image_element(blob: bytes, *, name: str, origin: str, coordinates=None, **metadata_fields):
    from unstructured.documents.elements import ElementMetadata, Image

    mime = describe_image(blob)[0]
    metadata = ElementMetadata(
        image_base64=base64.b64encode(blob).decode("ascii"),
        image_mime_type=mime if mime != OCTET else None,
        coordinates=coordinates,
        **metadata_fields,
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


# -- unstructured elements carrying image bytes --------------------------------------------------


def image_from_element(element) -> ImageData | None:
    """ImageData for an unstructured element that carries image bytes (metadata.image_base64, or
    an image_url that is a data: URI); None when it carries none (e.g. a remote URL)."""
    metadata = element.metadata
    declared = metadata.image_mime_type
    data = None
    if metadata.image_base64:
        try:
            data = base64.b64decode(metadata.image_base64)
        except (binascii.Error, ValueError):
            data = None
    elif metadata.image_url and metadata.image_url.strip().lower().startswith("data:"):
        parsed = parse_data_uri(metadata.image_url)
        if parsed:
            declared, data = parsed
    if not data:
        return None
    coordinates = None
    if metadata.coordinates is not None and metadata.coordinates.points:
        coordinates = metadata.coordinates.to_dict()
        coordinates["points"] = [list(point) for point in coordinates["points"]]
    name = getattr(metadata, NAME_FIELD, None) or metadata.image_path or ""
    return image_data(
        data,
        declared,
        page_number=metadata.page_number,
        coordinates=coordinates,
        element_id=element.id,
        name=name,
    )


def parse_data_uri(uri: str) -> tuple[str, bytes] | None:
    """(declared MIME type, bytes) of a data: URI, base64 or percent-encoded; None if malformed."""
    uri = uri.strip()
    header, comma, payload = uri.partition(",")
    if not comma or not header.lower().startswith("data:"):
        return None
    params = header[5:].split(";")
    mime = params[0].strip().lower() or "text/plain"
    try:
        if any(param.strip().lower() == "base64" for param in params[1:]):
            # HTML attributes may wrap base64 over several lines, and writers drop the padding.
            text = re.sub(r"\s+", "", urllib.parse.unquote(payload)).rstrip("=")
            return mime, base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        return mime, urllib.parse.unquote_to_bytes(payload)
    except (binascii.Error, ValueError):
        return None


# -- EPUB ----------------------------------------------------------------------------------------

_OPF = "http://www.idpf.org/2007/opf"
_CONTAINER = "urn:oasis:names:tc:opendocument:xmlns:container"
_XLINK = "http://www.w3.org/1999/xlink"


def epub_images(data: bytes) -> list[ImageData]:
    """The images of an EPUB, once each: first those the spine's documents show, in reading
    order, then the other image/* manifest items (e.g. a cover) in manifest order. `name` is
    the image's path in the zip."""
    import zipfile

    from lxml import etree

    images: list[ImageData] = []
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        opf_path = _epub_opf_path(archive)
        opf = etree.fromstring(archive.read(opf_path), _xml_parser())
        opf_dir = posixpath.dirname(opf_path)
        manifest = {}  # id -> (path in zip, media type)
        for item in opf.iter(f"{{{_OPF}}}item"):
            href = urllib.parse.unquote(item.get("href", "")).split("#")[0]
            manifest[item.get("id")] = (posixpath.normpath(posixpath.join(opf_dir, href)), item.get("media-type", ""))
        ordered: list[str] = []
        for itemref in opf.iter(f"{{{_OPF}}}itemref"):
            path, media_type = manifest.get(itemref.get("idref"), ("", ""))
            if path in names and ("html" in media_type or "xml" in media_type):
                ordered.extend(_xhtml_image_paths(archive.read(path), path))
        ordered.extend(path for path, media_type in manifest.values() if media_type.startswith("image/"))
        seen: set[str] = set()
        for path in ordered:
            if path in seen or path not in names:
                continue
            seen.add(path)
            declared = next((media for p, media in manifest.values() if p == path), None)
            images.append(image_data(archive.read(path), declared, name=path))
    return images


def epub_image_for_url(images: list[ImageData], url: str | None) -> ImageData | None:
    """The EPUB image an unstructured Image element's image_url points to. unstructured
    converts EPUBs with pandoc, whose image URLs are paths relative to the package document
    (e.g. images/photo.jpg for OEBPS/images/photo.jpg)."""
    if not url:
        return None
    path = posixpath.normpath(urllib.parse.unquote(url).split("#")[0].lstrip("./"))
    for image in images:
        if image.name == path or image.name.endswith("/" + path):
            return image
    return None


def _epub_opf_path(archive) -> str:
    from lxml import etree

    try:
        container = etree.fromstring(archive.read("META-INF/container.xml"), _xml_parser())
        rootfile = container.find(f".//{{{_CONTAINER}}}rootfile")
        if rootfile is not None and rootfile.get("full-path"):
            return rootfile.get("full-path")
    except (KeyError, etree.XMLSyntaxError):
        pass
    opfs = sorted(name for name in archive.namelist() if name.lower().endswith(".opf"))
    if not opfs:
        raise ValueError("EPUB without a package document (.opf)")
    return opfs[0]


def _xhtml_image_paths(content: bytes, doc_path: str) -> list[str]:
    """Zip paths of the images a content document shows: <img src>, SVG <image href>."""
    from lxml import etree, html

    try:
        root = etree.fromstring(content, _xml_parser())
    except etree.XMLSyntaxError:
        root = html.fromstring(content)  # tag soup: parse it as HTML
    base = posixpath.dirname(doc_path)
    paths = []
    for node in root.iter():
        if not isinstance(node.tag, str):
            continue
        local = etree.QName(node).localname.lower()
        ref = node.get("src") if local == "img" else None
        if local == "image":
            ref = node.get(f"{{{_XLINK}}}href") or node.get("href")
        if ref and not re.match(r"^[a-z][a-z0-9+.-]*:", ref, re.IGNORECASE):
            href = urllib.parse.unquote(ref).split("#")[0]
            paths.append(posixpath.normpath(posixpath.join(base, href)))
    return paths


def _xml_parser():
    from lxml import etree

    # No network, no entity expansion: EPUB content is untrusted.
    return etree.XMLParser(resolve_entities=False, no_network=True, recover=True)


# -- E-mail --------------------------------------------------------------------------------------


@dataclass
class EmailAttachment:
    filename: str
    mime_type: str  # sniffed from the bytes; the declared type when sniffing says nothing
    data: bytes
    declared_type: str = ""
    content_id: str = ""  # without the angle brackets
    inline: bool = False


@dataclass
class EmailParts:
    # The message without its attachments: unstructured's partition_email finds only the body.
    body: bytes
    attachments: list[EmailAttachment] = field(default_factory=list)


def split_email(data: bytes) -> EmailParts:
    """The message's body-only bytes and its attachments (every part that is not the text/plain
    or text/html body, at any depth; an attached message/rfc822 is one attachment).

    The body-only message keeps the headers and the multipart skeleton with the body parts,
    so partition_email sees the same body and no attachment to partition (an image attachment
    would make it run hi_res)."""
    import email
    from email import policy

    message = email.message_from_bytes(data, policy=policy.default)
    # A second parse, in compat32, is the copy we prune: it re-serialises headers unchanged.
    pruned = email.message_from_bytes(data, policy=policy.compat32)
    parts, pruned_parts = list(message.walk()), list(pruned.walk())
    body_ids = {id(part) for part in (message.get_body(("html",)), message.get_body(("plain",))) if part is not None}
    parents = {id(child): part for part in pruned_parts if part.is_multipart() for child in part.get_payload()}

    attachments: list[EmailAttachment] = []
    inside_attached_message: set[int] = set()
    for part, pruned_part in zip(parts, pruned_parts):
        if id(part) in inside_attached_message or id(part) in body_ids:
            continue
        is_message = part.get_content_type() == "message/rfc822"
        if part.is_multipart() and not is_message:
            continue
        if is_message:
            inside_attached_message.update(id(sub) for sub in part.walk() if sub is not part)
            payload = pruned_part.get_payload()
            content = payload[0].as_bytes() if isinstance(payload, list) and payload else b""
        else:
            content = pruned_part.get_payload(decode=True) or b""
        attachments.append(_attachment(part, content))
        _remove_part(pruned, pruned_part, parents)
    return EmailParts(body=pruned.as_bytes(), attachments=attachments)


def _attachment(part, content: bytes) -> EmailAttachment:
    filename = part.get_filename() or ""
    declared = part.get_content_type()
    content_id = (part.get("Content-ID") or "").strip().strip("<>")
    disposition = part.get_content_disposition()
    return EmailAttachment(
        filename=filename,
        mime_type=_sniff_attachment(content, declared, filename),
        data=content,
        declared_type=declared,
        content_id=content_id,
        inline=disposition == "inline" or (disposition is None and bool(content_id)),
    )


def _remove_part(root, part, parents: dict) -> None:
    parent = parents.get(id(part))
    if parent is not None:
        parent.set_payload([child for child in parent.get_payload() if child is not part])
        return
    # The message itself is the attachment (a single-part image, PDF...): leave an empty body.
    for header in ("Content-Type", "Content-Transfer-Encoding", "Content-Disposition", "Content-ID"):
        del root[header]
    root.set_payload("")


_GENERIC = frozenset({"", OCTET, detect.PLAIN, "application/zip", "application/x-empty"})


def _sniff_attachment(content: bytes, declared: str, filename: str) -> str:
    mime = describe_image(content)[0]
    if mime != OCTET:
        return mime
    sniffed = detect.sniff(content) if content else ""
    if sniffed not in _GENERIC:
        return sniffed
    declared = detect.normalize(declared)
    if declared and declared not in (OCTET, "application/zip"):
        return declared
    return detect.from_extension(filename) or sniffed or OCTET


def email_images(parts: EmailParts) -> list[ImageData]:
    """The attachments that are images (inline ones shown by Content-ID included), in order."""
    images = []
    for attachment in parts.attachments:
        if not attachment.mime_type.startswith("image/"):
            continue
        name = attachment.filename or (f"cid:{attachment.content_id}" if attachment.content_id else "")
        images.append(image_data(attachment.data, attachment.mime_type, name=name))
    return images
