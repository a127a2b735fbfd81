"""Everything a decoding child changes about itself: its signals, its garbage collector, its CPU
priority, its thread pools, its death with the parent, and its limits (address space and CPU), the
last two through process_limits (only ever lowered, never above the hard limit held).
"""

from __future__ import annotations

import faulthandler
import gc
import math
import os
import resource
import signal
import sys

from .. import process_limits
from ..limits import Limits, MiB
from ..process_limits import lower_limit
from . import children


def enter(limits: Limits, parent: int, die_with_parent: bool = True) -> None:
    """Set up a freshly forked child to parse within `limits` (a fresh child: for one document, its
    CPU limit set here; a reusable one: renew_cpu_limit per document)."""
    # Default dispositions: the parent's handlers (Dagster's SIGTERM...) are not ours to run.
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    # A child that stalls is asked for its threads' stacks before it is killed (children.STACKS_SIGNAL):
    # they name the lock it waits on. faulthandler writes them from the signal handler, without the GIL.
    faulthandler.register(children.STACKS_SIGNAL, file=2, all_threads=True)  # fd 2: sys.stderr may be a stand-in
    # O(1): inherited objects move to the permanent generation, so the child's collections never
    # write their GC headers (which would copy most of the parent's heap page by page).
    gc.freeze()
    if limits.niceness:
        # Below its parent (Limits.niceness): only ever lowered, which needs no privilege; the
        # programs a parse runs (pandoc, LibreOffice) inherit it.
        os.nice(limits.niceness)
    torch = sys.modules.get("torch")
    if torch is not None:
        # GNU OpenMP's pool is dead after fork if the parent ever used it: the first parallel
        # torch op would hang. One thread never touches the pool (tested:
        # tests/decoding/test_isolation.py, test_children_survive_a_parent_that_used_torch_openmp).
        torch.set_num_threads(1)
    if die_with_parent:
        # Not for reusable children: PR_SET_PDEATHSIG fires when the forking *thread* ends (a
        # parse-ahead pool's), which would kill an idle child another thread is about to use.
        process_limits.die_with_parent(parent)
    inherited = _vm_size()
    if inherited is not None:
        lower_limit(resource.RLIMIT_AS, inherited + limits.memory_mb * MiB)
    if die_with_parent:  # a reusable child sets its CPU limit per document
        cpu = cpu_limit(limits)  # SIGXCPU at the soft limit, SIGKILL at the hard one
        lower_limit(resource.RLIMIT_CPU, cpu, cpu + 5)


def renew_cpu_limit(limits: Limits) -> None:
    """A reusable child's CPU backstop for its next document: this one's budget on top of what the
    child used. (Only the soft limit, SIGXCPU: a hard limit once lowered cannot be raised again.)"""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = math.ceil(usage.ru_utime + usage.ru_stime) + cpu_limit(limits)
    lower_limit(resource.RLIMIT_CPU, cpu, resource.getrlimit(resource.RLIMIT_CPU)[1])


def cpu_limit(limits: Limits) -> int:
    # Backstop for a child whose parent vanished; several threads may burn CPU faster than wall time.
    return math.ceil(limits.timeout_s) * (os.cpu_count() or 1) + 10


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


def peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def private_mb() -> float | None:
    """Memory this document cost the child: pages it wrote or created, not those it shares."""
    try:
        with open("/proc/self/smaps_rollup", "rb") as handle:
            private = [line for line in handle if line.startswith((b"Private_Clean:", b"Private_Dirty:"))]
        return sum(int(line.split()[1]) for line in private) / 1024
    except OSError:
        return None
