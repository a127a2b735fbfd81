"""The triple store's writes when the writer dies part-way: nothing it leaves is out of reach.

A quad's rows go to up to six partitions in separate unlogged batches, so a writer killed mid-write
stores some of them. These tests cut a write after each of its requests in turn (as a SIGKILL cuts
it: the requests sent are stored, the rest never leave) and check that deleting the subjects then
removes every row of their quads from both tables. Real Cassandra only (they fail, never skip).
"""

from __future__ import annotations

import pytest

from resources.cassandra.triples import CassandraTripleStore, _parts
from resources.model import GRAPH_SOURCE, LibrarianError, Quad, Term
from resources.settings import open_librarian

pytestmark = pytest.mark.services

PROV = "http://www.w3.org/ns/prov#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
ACTIVITY = "https://trustgraph.ai/activity/cut"
PAGE = "https://trustgraph.ai/doc/cut/p1"
AGENT = "https://trustgraph.ai/agent/universal-decoder"
XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"

# A generation's quads of two subjects, in the source graph, as the decoder writes them.
GENERATION = [
    Quad(ACTIVITY, RDF_TYPE, Term(PROV + "Activity", is_iri=True), GRAPH_SOURCE),
    Quad(ACTIVITY, PROV + "startedAtTime", Term("2026-12-06T01:57:12Z", datatype=XSD_DATETIME), GRAPH_SOURCE),
    Quad(ACTIVITY, PROV + "wasAssociatedWith", Term(AGENT, is_iri=True), GRAPH_SOURCE),
    Quad(PAGE, RDF_TYPE, Term("https://trustgraph.ai/ns/Page", is_iri=True), GRAPH_SOURCE),
    Quad(PAGE, PROV + "wasGeneratedBy", Term(ACTIVITY, is_iri=True), GRAPH_SOURCE),
    Quad(PAGE, "https://trustgraph.ai/ns/charOffset", Term("0", datatype="xsd:integer"), GRAPH_SOURCE),
]
# Shared by every document: deleting the generation's subjects must leave it alone.
BYSTANDER = Quad(AGENT, RDF_TYPE, Term(PROV + "SoftwareAgent", is_iri=True), GRAPH_SOURCE)
SUBJECTS = [ACTIVITY, PAGE]


class WriterDied(Exception):
    pass


class Cut:
    """Lets the first `budget` requests through to the server and drops the rest, as a process
    killed mid-write does (budget None: all of them). Counts what went."""

    def __init__(self, monkeypatch):
        import cassandra.concurrent

        self.real = cassandra.concurrent.execute_concurrent
        self.budget: int | None = None
        self.sent = 0
        monkeypatch.setattr(cassandra.concurrent, "execute_concurrent", self)

    def __call__(self, session, requests, **kwargs):
        requests = list(requests)
        allowed = len(requests) if self.budget is None else max(0, min(len(requests), self.budget - self.sent))
        results = self.real(session, requests[:allowed], **kwargs) if allowed else []
        self.sent += allowed
        if allowed < len(requests):
            raise WriterDied(f"killed after {self.sent} requests")
        return results

    def at(self, budget: int | None) -> None:
        self.budget, self.sent = budget, 0


@pytest.fixture
def store(cassandra_run):
    if cassandra_run.error:
        pytest.fail(cassandra_run.error, pytrace=False)
    lib = open_librarian(cassandra_run.settings(cassandra_run.new_workspace()))
    # One row a request, so that a cut can fall between any two rows of a quad.
    yield CassandraTripleStore(lib.triples.c, lib.triples.workspace, batch_rows=1)
    lib.close()


def stored_rows(store: CassandraTripleStore, collection: str) -> set[tuple]:
    """Every row of quads_by_collection, and of each quads_by_entity partition these quads touch."""
    ks = f'"{store.keyspace}"'
    rows = {
        ("collection", r.s, r.p, r.o)
        for r in store.c.execute(f"SELECT s, p, o FROM {ks}.quads_by_collection WHERE collection = ?", (collection,))
    }
    entities = {e for q in [*GENERATION, BYSTANDER] for e in (q.s, q.p, q.o.value, q.g)}
    for entity in entities:
        found = store.c.execute(
            f"SELECT role, s, p, o FROM {ks}.quads_by_entity WHERE collection = ? AND entity = ?", (collection, entity)
        )
        rows |= {(r.role, r.s, r.p, r.o) for r in found}
    return rows


def rows_of(quads: list[Quad]) -> set[tuple]:
    out = set()
    for q in quads:
        s, p, o, *_ = _parts(q)
        out |= {("collection", s, p, o), ("S", s, p, o), ("P", s, p, o), ("O", s, p, o), ("G", s, p, o)}
    return out


def test_a_write_cut_after_any_request_leaves_nothing_its_subjects_delete_misses(store, monkeypatch):
    cut = Cut(monkeypatch)
    store.insert([BYSTANDER], "whole")
    cut.at(None)
    store.insert(GENERATION, "whole")
    assert stored_rows(store, "whole") == rows_of([*GENERATION, BYSTANDER])
    requests = cut.sent
    assert requests >= 5 * len(GENERATION)  # one row a request: every cut point between two rows

    for budget in range(requests):
        collection = f"cut_{budget}"
        cut.at(None)
        store.insert([BYSTANDER], collection)
        cut.at(budget)
        with pytest.raises((WriterDied, LibrarianError)):
            store.insert(GENERATION, collection)
        cut.at(None)
        store.delete_subjects(SUBJECTS, GRAPH_SOURCE, collection)
        left = stored_rows(store, collection)
        assert left == rows_of([BYSTANDER]), f"cut after {budget} requests: {sorted(left - rows_of([BYSTANDER]))}"


def test_a_delete_cut_after_any_request_is_finished_by_the_next(store, monkeypatch):
    cut = Cut(monkeypatch)
    store.insert([BYSTANDER, *GENERATION], "whole")
    cut.at(None)
    store.delete_subjects(SUBJECTS, GRAPH_SOURCE, "whole")
    assert stored_rows(store, "whole") == rows_of([BYSTANDER])
    requests = cut.sent
    assert requests >= 5 * len(GENERATION)

    for budget in range(requests):
        collection = f"del_{budget}"
        cut.at(None)
        store.insert([BYSTANDER, *GENERATION], collection)
        cut.at(budget)
        with pytest.raises((WriterDied, LibrarianError)):
            store.delete_subjects(SUBJECTS, GRAPH_SOURCE, collection)
        cut.at(None)
        store.delete_subjects(SUBJECTS, GRAPH_SOURCE, collection)
        left = stored_rows(store, collection)
        assert left == rows_of([BYSTANDER]), f"cut after {budget} requests: {sorted(left - rows_of([BYSTANDER]))}"
