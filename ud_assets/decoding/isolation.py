"""Each document decoded in a forked child with limits, as Apache Tika's pipes isolate each parse.

A parser that hangs, balloons or segfaults takes down one child, never the process that runs a
batch. The parent imports unstructured once (4-11 s with spaCy) and forks per document,
so every child starts warm. The child:
- checks the input (formats.check_input: headers of untrusted bytes are read in the child too);
- caps its address space at what it has inherited plus memory_mb (RLIMIT_AS), so a runaway
  allocation fails with MemoryError instead of waking the OOM killer;
- pickles its reply (the Partitioned result, or the error's kind and message, with its timings
  and memory) into a pipe and _exits.
The parent waits with a wall-clock deadline and SIGKILLs the child when it passes.

Pickle rather than JSON: the pipe is private to the parent and its own child running our own
code; an attacker able to forge the pickle already runs code as our user in the child, so pickle
widens nothing, while it keeps element values exactly as partition_bytes made them (tuples,
ints vs floats, image bytes) at no encoding cost. Switch to decoder.element_to_json if the child
is ever sandboxed harder than the parent.
"""

from __future__ import annotations

import gc
import math
import os
import pickle
import resource
import select
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Generic, Literal, TypeVar

from . import detect, formats
from . import limits as limits_module
from .limits import Limits, MiB
from .model import ConfigError, DecodeError, DecoderBug, DecoderConfig, Partitioned, PartitionStats
from .partitioning import (
    SPLIT_MIN_BYTES,
    merge_pdf_parts,
    partition_bytes,
    partition_pdf_pages,
    pdf_page_ranges,
    plan_pdf,
)
from .spacy_loading import load_thinc_without_torch

_R = TypeVar("_R")
# What a child runs: partition_bytes' arguments, and what it returns.
Target = Callable[[bytes, str, DecoderConfig, str | None], _R]
_Args = tuple[bytes, str, DecoderConfig, str | None]
_HEADER = struct.Struct("<Q")  # length prefix: a sibling child holding our pipe must not delay EOF
_POLL_S = 0.05
_EXIT_MEMORY = 75  # the child ran out of memory before it could report
_unreaped: set[int] = set()  # children that replied and are exiting
_default_lock = threading.RLock()
_FORK_LOCK = threading.Lock()  # one fork at a time, and none while the parent imports (warm_up)


def isolation_available() -> bool:
    """fork (and /proc for the memory cap) exist: Linux."""
    return hasattr(os, "fork") and os.path.isdir("/proc/self")


def isolation_enabled(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get("UD_DECODE_ISOLATION", "1").strip().lower() not in ("0", "false", "no", "off")


# Tiny documents whose decode loads spaCy's model and imports the partitioners, so the children
# do not pay it. Only text and a text-layer PDF: nothing that runs torch or onnxruntime, whose
# thread pools (GNU OpenMP above all) are not fork-safe once used.
_WARM_MARKDOWN = b"# Warm-up\n\nThis sentence loads the language model. So does this one.\n"
_WARM_HTML = b"<html><body><h1>Warm</h1><p>Up.</p></body></html>"
_WARM_IMPORTS = (
    "md",
    "html",
    "text",
    "csv",
    "tsv",
    "pdf",
    "docx",
    "pptx",
    "xlsx",
    "odt",
    "epub",
    "rtf",
    "email",
    "xml",
    "json",
    "rst",
    "image",
)
# unstructured's partitioner modules a format needs beyond the text ones every format uses are
# its family's (formats.warm_imports). A process that decodes one document imports only these
# (pandas alone costs a second); a batch warms everything up front (warm_up()).
_BASE_IMPORTS = ("md", "html", "text")
_warmed: set[str] = set()  # partitioner modules imported (and exercised) in this process


def warm_up(mime: str | None = None) -> float:
    """Import and exercise unstructured's partitioners in this process, once each: those `mime`
    needs, or all of them. Returns the seconds this call spent (0 when already warm)."""
    needed = formats.warm_imports(mime) if mime else None
    names = _BASE_IMPORTS + (_WARM_IMPORTS if needed is None else needed)
    if all(name in _warmed for name in names):
        return 0.0
    with _default_lock, _FORK_LOCK:  # no fork while a module is half imported: its child would inherit the lock
        started = time.perf_counter()
        _warm_up([name for name in dict.fromkeys(names) if name not in _warmed])
        return time.perf_counter() - started


def _warm_up(names: list[str]) -> None:
    import importlib

    load_thinc_without_torch()
    for name in names:
        try:
            importlib.import_module(f"unstructured.partition.{name}")
        except ImportError:
            pass  # an optional extra not installed: that format fails in the child as it would here
    config = DecoderConfig(strategy="fast")
    if "md" in names:
        partition_bytes(_WARM_MARKDOWN, detect.MARKDOWN, config)
    if "html" in names:
        partition_bytes(_WARM_HTML, detect.HTML, config)
    if "pdf" in names:
        partition_bytes(_warm_pdf(), detect.PDF, config)
    _warmed.update(names)


def _warm_pdf() -> bytes:
    """A one-page PDF with a text layer, written by hand (no PDF writer is a dependency)."""
    stream = b"BT /F1 12 Tf 72 720 Td (Warm-up text for the PDF partitioner.) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


class IsolatedPartitioner:
    """partition_bytes in a forked child per document, within `limits`.

    `with IsolatedPartitioner() as decoder: parted, stats = decoder.partition(...)`.
    `target` replaces partition_bytes (tests inject hangs, crashes and allocations with it);
    `isolate=False`, or UD_DECODE_ISOLATION=0, or no fork, runs it in-process, checks included.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        target: Target[Partitioned] = partition_bytes,
        warm: bool = True,
        isolate: bool | None = None,
    ):
        self.limits = limits or Limits.from_env()
        self.target = target
        self.warm = warm
        self.isolate = (isolation_enabled() if isolate is None else isolate) and isolation_available()
        self.warm_up_s = 0.0  # seconds this partitioner's calls spent warming the process

    def __enter__(self) -> IsolatedPartitioner:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        reap_children(block=True)  # every child has replied or been killed: this waits milliseconds

    def start(self, mime: str | None = None) -> None:
        """Warm this process for `mime` (for every format when None), once."""
        if self.warm and self.isolate:
            self.warm_up_s += warm_up(mime)

    def partition(
        self, data: bytes, mime: str, config: DecoderConfig, filename: str | None = None
    ) -> tuple[Partitioned, PartitionStats]:
        """The document's Partitioned result and stats (wall_s, fork_overhead_ms, child_peak_rss_mb...).

        Raises DecodeError/ConfigError as partition_bytes does, and DecodeError when a limit is hit;
        the exception carries the same stats as `.stats`.
        """
        if not self.isolate:
            started = time.perf_counter()
            formats.check_input(data, mime, self.limits)
            limits_module.activate(self.limits)
            try:
                parted = self.target(data, mime, config, filename)
            finally:
                limits_module.deactivate()
            return parted, {"isolated": False, "wall_s": time.perf_counter() - started}
        self.start(mime)
        args: _Args = (data, mime, config, filename)
        if (
            self.target is partition_bytes
            and mime == detect.PDF
            and self.limits.workers > 1
            and len(data) >= SPLIT_MIN_BYTES
        ):
            return self._partition_pdf(args)
        return _run(self.target, self.limits, args)

    def _partition_pdf(self, args: _Args) -> tuple[Partitioned, PartitionStats]:
        """A large PDF as page ranges parsed in concurrent children (one per worker), then merged.

        A first child reads the strategy and the page count (the parent never opens untrusted
        bytes); a PDF too small to gain, or not parsed page by page, is parsed whole."""
        from concurrent.futures import ThreadPoolExecutor
        from functools import partial

        started = time.perf_counter()
        plan, plan_stats = _run(plan_pdf, self.limits, args)
        ranges = pdf_page_ranges(plan, args[2], self.limits.workers)
        if not ranges:
            return _run(self.target, self.limits, args)
        with ThreadPoolExecutor(max_workers=len(ranges), thread_name_prefix="pdf-pages") as pool:
            futures = [
                pool.submit(
                    _run_in_child, partial(partition_pdf_pages, pages=pages, strategy=plan.strategy), self.limits, args
                )
                for pages in ranges
            ]
            results = [future.result() for future in futures]  # the first failure is the document's
        merged = merge_pdf_parts([part for part, _ in results], plan)
        all_stats = [plan_stats, *(stats for _, stats in results)]
        wall = time.perf_counter() - started
        return merged, {
            "isolated": True,
            "parts": len(ranges),
            "wall_s": wall,
            # On the critical path: the plan, then the longest range (they run side by side).
            "work_s": (plan_stats["work_s"] or 0.0) + max(s["work_s"] or 0.0 for _, s in results),
            "parts_work_s": sum(s["work_s"] or 0.0 for _, s in results),
            "child_peak_rss_mb": max((s["child_peak_rss_mb"] or 0.0) for s in all_stats) or None,
            "child_private_mb": sum((s["child_private_mb"] or 0.0) for s in all_stats) or None,
            "fork_overhead_ms": sum((s["fork_overhead_ms"] or 0.0) for s in all_stats),
        }


_default: IsolatedPartitioner | None = None


def default_partitioner() -> IsolatedPartitioner:
    """The process's partitioner, with limits from the environment, warmed for each format on its
    first document (a batch warms every format up front: warm_up())."""
    global _default
    with _default_lock:
        if _default is None:
            _default = IsolatedPartitioner()
        return _default


@dataclass
class _Done(Generic[_R]):
    value: _R  # what the target returned


@dataclass
class _Failed:
    kind: Literal["memory", "config", "error", "bug"]
    message: str = ""  # the error's, for config and error


@dataclass
class _Reply(Generic[_R]):
    """What a child sends back through its pipe (pickled): its outcome and what the work cost."""

    outcome: _Done[_R] | _Failed
    begun_at: float = 0.0  # perf_counter when the child began
    work_s: float = 0.0
    private_mb: float | None = None
    peak_rss_kib: int = 0
    grown_mb: float = 0.0  # a reusable child's peak RSS over its first (what it kept or reached)


def run_isolated(function: Callable[[str], _R], limits: Limits, argument: str) -> tuple[_R, PartitionStats]:
    """function(argument) in a forked child within `limits`, as a document's parse runs: for tools
    that run another parser on a file (the parity harness runs bare unstructured). Its value, or
    DecodeError when it timed out, ran out of memory or crashed (an exception it raises is turned
    into a DecodeError too: catch what you mean to report inside `function`)."""

    def target(_data: bytes, _mime: str, _config: DecoderConfig, _filename: str | None) -> _R:
        return function(argument)

    # The input checks see a one-byte stand-in of no kind: they pass; the function reads its file.
    return _run_in_child(target, limits, (b"-", "", DecoderConfig(strategy="fast"), None))


class ChildStalled(RuntimeError):
    """A child sat without using any CPU, running no program of its own, for STALL_S seconds.

    A parse is CPU work on bytes in memory: a child that stops using CPU is blocked on a lock it
    inherited at fork from another thread of the parent (the parent stores documents on other
    threads while it forks the next one). That is this program's fault, never the document's: the
    document is tried once more in a fresh child, and a second stall fails the run with this error
    instead of being recorded against the document."""


STALL_S = float(os.environ.get("UD_DECODE_STALL_S") or 30.0)


def _run_in_child(target: Target[_R], limits: Limits, args: _Args) -> tuple[_R, PartitionStats]:
    try:
        return _run_in_child_once(target, limits, args)
    except ChildStalled:
        return _run_in_child_once(target, limits, args)  # the inherited lock is not held this time


def _run_in_child_once(target: Target[_R], limits: Limits, args: _Args) -> tuple[_R, PartitionStats]:
    reap_children()
    read_end, write_end = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # else the child would print their pending text again
        stream.flush()
    parent = os.getpid()
    started = time.perf_counter()
    with _FORK_LOCK:  # one fork at a time: forks from two threads at once trip at-fork hooks (filelock)
        pid = os.fork()
    if pid == 0:  # the child never returns from here
        os.close(read_end)
        _child(write_end, target, limits, args, parent)
    os.close(write_end)
    try:
        message, ended = _read_message(read_end, pid, started + limits.timeout_s)
        timed_out = ended == "timeout"
    except BaseException:  # the parent was interrupted (KeyboardInterrupt...): no orphan
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(read_end)
    if ended == "stalled":
        os.kill(pid, signal.SIGKILL)
        _wait(pid)
        raise ChildStalled(
            f"the decoding child (pid {pid}) used no CPU for {STALL_S:g} s with no program of its own running: "
            "a lock inherited at fork (UD_DECODE_STALL_S)"
        )
    reply: _Reply[_R] | None = _decode(message)
    status = 0
    if reply is None:  # timed out, or died without replying: its exit status tells why
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        status, peak_kib = _wait(pid)
    else:
        # The child is exiting; tearing down its copy of the warm address space takes tens of
        # milliseconds, so it is reaped later (next call, or on leaving the context).
        _unreaped.add(pid)
        peak_kib = reply.peak_rss_kib
    return _result(reply, status, timed_out, limits, started, peak_kib, spawned=True)


def _result(
    reply: _Reply[_R] | None,
    status: int,
    timed_out: bool,
    limits: Limits,
    started: float,
    peak_kib: int | None,
    spawned: bool,
) -> tuple[_R, PartitionStats]:
    """The child's value with what it cost, or its failure raised (with the same stats)."""
    wall = time.perf_counter() - started
    stats: PartitionStats = {
        "isolated": True,
        "wall_s": wall,
        "child_peak_rss_mb": peak_kib / 1024 if peak_kib else None,  # includes pages shared with the parent
        "child_private_mb": reply.private_mb if reply else None,  # what this document cost
        "work_s": reply.work_s if reply else None,
        "fork_overhead_ms": (wall - reply.work_s) * 1000 if reply else None,
        # fork until the child runs; None for a reused child
        "spawn_ms": (reply.begun_at - started) * 1000 if reply and spawned else None,
    }
    outcome = reply.outcome if reply is not None else None
    if isinstance(outcome, _Done):
        return outcome.value, stats
    error = _failure(outcome, status, timed_out, limits)
    error.stats = stats
    raise error


# -- reusable children ----------------------------------------------------------------------------
#
# A fork costs a small document more than its parse: the warm parent is about 1 GB, and the child
# copies every page it writes (reference counts touch many) before it can work, then tears its
# copy down. Measured on a 1 GB parent: a plain-text parse of 5 ms took 100 ms in a fresh child, a
# small HTML page 2 ms vs 69 ms. So a child forked once decodes documents one after another, each
# within the same limits as a fresh child's (the wall-clock deadline and the stall watch from the
# parent; the CPU limit renewed per document; the address-space cap for the child's life), and it
# is replaced after any document that failed in it (its state is not trusted after a MemoryError),
# after CHILD_DOCUMENTS documents, or when its resident memory has grown past a quarter of the cap.
# A crash, a timeout or a stall ends it, exactly as it ends a fresh child.

CHILD_DOCUMENTS = max(1, int(os.environ.get("UD_DECODE_CHILD_DOCUMENTS") or 200))
PRIVATE_MEMORY_AFTER_S = 0.5  # a reusable child measures a document's private memory after a parse this long
_idle_workers: dict[Limits, list[_Worker]] = {}
_workers_lock = threading.Lock()
_worker_fds: set[int] = set()  # every reusable child's pipe ends in the parent


def _close_worker_fds_in_child() -> None:
    # A child must not hold another child's request pipe: the parent's exit is how an idle child
    # learns to exit (EOF on its requests), and a copy held elsewhere would keep it waiting.
    for fd in list(_worker_fds):
        try:
            os.close(fd)
        except OSError:
            pass
    _worker_fds.clear()


os.register_at_fork(after_in_child=_close_worker_fds_in_child)


def _run(target: Target[_R], limits: Limits, args: _Args) -> tuple[_R, PartitionStats]:
    """In a reusable child when the target can be sent to one by name, else in a fresh one."""
    if _reusable(target):
        return _run_in_worker(target, limits, args)
    return _run_in_child(target, limits, args)


def _reusable(target: Callable[..., object]) -> bool:
    """A target a reusable child can be sent by name: a module-level function (not a closure)."""
    qualname = getattr(target, "__qualname__", "")
    return CHILD_DOCUMENTS > 1 and bool(qualname) and "<locals>" not in qualname and "." not in qualname


class _Worker:
    """A forked child that decodes the documents sent through its request pipe, one at a time."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.served = 0
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        parent = os.getpid()
        with _FORK_LOCK:
            pid = os.fork()
        if pid == 0:  # never returns
            os.close(request_write)
            os.close(reply_read)
            _serve(request_read, reply_write, limits, parent)
        os.close(request_read)
        os.close(reply_write)
        self.pid, self.requests, self.replies = pid, request_write, reply_read
        self.status = 0  # its exit status, once it has ended
        _worker_fds.update((request_write, reply_read))

    def alive(self) -> bool:
        return not _exited(self.pid)

    def run(self, target: Target[_R], limits: Limits, args: _Args) -> tuple[_Reply[_R] | None, int, str | None]:
        """(reply, exit status, why it ended without one); the status is 0 while the child lives."""
        started = time.perf_counter()
        deadline = started + limits.timeout_s
        payload = pickle.dumps((target, args), protocol=pickle.HIGHEST_PROTOCOL)
        ended: str | None = None
        _send(self.requests, _HEADER.pack(len(payload)) + payload, self.pid, deadline)
        # Read even when the send failed: a child that died first may have left its last reply.
        message, ended = _read_message(self.replies, self.pid, deadline)
        self.served += 1
        reply: _Reply[_R] | None = _decode(message)
        status = 0
        if reply is None:
            self.end(kill=True)
            status = self.status
        return reply, status, ended

    def end(self, kill: bool = False) -> None:
        """Close its pipes (an idle child exits on EOF); kill it first when it may be busy."""
        for fd in (self.requests, self.replies):
            _worker_fds.discard(fd)
            try:
                os.close(fd)
            except OSError:
                pass
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.status, _peak = _wait(self.pid)
        else:
            _unreaped.add(self.pid)


def _send(fd: int, payload: bytes, pid: int, deadline: float) -> bool:
    """Write the request without blocking past the deadline; False when the child is gone."""
    view = memoryview(payload)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    os.set_blocking(fd, False)
    try:
        while view:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return False
            if not poller.poll(min(remaining, _POLL_S) * 1000):
                if _exited(pid):
                    return False
                continue
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                return False
    finally:
        os.set_blocking(fd, True)
    return True


def _acquire_worker(limits: Limits) -> tuple[_Worker, bool]:
    """An idle child for these limits, or a new one (second value: whether it is new)."""
    with _workers_lock:
        idle = _idle_workers.get(limits, [])
        while idle:
            worker = idle.pop()
            if worker.alive():
                return worker, False
            worker.end(kill=True)
    return _Worker(limits), True


def _release_worker(worker: _Worker, reply: _Reply[_R] | None) -> None:
    healthy = (
        reply is not None
        and isinstance(reply.outcome, _Done)
        and worker.served < CHILD_DOCUMENTS
        and reply.grown_mb < worker.limits.memory_mb / 4
    )
    if not healthy:
        if reply is not None:  # replied: it is idle, EOF ends it
            worker.end()
        return
    with _workers_lock:
        idle = _idle_workers.setdefault(worker.limits, [])
        if len(idle) < max(1, worker.limits.workers) + 1:
            idle.append(worker)
            return
    worker.end()


def close_workers() -> None:
    """End every idle reusable child (they exit on EOF; reaped by reap_children)."""
    with _workers_lock:
        workers = [worker for idle in _idle_workers.values() for worker in idle]
        _idle_workers.clear()
    for worker in workers:
        worker.end()


def _run_in_worker(target: Target[_R], limits: Limits, args: _Args) -> tuple[_R, PartitionStats]:
    stalled = False
    while True:
        reap_children()
        worker, new = _acquire_worker(limits)
        started = time.perf_counter()
        reply, status, ended = worker.run(target, limits, args)
        if ended == "stalled":
            if stalled:
                raise ChildStalled(
                    f"the decoding child (pid {worker.pid}) used no CPU for {STALL_S:g} s with no program of its "
                    "own running, twice: a lock inherited at fork (UD_DECODE_STALL_S)"
                )
            stalled = True  # the inherited lock is not held in a fresh child
            continue
        break
    _release_worker(worker, reply)
    peak_kib = reply.peak_rss_kib if reply else None
    return _result(reply, status, ended == "timeout", limits, started, peak_kib, spawned=new)


def _serve(requests: int, replies: int, limits: Limits, parent: int) -> None:
    """The reusable child's loop: a request, its reply, until the parent closes the pipe."""
    code = 0
    try:
        _enter_child(limits, parent, die_with_parent=False)
        first_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        while True:
            message = _read_request(requests)
            if message is None:
                break
            begun = time.perf_counter()
            target, args = pickle.loads(message)
            # The CPU backstop is per document: this one's budget on top of what the child used.
            # (Only the soft limit, SIGXCPU: a hard limit once lowered cannot be raised again.)
            usage = resource.getrusage(resource.RUSAGE_SELF)
            cpu = math.ceil(usage.ru_utime + usage.ru_stime) + _cpu_limit(limits)
            _lower_limit(resource.RLIMIT_CPU, cpu, resource.getrlimit(resource.RLIMIT_CPU)[1])
            limits_module.activate(limits)
            try:
                reply = _Reply(_child_work(target, limits, args))
            finally:
                limits_module.deactivate()
            reply.begun_at = begun
            reply.work_s = time.perf_counter() - begun
            # Reading smaps_rollup of a 1 GB process takes 5-20 ms: worth it for a long parse only.
            reply.private_mb = _private_mb() if reply.work_s >= PRIVATE_MEMORY_AFTER_S else None
            reply.peak_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            reply.grown_mb = (reply.peak_rss_kib - first_rss_kib) / 1024
            payload = _encode(reply)
            _write_all(replies, _HEADER.pack(len(payload)) + payload)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
    except MemoryError:
        code = _EXIT_MEMORY
    except BaseException:  # nothing may escape into the parent's code (a closed pipe: the parent is gone)
        code = 70
        _report_bug(replies)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)


def _report_bug(fd: int) -> None:
    """Best effort: the traceback of our own code's failure in the child, as its reply."""
    try:
        import traceback

        payload = pickle.dumps(_Reply(_Failed("bug", traceback.format_exc()[-4000:])))
        _write_all(fd, _HEADER.pack(len(payload)) + payload)
    except BaseException:  # the parent is gone, or the pipe is full: the exit status still tells
        pass


def _read_request(fd: int) -> bytes | None:
    """One length-prefixed request; None on EOF (the parent closed the pipe or exited)."""
    buffer = bytearray()
    while (message := _complete(buffer)) is None:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        buffer += chunk
    return message


def _decode(message: bytes) -> _Reply[_R] | None:
    if not message:
        return None
    try:
        reply: _Reply[_R] = pickle.loads(message)  # our own child's _Reply
    except Exception:  # unpickling garbage may raise anything: a garbled reply is a crash, the exit status tells more
        return None
    return reply


def _wait(pid: int) -> tuple[int, int | None]:
    """Exit status and peak RSS (KiB) of a finished child."""
    try:
        _, status, usage = os.wait4(pid, 0)
        return status, usage.ru_maxrss
    except ChildProcessError:  # reaped by someone else (SIGCHLD ignored): no status to read
        return 0, None


def reap_children(block: bool = False) -> None:
    """Collect children that have replied and exited (all of them, waiting, when block: idle
    reusable children are ended first)."""
    if block:
        close_workers()
    for pid in list(_unreaped):
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _unreaped.discard(pid)


def _read_message(fd: int, pid: int, deadline: float) -> tuple[bytes, Literal["timeout", "stalled"] | None]:
    """The child's length-prefixed reply (b"" when it died first), and why it ended without one:
    its deadline passed, or it stalled (see ChildStalled)."""
    buffer = bytearray()
    poller = select.poll()  # not select(): no FD_SETSIZE limit in a process with many sockets
    poller.register(fd, select.POLLIN)
    cpu, busy_at = _cpu_ticks(pid), time.perf_counter()
    while (message := _complete(buffer)) is None:
        now = time.perf_counter()
        remaining = deadline - now
        if remaining <= 0:
            return b"", "timeout"
        if poller.poll(min(remaining, _POLL_S) * 1000):
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"", None  # EOF before a whole message: the child died
            buffer += chunk
            busy_at = now
        elif _exited(pid):
            # It may have written its last bytes just before exiting: take what the pipe holds.
            while poller.poll(0) and (chunk := os.read(fd, 1 << 20)):
                buffer += chunk
            return _complete(buffer) or b"", None
        elif now - busy_at >= STALL_S:
            latest = _cpu_ticks(pid)
            if latest is None or latest != cpu or _runs_a_program(pid):
                cpu, busy_at = latest, now
            else:
                return b"", "stalled"
    return message, None


def _cpu_ticks(pid: int) -> int | None:
    """CPU time (clock ticks, user + system) the process has used, from /proc; None when unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    except (OSError, IndexError, ValueError):
        return None


def _runs_a_program(pid: int) -> bool:
    """Whether the process has children of its own (LibreOffice, tesseract, pandoc): then its own
    idle CPU is waiting for them, not a stall."""
    try:
        return any(task.joinpath("children").read_text().strip() for task in Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return True  # cannot tell: never call it a stall


def _complete(buffer: bytearray) -> bytes | None:
    if len(buffer) < _HEADER.size:
        return None
    end = _HEADER.size + _HEADER.unpack_from(buffer)[0]
    return bytes(buffer[_HEADER.size : end]) if len(buffer) >= end else None


def _exited(pid: int) -> bool:
    """Whether the child has exited, without reaping it (wait4 collects its rusage later)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _failure(failed: _Failed | None, status: int, timed_out: bool, limits: Limits) -> DecodeError | ConfigError:
    if failed is not None and failed.kind == "bug":
        raise DecoderBug(f"the decoding child failed in ud's own code, not the parser's:\n{failed.message}")
    if timed_out:
        return DecodeError(f"timed out after {limits.timeout_s:g} s (UD_DECODE_TIMEOUT_S)")
    memory = f"exceeded the memory limit of {limits.memory_mb} MB (UD_DECODE_MEMORY_MB)"
    if failed is not None:
        if failed.kind == "memory":
            return DecodeError(memory)
        return (ConfigError if failed.kind == "config" else DecodeError)(failed.message)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGKILL:  # not ours: the kernel's OOM killer
            return DecodeError(memory)
        if number == signal.SIGXCPU:
            return DecodeError(f"used more than {_cpu_limit(limits)} s of CPU (UD_DECODE_TIMEOUT_S)")
        return DecodeError(f"decoder crashed: killed by signal {number} ({signal.Signals(number).name})")
    code = os.waitstatus_to_exitcode(status)
    if code == _EXIT_MEMORY:
        return DecodeError(memory)
    return DecodeError(f"decoder crashed: exited with status {code} without a result")


def _cpu_limit(limits: Limits) -> int:
    # Backstop for a child whose parent vanished; several threads may burn CPU faster than wall time.
    return math.ceil(limits.timeout_s) * (os.cpu_count() or 1) + 10


def _child(fd: int, target: Target[_R], limits: Limits, args: _Args, parent: int) -> None:
    code = 0
    try:
        begun = time.perf_counter()
        _enter_child(limits, parent)
        reply = _Reply(_child_work(target, limits, args))
        reply.begun_at = begun  # perf_counter is CLOCK_MONOTONIC: comparable across fork
        reply.work_s = time.perf_counter() - begun
        reply.private_mb = _private_mb()
        reply.peak_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        payload = _encode(reply)
        _write_all(fd, _HEADER.pack(len(payload)) + payload)
    except MemoryError:
        code = _EXIT_MEMORY
    except BaseException:  # nothing may escape into the parent's code
        code = 70
        _report_bug(fd)
    finally:
        for stream in (sys.stdout, sys.stderr):  # the parser's warnings
            try:
                stream.flush()
            except BaseException:  # a closed stream must not keep the child alive
                pass
        os._exit(code)  # no atexit handlers, no finalizers of the parent's objects


def _enter_child(limits: Limits, parent: int, die_with_parent: bool = True) -> None:
    # Default dispositions: the parent's handlers (Dagster's SIGTERM...) are not ours to run.
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    # O(1): inherited objects move to the permanent generation, so the child's collections never
    # write their GC headers (which would copy most of the parent's heap page by page).
    gc.freeze()
    torch = sys.modules.get("torch")
    if torch is not None:
        # GNU OpenMP's pool is dead after fork if the parent ever used it: the first parallel
        # torch op would hang. One thread never touches the pool (tested:
        # tests/decoding/test_isolation.py, test_children_survive_a_parent_that_used_torch_openmp).
        torch.set_num_threads(1)
    if die_with_parent:
        # Not for reusable children: PR_SET_PDEATHSIG fires when the forking *thread* ends (a
        # parse-ahead pool's), which would kill an idle child another thread is about to use.
        _die_with_parent(parent)
    limits_module.activate(limits)  # the clock a program the parser runs (LibreOffice) is given
    inherited = _vm_size()
    if inherited is not None:
        _lower_limit(resource.RLIMIT_AS, inherited + limits.memory_mb * MiB)
    if die_with_parent:  # a reusable child sets its CPU limit per document
        cpu = _cpu_limit(limits)  # SIGXCPU at the soft limit, SIGKILL at the hard one
        _lower_limit(resource.RLIMIT_CPU, cpu, cpu + 5)


def _lower_limit(which: int, soft: int, hard: int | None = None) -> None:
    """Set a limit no higher than the hard limit the process already holds: raising a hard limit
    needs CAP_SYS_RESOURCE, which root in a container often lacks (setrlimit then fails)."""
    held = resource.getrlimit(which)[1]
    hard = soft if hard is None else hard
    if held != resource.RLIM_INFINITY:
        soft, hard = min(soft, held), min(hard, held)
    resource.setrlimit(which, (soft, hard))


def _child_work(target: Target[_R], limits: Limits, args: _Args) -> _Done[_R] | _Failed:
    data, mime, config, filename = args
    try:
        formats.check_input(data, mime, limits)
        return _Done(target(data, mime, config, filename))
    except MemoryError:
        return _Failed("memory")
    except DecoderBug:  # our own set-up around the parser failed: the parent fails the run with this
        import traceback

        return _Failed("bug", traceback.format_exc()[-4000:])
    except ConfigError as exc:
        return _Failed("config", str(exc))
    except DecodeError as exc:
        if isinstance(exc.__cause__, MemoryError):  # partition_bytes wraps every parser failure
            return _Failed("memory")
        return _Failed("error", str(exc))
    except Exception as exc:  # an injected target's failure, described as partition_bytes would
        return _Failed("error", f"{mime} could not be parsed: {type(exc).__name__}: {exc}"[:300])


def _encode(reply: _Reply[_R]) -> bytes:
    try:
        return pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:  # this document's error
        message = f"decoder result could not be sent: {type(exc).__name__}: {exc}"
        return pickle.dumps(replace(reply, outcome=_Failed("error", message)))


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def _die_with_parent(parent: int) -> None:
    """PR_SET_PDEATHSIG: a child whose parent dies is killed rather than left running."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _vm_size() -> int | None:
    """Bytes of address space the child inherited (torch and onnxruntime reserve a lot of it)."""
    try:
        with open("/proc/self/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _private_mb() -> float | None:
    """Memory this document cost the child: pages it wrote or created, not those it shares."""
    try:
        with open("/proc/self/smaps_rollup", "rb") as handle:
            private = [line for line in handle if line.startswith((b"Private_Clean:", b"Private_Dirty:"))]
        return sum(int(line.split()[1]) for line in private) / 1024
    except OSError:
        return None
