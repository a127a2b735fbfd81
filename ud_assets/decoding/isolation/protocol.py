"""The wire between the parent and a decoding child: length-prefixed pickles over a pipe.

A request (to a reusable child) is the pickled (target, args); a reply is a pickled Reply: the
target's value or the failure's kind and message, with what the work cost. Each message is an
8-byte little-endian length, then its bytes: a sibling child that still holds our end of a pipe
must not delay the end of a message until EOF.

Pickle rather than JSON: the pipe is private to the parent and its own child running our own
code; an attacker able to forge the pickle already runs code as our user in the child, so pickle
widens nothing, while it keeps element values exactly as partition_bytes made them (tuples,
ints vs floats, image bytes) at no encoding cost. Switch to decoder.element_to_json if the child
is ever sandboxed harder than the parent.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import time
from dataclasses import dataclass, replace
from typing import Generic, Literal, TypeVar

from . import children

_R = TypeVar("_R")
HEADER = struct.Struct("<Q")  # the length prefix
POLL_S = 0.05


@dataclass
class Done(Generic[_R]):
    value: _R  # what the target returned


@dataclass
class Failed:
    kind: Literal["memory", "config", "error", "bug"]
    message: str = ""  # the error's, for config, error and bug


@dataclass
class Reply(Generic[_R]):
    """What a child sends back through its pipe: its outcome and what the work cost."""

    outcome: Done[_R] | Failed
    begun_at: float = 0.0  # perf_counter when the child began
    work_s: float = 0.0
    private_mb: float | None = None
    peak_rss_kib: int = 0
    grown_mb: float = 0.0  # a reusable child's peak RSS over its first (what it kept or reached)


def frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


def encode(reply: Reply[_R]) -> bytes:
    """The framed reply; a value that cannot be pickled is this document's error."""
    try:
        payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        message = f"decoder result could not be sent: {type(exc).__name__}: {exc}"
        payload = pickle.dumps(replace(reply, outcome=Failed("error", message)))
    return frame(payload)


def decode(message: bytes) -> Reply[_R] | None:
    if not message:
        return None
    try:
        reply: Reply[_R] = pickle.loads(message)  # our own child's Reply
    except Exception:  # unpickling garbage may raise anything: a garbled reply is a crash, the exit status tells more
        return None
    return reply


def write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def send(fd: int, payload: bytes, pid: int, deadline: float) -> bool:
    """Write a framed request without blocking past the deadline; False when the child is gone."""
    view = memoryview(payload)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    os.set_blocking(fd, False)
    try:
        while view:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return False
            if not poller.poll(min(remaining, POLL_S) * 1000):
                if children.exited(pid):
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


def read_request(fd: int) -> bytes | None:
    """One request, in the child; None on EOF (the parent closed the pipe or exited)."""
    buffer = bytearray()
    while (message := _complete(buffer)) is None:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        buffer += chunk
    return message


def read_reply(fd: int, pid: int, deadline: float) -> tuple[bytes, Literal["timeout", "stalled"] | None]:
    """The child's reply (b"" when it died first), and why it ended without one: its deadline
    passed, or it stalled (children.ChildStalled)."""
    buffer = bytearray()
    poller = select.poll()  # not select(): no FD_SETSIZE limit in a process with many sockets
    poller.register(fd, select.POLLIN)
    cpu, busy_at = children.cpu_ticks(pid), time.perf_counter()
    while (message := _complete(buffer)) is None:
        now = time.perf_counter()
        remaining = deadline - now
        if remaining <= 0:
            return b"", "timeout"
        if poller.poll(min(remaining, POLL_S) * 1000):
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"", None  # EOF before a whole message: the child died
            buffer += chunk
            busy_at = now
        elif children.exited(pid):
            # It may have written its last bytes just before exiting: take what the pipe holds.
            while poller.poll(0) and (chunk := os.read(fd, 1 << 20)):
                buffer += chunk
            return _complete(buffer) or b"", None
        elif now - busy_at >= children.STALL_S:
            latest = children.cpu_ticks(pid)
            if latest is None or latest != cpu or children.runs_a_program(pid):
                cpu, busy_at = latest, now
            else:
                return b"", "stalled"
    return message, None


def _complete(buffer: bytearray) -> bytes | None:
    if len(buffer) < HEADER.size:
        return None
    end = HEADER.size + HEADER.unpack_from(buffer)[0]
    return bytes(buffer[HEADER.size : end]) if len(buffer) >= end else None
