"""bench.cpu: /proc/PID/stat parsing, a process tree's CPU, CPU per document, the capacity projection."""

import os
import time

import pytest

from bench import cpu

# A real line's shape: comm with a space and a parenthesis, utime..cstime are fields 14-17.
STAT = "4242 (python (x) 3) S 17 4242 4242 0 -1 4194304 1500 0 0 0 250 40 30 5 20 0 3 0 100 0 0"


def test_parse_stat_counts_fields_after_the_last_parenthesis():
    stat = cpu.parse_stat(STAT)
    assert (stat.pid, stat.ppid) == (4242, 17)
    assert (stat.utime, stat.stime, stat.cutime, stat.cstime) == (250, 40, 30, 5)
    assert stat.ticks == 325


def test_parse_stat_of_this_process_matches_os_times():
    with open(f"/proc/{os.getpid()}/stat") as handle:
        stat = cpu.parse_stat(handle.read())
    assert stat.pid == os.getpid() and stat.ppid == os.getppid()
    times = os.times()
    assert abs(stat.utime / cpu.CLK_TCK - times.user) <= 0.05


def _stat(pid, ppid, utime, cutime=0):
    return cpu.Stat(pid=pid, ppid=ppid, utime=utime, stime=0, cutime=cutime, cstime=0)


def test_a_tree_counts_live_descendants_and_reaped_children_but_not_others():
    stats = {
        1: _stat(1, 0, 1000),  # init: not in the tree
        10: _stat(10, 1, 100, cutime=50),  # root, with 50 ticks of reaped children
        11: _stat(11, 10, 20),
        12: _stat(12, 11, 7),  # a grandchild
        20: _stat(20, 1, 999),  # a sibling of the root
    }
    assert cpu.tree_cpu_ticks(10, stats) == 100 + 50 + 20 + 7
    assert cpu.tree_cpu_ticks(11, stats) == 27
    assert cpu.tree_cpu_ticks(99, stats) == 0  # no such process


def test_a_child_reaped_between_two_readings_is_counted_once():
    before = {10: _stat(10, 1, 100), 11: _stat(11, 10, 30)}
    after = {10: _stat(10, 1, 110, cutime=35)}  # the child ran 5 more ticks, then was waited for
    assert cpu.tree_cpu_ticks(10, after) - cpu.tree_cpu_ticks(10, before) == 10 + 5


def test_snapshot_of_this_process_grows_with_work():
    parts = {"me": [os.getpid()]}
    first = cpu.snapshot(parts)
    deadline = cpu.self_cpu_s() + 0.1
    while cpu.self_cpu_s() < deadline:
        pass
    spent = cpu.delta(first, cpu.snapshot(parts))["me"]
    assert spent is not None and 0.05 <= spent <= 1.0


def test_this_process_cpu_is_read_finer_than_a_clock_tick():
    """The bare loop's per-file CPU: a 3 ms parse must not read as 0 or 10 ms."""
    import time

    before = cpu.self_cpu_s()
    until = time.process_time() + 0.003
    while time.process_time() < until:
        pass
    assert 0.002 <= cpu.self_cpu_s() - before <= 0.008


def test_a_part_restarted_between_readings_has_no_figure():
    assert cpu.snapshot({"gone": [999_999_999]}) == {"gone": None}
    assert cpu.delta({"a": 5.0, "b": None, "c": 9.0}, {"a": 7.5, "b": 3.0, "c": 1.0, "d": 2.0}) == {
        "a": 2.5,
        "b": None,
        "c": None,  # a new process under the same name: its CPU started again from 0
        "d": None,
    }


def test_cpu_at_interpolates_between_samples():
    samples = [(10.0, 1.0), (11.0, 2.0), (13.0, 2.0)]
    assert cpu.cpu_at(samples, 10.5) == pytest.approx(1.5)
    assert cpu.cpu_at(samples, 9.0) == 1.0 and cpu.cpu_at(samples, 99.0) == 2.0
    assert cpu.cpu_at(samples, 12.0) == 2.0


def test_interval_cpu_splits_the_run_between_documents_by_their_end():
    samples = [(0.0, 0.0), (1.0, 0.5), (2.0, 0.6), (3.0, 1.6)]
    ends = {"b": 3.0, "a": 1.0, "c": 2.0}  # in any order
    per_document = cpu.interval_cpu(samples, 0.0, ends)
    assert per_document == pytest.approx({"a": 0.5, "c": 0.1, "b": 1.0})
    assert sum(per_document.values()) == pytest.approx(1.6)


def test_capacity_is_the_least_of_the_workers_and_every_shared_part():
    costs = {"worker": 0.36, "postgres": 0.036, "cassandra1": 0.09, "minio": 0.012}
    projection = cpu.capacity(costs, "worker", workers=(1, 4, 16))
    # a worker: 10,000 documents an hour each; Cassandra's node caps at 40,000, PostgreSQL 100,000
    assert projection["projection"]["1"] == {"documents_per_hour": 10_000, "saturates": "worker"}
    assert projection["projection"]["4"] == {"documents_per_hour": 40_000, "saturates": "worker"} or projection[
        "projection"
    ]["4"]["saturates"] in ("worker", "cassandra1")
    assert projection["projection"]["4"]["documents_per_hour"] == 40_000
    assert projection["projection"]["16"] == {"documents_per_hour": 40_000, "saturates": "cassandra1"}
    assert projection["saturates_first"] == "cassandra1"
    assert projection["ceiling_documents_per_hour"] == 40_000


def test_capacity_with_more_cores_per_part_and_a_missing_worker():
    costs = {"worker": 1.0, "cassandra": 0.5}
    assert cpu.capacity(costs, "worker", workers=(16,), cores_per_part=2)["projection"]["16"] == {
        "documents_per_hour": 14_400,
        "saturates": "cassandra",
    }
    with pytest.raises(KeyError):
        cpu.capacity({"cassandra": 0.5}, "worker")


def test_pid_from_file(tmp_path):
    pidfile = tmp_path / "x.pid"
    assert cpu.pid_from_file(pidfile) is None  # missing
    pidfile.write_text(f"{os.getpid()}\n")
    assert cpu.pid_from_file(pidfile) == os.getpid()
    pidfile.write_text("not a pid\n")
    assert cpu.pid_from_file(pidfile) is None
    assert cpu.service_pids(tmp_path) == {}


BURN = "import time\nend = time.process_time() + {}\nwhile time.process_time() < end: pass"  # a process burning CPU


def _sampled(script: str, after_reaped_s: float = 0.0) -> cpu.TreeSampler:
    """A child running `script`, its tree sampled until it has ended and been waited for."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", script])
    sampler = cpu.TreeSampler(child.pid, interval=0.01, rescan=0.05).start()
    child.wait()  # reaped: its /proc entry is gone, as when bench.processes' os.wait4 returns
    time.sleep(after_reaped_s)
    sampler.stop()
    return sampler


def test_the_tree_sampler_sees_a_grandchilds_cpu_before_it_is_waited_for():
    # a child that starts a grandchild burning ~0.4 s of CPU, then waits for it
    burn = BURN.format(0.4) + "\ntime.sleep(0.5)"
    samples = _sampled(f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}])").samples
    times = [t for t, _ in samples]
    assert times == sorted(times)
    # the grandchild's CPU shows while it is alive and sleeping (not yet waited for by its parent)
    assert max(c for _, c in samples) >= 0.3


def test_the_tree_sampler_keeps_the_trees_cpu_once_the_root_is_reaped():
    # the sampler reads the gone tree for a while before it is stopped
    samples = _sampled(BURN.format(0.3), after_reaped_s=0.1).samples
    assert samples[-1][1] >= 0.25  # the run's total (tree_cpu_s) is the last sample
    assert [c for _, c in samples] == sorted(c for _, c in samples)


def test_the_tree_sampler_counts_the_roots_own_cpu_apart_from_its_childrens():
    # the root burns ~0.15 s itself, then its child burns ~0.5 s (the step and a decoding child)
    sampler = _sampled(
        f"import subprocess, sys\n{BURN.format(0.15)}\nsubprocess.run([sys.executable, '-c', {BURN.format(0.5)!r}])"
    )
    tree, own = sampler.samples, sampler.own_samples
    assert [t for t, _ in own] == [t for t, _ in tree]  # read at the same times
    assert [c for _, c in own] == sorted(c for _, c in own)
    assert 0.1 <= own[-1][1] < 0.4  # the root's own CPU (its interpreter start-up included)
    assert tree[-1][1] - own[-1][1] >= 0.4  # the child's, counted in the tree only


TREE_SAMPLES = [(100.0, 1.0), (101.0, 2.0), (102.0, 2.5), (103.0, 4.0), (104.0, 4.0)]


def _attached(process: dict) -> dict:
    """A graph run's sample (run 100-104 s, step from 101, documents a and b ending at 102 and
    103) after attach_cpu has read the parent's samples in `process`."""
    from bench.run import attach_cpu

    corpus = {
        "clock_started": 100.0,
        "clock_done": 104.0,
        "step_started": 101.0,
        "document_ends": {"a": 102.0, "b": 103.0},
    }
    sample = {"process": process, "corpus": corpus}
    attach_cpu(sample)
    return sample


def test_attach_cpu_splits_each_documents_cpu_into_the_step_process_and_its_parses():
    own = [(100.0, 0.5), (101.0, 1.0), (102.0, 1.1), (103.0, 1.4), (104.0, 1.4)]
    sample = _attached({"cpu_samples": TREE_SAMPLES, "own_cpu_samples": own})
    assert "own_cpu_samples" not in sample["process"]  # not written to the JSON
    corpus = sample["corpus"]
    assert corpus["document_step_cpu_s"] == pytest.approx({"a": 0.1, "b": 0.3})
    assert corpus["document_parse_cpu_s"] == pytest.approx({"a": 0.4, "b": 1.2})


def test_attach_cpu_turns_the_parents_samples_into_the_runs_and_each_documents_cpu():
    sample = _attached({"cpu_samples": TREE_SAMPLES})
    assert "cpu_samples" not in sample["process"]  # not written to the JSON
    assert sample["corpus"]["cpu_s"] == 3.0
    assert sample["corpus"]["document_cpu_s"] == {"a": 0.5, "b": 1.5}
    assert "document_step_cpu_s" not in sample["corpus"]  # no split without the root's own samples


def test_the_servers_cpu_per_document_is_the_runs_own_window_when_the_worker_read_it():
    """The parent's reading spans the worker's warm-up run and the counts after the run; the
    worker's own reading (corpus.servers_cpu_s) spans the run alone, and wins."""
    from bench.run import cpu_per_document

    run = {
        "corpus": {"document_cpu_s": {"a.txt": 0.05}, "documents": 2, "triples": 100, "cpu_s": 0.1},
        "servers_cpu_s": {"cassandra": 0.5, "minio": 0.1},  # the whole worker
    }
    windowed = {**run, "corpus": {**run["corpus"], "servers_cpu_s": {"cassandra": 0.3, "minio": 0.04}}}
    samples = {"raw": [{"files": [{"file": "a.txt", "cpu_s": 0.03}]}], "1worker": [run]}
    whole = cpu_per_document({**samples, "sequential": [run]}, {"a.txt": "a.txt"})
    own = cpu_per_document({**samples, "sequential": [windowed]}, {"a.txt": "a.txt"})
    assert whole["cassandra_median"] == pytest.approx(250.0) and whole["minio_median"] == pytest.approx(50.0)
    assert own["cassandra_median"] == pytest.approx(150.0) and own["minio_median"] == pytest.approx(20.0)
    assert own["cassandra_per_quad"] == pytest.approx(3.0)


def test_cpu_per_document_takes_the_sequential_run_and_counts_the_servers_apart():
    from bench.run import cpu_per_document

    def graph(document_cpu_s, cassandra, documents=3, triples=300):
        return {
            "corpus": {"document_cpu_s": document_cpu_s, "documents": documents, "triples": triples, "cpu_s": 0.6},
            "servers_cpu_s": {"cassandra": cassandra, "minio": None},  # MinIO restarted meanwhile: no figure
        }

    raw = {
        "files": [{"file": "a.txt", "cpu_s": 0.03}, {"file": "b.txt", "cpu_s": 0.04}, {"file": "c.txt", "cpu_s": 0.2}]
    }
    samples = {
        "raw": [raw],
        "sequential": [graph({"a.txt": 0.05, "b.txt": 0.07, "c.txt": 0.3}, 0.3)],
        "1worker": [graph({"a.txt": 0.0, "b.txt": 0.0, "c.txt": 0.6}, 0.6)],  # bunched ends: not used per document
    }
    out = cpu_per_document(samples, {"a.txt": "a.txt", "b.txt": "b.txt", "c.txt": "c.txt"})
    assert out["graph_median"] == pytest.approx(70.0) and out["bare_median"] == pytest.approx(40.0)
    assert out["graph_p95"] == pytest.approx(300.0) and out["bare_p95"] == pytest.approx(200.0)
    assert out["graph_over_bare_median"] == pytest.approx(30.0)
    assert out["graph_over_bare_p95"] == pytest.approx(100.0)
    assert out["cassandra_median"] == pytest.approx(100.0)  # 0.3 s over 3 documents
    assert out["cassandra_per_quad"] == pytest.approx(1.0)  # 0.3 s over 300 quads
    assert out["minio_median"] is None
    assert out["graph_mean"] == pytest.approx(200.0)  # the 1-worker run's 0.6 s over 3 documents
    assert out["graph_step_median"] is None  # no split in these samples
    assert out["graph_default_mean"] is None  # no default-workers run among these samples


def test_cpu_per_document_reports_the_default_run_whose_triples_are_written_together():
    """Stored side by side, documents share writes, which a run storing one at a time never shows:
    its mean per document is the run's CPU over its documents, against the bare loop's mean."""
    from bench.run import cpu_per_document

    def run(cpu_s):
        return {"corpus": {"document_cpu_s": {"a": 0.1, "b": 0.1}, "documents": 2, "triples": 20, "cpu_s": cpu_s}}

    samples = {
        "raw": [{"files": [{"file": "a", "cpu_s": 0.03}, {"file": "b", "cpu_s": 0.05}], "loop_cpu_s": 0.08}],
        "sequential": [run(0.2)],
        "1worker": [run(0.2)],
        "default": [run(0.14), run(0.12), run(0.16)],
    }
    out = cpu_per_document(samples, {"a": "a", "b": "b"})
    assert out["graph_default_mean"] == pytest.approx(70.0)  # the median run's 0.14 s over 2 documents
    assert out["bare_mean"] == pytest.approx(40.0)
    assert out["graph_default_over_bare_mean"] == pytest.approx(30.0)


def _split_run(step: dict, parse: dict) -> dict:
    """A sequential graph run's sample over documents a, b, c, its CPU split into step and parses."""
    total = {d: step[d] + parse[d] for d in step}
    corpus = {"document_cpu_s": total, "document_step_cpu_s": step, "document_parse_cpu_s": parse}
    return {"corpus": {**corpus, "documents": 3, "triples": 300, "cpu_s": 0.6}, "servers_cpu_s": {}}


def test_cpu_per_document_reports_the_step_process_and_its_parses_apart():
    from bench.run import cpu_per_document

    raw = {"files": [{"file": d, "cpu_s": 0.04} for d in ("a", "b", "c")]}
    samples = {
        "raw": [raw],
        "sequential": [
            _split_run({"a": 0.02, "b": 0.03, "c": 0.10}, {"a": 0.05, "b": 0.04, "c": 0.30}),
            _split_run({"a": 0.04, "b": 0.03, "c": 0.10}, {"a": 0.05, "b": 0.06, "c": 0.30}),
        ],
        "1worker": [],
    }
    out = cpu_per_document(samples, {d: d for d in ("a", "b", "c")})
    # each document's median over the rounds (a: 30 ms, b: 30, c: 100), then across documents
    assert out["graph_step_median"] == pytest.approx(30.0)
    assert out["graph_step_mean"] == pytest.approx(160.0 / 3)
    assert out["graph_parse_median"] == pytest.approx(50.0)
    assert out["graph_parse_mean"] == pytest.approx(400.0 / 3)


def test_cpu_per_document_measures_the_embedded_librarian_the_same_way():
    from bench.run import cpu_per_document

    raw = {"files": [{"file": d, "cpu_s": 0.04} for d in ("a", "b", "c")]}
    samples = {
        "raw": [raw],
        "sequential": [_split_run({"a": 0.03, "b": 0.03, "c": 0.10}, {"a": 0.05, "b": 0.05, "c": 0.30})],
        "sequential_embedded": [_split_run({"a": 0.01, "b": 0.02, "c": 0.04}, {"a": 0.04, "b": 0.05, "c": 0.30})],
        "1worker": [],
        # four stored at once: ends bunch up, so its intervals are not documents' (never used here)
        "embedded_1worker": [_split_run({"a": 0.0, "b": 0.0, "c": 0.2}, {"a": 0.0, "b": 0.0, "c": 0.2})],
    }
    out = cpu_per_document(samples, {d: d for d in ("a", "b", "c")})
    assert out["graph_median"] == pytest.approx(80.0)
    assert out["graph_embedded_median"] == pytest.approx(70.0)  # a 50, b 70, c 340 ms
    assert out["graph_embedded_over_bare_median"] == pytest.approx(30.0)
    assert out["graph_embedded_step_median"] == pytest.approx(20.0)
    assert out["graph_embedded_parse_median"] == pytest.approx(50.0)
    assert out["graph_embedded_step_mean"] == pytest.approx(70.0 / 3)


def test_cpu_per_document_has_no_embedded_figures_without_its_run():
    from bench.run import cpu_per_document

    raw = {"files": [{"file": "a", "cpu_s": 0.04}]}
    run = {"corpus": {"document_cpu_s": {"a": 0.05}, "documents": 1, "cpu_s": 0.05}, "servers_cpu_s": {}}
    out = cpu_per_document({"raw": [raw], "sequential": [run], "1worker": [run]}, {"a": "a"})
    assert out["graph_embedded_median"] is None and out["graph_embedded_over_bare_median"] is None


def test_servers_apart_pins_the_servers_threads_to_a_core_of_their_own_and_restores_them():
    """A stand-in server with several threads: inside, all its threads are on the last core and
    the caller (whose children inherit it) on the others; after, both have every core again."""
    import subprocess
    import sys

    from bench.cpu import servers_apart

    code = "import threading, time\nfor _ in range(3): threading.Thread(target=time.sleep, args=(60,)).start()\ntime.sleep(60)"
    server = subprocess.Popen([sys.executable, "-c", code])
    cores = set(os.sched_getaffinity(0))
    try:
        while len(os.listdir(f"/proc/{server.pid}/task")) < 4:
            time.sleep(0.01)
        threads = [int(t) for t in os.listdir(f"/proc/{server.pid}/task")]
        with servers_apart({"server": [server.pid]}) as apart:
            assert apart == (len(cores) > 1)
            if apart:
                assert {frozenset(os.sched_getaffinity(t)) for t in threads} == {frozenset({max(cores)})}
                assert os.sched_getaffinity(0) == cores - {max(cores)}
                child = subprocess.run(
                    [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                assert child.stdout.strip() == str(sorted(cores - {max(cores)}))
        assert os.sched_getaffinity(0) == cores
        assert all(os.sched_getaffinity(t) == cores for t in threads)
    finally:
        server.kill()
        server.wait()
