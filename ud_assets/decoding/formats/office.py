"""Office documents unstructured reads itself: OOXML (DOCX, PPTX, XLSX), XLS and ODF (ODT),
with the DOCX and PPTX pictures of our sub-partitioners (images/office.py)."""

from __future__ import annotations

import io
import zipfile

from .. import detect
from .. import limits as limits_module
from ..limits import Limits
from ..model import DecodeError
from .base import Format

OOXML_PARTS = {detect.DOCX: "word/", detect.XLSX: "xl/", detect.PPTX: "ppt/"}


def check(data: bytes, mime: str, limits: Limits) -> None:
    if mime == detect.XLS:
        if data.startswith(detect.OLE2_MAGIC) and _ole_encrypted_package(data):
            raise DecodeError("XLS is password-protected")
        if not data.startswith((detect.OLE2_MAGIC, b"PK\x03\x04")):
            limits_module.mislabeled(mime, data)
        if data.startswith(detect.OLE2_MAGIC):
            limits_module.check_ole_kind(data, mime)
    else:
        check_package(data, mime, limits)


def check_package(data: bytes, mime: str, limits: Limits) -> None:
    """A ZIP package (OOXML, ODF; EPUB too, epub.py): readable, no bomb, not encrypted, the parts of its kind."""
    label = limits_module.label(mime)
    if data.startswith(detect.OLE2_MAGIC) and mime in OOXML_PARTS:
        if _ole_encrypted_package(data):  # Office wraps an encrypted OOXML package in OLE2
            raise DecodeError(f"{label} is password-protected")
        limits_module.mislabeled(mime, data)
    if not data.startswith(b"PK\x03\x04"):
        limits_module.mislabeled(mime, data)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise DecodeError(f"{label} is not a readable ZIP package ({exc})") from None
    with archive:
        limits_module.check_zip_bomb(archive, label, limits, depth=0, budget=[limits.max_unzipped_bytes])
        names = set(archive.namelist())
        if any(info.flag_bits & 0x1 for info in archive.infolist()):
            raise DecodeError(f"{label} is password-protected")
        expected = OOXML_PARTS.get(mime)
        if expected and not any(name.startswith(expected) for name in names):
            found = [kind for kind, part in OOXML_PARTS.items() if any(n.startswith(part) for n in names)]
            actual = found[0] if found else "application/zip"
            raise DecodeError(f"declared as {label} but the bytes are {limits_module.label(actual)}")
        if mime == detect.ODT and _odf_encrypted(archive, names):
            raise DecodeError(f"{label} is password-protected")
        if mime == detect.PPTX:
            slides = [n for n in names if n.startswith("ppt/slides/slide") and n.endswith(".xml")]
            limits_module.check_pages(len(slides), "PPTX", limits)


def _ole_encrypted_package(data: bytes) -> bool:
    import olefile

    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            return bool(ole.exists("EncryptedPackage"))  # olefile is untyped
    except OSError:
        return False


def _odf_encrypted(archive: zipfile.ZipFile, names: set[str]) -> bool:
    manifest = "META-INF/manifest.xml"
    if manifest not in names or archive.getinfo(manifest).file_size > 4 * limits_module.MiB:
        return False
    return b"encryption-data" in archive.read(manifest)


def prepare(data: bytes, mime: str) -> bytes:
    """Before unstructured's partition(): our picture partitioners, and a .docm read as a .docx."""
    from ..images.office import install_picture_partitioners

    if mime in (detect.DOCX, detect.ODT, detect.PPTX):  # ODT goes through unstructured's DOCX partitioner
        install_picture_partitioners()
    if mime == detect.DOCX:
        data = docm_as_docx(data)
    return data


_DOCM_MAIN = b"application/vnd.ms-word.document.macroEnabled.main+xml"
_DOCX_MAIN = b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"


def docm_as_docx(data: bytes) -> bytes:
    """A macro-enabled Word package (.docm) with its main part declared as a DOCX's.

    python-docx (and so unstructured) refuses a .docm for its main part's content type alone
    ("is not a Word file"); the parts are those of a DOCX. The macros are never run or read."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            types = package.read("[Content_Types].xml")
            if _DOCM_MAIN not in types:
                return data
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as rewritten:
                for info in package.infolist():
                    body = types.replace(_DOCM_MAIN, _DOCX_MAIN) if info.filename == "[Content_Types].xml" else None
                    rewritten.writestr(info, body if body is not None else package.read(info))
            return out.getvalue()
    except (zipfile.BadZipFile, KeyError):  # not a package we can read: the parser says why
        return data


FORMAT = Format(
    name="office",
    logic_version="1",
    mime_types=frozenset({detect.DOCX, detect.PPTX, detect.XLSX, detect.XLS, detect.ODT}),
    warm_imports={
        detect.DOCX: ("docx",),
        detect.PPTX: ("pptx",),
        detect.XLSX: ("xlsx",),
        detect.XLS: ("xlsx",),
        detect.ODT: ("odt", "docx"),  # ODT goes through unstructured's DOCX partitioner
    },
    page_labels={detect.PPTX: "Slide", detect.XLSX: "Sheet", detect.XLS: "Sheet"},
    check=check,
    prepare=prepare,
)
