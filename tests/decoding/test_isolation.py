"""Each document decoded in a forked child: hangs, balloons and crashes stop one document only."""

import faulthandler
import os
import signal
import statistics
import time

import pytest

from tests import docgen
from ud_assets.decoding import detect, formats, isolation
from ud_assets.decoding.formats.pdf import SPLIT_MIN_BYTES
from ud_assets.decoding.isolation import (
    IsolatedPartitioner,
    child,
    children,
    client,
    isolation_available,
    isolation_enabled,
    run_isolated,
    server,
)
from ud_assets.decoding.limits import Limits
from ud_assets.decoding.model import ConfigError, DecodeError, DecoderBug, DecoderConfig, Partitioned
from ud_assets.decoding.partitioning import partition_bytes

CONFIG = DecoderConfig()
GOOD = (docgen.markdown(), detect.MARKDOWN)


@pytest.fixture(scope="module")
def warm():
    """One warm parent for the real-document tests: unstructured and spaCy loaded once."""
    with IsolatedPartitioner(Limits(timeout_s=120)) as partitioner:
        yield partitioner


def _no_children_left() -> bool:
    isolation.reap_children(block=True)
    pid = os.getpid()
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as handle:
            if handle.read().strip():
                return False
    return True


# -- injected misbehaviour (no warm-up needed) ---------------------------------------------------


def hangs_on_request(data, mime, config, filename, *, budget):
    if data == b"hang":
        time.sleep(600)
    return partition_bytes(data, mime, config, filename, budget=budget)


def balloons_on_request(data, mime, config, filename, *, budget):
    if data == b"balloon":
        block = bytearray(2 * 1024**3)  # 2 GB, every page touched
        block[::4096] = b"\x01" * len(block[::4096])
    elif data == b"creep":
        chunks = []
        while True:  # many small allocations: the cap stops them too
            chunks.append(b"\x01" * (1 << 20))
    return partition_bytes(data, mime, config, filename, budget=budget)


def crashes_on_request(data, mime, config, filename, *, budget):
    if data == b"segfault":
        faulthandler.disable()  # pytest's handler would print the child's stack: expected here
        os.kill(os.getpid(), signal.SIGSEGV)
    if data == b"exit":
        os._exit(3)
    if data == b"config":
        raise ConfigError("strategy hi_res needs local layout-model weights")
    if data == b"bug":
        raise KeyError("missing")
    return partition_bytes(data, mime, config, filename, budget=budget)


def test_a_hanging_document_is_stopped_and_the_next_one_decodes(warm):
    # `warm` has loaded unstructured into this process: children of any partitioner start warm.
    with IsolatedPartitioner(Limits(timeout_s=1.5), target=hangs_on_request, warm=False) as partitioner:
        started = time.perf_counter()
        with pytest.raises(DecodeError) as caught:
            partitioner.partition(b"hang", detect.PLAIN, CONFIG)
        elapsed = time.perf_counter() - started
        assert str(caught.value) == "timed out after 1.5 s (UD_DECODE_TIMEOUT_S)"
        assert 1.5 <= elapsed < 1.5 + 2.0
        assert caught.value.stats["wall_s"] == pytest.approx(elapsed, abs=0.2)
        parted, stats = partitioner.partition(*GOOD, CONFIG)
    assert parted == partition_bytes(*GOOD, CONFIG)
    assert stats["isolated"] is True
    assert _no_children_left()


@pytest.mark.parametrize("request_bytes", [b"balloon", b"creep"])
def test_a_ballooning_document_is_stopped_and_reported(request_bytes):
    with IsolatedPartitioner(
        Limits(timeout_s=60, memory_mb=512), target=balloons_on_request, warm=False
    ) as partitioner:
        with pytest.raises(DecodeError) as caught:
            partitioner.partition(request_bytes, detect.PLAIN, CONFIG)
        assert str(caught.value) == "exceeded the memory limit of 512 MB (UD_DECODE_MEMORY_MB)"
        assert caught.value.stats["wall_s"] < 30
        partitioner.partition(b"plain text after the balloon", detect.PLAIN, CONFIG)
    assert _no_children_left()


@pytest.mark.parametrize(
    "request_bytes,expected",
    [
        (b"segfault", "decoder crashed: killed by signal 11 (SIGSEGV)"),
        (b"exit", "decoder crashed: exited with status 3 without a result"),
        (b"bug", "text/plain could not be parsed: KeyError: 'missing'"),
    ],
)
def test_a_crashing_child_is_reported(request_bytes, expected):
    with IsolatedPartitioner(Limits(timeout_s=60), target=crashes_on_request, warm=False) as partitioner:
        with pytest.raises(DecodeError) as caught:
            partitioner.partition(request_bytes, detect.PLAIN, CONFIG)
        assert str(caught.value) == expected
        parted, _ = partitioner.partition(b"still alive", detect.PLAIN, CONFIG)
        assert parted.elements[0].text == "still alive"


def test_errors_come_back_as_the_same_exception():
    with IsolatedPartitioner(Limits(timeout_s=60), target=crashes_on_request, warm=False) as partitioner:
        with pytest.raises(ConfigError, match=r"^strategy hi_res needs local layout-model weights$"):
            partitioner.partition(b"config", detect.PLAIN, CONFIG)
        # check_input runs in the child: its message is the one it gives in-process.
        with pytest.raises(DecodeError, match=r"^declared as PDF but the bytes are application/octet-stream$"):
            partitioner.partition(docgen.random_bytes(), detect.PDF, CONFIG)
        with pytest.raises(DecodeError, match=r"^empty document"):
            partitioner.partition(b"", detect.PLAIN, CONFIG)


def test_isolation_can_be_disabled(monkeypatch):
    monkeypatch.setenv("UD_DECODE_ISOLATION", "0")
    assert not isolation_enabled()
    partitioner = IsolatedPartitioner(Limits(timeout_s=60), target=crashes_on_request)
    assert not partitioner.isolate
    parted, stats = partitioner.partition(b"in process", detect.PLAIN, CONFIG)
    assert parted.elements[0].text == "in process" and stats["isolated"] is False
    with pytest.raises(DecodeError, match=r"^declared as PDF but the bytes are"):  # checks still apply
        partitioner.partition(docgen.random_bytes(), detect.PDF, CONFIG)
    monkeypatch.setenv("UD_DECODE_ISOLATION", "1")
    assert isolation_enabled() and IsolatedPartitioner(target=crashes_on_request, warm=False).isolate


def test_children_survive_a_parent_that_used_torch_openmp():
    """GNU OpenMP's pool is dead in a forked child once the parent used it: the child must not hang."""
    import torch  # installed with unstructured[all-docs]

    matrix = torch.rand(300, 300)
    (matrix @ matrix).sum().item()  # the parent's OpenMP pool is now started

    def torch_target(data, mime, config, filename, *, budget):
        import torch

        square = torch.rand(300, 300)
        return Partitioned([], "fast", [str(float((square @ square).sum()) > 0)])

    with IsolatedPartitioner(Limits(timeout_s=30), target=torch_target, warm=False) as partitioner:
        assert partitioner.partition(b"x", detect.PLAIN, CONFIG)[0].notes == ["True"]


# -- real documents through the warm parent -------------------------------------------------------


def _twenty_documents() -> list[tuple[str, bytes, str]]:
    kinds = [
        ("markdown", docgen.markdown(), detect.MARKDOWN),
        ("csv", b"name,city\nAda,London\nGrace,New York\n", detect.CSV),
        ("pdf", docgen.pdf_text(2), detect.PDF),
        ("xlsx", docgen.xlsx(2), detect.XLSX),
        ("docx", docgen.docx_with_headings_table_picture(), detect.DOCX),
        ("html", docgen.html_cp1252(), detect.HTML),
        ("tsv", docgen.tsv(), detect.TSV),
        ("pdf3", docgen.pdf_text(3), detect.PDF),
        ("text", docgen.text_utf16(), detect.PLAIN),
        ("pptx", docgen.pptx_with_picture(), detect.PPTX),
    ]
    return kinds * 2


def test_twenty_documents_in_a_row_match_in_process_decoding(warm):
    overheads, spawned = [], []
    for name, data, mime in _twenty_documents():
        expected = partition_bytes(data, mime, CONFIG)
        parted, stats = warm.partition(data, mime, CONFIG)
        assert parted == expected, name
        assert stats["isolated"] and stats["child_peak_rss_mb"] > 0
        # A long parse also reports what it cost in private memory (too dear to read for short ones).
        assert stats["child_private_mb"] > 0 if stats["work_s"] >= server.PRIVATE_MEMORY_AFTER_S else True
        assert stats["wall_s"] >= stats["work_s"] > 0
        overheads.append(stats["fork_overhead_ms"])
        spawned.append(stats["spawn_ms"] is not None)
    # Pickling and the pipe: milliseconds on a busy 2-core machine (a fork was tens of them).
    assert statistics.median(overheads) < 250, overheads
    # One child decoded them one after another: forked once, not once per document.
    assert spawned.count(True) <= 1, spawned


def test_parser_errors_and_limits_in_a_warm_batch(warm):
    truncated = docgen.pdf_truncated()
    with pytest.raises(DecodeError) as in_process:
        partition_bytes(truncated, detect.PDF, CONFIG)
    with pytest.raises(DecodeError, match="could not be parsed") as isolated:
        warm.partition(truncated, detect.PDF, CONFIG)
    assert str(isolated.value) == str(in_process.value)  # the child's error reaches the parent unchanged
    with pytest.raises(DecodeError, match=r"^PDF has 2 pages, above the limit of 1"):
        IsolatedPartitioner(Limits(max_pages=1), warm=False).partition(docgen.pdf_text(2), detect.PDF, CONFIG)
    assert warm.partition(*GOOD, CONFIG)[0] == partition_bytes(*GOOD, CONFIG)


def test_deeply_nested_html_never_takes_the_parent_down(warm):
    depth = 100_000
    html = b"<html><body>" + b"<div>" * depth + b"deep text" + b"</div>" * depth + b"</body></html>"
    with pytest.raises(DecodeError, match="nested more than") as raised:
        warm.partition(html, detect.HTML, CONFIG)
    assert len(str(raised.value)) < 300 and "\n" not in str(raised.value)
    assert warm.partition(*GOOD, CONFIG)[0] == partition_bytes(*GOOD, CONFIG)
    assert _no_children_left()


def test_a_long_pdf_is_parsed_as_page_ranges_side_by_side_giving_the_same_elements(warm):
    data = docgen.long_pdf()
    assert len(data) >= SPLIT_MIN_BYTES
    whole = partition_bytes(data, detect.PDF, CONFIG)
    # Page 19 opens the second range without a heading: its text's parent is on page 18.
    assert any(e.page_number == 19 and e.parent_id for e in whole.elements)
    with (
        IsolatedPartitioner(Limits(timeout_s=120, workers=2)) as two,
        IsolatedPartitioner(Limits(timeout_s=120, workers=1)) as one,
    ):
        split, split_stats = two.partition(data, detect.PDF, CONFIG)
        single, single_stats = one.partition(data, detect.PDF, CONFIG)
    assert split_stats["parts"] == 2 and "parts" not in single_stats
    assert split == whole == single
    assert split_stats["parts_work_s"] > split_stats["work_s"] > 0
    assert _no_children_left()


def test_a_pdf_too_short_to_split_is_planned_and_parsed_in_a_reusable_child():
    """A PDF over SPLIT_MIN_BYTES is first planned in a child: for a few pages the plan and the
    parse go to the reusable child, as any small document does, not to two fresh forks."""
    data = docgen.long_pdf(20)
    assert len(data) >= SPLIT_MIN_BYTES
    whole = partition_bytes(data, detect.PDF, CONFIG)
    spawned = []
    with IsolatedPartitioner(Limits(timeout_s=120, workers=2)) as two:
        for _ in range(3):
            parted, stats = two.partition(data, detect.PDF, CONFIG)
            assert parted == whole and "parts" not in stats
            spawned.append(stats["spawn_ms"] is not None)
    assert spawned.count(True) <= 1, spawned
    assert _no_children_left()


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                if int(handle.read().rpartition(")")[2].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_parse_children_run_below_the_parents_cpu_priority():
    """While parses fill the cores, the step storing finished documents, Dagster and the servers
    still get the CPU they ask for: every child, fresh or reusable, runs Limits.niceness below its
    parent (0 keeps the parent's priority)."""
    parent = os.getpriority(os.PRIO_PROCESS, 0)
    lowered = min(19, parent + Limits().niceness)
    assert Limits().niceness == 10 and lowered > parent
    fresh, _ = run_isolated(lambda _arg: os.getpriority(os.PRIO_PROCESS, 0), Limits(timeout_s=60), "-")
    assert fresh == lowered
    same, _ = run_isolated(lambda _arg: os.getpriority(os.PRIO_PROCESS, 0), Limits(timeout_s=60, niceness=0), "-")
    assert same == parent
    before = set(_children_of(os.getpid()))
    with IsolatedPartitioner(Limits(timeout_s=60, workers=1)) as one:
        one.partition(docgen.markdown(), detect.MARKDOWN, CONFIG)
        reusable = [pid for pid in _children_of(os.getpid()) if pid not in before]  # idle, waiting for the next
        assert reusable and {os.getpriority(os.PRIO_PROCESS, pid) for pid in reusable} == {lowered}
    assert os.getpriority(os.PRIO_PROCESS, 0) == parent  # the parent's own priority is untouched


def test_an_unreadable_pdf_big_enough_to_split_fails_as_the_whole_parse_does(warm):
    garbage = b"%PDF-1.7\n" + bytes(range(256)) * (2 * SPLIT_MIN_BYTES // 256)
    with pytest.raises(DecodeError) as in_process:
        partition_bytes(garbage, detect.PDF, CONFIG)
    with pytest.raises(DecodeError) as isolated:
        warm.partition(garbage, detect.PDF, CONFIG)
    assert str(isolated.value) == str(in_process.value)
    assert warm.partition(*GOOD, CONFIG)[0] == partition_bytes(*GOOD, CONFIG)


# Every partitioner module a batch's warm-up imports (the families' together: formats.warm_modules).
WARM_IMPORTS = (
    *("md", "html", "text", "csv", "tsv", "pdf", "docx", "pptx", "xlsx"),
    *("odt", "epub", "rtf", "email", "xml", "json", "rst", "image"),
)


def test_a_process_warms_only_the_formats_it_decodes():
    """One document pays for its own parser's import, not for every format's (python-docx...)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import sys
        from tests import docgen
        from ud_assets.decoding import detect, isolation, warmup
        from ud_assets.decoding.model import DecoderConfig
        parted, _ = isolation.default_partitioner().partition(docgen.pdf_text(2), detect.PDF, DecoderConfig())
        assert parted.elements
        loaded = lambda: sorted(m for m in ("docx", "pptx", "openpyxl") if m in sys.modules)
        print(sorted(warmup._warmed), loaded())
        isolation.warm_up()
        print(sorted(warmup._warmed), loaded())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    first, after_all = out.stdout.strip().splitlines()[-2:]
    assert first == "['html', 'md', 'pdf', 'text'] []"
    assert after_all == f"{sorted(formats.warm_modules())} ['docx', 'openpyxl', 'pptx']"
    assert set(formats.warm_modules()) == set(WARM_IMPORTS)


def test_isolation_is_available_here():
    assert isolation_available()  # Linux with fork and /proc: what the decoder runs on


def _held_lock_target(lock):
    def target(data, mime, config, filename, *, budget):
        with lock:  # held by another thread of the parent when the child was forked: never free here
            return Partitioned(elements=[], strategy_used="fast")

    return target


def test_a_child_blocked_on_a_lock_inherited_at_fork_is_our_fault_not_the_documents(monkeypatch, capfd, caplog):
    import threading

    from ud_assets.processing.runner import document_failure

    monkeypatch.setattr(children, "STALL_S", 1.0)
    lock, release = threading.Lock(), threading.Event()

    def hold():
        with lock:
            release.wait(60)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        started = time.perf_counter()
        with pytest.raises(isolation.ChildStalled, match="used no CPU for 1 s"):
            IsolatedPartitioner(Limits(timeout_s=60), warm=False, target=_held_lock_target(lock)).partition(
                *GOOD, CONFIG
            )
        elapsed = time.perf_counter() - started
    finally:
        release.set()
        holder.join()
    assert 2.0 <= elapsed < 20, elapsed  # two stalls of ~1 s each (tried twice), far from the 60 s timeout
    # Not a document failure: the runner lets it fail the run with its traceback.
    assert document_failure("notes.md", isolation.ChildStalled("stalled")) is None
    assert _no_children_left()
    # Each stall is logged, and each child wrote its threads' stacks before it was killed: the
    # waiting line is the target's `with lock`.
    assert len([r for r in caplog.records if "used no CPU" in r.getMessage()]) == 2
    err = capfd.readouterr().err
    assert err.count("Current thread") == 2, err[-2000:]
    assert "in target" in err and "test_isolation.py" in err


def test_a_stall_is_retried_in_a_fresh_child(monkeypatch):
    import threading

    monkeypatch.setattr(children, "STALL_S", 1.0)
    lock, attempts = threading.Lock(), []
    real_once = client._run_in_child_once

    def once(target, limits, args):
        attempts.append(lock.locked())
        try:
            return real_once(target, limits, args)
        finally:
            if lock.locked():
                lock.release()  # the thread that held it at the first fork is done by the second

    monkeypatch.setattr(client, "_run_in_child_once", once)
    lock.acquire()
    parted, _stats = IsolatedPartitioner(Limits(timeout_s=60), warm=False, target=_held_lock_target(lock)).partition(
        *GOOD, CONFIG
    )
    assert attempts == [True, False] and parted.elements == []


def test_a_child_waiting_for_a_program_of_its_own_is_not_a_stall(monkeypatch):
    import subprocess

    monkeypatch.setattr(children, "STALL_S", 1.0)

    def target(data, mime, config, filename, *, budget):
        subprocess.run(["sleep", "3"], check=True)  # idle itself while its program works (LibreOffice...)
        return Partitioned(elements=[], strategy_used="fast")

    parted, stats = IsolatedPartitioner(Limits(timeout_s=60), warm=False, target=target).partition(*GOOD, CONFIG)
    assert parted.elements == [] and stats["wall_s"] >= 3


def test_a_fork_while_another_thread_is_inside_libmagic_does_not_hang_the_child(monkeypatch):
    """The parent detects one document on its main thread while a parse-ahead thread forks the next."""
    import threading

    import magic

    from ud_assets.decoding.detect import sniff

    monkeypatch.setattr(children, "STALL_S", 2.0)
    sniff(b"%PDF-1.4")  # python-magic's shared instance exists, as in a warm worker
    shared = magic._instances[True]
    holding, release = threading.Event(), threading.Event()

    def inside_libmagic():
        with shared.lock:  # what Magic.from_buffer holds while libmagic works
            holding.set()
            release.wait(60)

    thread = threading.Thread(target=inside_libmagic, daemon=True)
    thread.start()
    holding.wait(10)
    try:
        parted, _stats = IsolatedPartitioner(Limits(timeout_s=60), warm=False).partition(*GOOD, CONFIG)
    finally:
        release.set()
        thread.join()
    assert parted.elements and parted.elements == partition_bytes(*GOOD, CONFIG).elements


PARENT_THAT_DIES = """
import os, signal, sys
sys.path.insert(0, {repo!r})
from ud_assets.decoding import detect, isolation
from ud_assets.decoding.isolation import pool
from ud_assets.decoding.limits import Limits
from ud_assets.decoding.model import DecoderConfig
from tests.decoding.test_isolation import crashes_on_request
partitioner = isolation.IsolatedPartitioner(Limits(timeout_s=120), target=crashes_on_request, warm=False)
partitioner.partition(b"a first document", detect.PLAIN, DecoderConfig(strategy="fast"))
(worker,) = [w for idle in pool._idle_workers.values() for w in idle]
print(worker.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_an_idle_reusable_child_exits_when_its_parent_is_killed():
    """No orphan decoders: a reusable child waits for its next document on a pipe, and the
    parent's death (SIGKILL: no clean-up code runs) closes it."""
    import subprocess
    import sys
    from pathlib import Path

    repo = str(Path(__file__).resolve().parents[2])
    process = subprocess.run(
        [sys.executable, "-c", PARENT_THAT_DIES.format(repo=repo)], capture_output=True, text=True, timeout=300
    )
    assert process.returncode == -signal.SIGKILL, process.stderr[-2000:]
    pid = int(process.stdout.strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        state = (
            Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}").exists() else "X"
        )
        if state == "Z":
            break
        time.sleep(0.1)
    else:
        assert not Path(f"/proc/{pid}").exists(), f"decoding child {pid} outlived its killed parent"


PARENT_OF_MANY_THAT_DIES = """
import os, signal, sys, threading
sys.path.insert(0, {repo!r})
from ud_assets.decoding.isolation import pool
from ud_assets.decoding.limits import Limits
# Reusable children started from several threads at once, as parse-ahead's workers start them:
# none may hold another's request pipe, or that one outlives the parent.
start, workers = threading.Barrier(6), []
def make():
    start.wait()
    workers.append(pool.Worker(Limits(timeout_s=120)))
threads = [threading.Thread(target=make) for _ in range(6)]
for t in threads: t.start()
for t in threads: t.join()
print(" ".join(str(w.pid) for w in workers), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_reusable_children_started_from_many_threads_all_exit_when_their_parent_is_killed(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    repo = str(Path(__file__).resolve().parents[2])
    for attempt in range(3):  # the race is between one thread's pipes and another's fork: try it a few times
        out = tmp_path / f"pids-{attempt}"
        with out.open("w") as stdout:  # a file: an orphan holding a pipe would hang the wait
            process = subprocess.run(
                [sys.executable, "-c", PARENT_OF_MANY_THAT_DIES.format(repo=repo)],
                stdout=stdout,
                stderr=subprocess.DEVNULL,
                timeout=300,
            )
        assert process.returncode == -signal.SIGKILL
        pids = [int(p) for p in out.read_text().split()]
        assert len(pids) == 6
        deadline = time.monotonic() + 10
        alive = pids
        while alive and time.monotonic() < deadline:
            alive = [p for p in pids if _running(p)]
            time.sleep(0.1)
        for pid in alive:
            os.kill(pid, signal.SIGKILL)  # not left behind for the next test
        assert not alive, f"decoding children {alive} outlived their killed parent"


def _running(pid: int) -> bool:
    from pathlib import Path

    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_document_after_a_failure_gets_a_fresh_child():
    """A child is not trusted after a document failed in it (a MemoryError may leave it broken)."""
    isolation.reap_children(block=True)  # no idle child of an earlier test
    with IsolatedPartitioner(Limits(timeout_s=60), target=crashes_on_request, warm=False) as partitioner:
        _parted, first = partitioner.partition(b"one", detect.PLAIN, CONFIG)
        _parted, second = partitioner.partition(b"two", detect.PLAIN, CONFIG)
        assert second["spawn_ms"] is None  # reused
        with pytest.raises(DecodeError):
            partitioner.partition(b"bug", detect.PLAIN, CONFIG)  # replied with an error: retired
        _parted, after = partitioner.partition(b"three", detect.PLAIN, CONFIG)
        assert after["spawn_ms"] is not None and first["spawn_ms"] is not None
    assert _no_children_left()


def _broken_enter(*_args, **_kwargs):
    raise RuntimeError("a bug in setting up the child")


@pytest.mark.parametrize("reusable", [True, False])
def test_our_own_failure_in_the_child_fails_the_run_not_the_document(monkeypatch, reusable):
    """A failure of ud's code around the parser (limits, the request, the reply) is a bug of ours:
    the run fails with the child's traceback instead of recording it against the document."""
    from ud_assets.processing.runner import document_failure

    def fresh_child_target(data, mime, config, filename, *, budget):  # a closure: forked per document
        return partition_bytes(data, mime, config, filename, budget=budget)

    isolation.reap_children(block=True)  # no idle child of an earlier test: this one is forked now
    monkeypatch.setattr(child, "enter", _broken_enter)
    target = crashes_on_request if reusable else fresh_child_target
    with pytest.raises(DecoderBug, match="a bug in setting up the child") as caught:
        IsolatedPartitioner(Limits(timeout_s=60), target=target, warm=False).partition(b"fine", detect.PLAIN, CONFIG)
    assert document_failure("notes.txt", caught.value) is None
    monkeypatch.undo()
    assert _no_children_left()
