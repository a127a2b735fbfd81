"""EPUB images: the image items of the zip, in reading order (unstructured's pandoc conversion
only names them)."""

from __future__ import annotations

import io
import posixpath
import re
import urllib.parse
import zipfile
from typing import TYPE_CHECKING

from ud_assets.decoding.model import ImageData

from .describe import image_data

if TYPE_CHECKING:  # imported where it runs; lxml ships no type hints (its names are Any to mypy)
    from lxml import etree

_OPF = "http://www.idpf.org/2007/opf"
_CONTAINER = "urn:oasis:names:tc:opendocument:xmlns:container"
_XLINK = "http://www.w3.org/1999/xlink"


def epub_images(data: bytes) -> list[ImageData]:
    """The images of an EPUB, once each: first those the spine's documents show, in reading
    order, then the other image/* manifest items (e.g. a cover) in manifest order. `name` is
    the image's path in the zip."""
    from lxml import etree

    images: list[ImageData] = []
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        opf_path = _epub_opf_path(archive)
        opf = etree.fromstring(archive.read(opf_path), _xml_parser())
        opf_dir = posixpath.dirname(opf_path)
        manifest: dict[str | None, tuple[str, str]] = {}  # id -> (path in zip, media type)
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


def _epub_opf_path(archive: zipfile.ZipFile) -> str:
    from lxml import etree

    try:
        container = etree.fromstring(archive.read("META-INF/container.xml"), _xml_parser())
        rootfile = container.find(f".//{{{_CONTAINER}}}rootfile")
        full_path: str | None = rootfile.get("full-path") if rootfile is not None else None
        if full_path:
            return full_path
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
    paths: list[str] = []
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


def _xml_parser() -> etree.XMLParser:
    from lxml import etree

    # No network, no entity expansion: EPUB content is untrusted.
    return etree.XMLParser(resolve_entities=False, no_network=True, recover=True)
