"""Format detection and text decoding.

The librarian's declared kind wins when there is one. Otherwise libmagic looks at the bytes and
the file name's extension refines its answer: libmagic calls Markdown, RST, CSV and TSV
"text/plain", and without the right type unstructured loses their structure.
"""

from __future__ import annotations

import codecs
import os
import re

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
XLS = "application/vnd.ms-excel"
ODT = "application/vnd.oasis.opendocument.text"
EPUB = "application/epub+zip"
RTF = "application/rtf"
HTML = "text/html"
MARKDOWN = "text/markdown"
PLAIN = "text/plain"
CSV = "text/csv"
TSV = "text/tab-separated-values"
RST = "text/x-rst"
EML = "message/rfc822"
XML = "application/xml"
JSON = "application/json"
OCTET = "application/octet-stream"

# Formats grouped by page/slide/sheet.
PAGE_BASED = frozenset({PDF, PPTX, XLSX, XLS})

EXTENSIONS: dict[str, str] = {
    ".pdf": PDF,
    ".docx": DOCX,
    ".pptx": PPTX,
    ".xlsx": XLSX,
    ".xls": XLS,
    ".odt": ODT,
    ".epub": EPUB,
    ".rtf": RTF,
    ".html": HTML,
    ".htm": HTML,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".txt": PLAIN,
    ".text": PLAIN,
    ".csv": CSV,
    ".tsv": TSV,
    ".rst": RST,
    ".eml": EML,
    ".xml": XML,
    ".json": JSON,
}

# The suffix handed to unstructured (as metadata_filename) for each kind.
SUFFIXES: dict[str, str] = {mime: ext for ext, mime in reversed(list(EXTENSIONS.items()))}

# Aliases that libmagic or uploaders use for the kinds above.
ALIASES: dict[str, str] = {
    "text/x-markdown": MARKDOWN,
    "text/rtf": RTF,
    "application/x-rtf": RTF,
    "text/rst": RST,
    "text/x-rst": RST,
    "application/csv": CSV,
    "text/x-csv": CSV,
    "text/tsv": TSV,
    "application/xhtml+xml": HTML,
    "text/xml": XML,
    "application/vnd.ms-office": XLS,  # libmagic's name for OLE2 files such as .xls
    "application/CDFV2": XLS,
}

# Kinds for which libmagic's answer is too generic to beat the file name's extension.
_GENERIC = frozenset(
    {PLAIN, OCTET, "application/zip", "text/x-Algol68", "text/x-c", "text/x-c++", "application/x-empty", ""}
)
TEXT_KINDS = frozenset({PLAIN, MARKDOWN, CSV, TSV, RST, HTML, XML, JSON})


def normalize(mime: str | None) -> str:
    if not mime:
        return ""
    base = mime.split(";", 1)[0].strip().lower()
    for alias, canonical in ALIASES.items():
        if base == alias.lower():
            return canonical
    return base


def from_extension(filename: str | None) -> str:
    if not filename:
        return ""
    return EXTENSIONS.get(os.path.splitext(filename)[1].lower(), "")


def sniff(data: bytes) -> str:
    """libmagic's MIME type for the first bytes."""
    import magic  # imported here: libmagic is loaded only when detection runs

    return normalize(magic.from_buffer(bytes(data[:65536]), mime=True))


def detect_mime(data: bytes, filename: str | None = None, declared: str | None = None) -> str:
    """The document's MIME type: declared kind, else libmagic refined by the extension."""
    declared = normalize(declared)
    if declared and declared != OCTET:
        return declared
    sniffed = sniff(data) if data else ""
    by_name = from_extension(filename)
    if by_name and (sniffed in _GENERIC or (sniffed.startswith("text/") and by_name in TEXT_KINDS)):
        return by_name
    if sniffed == "text/plain" and _looks_like_html(data):
        return HTML
    return sniffed or by_name or OCTET


def is_text_kind(mime: str) -> bool:
    return mime in TEXT_KINDS or mime.startswith("text/")


def _looks_like_html(data: bytes) -> bool:
    head = data[:2048].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def decode_text(data: bytes) -> tuple[str, str]:
    """Text of a text document in any common encoding, and the encoding used.

    Byte-order marks first, then strict UTF-8, then BOM-less UTF-16 (many NULs), then
    charset-normalizer's best guess, then cp1252 (which decodes nearly anything).
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, errors="replace"), encoding
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    sample = data[:4096]
    if sample and sample.count(b"\x00") > len(sample) // 4:
        even_nuls = sample[0::2].count(b"\x00")
        odd_nuls = sample[1::2].count(b"\x00")
        encoding = "utf-16-le" if odd_nuls >= even_nuls else "utf-16-be"
        return data.decode(encoding, errors="replace"), encoding
    declared = _declared_charset(data)
    if declared:
        try:
            return data.decode(declared), declared
        except (LookupError, UnicodeDecodeError):
            pass
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        return data.decode("cp1252", errors="replace"), "cp1252"
    # Western text is far more common than its look-alikes (cp1250, latin-2...): prefer cp1252
    # when it reads the bytes about as cleanly as the best guess.
    for match in matches:
        if match.encoding == "cp1252" and match.chaos <= best.chaos + 0.02:
            return str(match), "cp1252"
    return str(best), best.encoding


_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def _declared_charset(data: bytes) -> str:
    """The charset an HTML or XML document declares in its head, if any."""
    found = _CHARSET.search(data[:4096]) or re.search(rb"""<\?xml[^>]+encoding=["']([A-Za-z0-9_.:-]+)""", data[:256])
    return found.group(1).decode("ascii").lower() if found else ""
