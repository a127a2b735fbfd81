"""What a process we start may change about itself, in one place: its resource limits, and dying
with its parent. The decoding children (isolation/child.py) and the programs a format runs
(LibreOffice, formats/legacy_office.py) both set theirs here.

A limit is only ever lowered, never raised above the hard limit the process already holds: raising
a hard limit needs CAP_SYS_RESOURCE, which root in a container often lacks (setrlimit then fails).
"""

from __future__ import annotations

import os
import resource
import signal

PR_SET_PDEATHSIG = 1


def lower_limit(which: int, soft: int, hard: int | None = None) -> None:
    """Set a limit no higher than the hard limit the process already holds."""
    held = resource.getrlimit(which)[1]
    hard = soft if hard is None else hard
    if held != resource.RLIM_INFINITY:
        soft, hard = min(soft, held), min(hard, held)
    resource.setrlimit(which, (soft, hard))


def die_with_parent(parent: int | None = None) -> None:
    """PR_SET_PDEATHSIG: killed when the parent dies rather than left running. parent: the pid the
    caller forked from, to exit at once if it died before the request took effect."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:
        os._exit(1)
