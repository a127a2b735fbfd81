"""The benchmark's measured subprocesses: launch, wait, time, peak memory.

Every figure of bench.run comes from a fresh subprocess, timed from its launch on the
system-wide monotonic clock (comparable with the timestamps the child takes itself), its peak RSS
read with os.wait4, and, when asked, its process tree's memory polled from /proc. The workers run
as `python -m bench.workers` with the repository root on their PYTHONPATH (bench is not installed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench import cpu

CHILD_ENV = {
    "DO_NOT_TRACK": "true",
    "UNSTRUCTURED_DISABLE_NOTICE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}
CHILD_TIMEOUT_S = 3600
REPO_ROOT = Path(__file__).resolve().parents[1]  # holds bench/, ud_assets/, resources/, dagster.yaml

# -- memory of a process tree --------------------------------------------------------------


def _proc_tree(root: int) -> list[int]:
    """root and its live descendants (bench.cpu reads /proc for both)."""
    return cpu.descendants(root, cpu.read_stats())


def _rss_pss_kib(pid: int) -> tuple[int, int]:
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            for line in handle:
                if line.startswith(b"Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith(b"Pss:"):
                    pss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, pss


class TreeMemory(threading.Thread):
    """Polls a process and its descendants (e.g. the decoder's forked children) every `interval` s.

    Records the peak of the summed PSS (memory really used by the tree: shared pages counted once),
    the peak of the summed RSS (shared copy-on-write pages counted in every process) and how many
    processes the tree had at most.
    """

    def __init__(self, pid: int, interval: float = 0.1):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.stop_event = threading.Event()
        self.peak_pss_kib = self.peak_rss_sum_kib = self.peak_processes = 0

    def run(self) -> None:
        while not self.stop_event.is_set():
            tree = _proc_tree(self.pid)
            sizes = [_rss_pss_kib(pid) for pid in tree]
            self.peak_rss_sum_kib = max(self.peak_rss_sum_kib, sum(r for r, _ in sizes))
            self.peak_pss_kib = max(self.peak_pss_kib, sum(p for _, p in sizes))
            self.peak_processes = max(self.peak_processes, sum(1 for r, _ in sizes if r))
            self.stop_event.wait(self.interval)

    def result(self) -> dict:
        return {
            "tree_peak_pss_mb": self.peak_pss_kib / 1024,
            "tree_peak_rss_sum_mb": self.peak_rss_sum_kib / 1024,
            "tree_max_processes": self.peak_processes,
        }


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (all CPUs; /proc/stat, idle and iowait excluded)."""
    with open("/proc/stat", "rb") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class Child:
    """One measured subprocess: launch time, wall time to exit, exit code, peak RSS (os.wait4), and
    how much CPU the rest of the machine used meanwhile (other processes: noise, or our servers)."""

    def __init__(
        self,
        name: str,
        command: list[str],
        env: dict,
        cwd: str,
        log_path: Path,
        poll_memory: bool = False,
        poll_cpu: bool = False,
    ):
        self.name, self.command, self.env, self.cwd, self.log_path = name, command, env, cwd, log_path
        self.poll_memory, self.poll_cpu = poll_memory, poll_cpu

    def run(self) -> dict:
        load_before = os.getloadavg()
        busy_before = machine_cpu_s()
        with open(self.log_path, "ab") as log_file:
            log_file.write(f"\n=== {self.name}: {' '.join(self.command)[:500]}\n".encode())
            log_file.flush()
            launched = time.monotonic()
            proc = subprocess.Popen(self.command, env=self.env, cwd=self.cwd, stdout=log_file, stderr=subprocess.STDOUT)
            timer = threading.Timer(CHILD_TIMEOUT_S, proc.kill)
            timer.start()
            poller = TreeMemory(proc.pid) if self.poll_memory else None
            if poller:
                poller.start()
            cpu_sampler = cpu.TreeSampler(proc.pid).start() if self.poll_cpu else None
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
                if poller:
                    poller.stop_event.set()
                    poller.join()
                cpu_samples = cpu_sampler.stop() if cpu_sampler else None
                own_cpu_samples = cpu_sampler.own_samples if cpu_sampler else None
            exited = time.monotonic()
        busy = machine_cpu_s() - busy_before
        child_cpu = usage.ru_utime + usage.ru_stime  # the child and the processes it waited for
        # A graph worker's decoding children are not waited for by it (they exit on EOF once it is
        # gone), so its rusage leaves them out (measured: 11.0 s against 21.8 s sampled over the
        # tree); the tree as sampled counts them.
        tree_cpu = cpu_samples[-1][1] if cpu_samples else 0.0
        proc.returncode = os.waitstatus_to_exitcode(status)
        return {
            "cpu_s": child_cpu,
            # busy CPU of everything else during the child's life: other users' processes, and (for the
            # graph workers) MinIO and Cassandra serving it
            "others_cpu_s": max(0.0, busy - max(child_cpu, tree_cpu)),
            **(poller.result() if poller else {}),
            # (time.time(), the tree's CPU-seconds so far) every 10 ms while it ran (bench.cpu.TreeSampler)
            **({"cpu_samples": cpu_samples} if cpu_samples is not None else {}),
            # the same times, the root process's own CPU (without its children's)
            **({"own_cpu_samples": own_cpu_samples} if own_cpu_samples is not None else {}),
            "launched_at": launched,
            "wall_s": exited - launched,
            "exit_code": proc.returncode,
            # ru_maxrss of a waited child: the largest resident set of it (or of its own children), KiB
            "peak_rss_mb": usage.ru_maxrss / 1024,
            "loadavg_before": load_before,
            "loadavg_after": os.getloadavg(),
        }


class Runner:
    def __init__(self, workdir: Path, env: dict):
        self.workdir, self.env = workdir, env
        self.log_path = workdir / "children.log"
        self.count = 0

    def worker(
        self, kind: str, args: dict, dagster: bool = False, poll_memory: bool = False, poll_cpu: bool = False
    ) -> dict:
        """Run a workers.py kind; its JSON result merged with the process figures.

        dagster: the child gets its own Dagster instance (DAGSTER_HOME), created and initialised
        beforehand like a deployment's, so the child does not pay for creating its storage.
        """
        self.count += 1
        result_path = self.workdir / f"result-{self.count:02d}-{kind}.json"
        command = [
            sys.executable,
            "-m",
            "bench.workers",
            kind,
            "--args",
            json.dumps(args),
            "--result",
            str(result_path),
        ]
        env = worker_env(self.env)
        if dagster:
            env["DAGSTER_HOME"] = str(init_dagster_home(self.workdir / f"dagster-{self.count:02d}"))
        process = Child(kind, command, env, str(self.workdir), self.log_path, poll_memory, poll_cpu).run()
        if process["exit_code"] != 0 or not result_path.exists():
            raise RuntimeError(f"benchmark worker {kind!r} failed (exit {process['exit_code']}); see {self.log_path}")
        return {**json.loads(result_path.read_text()), "process": process}

    def command(
        self,
        name: str,
        command: list[str],
        poll_memory: bool = False,
        env: dict | None = None,
        log_path: Path | None = None,
        check: bool = True,
    ) -> dict:
        """Run any command as a measured child. env replaces the runner's; log_path gets its output
        instead of children.log (to read it afterwards); check=False: a non-zero exit is a result
        (exit_code), not an error, for programs that exit non-zero when some inputs failed."""
        log_path = log_path or self.log_path
        process = Child(name, command, self.env if env is None else env, str(self.workdir), log_path, poll_memory).run()
        if check and process["exit_code"] != 0:
            raise RuntimeError(f"{name} failed (exit {process['exit_code']}); see {log_path}")
        return {"process": process}


def worker_env(env: dict) -> dict:
    """env with the repository root first on PYTHONPATH: a worker runs in the work folder, and
    `python -m bench.workers` must find the bench package (not installed) there."""
    paths = [str(REPO_ROOT), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(REPO_ROOT))]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


PROJECT_INSTANCE_CONFIG = REPO_ROOT / "dagster.yaml"  # the repository's instance config


def init_dagster_home(home: Path) -> Path:
    """A Dagster instance folder with the project's dagster.yaml (SQLite storage), storage created."""
    import dagster as dg

    home.mkdir(parents=True, exist_ok=True)
    if PROJECT_INSTANCE_CONFIG.is_file():
        shutil.copy(PROJECT_INSTANCE_CONFIG, home / "dagster.yaml")
    else:
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.get_runs(limit=1)
        instance.get_dynamic_partitions("documents")
        instance.all_instigator_state()
        instance.get_latest_materialization_event(dg.AssetKey("document"))
    return home


def cold_partition_command(path: str) -> list[str]:
    from bench.workers import raw_kwargs

    extra = "".join(f", {k}={v!r}" for k, v in raw_kwargs(path).items())
    return [
        sys.executable,
        "-c",
        f"from unstructured.partition.auto import partition; partition(filename={path!r}, strategy='fast'{extra})",
    ]
