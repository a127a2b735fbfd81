"""Parity with the library the decoder wraps: bare unstructured and the decoder, side by side.

For each file of a folder, `unstructured.partition.auto.partition(filename=..., strategy="fast")`
and the decoder (`decoding.decoder.decode`, default options) each run in a forked child with the
decoder's time and memory limits (a parser that crashes or hangs costs one row, not the run). The
element texts of both are compared (empty ones left out: pictures; whitespace collapsed). A row is:

- `same`: both decode and the texts are equal;
- `improved (NAME)`: both decode and the texts differ by a documented improvement, NAME in
  `IMPROVEMENTS` — the one list of them, each with its reason and the test that tells it applies;
- `ud only`: the decoder decodes a file unstructured fails on;
- `both fail`: neither decodes it (the decoder's error is the one to read);
- `UD FAILS`: unstructured decodes it and the decoder does not — a regression;
- `DIFFERS`: the texts differ and no listed improvement explains it — a regression;
- `BAD OFFSETS`: the decoder decodes the file but an offset it records does not slice exactly its
  text (a section out of the document text, an element out of its section's text, the element's
  own rendered text) — a regression whatever the texts.

Every file the decoder decodes has its offsets checked (`offset_problems`); `ud parity` prints how
many elements that covered above the summary line.

`ud parity DIR` prints the table and a one-line summary and exits 1 when any row is `UD FAILS`,
`DIFFERS` or `BAD OFFSETS`. Pure: no Dagster, no librarian; unstructured is imported only when a file is compared.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ud_assets.decoding import detect

if TYPE_CHECKING:
    from ud_assets.decoding.model import DecodeResult

# The documented improvements: where the decoder's element texts may differ from bare
# unstructured's, and why. Each has a test (EXPLAINS below) of whether it explains a difference.
IMPROVEMENTS: dict[str, str] = {
    "kind": "detection follows the content (detect.py): XHTML named .xml is HTML, XML named .html "
    "is HTML, a declared or generic kind is narrowed; unstructured then ran another partitioner",
    "ocr": "the `auto` strategy OCRs a PDF without a text layer (tesseract); bare `fast` reads no text",
    "attachments": "e-mail attachments are decoded and their elements follow the body's (unstructured "
    "skips or fails on them)",
    "delimited": "CSV/TSV read tolerantly (delimited.py): the delimiter that splits the first 50 records "
    "consistently instead of unstructured's sniff of the first line, ragged rows kept",
    "encoding": "text decoded by the decoder's encoding rule (byte-order marks, UTF-16/32, cp1252 preferred "
    "among look-alikes) where unstructured's guess read other characters",
    "complex-pdf": "a long PDF is parsed in page ranges (formats/pdf.py: page_ranges), so unstructured's "
    "`is_pdf_too_complex` heuristic (one page with too many graphics operations) empties only the range "
    "holding that page; bare `fast` on the whole PDF returns no element at all",
    "password": "a document that needs a password is refused naming the cause (`PDF is password-protected`, "
    "on record for `ud failures`) where unstructured returns no element, as for an empty document: "
    "no text is lost either way",
}


@dataclass
class Side:
    """One side's outcome on a file."""

    ok: bool
    error: str = ""
    kind: str = ""  # the MIME type this side decoded the file as
    texts: list[str] = field(default_factory=list)  # element texts, empty ones left out, whitespace collapsed
    strategy: str = ""
    attachment_texts: list[str] = field(default_factory=list)  # the decoder's: elements of attachments
    encoding: str = ""  # the decoder's encoding of a text file
    seconds: float = 0.0  # wall-clock time of this side on the file
    placed: int = 0  # the decoder's: elements whose offsets were checked
    offset_errors: list[str] = field(default_factory=list)  # the decoder's: offsets that slice another text


@dataclass
class Row:
    file: str
    unstructured: Side
    ud: Side
    verdict: str  # same | improved | ud only | both fail | UD FAILS | DIFFERS | BAD OFFSETS
    improvement: str = ""  # the IMPROVEMENTS key of an improved row
    detail: str = ""

    @property
    def regression(self) -> bool:
        return self.verdict in ("UD FAILS", "DIFFERS", "BAD OFFSETS")


def _normalize(texts: Iterable[str]) -> list[str]:
    return [t for t in (" ".join(text.split()) for text in texts) if t]


# -- the two sides, each in a forked child ------------------------------------------------------


def _bare(path: str) -> Side:
    """unstructured's partition() as a user would call it (runs in the child)."""
    from unstructured.file_utils.filetype import detect_filetype
    from unstructured.partition.auto import partition

    try:
        kind = detect.normalize(detect_filetype(file_path=path).mime_type)
    except Exception:  # its detection fails: partition() will say why
        kind = ""
    try:
        elements = partition(filename=path, strategy="fast")
    except Exception as exc:  # the library's failure on this file is a row of the table
        return Side(False, _first_line(exc), kind)
    return Side(True, "", kind, _normalize(el.text or "" for el in elements))


def _ud(path: str) -> Side:
    from ud_assets.decoding.decoder import decode
    from ud_assets.decoding.model import ConfigError, DecodeError, DecoderBug

    with open(path, "rb") as handle:
        data = handle.read()
    try:
        result = decode(data, os.path.basename(path), filename=path, title=os.path.basename(path))
    except (DecodeError, ConfigError) as exc:  # short messages naming the cause already
        return Side(False, str(exc))
    except DecoderBug as exc:  # a bug of ours on this file is its row (a regression), not the end of the run
        return Side(False, f"DecoderBug: {exc}")
    info = result.document
    encoding = detect.decode_text(data)[1] if detect.is_text_kind(info.mime_type) else ""
    placed, offset_errors = offset_problems(result)
    return Side(
        True,
        "",
        info.mime_type,
        _normalize(el.text for el in result.elements),
        info.strategy_used,
        _normalize(el.text for el in result.elements if el.extra.get("attachment")),
        encoding,
        placed=placed,
        offset_errors=offset_errors,
    )


def offset_problems(result: DecodeResult) -> tuple[int, list[str]]:
    """The offsets of a decode, checked as tests/decoding does: each section's `char_offset` slices
    its text out of the document text, each element's `offset` slices its text out of its section's,
    that text is the element's own (assembly.placed_text), and every element with text is placed in
    exactly one leaf section. Returns the number of elements placed in leaf sections and the problems (at most 5)."""
    from ud_assets.decoding.assembly import placed_text

    problems: list[str] = []
    text = result.text
    own = {element.element_id: placed_text(element) for element in result.elements}
    in_leaves: Counter[str] = Counter()
    checked = 0
    for section in result.sections:
        if text[section.char_offset : section.char_offset + section.char_length] != section.text:
            problems.append(f"section {section.label!r}: char_offset {section.char_offset} slices other text")
        for placed in section.elements:
            if section.leaf:
                checked += 1
                in_leaves[placed.element_id] += 1
            if section.text[placed.offset : placed.offset + placed.length] != placed.text:
                problems.append(f"{placed.category} {placed.element_id}: offset {placed.offset} slices other text")
            elif own.get(placed.element_id) != placed.text:
                problems.append(f"{placed.category} {placed.element_id}: placed text is not the element's")
    # An element with text is placed once; an empty one (a page break) once, or not at all in a
    # document without text (no section to place it in).
    unplaced = [key for key, own_text in own.items() if in_leaves[key] != 1 and (own_text or in_leaves[key] > 1)]
    if unplaced:
        problems.append(f"{len(unplaced)} elements not placed exactly once, e.g. {unplaced[0]}")
    return checked, problems[:5]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:160]}" if text else type(exc).__name__


def _refuse_the_network() -> None:
    """In the bare side's child: any connection or name lookup beyond loopback fails at once.
    unstructured reaches for models it downloads on first use (Whisper for an e-mail's MP3); `ud
    parity` never downloads anything, so such a file fails on the bare side, saying why."""

    def hook(event: str, args: tuple) -> None:
        if event == "socket.connect" and isinstance(args[1], tuple):
            host = str(args[1][0])
        elif event in ("socket.getaddrinfo", "socket.gethostbyname"):
            host = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
        else:
            return
        if not host.startswith(("127.", "::1", "localhost")):
            raise ConnectionRefusedError(f"ud parity runs unstructured offline ({event} {host})")

    sys.addaudithook(hook)


def _bare_offline(path: str) -> Side:
    _refuse_the_network()
    return _bare(path)


def _bare_in_child(path: str) -> Side:
    """_bare in a forked child with the decoder's limits: a crash or a hang is this file's error."""
    from ud_assets.decoding.isolation import isolation_available, run_isolated
    from ud_assets.decoding.limits import Limits
    from ud_assets.decoding.model import DecodeError

    if not isolation_available():
        return _bare(path)
    try:
        side, _stats = run_isolated(_bare_offline, Limits.from_env(), path)
    except DecodeError as exc:  # it timed out, ran out of memory or crashed
        return Side(False, str(exc))
    return side


# -- comparing ------------------------------------------------------------------------------------


def _explains_kind(bare: Side, ud: Side, path: str) -> bool:
    """Another kind, and the one the content itself shows: its markup's root element, an OLE2
    container's streams or a binary format's magic number. A kind read only from libmagic's guess
    at a kind of text (a few tags anywhere in a .txt) or kept from the extension does not count."""
    if not bare.kind or bare.kind == ud.kind:
        return False
    with open(path, "rb") as handle:
        data = handle.read()
    sniffed = detect.sniff(data)
    return ud.kind == detect.from_content(data) or (detect.is_binary_kind(sniffed) and ud.kind == sniffed)


def _explains_ocr(bare: Side, ud: Side, path: str) -> bool:
    return ud.kind == detect.PDF and ud.strategy == "ocr_only"


def _explains_attachments(bare: Side, ud: Side, path: str) -> bool:
    if ud.kind != detect.EML or not ud.attachment_texts:
        return False
    body = list(ud.texts)
    for text in ud.attachment_texts:  # the attachments' elements follow the body's
        if body and body[-1] == text:
            body.pop()
    return body == bare.texts[: len(body)]


def _explains_delimited(bare: Side, ud: Side, path: str) -> bool:
    """The decoder's delimiter or width differs from what pandas saw with unstructured's sniff."""
    if ud.kind not in (detect.CSV, detect.TSV):
        return False
    from unstructured.partition.csv import _sniff_delimiter

    from ud_assets.decoding.formats.delimited import _records, sniff_delimiter

    with open(path, "rb") as handle:
        text = detect.decode_text(handle.read())[0].lstrip("\ufeff")
    ours = "\t" if ud.kind == detect.TSV else sniff_delimiter(text)
    first = next((line for line in text.splitlines() if line.strip()), "")
    theirs = "\t" if ud.kind == detect.TSV else _sniff_delimiter(first + "\n")
    widths = {len(row) for row in _records(text, ours)}
    return (ours or "\x1f") != theirs or len(widths) > 1


def _explains_encoding(bare: Side, ud: Side, path: str) -> bool:
    if not ud.encoding or ud.encoding == "utf-8" or len(bare.texts) != len(ud.texts):
        return False
    ascii_only = [re.sub(r"[^\x00-\x7f]", "", text) for text in ud.texts]
    return ascii_only == [re.sub(r"[^\x00-\x7f]", "", text) for text in bare.texts]


def _explains_complex_pdf(bare: Side, ud: Side, path: str) -> bool:
    if ud.kind != detect.PDF or bare.texts or not ud.texts:
        return False
    from unstructured.partition.pdf import is_pdf_too_complex

    return bool(is_pdf_too_complex(filename=path))


def _explains_password(bare: Side, ud: Side, path: str) -> bool:
    """(A failure of the decoder's, see compare.)"""
    return bare.ok and not bare.texts and not ud.ok and "password-protected" in ud.error


EXPLAINS: dict[str, Callable[[Side, Side, str], bool]] = {
    "kind": _explains_kind,
    "ocr": _explains_ocr,
    "attachments": _explains_attachments,
    "delimited": _explains_delimited,
    "encoding": _explains_encoding,
    "complex-pdf": _explains_complex_pdf,
    "password": _explains_password,
}
assert EXPLAINS.keys() == IMPROVEMENTS.keys()


def compare(name: str, path: str, bare: Side, ud: Side) -> Row:
    """The row of the file at `path` (shown as `name`)."""
    if not ud.ok:
        if _explains_password(bare, ud, path):
            return Row(name, bare, ud, "improved", "password", ud.error)
        verdict = "UD FAILS" if bare.ok else "both fail"
        return Row(name, bare, ud, verdict, detail=ud.error)
    if ud.offset_errors:
        return Row(name, bare, ud, "BAD OFFSETS", detail="; ".join(ud.offset_errors))
    if not bare.ok:
        return Row(name, bare, ud, "ud only", detail=f"unstructured: {bare.error}")
    if bare.texts == ud.texts:
        return Row(name, bare, ud, "same")
    detail = _difference(bare.texts, ud.texts)
    for key, explains in EXPLAINS.items():
        if key != "password" and explains(bare, ud, path):
            return Row(name, bare, ud, "improved", key, detail)
    return Row(name, bare, ud, "DIFFERS", detail=detail)


def _difference(bare: list[str], ud: list[str]) -> str:
    removed = Counter(bare) - Counter(ud)
    added = Counter(ud) - Counter(bare)
    parts = [f"{len(bare)} vs {len(ud)} elements"]
    if removed:
        parts.append(f"-{sum(removed.values())} e.g. {_clip(next(iter(removed)))!r}")
    if added:
        parts.append(f"+{sum(added.values())} e.g. {_clip(next(iter(added)))!r}")
    if not removed and not added:
        parts.append("same texts in another order")
    return ", ".join(parts)


def _clip(text: str, size: int = 40) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


# -- running over a folder ------------------------------------------------------------------------


def corpus_files(folder: str) -> list[str]:
    """Every regular file under `folder` (hidden ones skipped), sorted."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [os.path.join(root, name) for name in sorted(files) if not name.startswith(".")]
    return found


def run(folder: str, progress: Callable[[Row], None] | None = None) -> list[Row]:
    """A row per file of `folder`."""
    from ud_assets.decoding.isolation import warm_up

    warm_up()  # each side's children start from a warm process
    rows = []
    for path in corpus_files(folder):
        started = time.perf_counter()
        bare = _bare_in_child(path)
        bare.seconds = time.perf_counter() - started
        ud = _ud(path)
        ud.seconds = time.perf_counter() - started - bare.seconds
        row = compare(os.path.relpath(path, folder), path, bare, ud)
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def _side_cell(side: Side) -> str:
    return f"{'ok' if side.ok else 'error'} ({len(side.texts)}, {side.seconds:.1f} s)"


def table(rows: list[Row]) -> str:
    """The Markdown table: file, unstructured, ud, verdict, differences."""
    lines = ["| file | unstructured | ud | verdict | differences |", "|---|---|---|---|---|"]
    for row in rows:
        verdict = f"improved ({row.improvement})" if row.improvement else row.verdict
        detail = row.detail.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {row.file} | {_side_cell(row.unstructured)} | {_side_cell(row.ud)} | {verdict} | {detail} |")
    return "\n".join(lines)


def summary(rows: list[Row]) -> str:
    """One line: files, decoded by each side, verdicts."""
    verdicts = Counter(f"improved ({r.improvement})" if r.improvement else r.verdict for r in rows)
    counts = ", ".join(f"{count} {verdict}" for verdict, count in sorted(verdicts.items()))
    bare_ok = sum(r.unstructured.ok for r in rows)
    ud_ok = sum(r.ud.ok for r in rows)
    regressions = sum(r.regression for r in rows)
    return (
        f"{len(rows)} files: unstructured decodes {bare_ok}, ud decodes {ud_ok}; {counts}; "
        f"{regressions} regression{'s' if regressions != 1 else ''}"
    )


def offsets_line(rows: list[Row]) -> str:
    """One line: how many elements of the files the decoder decodes had their offsets checked."""
    decoded = [r for r in rows if r.ud.ok]
    bad = [r.file for r in decoded if r.ud.offset_errors]
    placed = sum(r.ud.placed for r in decoded)
    files = f"{len(decoded)} file{'s' if len(decoded) != 1 else ''} ud decodes"
    if not bad:
        return f"element offsets: exact for all {placed} elements of the {files}"
    return f"element offsets: wrong in {len(bad)} of the {files} ({', '.join(bad[:5])})"


def improvements_legend() -> str:
    return "\n".join(f"- {key}: {reason}" for key, reason in IMPROVEMENTS.items())
