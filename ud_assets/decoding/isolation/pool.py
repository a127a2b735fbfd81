"""Reusable children: a child forked once decodes documents one after another.

A fork costs a small document more than its parse: the warm parent is about 1 GB, and the child
copies every page it writes (reference counts touch many) before it can work, then tears its
copy down. Measured on a 1 GB parent: a plain-text parse of 5 ms took 100 ms in a fresh child, a
small HTML page 2 ms vs 69 ms. So a child forked once decodes documents one after another, each
within the same limits as a fresh child's (the wall-clock deadline and the stall watch from the
parent; the CPU limit renewed per document; the address-space cap for the child's life), and it
is replaced after any document that failed in it (its state is not trusted after a MemoryError),
after CHILD_DOCUMENTS documents, or when its resident memory has grown past a quarter of the cap.
A crash, a timeout or a stall ends it, exactly as it ends a fresh child.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..limits import Limits
from . import children, protocol, server
from .protocol import Done, Reply
from .server import Args, Target

_R = TypeVar("_R")
CHILD_DOCUMENTS = max(1, int(os.environ.get("UD_DECODE_CHILD_DOCUMENTS") or 200))
_idle_workers: dict[Limits, list[Worker]] = {}
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


def reusable(target: Callable[..., object]) -> bool:
    """A target a reusable child can be sent by name: a module-level function (not a closure)."""
    qualname = getattr(target, "__qualname__", "")
    return CHILD_DOCUMENTS > 1 and bool(qualname) and "<locals>" not in qualname and "." not in qualname


class Worker:
    """A forked child that decodes the documents sent through its request pipe, one at a time."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.served = 0
        with children.FORK_LOCK:
            # The parent's ends are known before any other thread can fork: a child forked then
            # closes them (_close_worker_fds_in_child), so none keeps this child's requests open
            # after the parent dies (the child would never see EOF and outlive it).
            request_read, request_write = os.pipe()
            reply_read, reply_write = os.pipe()
            _worker_fds.update((request_write, reply_read))
        parent = os.getpid()
        pid = children.fork()
        if pid == 0:  # never returns; the parent's ends were closed by the at-fork hook
            server.serve(request_read, reply_write, limits, parent)
        os.close(request_read)
        os.close(reply_write)
        self.pid, self.requests, self.replies = pid, request_write, reply_read
        self.status = 0  # its exit status, once it has ended

    def alive(self) -> bool:
        return not children.exited(self.pid)

    def run(self, target: Target[_R], limits: Limits, args: Args) -> tuple[Reply[_R] | None, int, str | None]:
        """(reply, exit status, why it ended without one); the status is 0 while the child lives."""
        started = time.perf_counter()
        deadline = started + limits.timeout_s
        payload = pickle.dumps((target, args), protocol=pickle.HIGHEST_PROTOCOL)
        ended: str | None = None
        protocol.send(self.requests, protocol.frame(payload), self.pid, deadline)
        # Read even when the send failed: a child that died first may have left its last reply.
        message, ended = protocol.read_reply(self.replies, self.pid, deadline)
        self.served += 1
        reply: Reply[_R] | None = protocol.decode(message)
        status = 0
        if ended == "stalled":
            children.report_stall(self.pid)
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
            self.status, _peak = children.wait(self.pid)
        else:
            children.reap_later(self.pid)


def acquire(limits: Limits) -> tuple[Worker, bool]:
    """An idle child for these limits, or a new one (second value: whether it is new)."""
    with _workers_lock:
        idle = _idle_workers.get(limits, [])
        while idle:
            worker = idle.pop()
            if worker.alive():
                return worker, False
            worker.end(kill=True)
    return Worker(limits), True


def release(worker: Worker, reply: Reply[Any] | None) -> None:
    """Back to the idle children when it is still trusted, else ended."""
    healthy = (
        reply is not None
        and isinstance(reply.outcome, Done)
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
    """End every idle reusable child (they exit on EOF; reaped by children.reap)."""
    with _workers_lock:
        workers = [worker for idle in _idle_workers.values() for worker in idle]
        _idle_workers.clear()
    for worker in workers:
        worker.end()
