"""The child's side: it checks the input, runs the target within its budget and replies.

A fresh child (run_once) parses one document and exits; a reusable one (serve) parses the
documents sent through its request pipe, one after another, until the parent closes the pipe.
Either way the child:
- checks the input (formats.check_input: headers of untrusted bytes are read in the child too);
- runs the target with the parse's Budget (its limits and its deadline, started here);
- replies (the value, or the error's kind and message, with its timings and memory) and, when
  done, _exits: nothing may escape into the parent's code that it was forked from.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from .. import formats
from ..limits import Budget, Limits
from ..model import ConfigError, DecodeError, DecoderBug, DecoderConfig
from . import child, protocol
from .protocol import Done, Failed, Reply

_R = TypeVar("_R")
# What a child runs: partition_bytes' arguments (data, kind, config, filename) and `budget=`.
Target = Callable[..., _R]
Args = tuple[bytes, str, DecoderConfig, str | None]
EXIT_MEMORY = 75  # the child ran out of memory before it could report
EXIT_BUG = 70  # our own code failed in the child (its traceback sent as the reply when it could be)
PRIVATE_MEMORY_AFTER_S = 0.5  # a reusable child measures a document's private memory after a parse this long


def run_once(fd: int, target: Target[Any], limits: Limits, args: Args, parent: int) -> None:
    """A fresh child's life: set up, parse one document, reply, exit."""
    code = 0
    try:
        begun = time.perf_counter()
        child.enter(limits, parent)
        reply = Reply(work(target, limits, args))
        reply.begun_at = begun  # perf_counter is CLOCK_MONOTONIC: comparable across fork
        reply.work_s = time.perf_counter() - begun
        reply.private_mb = child.private_mb()
        reply.peak_rss_kib = child.peak_rss_kib()
        protocol.write_all(fd, protocol.encode(reply))
    except MemoryError:
        code = EXIT_MEMORY
    except BaseException:  # nothing may escape into the parent's code
        code = EXIT_BUG
        _report_bug(fd)
    finally:
        _exit(code)


def serve(requests: int, replies: int, limits: Limits, parent: int) -> None:
    """A reusable child's life: a request, its reply, until the parent closes the pipe."""
    code = 0
    try:
        child.enter(limits, parent, die_with_parent=False)
        first_rss_kib = child.peak_rss_kib()
        while True:
            message = protocol.read_request(requests)
            if message is None:
                break
            begun = time.perf_counter()
            target, args = pickle.loads(message)
            child.renew_cpu_limit(limits)
            reply = Reply(work(target, limits, args))
            reply.begun_at = begun
            reply.work_s = time.perf_counter() - begun
            # Reading smaps_rollup of a 1 GB process takes 5-20 ms: worth it for a long parse only.
            reply.private_mb = child.private_mb() if reply.work_s >= PRIVATE_MEMORY_AFTER_S else None
            reply.peak_rss_kib = child.peak_rss_kib()
            reply.grown_mb = (reply.peak_rss_kib - first_rss_kib) / 1024
            protocol.write_all(replies, protocol.encode(reply))
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
    except MemoryError:
        code = EXIT_MEMORY
    except BaseException:  # nothing may escape into the parent's code (a closed pipe: the parent is gone)
        code = EXIT_BUG
        _report_bug(replies)
    finally:
        _exit(code)


def work(target: Target[_R], limits: Limits, args: Args) -> Done[_R] | Failed:
    """The target's value for one document, or how it failed."""
    data, mime, config, filename = args
    budget = Budget.start(limits)  # the clock a program the parser runs (LibreOffice) is given
    try:
        formats.check_input(data, mime, limits)
        return Done(target(data, mime, config, filename, budget=budget))
    except MemoryError:
        return Failed("memory")
    except DecoderBug:  # our own set-up around the parser failed: the parent fails the run with this
        return Failed("bug", traceback.format_exc()[-4000:])
    except ConfigError as exc:
        return Failed("config", str(exc))
    except DecodeError as exc:
        if isinstance(exc.__cause__, MemoryError):  # partition_bytes wraps every parser failure
            return Failed("memory")
        return Failed("error", str(exc))
    except Exception as exc:  # an injected target's failure, described as partition_bytes would
        return Failed("error", f"{mime} could not be parsed: {type(exc).__name__}: {exc}"[:300])


def _report_bug(fd: int) -> None:
    """Best effort: the traceback of our own code's failure in the child, as its reply."""
    try:
        protocol.write_all(fd, protocol.frame(pickle.dumps(Reply(Failed("bug", traceback.format_exc()[-4000:])))))
    except BaseException:  # the parent is gone, or the pipe is full: the exit status still tells
        pass


def _exit(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):  # the parser's warnings
        try:
            stream.flush()
        except BaseException:  # a closed stream must not keep the child alive
            pass
    os._exit(code)  # no atexit handlers, no finalizers of the parent's objects
