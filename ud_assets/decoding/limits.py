"""Limits on one decode, and the cheap checks that turn a hopeless document away before parsing.

The checks (formats.check_input: the size here, then each format family's own, with the helpers
here they share) read headers only (PDF cross-reference, ZIP central directory, OLE2 directory):
no parser runs, so a zip bomb or a 100,000-page PDF is refused in milliseconds with a message
naming the cause. What cannot be known from headers (a parser looping, memory ballooning) is
the isolated child's job (isolation/).
"""

from __future__ import annotations

import io
import os
import time
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from . import detect
from .model import ConfigError, DecodeError

MiB = 1024 * 1024

# A ZIP package with more members than this is a bomb, not a document: EPUBs with thousands of
# pictures stay well below it.
MAX_ZIP_ENTRIES = 20_000
# XML compresses about 10:1 and a repetitive spreadsheet rarely beyond 100:1; above that *and*
# big, the package is built to inflate.
MAX_ZIP_RATIO = 100
ZIP_RATIO_FLOOR = 256 * MiB
# Archives inside archives (an XLSX embedded in a DOCX is depth 1).
MAX_ZIP_DEPTH = 2
MAX_NESTED_READ = 64 * MiB

_ZIP_SUFFIXES = (".zip", ".docx", ".xlsx", ".pptx", ".odt", ".ods", ".odp", ".epub", ".jar")
OLE2_MAGIC = detect.OLE2_MAGIC

_Number = TypeVar("_Number", int, float)


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 300.0
    memory_mb: int = 4096  # what one document may add to the warm decoder's memory
    max_bytes: int = 512 * MiB
    max_pages: int = 5000
    workers: int = 2  # parses at once: documents of a batch, page ranges of one large PDF
    # How much lower a parse child's CPU priority is than its parent's (nice, 0-19). When parses
    # fill every core, the step storing finished documents, Dagster and the local servers still get
    # the CPU they ask for, so storage keeps up and a batch does not end with a queue of parsed
    # documents waiting on one core (measured: 4-6 % off a batch of 200 small documents).
    niceness: int = 10

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Limits:
        env = os.environ if environ is None else environ
        default = cls()
        return cls(
            timeout_s=_positive(env, "UD_DECODE_TIMEOUT_S", default.timeout_s, float),
            memory_mb=_positive(env, "UD_DECODE_MEMORY_MB", default.memory_mb, int),
            max_bytes=_positive(env, "UD_DECODE_MAX_BYTES", default.max_bytes, int),
            max_pages=_positive(env, "UD_DECODE_MAX_PAGES", default.max_pages, int),
            workers=_positive(env, "UD_PARSE_WORKERS", default.workers, int),
            niceness=_niceness(env, "UD_PARSE_NICENESS", default.niceness),
        )

    @property
    def max_unzipped_bytes(self) -> int:
        """A package inflating beyond the memory allowance cannot be parsed within it."""
        return self.memory_mb * MiB


@dataclass(frozen=True)
class Budget:
    """One parse's limits and its wall-clock deadline (time.monotonic()), handed down the calls of
    the parse: what a parser that runs another program (LibreOffice) gives it, and the limits the
    checks of an inner document apply. Started in the isolated child, or around the call in-process."""

    limits: Limits
    deadline: float

    @classmethod
    def start(cls, limits: Limits) -> Budget:
        """A parse within `limits`, starting now."""
        return cls(limits, time.monotonic() + limits.timeout_s)

    def seconds_left(self) -> float:
        return self.deadline - time.monotonic()


def _positive(env: Mapping[str, str], name: str, default: _Number, kind: type[_Number]) -> _Number:
    return _setting(env, name, default, kind, f"a positive {kind.__name__}", lambda value: value > 0)


def _niceness(env: Mapping[str, str], name: str, default: int) -> int:
    return _setting(env, name, default, int, "a whole number from 0 to 19", lambda value: 0 <= value <= 19)


def _setting(
    env: Mapping[str, str],
    name: str,
    default: _Number,
    kind: type[_Number],
    wanted: str,
    accepts: Callable[[_Number], bool],
) -> _Number:
    """The number setting `name` holds, or default when unset; a ConfigError naming it and `wanted` otherwise."""
    raw = env.get(name)
    if raw is None or not str(raw).strip():
        return default
    try:
        value = kind(str(raw).strip())
    except ValueError:
        raise ConfigError(f"{name} must be {wanted}, not {raw!r}") from None
    if not accepts(value):
        raise ConfigError(f"{name} must be {wanted}, not {raw!r}")
    return value


def check_size(data: bytes, limits: Limits) -> None:
    """Raise DecodeError when the document is empty or too big (formats.check_input, before the
    checks of its format family)."""
    if not data:
        raise DecodeError("empty document (0 bytes)")
    if len(data) > limits.max_bytes:
        raise DecodeError(f"document is {len(data)} bytes, above the limit of {limits.max_bytes} (UD_DECODE_MAX_BYTES)")


def check_text(data: bytes, mime: str) -> None:
    """Text (or an e-mail) whose bytes are binary is mislabeled."""
    if looks_binary(data) or detect.is_binary_kind(detect.sniff(data)):
        mislabeled(mime, data)


def label(mime: str) -> str:
    suffix = detect.SUFFIXES.get(mime)
    return suffix[1:].upper() if suffix else (mime or "unknown")


def mislabeled(mime: str, data: bytes) -> None:
    actual = detect.detect_mime(data)  # what the bytes alone say, by detection's own rule
    if actual == mime:  # libmagic agrees with the label: the bytes are damaged, not mislabeled
        raise DecodeError(f"{label(mime)} is damaged: its header is not that of a {label(mime)}")
    raise DecodeError(f"declared as {label(mime)} but the bytes are {label(actual)}")


def check_ole_kind(data: bytes, mime: str) -> None:
    """An OLE2 container whose streams are another Office format's is mislabeled."""
    actual = detect.ole_kind(data)
    if actual not in (mime, detect.OLE2):
        raise DecodeError(f"declared as {label(mime)} but the bytes are {label(actual)}")


def looks_binary(data: bytes) -> bool:
    """Control bytes a text file never has; UTF-16/32 text (NULs between letters) excepted."""
    sample = data[:8192]
    if sample.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        return False
    if sample.count(b"\x00") > len(sample) // 4:
        # BOM-less UTF-16/32 (the NULs sit in fixed places of each code unit): judge the letters.
        sample = sample[: len(sample) // 4 * 4]
        text = sample.decode(detect.wide_encoding(sample), errors="replace")
        odd = sum(1 for c in text if c == "\ufffd" or (ord(c) < 32 and c not in "\t\n\r\x0b\x0c\x1b"))
        return odd > len(text) * 0.05
    controls = sum(sample.count(bytes([b])) for b in (*range(0, 9), *range(14, 27), *range(28, 32)))
    return controls > len(sample) * 0.05


def check_pages(pages: int, label: str, limits: Limits) -> None:
    if pages > limits.max_pages:
        raise DecodeError(f"{label} has {pages} pages, above the limit of {limits.max_pages} (UD_DECODE_MAX_PAGES)")


def check_zip_bomb(archive: zipfile.ZipFile, label: str, limits: Limits, depth: int, budget: list[int]) -> None:
    """Sizes from the central directory (no inflating), archives inside archives included."""
    infos = archive.infolist()
    if len(infos) > MAX_ZIP_ENTRIES:
        raise DecodeError(f"{label} is a zip bomb: {len(infos)} entries (more than {MAX_ZIP_ENTRIES})")
    total = sum(info.file_size for info in infos)
    packed = sum(info.compress_size for info in infos) or 1
    budget[0] -= total
    if budget[0] < 0:
        raise DecodeError(
            f"{label} is a zip bomb: it inflates beyond {limits.max_unzipped_bytes // MiB} MB "
            f"(derived from UD_DECODE_MEMORY_MB)"
        )
    if total > ZIP_RATIO_FLOOR and total / packed > MAX_ZIP_RATIO:
        raise DecodeError(f"{label} is a zip bomb: {total // MiB} MB compressed {total // packed}:1")
    for info in infos:
        if not info.filename.lower().endswith(_ZIP_SUFFIXES) or info.file_size > MAX_NESTED_READ:
            continue  # a huge nested member is already counted in the total above
        if depth + 1 > MAX_ZIP_DEPTH:
            raise DecodeError(f"{label} is a zip bomb: archives nested deeper than {MAX_ZIP_DEPTH}")
        try:
            inner = zipfile.ZipFile(io.BytesIO(archive.read(info)))
        except (zipfile.BadZipFile, RuntimeError, NotImplementedError):
            continue  # not a ZIP after all (or encrypted): the parser never opens it either
        with inner:
            check_zip_bomb(inner, label, limits, depth + 1, budget)
