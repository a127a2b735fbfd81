"""The parent's hold on its children: forking them one at a time, watching them, reaping them.

A child is watched through /proc: whether it has exited (without reaping it, so that wait4
collects its rusage later), and whether it has stalled (ChildStalled).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

# One fork at a time: forks from two threads at once trip at-fork hooks (filelock); and none while
# the parent imports a module (client.warm_up), whose half-imported state a child would inherit.
FORK_LOCK = threading.Lock()
_unreaped: set[int] = set()  # children that replied and are exiting


class ChildStalled(RuntimeError):
    """A child sat without using any CPU, running no program of its own, for STALL_S seconds.

    A parse is CPU work on bytes in memory: a child that stops using CPU is blocked on a lock it
    inherited at fork from another thread of the parent (the parent stores documents on other
    threads while it forks the next one). That is this program's fault, never the document's: the
    document is tried once more in a fresh child, and a second stall fails the run with this error
    instead of being recorded against the document."""


STALL_S = float(os.environ.get("UD_DECODE_STALL_S") or 30.0)
STACKS_SIGNAL = signal.SIGUSR1  # a child answers it with its threads' stacks on stderr (child.enter)
STACKS_WAIT_S = 0.5
log = logging.getLogger(__name__)


def report_stall(pid: int) -> None:
    """Log a stalled child and have it write its threads' stacks to stderr (the run's compute log),
    before it is killed: a stall is a bug of this program, and its stacks show which lock."""
    log.warning(
        "decoding child %d used no CPU for %g s with no program of its own running: a lock inherited "
        "at fork; its threads' stacks follow on stderr; the document is tried again in a fresh child",
        pid,
        STALL_S,
    )
    try:
        os.kill(pid, STACKS_SIGNAL)
    except ProcessLookupError:
        return
    time.sleep(STACKS_WAIT_S)  # faulthandler writes from the child's signal handler, in a moment


def fork() -> int:
    """os.fork(), one at a time, with the standard streams flushed first (else the child would
    print their pending text again)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    with FORK_LOCK:
        return os.fork()


def exited(pid: int) -> bool:
    """Whether the child has exited, without reaping it (wait4 collects its rusage later)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def wait(pid: int) -> tuple[int, int | None]:
    """Exit status and peak RSS (KiB) of a finished child."""
    try:
        _, status, usage = os.wait4(pid, 0)
        return status, usage.ru_maxrss
    except ChildProcessError:  # reaped by someone else (SIGCHLD ignored): no status to read
        return 0, None


def reap_later(pid: int) -> None:
    """A child that replied and is exiting: tearing down its copy of the warm address space takes
    tens of milliseconds, so it is reaped later (reap)."""
    _unreaped.add(pid)


def reap(block: bool = False) -> None:
    """Collect the children that have replied and exited (all of them, waiting, when block)."""
    for pid in list(_unreaped):
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _unreaped.discard(pid)


def cpu_ticks(pid: int) -> int | None:
    """CPU time (clock ticks, user + system) the process has used, from /proc; None when unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    except (OSError, IndexError, ValueError):
        return None


def runs_a_program(pid: int) -> bool:
    """Whether the process has children of its own (LibreOffice, tesseract, pandoc): then its own
    idle CPU is waiting for them, not a stall."""
    try:
        return any(task.joinpath("children").read_text().strip() for task in Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return True  # cannot tell: never call it a stall
