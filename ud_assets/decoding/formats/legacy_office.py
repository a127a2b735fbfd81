"""Legacy Office documents (.doc, .ppt) converted by LibreOffice headless to DOCX/PPTX.

unstructured does the same (`partition_doc`/`partition_ppt` shell out to `soffice`), but with the
user's shared LibreOffice profile, no time limit and an error that only says the output file is
missing. Here the conversion runs where `partition_bytes` runs, in the per-document child
(isolation/), within the parse's budget (its limits and deadline, passed in), and:

- LibreOffice's own binary (`soffice.bin`) is started directly, not through the `soffice` script
  and `oosplash`, so it is our child: it dies with the decoder child (PR_SET_PDEATHSIG), within
  the document's remaining wall-clock time, and with an address-space limit of its own
  (`SOFFICE_BASE_MB` for LibreOffice itself plus what a document may add, UD_DECODE_MEMORY_MB),
  never above the hard limit this process already holds: raising a hard limit needs
  CAP_SYS_RESOURCE, which root in a container often lacks, and asking for it fails the exec;
- every conversion has a private user profile in its own temporary directory
  (`-env:UserInstallation=file:///tmp/...`), so parallel conversions never share one (LibreOffice
  refuses to run twice on one profile, and a crash can leave a profile locked);
- a fresh profile makes LibreOffice exit with status 81 ("restart") once after creating it, as
  `oosplash` would handle: it is started again;
- LibreOffice failing on the document is a DecodeError naming the document, the conversion and
  LibreOffice's reason; our own set-up failing (the work folder, the limits, starting the
  program) is a DecoderBug, never recorded against the document.

The result is a DOCX or PPTX whose text, tables and pictures the decoder reads exactly as it
reads any DOCX or PPTX (pictures included, through the same picture partitioners).
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from .. import detect, process_limits
from .. import limits as limits_module
from ..limits import Budget, Limits
from ..model import DecodeError, DecoderBug, DecoderConfig, Partitioned
from .base import Format, Parser

# What LibreOffice converts each kind to, read then as that kind.
BECOMES = {detect.DOC: detect.DOCX, detect.PPT: detect.PPTX}
# The filters unstructured uses (partition/doc.py, partition/ppt.py): the same conversion.
TARGETS: dict[str, tuple[str, str]] = {
    detect.DOC: ("docx", "MS Word 2007 XML"),
    detect.PPT: ("pptx", "Impress MS PowerPoint 2007 XML"),
}
LABELS = {detect.DOC: "DOC", detect.PPT: "PPT"}
SOFFICE_BIN = "/usr/lib/libreoffice/program/soffice.bin"  # Debian's libreoffice-core(-nogui)
SOFFICE_BASE_MB = 1024  # address space LibreOffice needs to start (measured: it fails at 400, runs at 800)
_RESTART = 81  # LibreOffice's "restart requested" status, after it created a fresh profile
# What LibreOffice (or the loader) says when its address-space limit is reached.
_OUT_OF_MEMORY = ("failed to map segment", "cannot allocate memory", "bad_alloc", "out of memory")


def soffice_path() -> str | None:
    """LibreOffice's binary: soffice.bin when the Debian layout is there, else `soffice` on PATH."""
    if os.access(SOFFICE_BIN, os.X_OK):
        return SOFFICE_BIN
    return shutil.which("soffice")


def convert(data: bytes, mime: str, filename: str | None, timeout_s: float, memory_mb: int) -> bytes:
    """The DOCX/PPTX LibreOffice makes of a DOC/PPT document, within timeout_s and memory_mb."""
    target, office_filter = TARGETS[mime]
    label = LABELS[mime]
    name = repr(os.path.basename(filename)) if filename else "the document"
    what = f"LibreOffice could not convert {name} ({label}) to {target.upper()}"
    soffice = soffice_path()
    if soffice is None:
        raise DecodeError(f"{what}: LibreOffice is not installed (make setup installs libreoffice-*-nogui)")
    deadline = time.monotonic() + timeout_s
    with _work_folder() as work:
        source = Path(work, "document" + detect.SUFFIXES[mime])
        try:
            source.write_bytes(data)
        except OSError as exc:
            raise DecoderBug(f"could not write the document for LibreOffice into {work}: {exc}") from exc
        outdir = Path(work, "out")
        command = [
            soffice,
            f"-env:UserInstallation={Path(work, 'profile').as_uri()}",
            "--headless",
            "--invisible",
            "--nologo",
            "--nodefault",
            "--norestore",
            "--nolockcheck",
            "--convert-to",
            f"{target}:{office_filter}",
            "--outdir",
            str(outdir),
            str(source),
        ]
        cap = address_space_cap(memory_mb)
        status, output = _RESTART, ""
        while status == _RESTART:
            status, output = _run(command, deadline, cap, what, timeout_s)
        produced = outdir / f"document.{target}"
        if status == 0 and produced.is_file() and produced.stat().st_size > 0:
            return produced.read_bytes()
    raise DecodeError(f"{what}: {_reason(status, output)}")


def address_space_cap(memory_mb: int) -> int:
    """LibreOffice's RLIMIT_AS: its own start-up plus what a document may add (process_limits keeps
    it below the hard limit the decoder holds)."""
    return (SOFFICE_BASE_MB + memory_mb) * 1024 * 1024


@contextlib.contextmanager
def _work_folder() -> Iterator[str]:
    """A private folder for the conversion (its input, output and profile); failing to make or
    remove it is ours, not the document's."""
    try:
        folder = tempfile.TemporaryDirectory(prefix="ud-soffice-")
    except OSError as exc:
        raise DecoderBug(f"could not create LibreOffice's work folder in {tempfile.gettempdir()}: {exc}") from exc
    with folder as work:
        yield work


def _run(command: list[str], deadline: float, cap: int, what: str, timeout_s: float) -> tuple[int, str]:
    """Run LibreOffice once: its exit status (negative: killed by that signal) and its output."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DecodeError(f"{what}: timed out after {timeout_s:g} s (UD_DECODE_TIMEOUT_S)")

    def in_child() -> None:  # between fork and exec, in LibreOffice's process
        process_limits.lower_limit(resource.RLIMIT_AS, cap)
        process_limits.die_with_parent()  # with the decoder child

    env = {**os.environ, "SAL_USE_VCLPLUGIN": "svp"}  # no display, ever
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=in_child,  # the decoder child is single-threaded: safe
            start_new_session=True,  # its own process group, killed whole on a timeout
        )
    except (OSError, subprocess.SubprocessError) as exc:  # before LibreOffice read a byte of the document
        raise DecoderBug(f"could not start LibreOffice ({command[0]}): {type(exc).__name__}: {exc}") from exc
    try:
        output, _ = process.communicate(timeout=remaining)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raise DecodeError(f"{what}: timed out after {timeout_s:g} s (UD_DECODE_TIMEOUT_S)") from None
    except BaseException:
        _kill_group(process)
        raise
    return process.returncode, output.decode("utf-8", errors="replace")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _reason(status: int, output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip() and "javaldx" not in line]
    said = lines[-1][:200] if lines else ""
    if status and any(sign in output.lower() for sign in _OUT_OF_MEMORY):
        cause = f"LibreOffice ran out of memory (UD_DECODE_MEMORY_MB, plus {SOFFICE_BASE_MB} MB for LibreOffice)"
    elif status < 0:
        number = -status
        name = signal.Signals(number).name if number in {s.value for s in signal.Signals} else str(number)
        cause = f"LibreOffice was killed by signal {number} ({name})"
    elif status:
        cause = f"LibreOffice exited with status {status}"
    else:
        cause = "LibreOffice wrote no output (damaged, encrypted or not a document of this kind)"
    return f"{cause}: {said}" if said else cause


def check(data: bytes, mime: str, limits: Limits) -> None:
    if data.startswith(detect.OLE2_MAGIC):
        limits_module.check_ole_kind(data, mime)
    elif detect.detect_mime(data) != detect.OCTET:  # a kind we know, under another name
        limits_module.mislabeled(mime, data)
    # Else bytes of no kind we know: LibreOffice reads many older word processors' files by their
    # content (WordPerfect, Works...), as it does for bare unstructured's .doc.


def partition(
    parser: Parser,
    data: bytes,
    mime: str,
    config: DecoderConfig,
    strategy: str,
    notes: list[str],
    filename: str | None,
    budget: Budget,
) -> Partitioned:
    """A DOC or PPT converted by LibreOffice (within this parse's time and memory), then read as
    the DOCX or PPTX it became: the same elements and pictures as that format gives."""
    converted = convert(data, mime, filename, budget.seconds_left(), budget.limits.memory_mb)
    target = BECOMES[mime]
    parser.check_input(converted, target, budget.limits)  # bombs, slide count
    return Partitioned(parser.partition(converted, target, config, "fast", filename), strategy, notes)


FORMAT = Format(
    name="legacy_office",
    # 2: a .doc of no kind we know (WordPerfect 4.2) goes to LibreOffice instead of being refused.
    logic_version="2",
    mime_types=frozenset({detect.DOC, detect.PPT}),
    warm_imports={detect.DOC: ("docx",), detect.PPT: ("pptx",)},  # read as the DOCX or PPTX they become
    page_labels={detect.PPT: "Slide"},
    partition=partition,
    check=check,
)
