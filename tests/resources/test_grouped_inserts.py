"""Grouped triple inserts (resources/grouped_inserts.py) over both real triple stores: concurrent
callers share a write, each returns only once its own quads are stored, nothing waits for company
that cannot come, and a store's refusal fails only the caller whose quads it refuses."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from resources.grouped_inserts import GroupedInserts
from resources.model import DEFAULT_COLLECTION, GRAPH_SOURCE, LibrarianError, Quad, StorageUnavailable, Term

EX = "https://example.org/"
LONG = 60.0  # a linger no test waits out: what ends a wait is what the test says


def document_quads(n: int, count: int = 5) -> list[Quad]:
    """What one document's insert carries: its own subject, predicates every document shares."""
    return [Quad(f"{EX}doc{n}", f"{EX}p{i}", Term(f"value {n}.{i}"), GRAPH_SOURCE) for i in range(count)]


class Counted:
    """The real store, with each insert it is asked for recorded (and refused where told)."""

    def __init__(self, store, refuse_subject: str = "", unavailable: bool = False):
        self.store, self.refuse_subject, self.unavailable = store, refuse_subject, unavailable
        self.inserts: list[list[Quad]] = []
        self.lock = threading.Lock()

    def insert(self, quads, collection=DEFAULT_COLLECTION):
        quads = list(quads)
        with self.lock:
            self.inserts.append(quads)
        if self.unavailable:
            raise StorageUnavailable("triple store unavailable: connection refused")
        if self.refuse_subject and any(q.s == self.refuse_subject for q in quads):
            raise LibrarianError(f"refused a quad of {self.refuse_subject}")
        return self.store.insert(quads, collection)

    def __getattr__(self, name):
        return getattr(self.store, name)


def waiting(grouped: GroupedInserts, n: int) -> None:
    """Until n inserts wait for company (bounded: a test never hangs on it)."""
    deadline = time.monotonic() + 30
    while len(grouped._pending) < n:
        assert time.monotonic() < deadline, f"{len(grouped._pending)} of {n} inserts arrived"
        time.sleep(0.005)


def stored(triples, n: int) -> list[Quad]:
    return triples.query(s=f"{EX}doc{n}", collection=DEFAULT_COLLECTION)


def test_concurrent_inserts_share_one_write_and_each_returns_once_its_quads_are_stored(triples):
    counted = Counted(triples)
    grouped = GroupedInserts(counted, linger_s=LONG)
    seen_on_return: dict[int, int] = {}

    def insert(n: int) -> int:
        written = grouped.insert(document_quads(n))
        seen_on_return[n] = len(stored(triples, n))  # read right after the caller's return
        return written

    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(insert, n) for n in range(8)]
        waiting(grouped, 8)
        assert counted.inserts == []  # nothing written while they wait for company
        grouped.drain()
        assert [f.result(timeout=30) for f in futures] == [5] * 8
    assert len(counted.inserts) == 1 and len(counted.inserts[0]) == 40
    assert seen_on_return == {n: 5 for n in range(8)}
    assert (grouped.inserts, grouped.writes) == (8, 1)
    # Reads and deletes are the store's own.
    assert sorted(q.o.value for q in grouped.query(s=f"{EX}doc3")) == [f"value 3.{i}" for i in range(5)]
    assert grouped.delete_subjects([f"{EX}doc3"]) == 5 and stored(triples, 3) == []


def test_after_drain_an_insert_is_written_at_once(triples):
    counted = Counted(triples)
    grouped = GroupedInserts(counted, linger_s=LONG)
    grouped.drain()
    for n in range(3):
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(grouped.insert, document_quads(n)).result(timeout=30) == 5
        assert len(stored(triples, n)) == 5
    assert len(counted.inserts) == 3


def test_when_no_document_can_join_the_waiting_inserts_are_written_after_settling(triples):
    """The batch is at its width (set_open(False)): no new document can come, so nothing waits the
    linger; a fourth document in storage that has not reached its insert is waited for settle_s."""
    counted = Counted(triples)
    grouped = GroupedInserts(counted, linger_s=LONG, settle_s=0.05)
    for _ in range(4):
        grouped.document_started()
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(grouped.insert, document_quads(n)) for n in range(3)]
        waiting(grouped, 3)
        grouped.set_open(False)
        assert [f.result(timeout=30) for f in futures] == [5, 5, 5]
    assert len(counted.inserts) == 1


def test_once_every_document_in_storage_waits_the_group_is_written_without_settling(triples):
    """Closed, and the last document in storage arrives: nobody is left to join, so the group is
    written then, however long settle_s is."""
    counted = Counted(triples)
    grouped = GroupedInserts(counted, linger_s=LONG, settle_s=LONG)
    for _ in range(3):
        grouped.document_started()
    grouped.set_open(False)
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(grouped.for_document(f"d{n}").insert, document_quads(n)) for n in range(2)]
        waiting(grouped, 2)
        assert counted.inserts == []  # the third document may still come
        futures.append(pool.submit(grouped.for_document("d2").insert, document_quads(2)))
        assert [f.result(timeout=30) for f in futures] == [5, 5, 5]
    assert [len(q) for q in counted.inserts] == [15]


def test_a_documents_two_waiting_inserts_count_once(triples):
    """A document whose chunks' and provenance's inserts both wait is one document waiting: the
    group still waits for the third document in storage (counted by inserts it would not)."""
    counted = Counted(triples)
    grouped = GroupedInserts(counted, linger_s=LONG, settle_s=LONG)
    for _ in range(3):
        grouped.document_started()
    grouped.set_open(False)
    first = grouped.for_document("d0")
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(first.insert, document_quads(0)), pool.submit(first.insert, document_quads(10))]
        futures.append(pool.submit(grouped.for_document("d1").insert, document_quads(1)))
        waiting(grouped, 3)
        time.sleep(0.1)
        assert counted.inserts == []  # three inserts, two documents: d2 may still come
        futures.append(pool.submit(grouped.for_document("d2").insert, document_quads(2)))
        assert [f.result(timeout=30) for f in futures] == [5] * 4
    assert [len(q) for q in counted.inserts] == [20]
    # Reads go to the store, as the group's own do.
    assert len(first.query(s=f"{EX}doc10")) == 5


def test_a_document_that_ends_without_inserting_releases_the_others(triples):
    """A document in storage that ends without an insert (skipped, failed) is waited for no longer."""
    counted = Counted(triples)
    grouped = GroupedInserts(counted, linger_s=LONG, settle_s=LONG)
    for _ in range(3):
        grouped.document_started()
    grouped.drain()
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(grouped.for_document(f"d{n}").insert, document_quads(n)) for n in range(2)]
        waiting(grouped, 2)
        assert counted.inserts == []
        grouped.document_ended()
        assert [f.result(timeout=30) for f in futures] == [5, 5]
    assert [len(q) for q in counted.inserts] == [10]


def test_a_batchs_last_documents_are_grouped_after_drain(triples):
    """Drain says no document will start, not that the waiting inserts are due: the documents
    already in storage still write together. (A batch whose parses all ended before its first
    insert used to write every insert alone.)"""
    counted = Counted(triples)
    grouped = GroupedInserts(counted, linger_s=LONG, settle_s=LONG)
    for _ in range(4):
        grouped.document_started()
    grouped.drain()
    grouped.set_open(True)  # the batch reopens after each document ends: drain stays closed
    with ThreadPoolExecutor(4) as pool:
        futures = []
        for n in range(4):
            futures.append(pool.submit(grouped.for_document(f"d{n}").insert, document_quads(n)))
            if n < 3:
                waiting(grouped, n + 1)
                assert counted.inserts == []
        assert [f.result(timeout=30) for f in futures] == [5] * 4
    assert [len(q) for q in counted.inserts] == [20]
    assert (grouped.inserts, grouped.writes) == (4, 1)


def test_a_lone_insert_is_written_when_its_linger_ends(triples):
    counted = Counted(triples)
    grouped = GroupedInserts(counted, linger_s=0.2)
    started = time.monotonic()
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(grouped.insert, document_quads(0)).result(timeout=30) == 5
    assert time.monotonic() - started >= 0.2
    assert len(stored(triples, 0)) == 5


def test_a_group_is_written_once_it_holds_max_quads(triples):
    counted = Counted(triples)
    grouped = GroupedInserts(counted, linger_s=LONG, max_quads=10)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(grouped.insert, document_quads(0))
        waiting(grouped, 1)
        second = pool.submit(grouped.insert, document_quads(1))  # 10 quads together: due at once
        assert first.result(timeout=30) == second.result(timeout=30) == 5
    assert [len(q) for q in counted.inserts] == [10]


def test_quads_the_store_refuses_fail_only_their_caller(triples):
    counted = Counted(triples, refuse_subject=f"{EX}doc1")
    grouped = GroupedInserts(counted, linger_s=LONG)
    with ThreadPoolExecutor(3) as pool:
        futures = {n: pool.submit(grouped.insert, document_quads(n)) for n in range(3)}
        waiting(grouped, 3)
        grouped.drain()
        with pytest.raises(LibrarianError, match="doc1"):
            futures[1].result(timeout=30)
        assert futures[0].result(timeout=30) == futures[2].result(timeout=30) == 5
    assert len(stored(triples, 0)) == len(stored(triples, 2)) == 5
    assert stored(triples, 1) == []
    assert len(counted.inserts) == 4  # the group, then each caller's own


def test_an_unavailable_store_fails_every_caller_of_the_group(triples):
    counted = Counted(triples, unavailable=True)
    grouped = GroupedInserts(counted, linger_s=LONG)
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(grouped.insert, document_quads(n)) for n in range(3)]
        waiting(grouped, 3)
        grouped.drain()
        for future in futures:
            with pytest.raises(StorageUnavailable):
                future.result(timeout=30)
    assert len(counted.inserts) == 1  # the server, not a document: not tried caller by caller


def test_inserts_into_different_collections_are_written_apart(triples):
    counted = Counted(triples)
    grouped = GroupedInserts(counted, linger_s=LONG)
    with ThreadPoolExecutor(2) as pool:
        a = pool.submit(grouped.insert, document_quads(0), DEFAULT_COLLECTION)
        b = pool.submit(grouped.insert, document_quads(1), "other")
        waiting(grouped, 2)
        grouped.drain()
        assert a.result(timeout=30) == b.result(timeout=30) == 5
    assert len(counted.inserts) == 2
    assert len(triples.query(s=f"{EX}doc1", collection="other")) == 5
    assert stored(triples, 1) == []
