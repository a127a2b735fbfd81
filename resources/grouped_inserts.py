"""Several documents' triple inserts written as one: a group commit for a batch's store workers.

Why: the quads of every document share partitions (on Cassandra the collection's and each
predicate's; on SQLite the same index pages), so a write that carries the triples of many
documents costs the store far less per document than a write each. Measured on Cassandra: a real
run's inserts replayed sixteen to a write took a third to a half of the server's CPU of one to a
write. Inserts rarely meet on their own, though: a batch's documents reach their commit one after
another, as their parses finish. So an insert waits, up to `linger_s`, for others to join it.

It never waits for what cannot come. The batch says which documents are in storage
(`document_started`, `document_ended`), when it cannot start another before one of those ends
(`set_open(False)`), and when it will start no more at all (`drain`). Once it cannot start
another, the waiting inserts are written as soon as every document in storage has an insert
waiting (nobody is left to join: each document's callers insert through `for_document`, so a
document whose chunks and provenance both wait counts once), or none has joined for `settle_s`.
A batch's last documents are grouped as its others are: `drain` closes the group for good, it
does not write each insert alone (that left a batch whose parses ended before its first insert
with no insert grouped at all).

Each caller still returns only once its own quads are stored, or raises: the group changes what a
write carries, never what a caller may assume when it returns ("materialized" still means stored).
A group write that fails for a reason other than an unavailable server is tried again caller by
caller, so a document whose quads the store refuses fails alone.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from resources.model import DEFAULT_COLLECTION, GRAPH_SOURCE, Librarian, Quad, StorageUnavailable, Term, TripleStore

L = TypeVar("L", bound=Librarian)


@dataclass(eq=False)
class _Insert:
    """One caller's quads, waiting to be written with others."""

    quads: list[Quad]
    collection: str
    since: float  # time.monotonic() when it arrived
    document: str | None = None  # whose insert (for_document), None when the caller did not say
    taken: bool = False  # a caller is writing its group
    done: bool = False  # written, or failed with error
    error: BaseException | None = None


class _StoreReads:
    """Every TripleStore call but insert, the store's own, unchanged."""

    store: TripleStore

    def query(
        self,
        s: str | None = None,
        p: str | None = None,
        o: Term | None = None,
        g: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        limit: int | None = None,
    ) -> list[Quad]:
        return self.store.query(s, p, o, g, collection, limit)

    def delete_subjects(
        self, subjects: Iterable[str], g: str = GRAPH_SOURCE, collection: str = DEFAULT_COLLECTION
    ) -> int:
        return self.store.delete_subjects(subjects, g, collection)

    def count(self, collection: str = DEFAULT_COLLECTION, g: str | None = None) -> int:
        return self.store.count(collection, g)

    def query_subjects(
        self, subjects: Iterable[str], g: str = GRAPH_SOURCE, collection: str = DEFAULT_COLLECTION
    ) -> list[Quad]:
        return self.store.query_subjects(subjects, g, collection)

    def missing_object_rows(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> list[Quad]:
        return self.store.missing_object_rows(quads, collection)

    def write_object_rows(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> int:
        return self.store.write_object_rows(quads, collection)


class GroupedInserts(_StoreReads):
    """A TripleStore whose inserts from concurrent callers share writes; every other call is the
    store's own, unchanged (reads see every insert that has returned).

    linger_s: the longest an insert waits for company; settle_s: how long a closed group waits for
    a last member; max_quads: a group is written once it holds this many quads (bounded memory,
    and a large document's own insert is written at once)."""

    def __init__(self, store: TripleStore, linger_s: float = 1.0, settle_s: float = 0.02, max_quads: int = 2_000):
        self.store = store
        self.linger_s = linger_s
        self.settle_s = settle_s
        self.max_quads = max_quads
        self._cond = threading.Condition()
        self._pending: list[_Insert] = []
        self._pending_quads = 0
        self._last_arrival = 0.0
        self._open = True
        self._draining = False
        self._storing = 0  # documents in storage, as the batch says (0: it does not say)
        self._unwritten: dict[str, int] = {}  # by document: its callers' inserts not written yet
        self.inserts = 0  # inserts written, and the writes they took (what the run logs)
        self.writes = 0

    def set_open(self, open: bool) -> None:
        """Whether the batch may still start another document, whose insert could join those waiting."""
        with self._cond:
            self._open = open
            self._cond.notify_all()

    def drain(self) -> None:
        """No more documents will start: closed for good (`set_open(True)` no longer opens it)."""
        with self._cond:
            self._draining = True
            self._cond.notify_all()

    def document_started(self) -> None:
        """A document entered storage: it may yet insert. Said by the batch before it hands the
        document to a store worker, so a closed group never writes before that worker has begun."""
        with self._cond:
            self._storing += 1

    def document_ended(self) -> None:
        """A document left storage (stored, failed or skipped): the others need not wait for it."""
        with self._cond:
            self._storing -= 1
            self._cond.notify_all()

    def for_document(self, document: str) -> DocumentInserts:
        """The TripleStore for one document's callers: their inserts are known as that document's."""
        return DocumentInserts(self, document)

    def insert(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION, document: str | None = None) -> int:
        mine = _Insert(list(quads), collection, time.monotonic(), document)
        if not mine.quads:
            return 0
        with self._cond:
            self._pending.append(mine)
            self._pending_quads += len(mine.quads)
            self._last_arrival = mine.since
            if document is not None:  # until written (this caller then checks whether it completes a closed group)
                self._unwritten[document] = self._unwritten.get(document, 0) + 1
            self._wait_until_written(mine)
        if mine.error is not None:
            raise mine.error
        return len(mine.quads)

    def _wait_until_written(self, mine: _Insert) -> None:
        """Until the caller's insert is written, by itself or by another caller (with the lock held)."""
        while not mine.done:
            if not mine.taken and self._due():
                # This caller writes the whole group (its own insert among them) while others wait.
                group, self._pending, self._pending_quads = self._pending, [], 0
                for member in group:
                    member.taken = True
                self._cond.release()
                try:
                    writes = self._write(group)
                finally:
                    self._cond.acquire()
                self.writes += writes
                self.inserts += len(group)
                for member in group:  # now, not as each caller wakes: the next group's rule counts them
                    if member.document is not None:
                        left = self._unwritten[member.document] - 1
                        if left:
                            self._unwritten[member.document] = left
                        else:
                            del self._unwritten[member.document]
                self._cond.notify_all()
            else:
                self._cond.wait(None if mine.taken else self._until_due())

    def _due(self) -> bool:
        """Whether the waiting inserts are to be written now (with the lock held)."""
        if not self._pending:
            return False
        now = time.monotonic()
        closed = self._draining or not self._open
        return (
            self._pending_quads >= self.max_quads
            or now - self._pending[0].since >= self.linger_s
            or (closed and (len(self._unwritten) >= self._storing or now - self._last_arrival >= self.settle_s))
        )

    def _until_due(self) -> float:
        due = self._pending[0].since + self.linger_s
        if self._draining or not self._open:
            due = min(due, self._last_arrival + self.settle_s)
        return max(0.0, due - time.monotonic())

    def _write(self, group: list[_Insert]) -> int:
        """The group's quads, one write per collection (caller by caller where the store refuses
        the whole); every member ends done, with its error if it has one. Returns the writes made."""
        writes = 0
        try:
            by_collection: dict[str, list[_Insert]] = {}
            for member in group:
                by_collection.setdefault(member.collection, []).append(member)
            for collection, members in by_collection.items():
                try:
                    writes += 1
                    self.store.insert([q for m in members for q in m.quads], collection)
                except StorageUnavailable as exc:  # the server, not a document: every caller's failure
                    for member in members:
                        member.error = exc
                except BaseException as exc:
                    if len(members) == 1:
                        members[0].error = exc
                        continue
                    for member in members:  # which caller's quads the store refuses
                        try:
                            writes += 1
                            self.store.insert(member.quads, collection)
                        except BaseException as own:
                            member.error = own
                for member in members:
                    member.done = True
        except BaseException as exc:  # a fault of this code: every caller fails with it, none waits on
            for member in group:
                if not member.done:
                    member.error, member.done = exc, True
        return writes


class DocumentInserts(_StoreReads):
    """A GroupedInserts as one document's callers see it (GroupedInserts.for_document)."""

    def __init__(self, grouped: GroupedInserts, document: str):
        self.grouped, self.document, self.store = grouped, document, grouped.store

    def insert(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> int:
        return self.grouped.insert(quads, collection, document=self.document)


def grouping_inserts(librarian: L, triples: GroupedInserts | DocumentInserts) -> L:
    """The librarian, its triples' inserts going through the group: the same parts and connections
    (a shallow copy, never closed itself), for the callers of one batch or one of its documents."""
    view = copy.copy(librarian)
    view.triples = triples
    return view
