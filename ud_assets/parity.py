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
- `DIFFERS`: the texts differ and no listed improvement explains it — a regression.

`ud parity DIR` prints the table and a one-line summary and exits 1 when any row is `UD FAILS` or
`DIFFERS`. Pure: no Dagster, no librarian; unstructured is imported only when a file is compared.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ud_assets.decoding import detect

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


@dataclass
class Row:
    file: str
    unstructured: Side
    ud: Side
    verdict: str  # same | improved | ud only | both fail | UD FAILS | DIFFERS
    improvement: str = ""  # the IMPROVEMENTS key of an improved row
    detail: str = ""

    @property
    def regression(self) -> bool:
        return self.verdict in ("UD FAILS", "DIFFERS")


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
    from ud_assets.decoding.model import ConfigError, DecodeError

    with open(path, "rb") as handle:
        data = handle.read()
    try:
        result = decode(data, os.path.basename(path), filename=path, title=os.path.basename(path))
    except (DecodeError, ConfigError) as exc:  # short messages naming the cause already
        return Side(False, str(exc))
    info = result.document
    encoding = detect.decode_text(data)[1] if detect.is_text_kind(info.mime_type) else ""
    return Side(
        True,
        "",
        info.mime_type,
        _normalize(el.text for el in result.elements),
        info.strategy_used,
        _normalize(el.text for el in result.elements if el.extra.get("attachment")),
        encoding,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:160]}" if text else type(exc).__name__


def _bare_in_child(path: str) -> Side:
    """_bare in a forked child with the decoder's limits: a crash or a hang is this file's error."""
    from ud_assets.decoding.isolation import isolation_available, run_isolated
    from ud_assets.decoding.limits import Limits
    from ud_assets.decoding.model import DecodeError

    if not isolation_available():
        return _bare(path)
    try:
        side, _stats = run_isolated(_bare, Limits.from_env(), path)
    except DecodeError as exc:  # it timed out, ran out of memory or crashed
        return Side(False, str(exc))
    return side


# -- comparing ------------------------------------------------------------------------------------


def _explains_kind(bare: Side, ud: Side, path: str) -> bool:
    return bool(bare.kind) and bare.kind != ud.kind


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


EXPLAINS: dict[str, Callable[[Side, Side, str], bool]] = {
    "kind": _explains_kind,
    "ocr": _explains_ocr,
    "attachments": _explains_attachments,
    "delimited": _explains_delimited,
    "encoding": _explains_encoding,
}
assert EXPLAINS.keys() == IMPROVEMENTS.keys()


def compare(name: str, path: str, bare: Side, ud: Side) -> Row:
    """The row of the file at `path` (shown as `name`)."""
    if not ud.ok:
        verdict = "UD FAILS" if bare.ok else "both fail"
        return Row(name, bare, ud, verdict, detail=ud.error)
    if not bare.ok:
        return Row(name, bare, ud, "ud only", detail=f"unstructured: {bare.error}")
    if bare.texts == ud.texts:
        return Row(name, bare, ud, "same")
    detail = _difference(bare.texts, ud.texts)
    for key, explains in EXPLAINS.items():
        if explains(bare, ud, path):
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


def improvements_legend() -> str:
    return "\n".join(f"- {key}: {reason}" for key, reason in IMPROVEMENTS.items())
