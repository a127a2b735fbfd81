"""Format detection and text decoding.

One rule (`detect_mime`) combines the witnesses of a document's kind, in this order:

1. the kind declared by the librarian (or the uploader);
2. libmagic's class of the bytes: a binary format it knows by its magic number (PDF, a ZIP or OLE2
   container, an OOXML package, RTF, an image...), or just "text";
3. the content's structure: the root element of markup (`<html>` or the XHTML namespace: HTML;
   any other root after an XML declaration: XML), the streams of an OLE2 container (DOC, PPT, XLS);
4. the file name's extension;
5. libmagic's guess at a kind of text (text/html, text/csv, application/json...), a guess made
   from a few tags or commas anywhere in the first bytes; never over an extension that names plain
   text (a .txt is text, whatever tags it mentions).

One exception to "text never becomes a binary kind": an .rtf whose text opens with "{\\" is RTF,
such as the fragments without a {\\rtf1 header that pandoc writes.

Each witness may only *narrow* the answer of those before it: it replaces that answer when the
answer is generic and the witness names a kind inside it (`NARROWS`: octet-stream → anything,
text → a kind of text, XML → HTML, ZIP → an OOXML/ODF/EPUB package, OLE2 → DOC/PPT/XLS), and is
ignored otherwise. So XHTML, XML-declared HTML and inline XBRL decode as HTML while real XML
stays XML; a README.md that opens with `<p align="center">` stays Markdown; a PDF named `.txt`
is a PDF; and a declared kind the bytes contradict is kept, for `formats.check_input` to refuse
the document naming both ("declared as PDF but the bytes are DOCX").
"""

from __future__ import annotations

import codecs
import io
import os
import re

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
XLS = "application/vnd.ms-excel"
DOC = "application/msword"
PPT = "application/vnd.ms-powerpoint"
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
ZIP = "application/zip"
OLE2 = "application/x-ole-storage"  # a Compound File Binary container (DOC, XLS, PPT, MSG...)

EXTENSIONS: dict[str, str] = {
    ".pdf": PDF,
    ".docx": DOCX,
    ".docm": DOCX,  # macro-enabled packages: the same parts (macros are never run)
    ".pptx": PPTX,
    ".pptm": PPTX,
    ".xlsx": XLSX,
    ".xlsm": XLSX,
    ".xls": XLS,
    ".doc": DOC,
    ".ppt": PPT,
    ".odt": ODT,
    ".epub": EPUB,
    ".rtf": RTF,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".xht": HTML,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".txt": PLAIN,
    ".text": PLAIN,
    ".csv": CSV,
    ".tsv": TSV,
    ".tab": TSV,
    ".rst": RST,
    ".eml": EML,
    ".xml": XML,
    ".json": JSON,
}

# The suffix handed to unstructured (as metadata_filename) for each kind: the first extension
# listed for it.
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
    "application/vnd.ms-word.document.macroenabled.12": DOCX,
    "application/vnd.ms-powerpoint.presentation.macroenabled.12": PPTX,
    "application/vnd.ms-excel.sheet.macroenabled.12": XLSX,
    # libmagic's names for an OLE2 container it cannot tell apart: the streams decide.
    "application/vnd.ms-office": OLE2,
    "application/cdfv2": OLE2,
    "application/x-empty": OCTET,
}

TEXT_KINDS = frozenset({PLAIN, MARKDOWN, CSV, TSV, RST, HTML, XML, JSON})
# What a generic kind may be narrowed to by a later witness (see the module's docstring).
NARROWS: dict[str, frozenset[str]] = {
    OCTET: frozenset({"*"}),
    PLAIN: TEXT_KINDS | {EML},
    XML: frozenset({HTML}),  # XHTML is XML
    ZIP: frozenset({DOCX, PPTX, XLSX, ODT, EPUB}),
    OLE2: frozenset({DOC, PPT, XLS}),
}
_KNOWN = frozenset(EXTENSIONS.values()) | {OLE2, ZIP, OCTET}


def normalize(mime: str | None) -> str:
    if not mime:
        return ""
    base = mime.split(";", 1)[0].strip().lower()
    return ALIASES.get(base, base)


def from_extension(filename: str | None) -> str:
    if not filename:
        return ""
    return EXTENSIONS.get(os.path.splitext(filename)[1].lower(), "")


def sniff(data: bytes) -> str:
    """libmagic's MIME type for the first bytes."""
    import magic  # imported here: libmagic is loaded only when detection runs

    return normalize(magic.from_buffer(bytes(data[:65536]), mime=True))


def _drop_magic_held_elsewhere_at_fork() -> None:
    """In a forked child: forget python-magic's shared Magic objects whose lock another thread of
    the parent held at the fork. That thread does not exist in the child, so the lock would never
    be released and the child's first sniff would wait for ever (seen: a decoding child stuck in
    Magic.from_buffer while the parent's main thread was detecting another document). A fresh
    Magic is made on the next use; an unlocked one is kept (loading libmagic's database again
    would cost every child milliseconds)."""
    import sys

    magic = sys.modules.get("magic")
    instances = getattr(magic, "_instances", None)
    if not isinstance(instances, dict):
        return
    for key, instance in list(instances.items()):
        lock = getattr(instance, "lock", None)
        if lock is not None and lock.locked():
            del instances[key]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_magic_held_elsewhere_at_fork)


def from_content(data: bytes) -> str:
    """The kind the content's structure shows, or "" when it shows none: HTML or XML for markup
    (by its root element), DOC, PPT or XLS for an OLE2 container (by its streams)."""
    if data.startswith(OLE2_MAGIC):
        return ole_kind(data)
    return markup_kind(data)


def _generic(kind: str) -> str:
    """The generic kind `kind` counts as when narrowing: text of a kind we do not know is text."""
    if not kind:
        return OCTET
    if kind.startswith("text/") and kind not in _KNOWN:
        return PLAIN
    return kind


def narrow(current: str, witness: str) -> str:
    """`witness` when it names a kind inside the generic `current`, else `current`."""
    if not witness or witness == current:
        return current or witness
    allowed = NARROWS.get(_generic(current), frozenset())
    return witness if ("*" in allowed or witness in allowed) else current


def detect_mime(data: bytes, filename: str | None = None, declared: str | None = None) -> str:
    """The document's MIME type by the module's rule: declared kind, libmagic's class, content,
    extension, libmagic's guess at the text kind; each narrows a generic answer only."""
    kind = normalize(declared)
    guess = sniff(data) if data else ""
    textual = _is_text_guess(guess)
    kind = narrow(kind, PLAIN if textual else guess)
    if data:
        kind = narrow(kind, from_content(data))
    named = from_extension(filename)
    kind = narrow(kind, named)
    if kind == PLAIN and named == RTF and data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\"):
        kind = RTF  # RTF without its {\rtf1 header (pandoc writes such fragments): libmagic says text
    if textual and named != PLAIN:  # a .txt is plain text, whatever tags libmagic spots in it
        kind = narrow(kind, guess)
    if kind.startswith("text/") and kind not in _KNOWN:
        kind = PLAIN  # libmagic's guesses at a programming language (text/x-c...): text
    return kind or OCTET


def is_binary_kind(kind: str) -> bool:
    """A format libmagic knows by its magic number (a kind of ours that is not text, or an image)."""
    if not kind or kind == OCTET or _is_text_guess(kind) or kind.endswith("+xml"):  # SVG is text
        return False
    return kind in _KNOWN or kind.startswith("image/")


def _is_text_guess(kind: str) -> bool:
    """libmagic's answers that say "text" and guess what kind of text (RTF has a magic number)."""
    return kind.startswith("text/") or kind in TEXT_KINDS or kind == EML


def is_text_kind(mime: str) -> bool:
    return mime in TEXT_KINDS or mime.startswith("text/")


# -- the content's own witness ----------------------------------------------------------------

OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# The stream that makes an OLE2 container each kind (unstructured's rule, file_utils/filetype.py).
_OLE_STREAMS = (("WordDocument", DOC), ("PowerPoint Document", PPT), ("Workbook", XLS), ("Book", XLS))

XHTML_NAMESPACE = "http://www.w3.org/1999/xhtml"
# What may precede the root element: an XML declaration, processing instructions, comments, a
# doctype (with an internal subset), whitespace.
_PROLOG = re.compile(
    r"\A(?:\s+|<\?.*?\?>|<!--.*?-->|<!DOCTYPE(?:[^\[>]|\[.*?\])*>)*",
    re.DOTALL | re.IGNORECASE,
)
_ROOT = re.compile(r"<([A-Za-z_][\w.:-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>?")
_DOCTYPE_HTML = re.compile(r"<!DOCTYPE\s+html\b", re.IGNORECASE)
_XMLNS = re.compile(r"""\bxmlns(?::([\w.-]+))?\s*=\s*["']([^"']*)["']""")


def ole_kind(data: bytes) -> str:
    """DOC, PPT or XLS by the streams of an OLE2 container; OLE2 when none of them is there."""
    import olefile

    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            names = {"/".join(entry) for entry in ole.listdir(streams=True, storages=False)}
    except Exception:  # olefile raises many kinds on damaged bytes: the parser reports the damage
        return OLE2
    for stream, kind in _OLE_STREAMS:
        if stream in names:
            return kind
    return OLE2


def markup_kind(data: bytes) -> str:
    """HTML when the root element is `html` or in the XHTML namespace (XHTML, XML-declared HTML,
    inline XBRL) or the doctype is HTML's; XML for any other root after an XML declaration; ""
    when the text does not start as markup."""
    head = _head_text(data)
    if not head:
        return ""
    prolog = _PROLOG.match(head)
    end = prolog.end() if prolog else 0
    if _DOCTYPE_HTML.search(head, 0, end):
        return HTML
    root = _ROOT.match(head, end)
    if root is None:
        return ""
    name, attributes = root.group(1), root.group(2)
    prefix, _, local = name.rpartition(":")
    namespaces = {(found.group(1) or ""): found.group(2) for found in _XMLNS.finditer(attributes)}
    if local.lower() == "html" or namespaces.get(prefix) == XHTML_NAMESPACE:
        return HTML
    return XML if head.lstrip().startswith("<?xml") else ""


def _head_text(data: bytes, size: int = 8192) -> str:
    """The first characters of a text document, whatever its encoding (never raises)."""
    sample = data[:size]
    for bom, encoding in _BOMS:
        if sample.startswith(bom):
            return sample[len(bom) :].decode(encoding, errors="ignore")
    if sample.count(b"\x00") > len(sample) // 4:
        encoding = "utf-16-le" if sample[1::2].count(b"\x00") >= sample[0::2].count(b"\x00") else "utf-16-be"
        return sample.decode(encoding, errors="ignore")
    return sample.decode("utf-8", errors="ignore")


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
    sample = data[:4096]
    # NULs between the letters: UTF-16 or UTF-32 without a byte-order mark (valid UTF-8 too, so
    # this comes first: text never holds NULs).
    if sample and sample.count(b"\x00") > len(sample) // 4:
        encoding = wide_encoding(sample)
        return data.decode(encoding, errors="replace"), encoding
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
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


def wide_encoding(sample: bytes) -> str:
    """UTF-32 or UTF-16, little- or big-endian, by where the NULs of mostly-Latin text sit."""
    quarters = [sample[i::4].count(b"\x00") for i in range(4)]
    units = len(sample) // 4 or 1
    if min(quarters[1], quarters[2]) > 0.9 * units:  # two NULs in the middle of every 4 bytes
        return "utf-32-le" if quarters[3] > 0.9 * units and quarters[0] < quarters[3] else "utf-32-be"
    return "utf-16-le" if sample[1::2].count(b"\x00") >= sample[0::2].count(b"\x00") else "utf-16-be"


_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def _declared_charset(data: bytes) -> str:
    """The charset an HTML or XML document declares in its head, if any."""
    found = _CHARSET.search(data[:4096]) or re.search(rb"""<\?xml[^>]+encoding=["']([A-Za-z0-9_.:-]+)""", data[:256])
    return found.group(1).decode("ascii").lower() if found else ""
