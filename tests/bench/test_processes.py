"""bench.processes: a measured child's CPU, and what the rest of the machine used meanwhile."""

import os
import sys

from bench import processes
from bench.processes import Child

# A process that forks a child it never waits for: the child burns CPU and exits, and the parent
# exits after it, as a graph worker's decoding children end on EOF once the worker is gone.
ABANDONS_A_BUSY_CHILD = """
import os, time
if os.fork() == 0:
    end = time.process_time() + 1.5
    while time.process_time() < end:
        pass
    os._exit(0)
time.sleep(2.0)
"""


def test_a_child_never_waited_for_counts_in_the_sampled_tree_not_in_the_machines_others(tmp_path, monkeypatch):
    # The machine's busy CPU over the child's life, fixed at 2.0 s (what else runs here is noise):
    # the abandoned child's 1.5 s of it are the tree's, the rest is "others".
    readings = iter((100.0, 102.0))
    monkeypatch.setattr(processes, "machine_cpu_s", lambda: next(readings))
    measured = Child(
        "abandons",
        [sys.executable, "-c", ABANDONS_A_BUSY_CHILD],
        dict(os.environ),
        str(tmp_path),
        tmp_path / "log",
        poll_cpu=True,
    ).run()
    assert measured["exit_code"] == 0
    assert measured["cpu_s"] < 0.5  # the unwaited child is not in its parent's rusage
    assert measured["cpu_samples"][-1][1] >= 1.3  # the sampled tree holds it
    assert measured["others_cpu_s"] <= 2.0 - 1.3  # so it is not counted as the rest of the machine
