"""CPU-seconds from /proc: what a process tree or a server spent, apart from everything else.

Wall time on a shared machine depends on who else runs; CPU-seconds do not (much). A process's
/proc/PID/stat carries utime and stime (its own CPU) and cutime and cstime (the CPU of the
children it has waited for, recursively): the CPU of a process tree is, over the root and its live
descendants, utime + stime + cutime + cstime. A child that ends between two readings moves from
being counted itself to being counted in its parent's cutime/cstime, so the difference of two
readings is the tree's CPU in between (a child that is never waited for is lost: none of ours).

The pure parts (parse_stat, tree_cpu_ticks, interval_cpu, capacity) are unit-tested.
"""

from __future__ import annotations

import bisect
import os
import resource
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Stat:
    pid: int
    ppid: int
    utime: int  # clock ticks
    stime: int
    cutime: int
    cstime: int

    @property
    def ticks(self) -> int:
        return self.utime + self.stime + self.cutime + self.cstime


def parse_stat(text: str) -> Stat:
    """One /proc/PID/stat line. comm (the 2nd field) is in parentheses and may hold spaces and
    parentheses, so fields are counted after its last ')': state, ppid, ..., utime is the 14th field."""
    head, _, tail = text.rpartition(")")
    pid = int(head.split("(", 1)[0])
    fields = tail.split()
    # fields[0] = state (field 3); field n is fields[n - 3]
    return Stat(
        pid=pid,
        ppid=int(fields[1]),
        utime=int(fields[11]),
        stime=int(fields[12]),
        cutime=int(fields[13]),
        cstime=int(fields[14]),
    )


def read_stats() -> dict[int, Stat]:
    """Every process's stat (processes that end while being read are skipped)."""
    out: dict[int, Stat] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                out[int(entry)] = parse_stat(handle.read())
        except (OSError, ValueError, IndexError):
            continue
    return out


def tree_cpu_ticks(root: int, stats: Mapping[int, Stat]) -> int:
    """Clock ticks of root and its live descendants, each with its reaped children (0: no such root)."""
    if root not in stats:
        return 0
    return sum(stats[pid].ticks for pid in set(descendants(root, stats)) if pid in stats)


def snapshot(parts: Mapping[str, Iterable[int]]) -> dict[str, float | None]:
    """{part: CPU-seconds so far} for parts given as the roots of their process trees; None for a
    part one of whose roots is gone (a server restarted meanwhile: its CPU is not comparable)."""
    stats = read_stats()
    out: dict[str, float | None] = {}
    for name, pids in parts.items():
        roots = list(pids)
        out[name] = (
            None
            if any(pid not in stats for pid in roots)
            else sum(tree_cpu_ticks(pid, stats) for pid in roots) / CLK_TCK
        )
    return out


def delta(before: Mapping[str, float | None], after: Mapping[str, float | None]) -> dict[str, float | None]:
    """after - before per part; None where either reading is missing or the CPU went backwards."""
    out: dict[str, float | None] = {}
    for name, value in after.items():
        start = before.get(name)
        out[name] = round(value - start, 3) if value is not None and start is not None and value >= start else None
    return out


def self_cpu_s() -> float:
    """This process's CPU with its waited-for children's: the same four figures as /proc's fields,
    from getrusage, which the kernel reports to the microsecond (os.times and /proc round them to
    10 ms ticks, which would quantize a 45 ms parse to 40 or 50)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pid_from_file(path: Path) -> int | None:
    """The live process a pid file names (None when missing, stale or a zombie)."""
    try:
        text = path.read_text().strip()
        pid = int(text.splitlines()[0])
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rpartition(")")[2].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    return None if state == "Z" else pid


def services_dir() -> Path:
    repo_root = Path(__file__).resolve().parents[1]  # where make services-up keeps its servers
    return Path(os.environ.get("UD_SERVICES_DIR") or repo_root / ".services")


def service_pids(folder: Path | None = None) -> dict[str, list[int]]:
    """make services-up's servers: {"cassandra": [JVM pid], "minio": [pid]} (a part whose pid file
    names no live process is left out: the bench then reports no figure for it)."""
    folder = folder or services_dir()
    out = {}
    for name, pidfile in (
        ("cassandra", folder / "cassandra" / "cassandra.pid"),
        ("minio", folder / "minio" / "minio.pid"),
    ):
        pid = pid_from_file(pidfile)
        if pid:
            out[name] = [pid]
    return out


def _threads(pids: Iterable[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            out.extend(int(t) for t in os.listdir(f"/proc/{pid}/task"))
        except OSError:
            pass  # the server ended meanwhile
    return out


def _pin(threads: Iterable[int], cores: set[int]) -> None:
    for thread in threads:
        try:
            os.sched_setaffinity(thread, cores)
        except OSError:
            pass  # the thread ended meanwhile


@contextmanager
def servers_apart(servers: Mapping[str, Iterable[int]]) -> Iterator[bool]:
    """The servers' threads on the last core, the calling thread (and so the workers it starts
    meanwhile, which inherit its affinity) on the others; restored after. A deployment's Cassandra
    and MinIO run on machines of their own: this puts them on a core of their own, the nearest
    this machine has. Yields False, pinning nothing, with fewer than two cores."""
    cores = set(os.sched_getaffinity(0))
    pids = [pid for part in servers.values() for pid in part]
    if len(cores) < 2 or not pids:
        yield False
        return
    server_core = {max(cores)}
    try:
        _pin(_threads(pids), server_core)  # threads started later inherit their creator's
        os.sched_setaffinity(0, cores - server_core)
        yield True
    finally:
        os.sched_setaffinity(0, cores)
        _pin(_threads(pids), cores)


def descendants(root: int, stats: Mapping[int, Stat]) -> list[int]:
    """root and its live descendants (root alone when unknown)."""
    children: dict[int, list[int]] = {}
    for stat in stats.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


def _ticks_of(pids: Iterable[int], root: int | None = None) -> tuple[int, int]:
    """(clock ticks of pids, each with its reaped children; root's own utime + stime: 0 when it
    is not among them or has ended)."""
    total = own = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                stat = parse_stat(handle.read())
        except (OSError, ValueError, IndexError):
            continue  # ended (and counted in its parent's cutime once waited for)
        total += stat.ticks
        if pid == root:
            own = stat.utime + stat.stime
    return total, own


class TreeSampler:
    """A process tree's cumulative CPU (root and live descendants, each with its reaped children)
    every `interval` s, on time.time()'s clock, from a thread of the measuring process (so the
    measured tree does not pay for it). The tree's members are found by a full /proc scan every
    `rescan` s (about 20 ms each on a busy machine); in between only their own stat files are read.
    A descendant started and not yet found is counted from when it is found (or in its parent's
    cutime once waited for).

    `own_samples` hold the root process's own CPU at the same times (its threads, without any
    child's): in a graph worker, the step process apart from the decoding children it forks."""

    def __init__(self, root: int, interval: float = 0.01, rescan: float = 0.25):
        import threading

        self.root, self.interval, self.rescan = root, interval, rescan
        self.samples: list[tuple[float, float]] = []
        self.own_samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        members: list[int] = [self.root]
        scanned = 0.0
        counted = own = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if now - scanned >= self.rescan:
                members, scanned = descendants(self.root, read_stats()), now
            # The tree's CPU never goes down. A reading that does has lost members that exited
            # before anyone counted them: the root once the runner has reaped it (its last readings
            # read 0, and the run's total was taken from the last one), or a child its parent has
            # not waited for yet. Keep what was counted.
            tree_ticks, own_ticks = _ticks_of(members, self.root)
            counted, own = max(counted, tree_ticks / CLK_TCK), max(own, own_ticks / CLK_TCK)
            now_s = time.time()
            self.samples.append((now_s, counted))
            self.own_samples.append((now_s, own))
            self._stop.wait(self.interval)

    def start(self) -> TreeSampler:
        self._thread.start()
        return self

    def stop(self) -> list[tuple[float, float]]:
        self._stop.set()
        self._thread.join()
        return self.samples


def cpu_at(samples: list[tuple[float, float]], at: float) -> float:
    """Cumulative CPU at time `at`, linearly interpolated between the samples around it."""
    if not samples:
        raise ValueError("no samples")
    index = bisect.bisect_left(samples, at, key=lambda sample: sample[0])
    if index == 0:
        return samples[0][1]
    if index == len(samples):
        return samples[-1][1]
    (t0, c0), (t1, c1) = samples[index - 1], samples[index]
    return c0 if t1 == t0 else c0 + (c1 - c0) * (at - t0) / (t1 - t0)


def interval_cpu(samples: list[tuple[float, float]], start: float, ends: Mapping[str, float]) -> dict[str, float]:
    """{document: CPU-seconds from the previous document's end (start for the first) to its own}.

    ends: {document: when its last materialization was stored}. With documents done one after
    another, each interval holds that document's CPU (and, with parses ahead, part of the next's
    parse instead of part of its own: the intervals still add up to the run's CPU)."""
    out: dict[str, float] = {}
    previous = cpu_at(samples, start)
    for document, end in sorted(ends.items(), key=lambda item: item[1]):
        now = cpu_at(samples, end)
        out[document] = now - previous
        previous = now
    return out


# -- capacity beyond one machine ---------------------------------------------------------------


def capacity(
    cpu_per_document_s: Mapping[str, float],
    worker_part: str,
    workers: Iterable[int] = (1, 4, 16),
    cores_per_part: float = 1.0,
) -> dict:
    """Documents per hour a deployment can sustain, from each part's CPU-seconds per document.

    Each worker is a process tree with a core of its own: w workers decode w * 3600 / c_worker
    documents an hour. Every other part (a database node, the object store, the queue) is shared
    by all workers and has cores_per_part cores: it caps the rate at cores_per_part * 3600 / c_part.
    The rate at w workers is the least of these; the part that sets it saturates first.
    """
    if worker_part not in cpu_per_document_s:
        raise KeyError(f"{worker_part!r} is not one of the parts {sorted(cpu_per_document_s)}")
    caps = {
        name: cores_per_part * 3600 / cost
        for name, cost in cpu_per_document_s.items()
        if name != worker_part and cost and cost > 0
    }
    worker_cost = cpu_per_document_s[worker_part]
    projection = {}
    for w in workers:
        limits = dict(caps)
        limits[worker_part] = w * 3600 / worker_cost if worker_cost > 0 else float("inf")
        part = min(limits, key=lambda name: limits[name])
        projection[str(w)] = {"documents_per_hour": round(limits[part]), "saturates": part}
    first = min(caps, key=lambda name: caps[name]) if caps else worker_part
    return {
        "cpu_s_per_document": dict(cpu_per_document_s),
        "cores_per_part": cores_per_part,
        "projection": projection,
        "saturates_first": first,
        "ceiling_documents_per_hour": round(caps[first]) if caps else None,
    }
