"""The parent's side: each document decoded in a forked child with limits, as Apache Tika's pipes
isolate each parse.

A parser that hangs, balloons or segfaults takes down one child, never the process that runs a
batch. The parent imports unstructured once (4-11 s with spaCy: warmup.py) and forks, so every
child starts warm: a reusable child (pool.py) when the target can be sent to it by name, else a
fresh child per document. The child (server.py) sets itself up within the limits (child.py),
checks the input, parses and replies through a pipe (protocol.py). The parent waits with a
wall-clock deadline and SIGKILLs the child when it passes, or when it stalls (children.py).

A family that parses a large document in parts (Format.split: page ranges, say) has its plan
made in a child, its parts parsed in concurrent children, and their results merged.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from .. import formats, warmup
from ..formats.base import Split
from ..limits import Budget, Limits
from ..model import ConfigError, DecodeError, DecoderBug, DecoderConfig, Partitioned, PartitionStats
from ..partitioning import PARSER, partition_bytes
from . import child, children, pool, protocol, server
from .children import ChildStalled
from .protocol import Done, Failed, Reply
from .server import Args, Target

_R = TypeVar("_R")
_default_lock = threading.Lock()


def isolation_available() -> bool:
    """fork (and /proc for the memory cap) exist: Linux."""
    return hasattr(os, "fork") and os.path.isdir("/proc/self")


def isolation_enabled(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get("UD_DECODE_ISOLATION", "1").strip().lower() not in ("0", "false", "no", "off")


class IsolatedPartitioner:
    """partition_bytes in a forked child per document, within `limits`.

    `with IsolatedPartitioner() as decoder: parted, stats = decoder.partition(...)`.
    `target` replaces partition_bytes (tests inject hangs, crashes and allocations with it): it is
    called as partition_bytes is, (data, kind, config, filename, budget=the parse's Budget).
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
            budget = Budget.start(self.limits)
            formats.check_input(data, mime, self.limits)
            parted = self.target(data, mime, config, filename, budget=budget)
            return parted, {"isolated": False, "wall_s": time.perf_counter() - started}
        self.start(mime)
        args: Args = (data, mime, config, filename)
        split = formats.family_of(mime).split
        if (
            split is not None
            and self.target is partition_bytes
            and self.limits.workers > 1
            and len(data) >= split.min_bytes
        ):
            return self._partition_in_parts(split, args)
        return _run(self.target, self.limits, args)

    def _partition_in_parts(self, split: Split[Any, Any], args: Args) -> tuple[Partitioned, PartitionStats]:
        """A large document as parts parsed in concurrent children (one per worker), then merged.

        A first child makes the plan (the strategy, the page count: the parent never opens
        untrusted bytes); a document too small to gain, or not parsed part by part, is parsed whole."""
        started = time.perf_counter()
        plan, plan_stats = _run(split.plan, self.limits, args)
        ranges = split.ranges(plan, args[2], self.limits.workers)
        if not ranges:
            return _run(self.target, self.limits, args)
        with ThreadPoolExecutor(max_workers=len(ranges), thread_name_prefix="parts") as threads:
            futures = [
                threads.submit(_run_in_child, partial(_part, split.part, plan, pages), self.limits, args)
                for pages in ranges
            ]
            results = [future.result() for future in futures]  # the first failure is the document's
        merged = split.merge([part for part, _ in results], plan)
        all_stats = [plan_stats, *(stats for _, stats in results)]
        wall = time.perf_counter() - started
        return merged, {
            "isolated": True,
            "parts": len(ranges),
            "wall_s": wall,
            # On the critical path: the plan, then the longest part (they run side by side).
            "work_s": (plan_stats["work_s"] or 0.0) + max(s["work_s"] or 0.0 for _, s in results),
            "parts_work_s": sum(s["work_s"] or 0.0 for _, s in results),
            "child_peak_rss_mb": max((s["child_peak_rss_mb"] or 0.0) for s in all_stats) or None,
            "child_private_mb": sum((s["child_private_mb"] or 0.0) for s in all_stats) or None,
            "fork_overhead_ms": sum((s["fork_overhead_ms"] or 0.0) for s in all_stats),
        }


def _part(
    part: Callable[..., _R],
    plan: object,
    pages: range,
    data: bytes,
    mime: str,
    config: DecoderConfig,
    filename: str | None,
    *,
    budget: Budget,
) -> _R:
    """One part of a split document, as a child's target (Split.part, handed the parser)."""
    return part(PARSER, data, mime, config, filename, plan, pages)


def warm_up(kinds: str | Collection[str] | None = None) -> float:
    """Warm this process for the children forked from it: unstructured's partitioners that `kinds`
    (one or several) need, or all of them, imported and exercised once (warmup.py). Returns the
    seconds it took."""
    # No fork while a module is half imported: its child would inherit the import lock.
    return warmup.warm_up(kinds, importing=children.FORK_LOCK)


_default: IsolatedPartitioner | None = None


def default_partitioner() -> IsolatedPartitioner:
    """The process's partitioner, with limits from the environment, warmed for each format on its
    first document (a batch warms its documents' kinds up front: warmup.warm_up(kinds))."""
    global _default
    with _default_lock:
        if _default is None:
            _default = IsolatedPartitioner()
        return _default


def run_isolated(function: Callable[[str], _R], limits: Limits, argument: str) -> tuple[_R, PartitionStats]:
    """function(argument) in a forked child within `limits`, as a document's parse runs: for tools
    that run another parser on a file (the parity harness runs bare unstructured). Its value, or
    DecodeError when it timed out, ran out of memory or crashed (an exception it raises is turned
    into a DecodeError too: catch what you mean to report inside `function`)."""

    def target(_data: bytes, _mime: str, _config: DecoderConfig, _filename: str | None, *, budget: Budget) -> _R:
        return function(argument)

    # The input checks see a one-byte stand-in of no kind: they pass; the function reads its file.
    return _run_in_child(target, limits, (b"-", "", DecoderConfig(strategy="fast"), None))


def reap_children(block: bool = False) -> None:
    """Collect children that have replied and exited (all of them, waiting, when block: idle
    reusable children are ended first)."""
    if block:
        pool.close_workers()
    children.reap(block)


def close_workers() -> None:
    """End every idle reusable child (they exit on EOF; reaped by reap_children)."""
    pool.close_workers()


def _run(target: Target[_R], limits: Limits, args: Args) -> tuple[_R, PartitionStats]:
    """In a reusable child when the target can be sent to one by name, else in a fresh one."""
    if pool.reusable(target):
        return _run_in_worker(target, limits, args)
    return _run_in_child(target, limits, args)


def _run_in_worker(target: Target[_R], limits: Limits, args: Args) -> tuple[_R, PartitionStats]:
    stalled = False
    while True:
        reap_children()
        worker, new = pool.acquire(limits)
        started = time.perf_counter()
        reply, status, ended = worker.run(target, limits, args)
        if ended == "stalled":
            if stalled:
                raise ChildStalled(
                    f"the decoding child (pid {worker.pid}) used no CPU for {children.STALL_S:g} s with no program "
                    "of its own running, twice: a lock inherited at fork (UD_DECODE_STALL_S)"
                )
            stalled = True  # the inherited lock is not held in a fresh child
            continue
        break
    pool.release(worker, reply)
    peak_kib = reply.peak_rss_kib if reply else None
    return _result(reply, status, ended == "timeout", limits, started, peak_kib, spawned=new)


def _run_in_child(target: Target[_R], limits: Limits, args: Args) -> tuple[_R, PartitionStats]:
    try:
        return _run_in_child_once(target, limits, args)
    except ChildStalled:
        return _run_in_child_once(target, limits, args)  # the inherited lock is not held this time


def _run_in_child_once(target: Target[_R], limits: Limits, args: Args) -> tuple[_R, PartitionStats]:
    reap_children()
    read_end, write_end = os.pipe()
    parent = os.getpid()
    started = time.perf_counter()
    pid = children.fork()
    if pid == 0:  # the child never returns from here
        os.close(read_end)
        server.run_once(write_end, target, limits, args, parent)
    os.close(write_end)
    try:
        message, ended = protocol.read_reply(read_end, pid, started + limits.timeout_s)
        timed_out = ended == "timeout"
    except BaseException:  # the parent was interrupted (KeyboardInterrupt...): no orphan
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(read_end)
    if ended == "stalled":
        children.report_stall(pid)
        os.kill(pid, signal.SIGKILL)
        children.wait(pid)
        raise ChildStalled(
            f"the decoding child (pid {pid}) used no CPU for {children.STALL_S:g} s with no program of its own "
            "running: a lock inherited at fork (UD_DECODE_STALL_S)"
        )
    reply: Reply[_R] | None = protocol.decode(message)
    status = 0
    if reply is None:  # timed out, or died without replying: its exit status tells why
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        status, peak_kib = children.wait(pid)
    else:
        children.reap_later(pid)  # it is exiting
        peak_kib = reply.peak_rss_kib
    return _result(reply, status, timed_out, limits, started, peak_kib, spawned=True)


def _result(
    reply: Reply[_R] | None,
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
    if isinstance(outcome, Done):
        return outcome.value, stats
    error = _failure(outcome, status, timed_out, limits)
    error.stats = stats
    raise error


def _failure(failed: Failed | None, status: int, timed_out: bool, limits: Limits) -> DecodeError | ConfigError:
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
            return DecodeError(f"used more than {child.cpu_limit(limits)} s of CPU (UD_DECODE_TIMEOUT_S)")
        return DecodeError(f"decoder crashed: killed by signal {number} ({signal.Signals(number).name})")
    code = os.waitstatus_to_exitcode(status)
    if code == server.EXIT_MEMORY:
        return DecodeError(memory)
    return DecodeError(f"decoder crashed: exited with status {code} without a result")
