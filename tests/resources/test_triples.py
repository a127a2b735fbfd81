"""The triple store contract, run against both backends."""

from __future__ import annotations

import pytest

from resources.model import DEFAULT_COLLECTION, GRAPH_SOURCE, Quad, Term

EX = "https://example.org/"
XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
KNOWS = EX + "knows"
AGE = EX + "age"
CONTAINS = "https://trustgraph.ai/ns/contains"

ALICE, BOB, CAROL = EX + "alice", EX + "bob", EX + "carol"

QUADS = [
    Quad(ALICE, KNOWS, Term(BOB, is_iri=True), GRAPH_SOURCE),
    Quad(ALICE, KNOWS, Term(CAROL, is_iri=True), ""),
    Quad(ALICE, LABEL, Term("Alice"), GRAPH_SOURCE),
    Quad(ALICE, LABEL, Term("Alice", language="en"), GRAPH_SOURCE),
    Quad(ALICE, LABEL, Term("Alicia", language="es"), GRAPH_SOURCE),
    Quad(ALICE, AGE, Term("42", datatype=XSD_INT), GRAPH_SOURCE),
    Quad(ALICE, AGE, Term("42"), GRAPH_SOURCE),  # same value, no datatype: a different quad
    Quad(BOB, LABEL, Term(ALICE), ""),  # a literal that looks like an IRI
    Quad(BOB, KNOWS, Term(ALICE, is_iri=True), "urn:graph:retrieval"),
    Quad(CAROL, LABEL, Term("Carol"), ""),
]


def sort(quads):
    return sorted(quads, key=repr)


@pytest.fixture
def loaded(triples):
    assert triples.insert(QUADS) == len(QUADS)
    return triples


def test_insert_and_count(loaded):
    assert loaded.count() == len(QUADS)
    assert loaded.count(g=GRAPH_SOURCE) == 6
    assert loaded.count(g="") == 3
    assert loaded.count(g="urn:graph:retrieval") == 1
    assert loaded.count(collection="elsewhere") == 0
    # inserting the same quads again changes nothing
    loaded.insert(QUADS[:3])
    assert loaded.count() == len(QUADS)


def test_query_everything_round_trips_terms(loaded):
    got = loaded.query()
    assert sort(got) == sort(QUADS)
    by_value = {(q.s, q.p, q.o.value, q.o.datatype, q.o.language, q.o.is_iri, q.g) for q in got}
    assert (ALICE, AGE, "42", XSD_INT, "", False, GRAPH_SOURCE) in by_value
    assert (ALICE, AGE, "42", "", "", False, GRAPH_SOURCE) in by_value
    assert (ALICE, LABEL, "Alice", "", "en", False, GRAPH_SOURCE) in by_value
    assert (BOB, LABEL, ALICE, "", "", False, "") in by_value


def test_query_by_subject(loaded):
    assert sort(loaded.query(s=ALICE)) == sort(q for q in QUADS if q.s == ALICE)
    assert sort(loaded.query(s=ALICE, g="")) == [QUADS[1]]
    assert sort(loaded.query(s=ALICE, p=LABEL)) == sort(QUADS[2:5])
    assert loaded.query(s=ALICE, p=LABEL, o=Term("Alice", language="en")) == [QUADS[3]]
    assert loaded.query(s=ALICE, p=LABEL, o=Term("Alice")) == [QUADS[2]]
    assert loaded.query(s=ALICE, o=Term("42", datatype=XSD_INT)) == [QUADS[5]]
    assert loaded.query(s=EX + "nobody") == []
    assert len(loaded.query(s=ALICE, limit=2)) == 2


def test_query_by_object(loaded):
    # an IRI object: every quad pointing at Alice as an IRI, not the literal that spells her IRI
    assert loaded.query(o=Term(ALICE, is_iri=True)) == [QUADS[8]]
    assert loaded.query(o=Term(ALICE)) == [QUADS[7]]
    assert loaded.query(o=Term(BOB, is_iri=True), p=KNOWS) == [QUADS[0]]
    assert loaded.query(o=Term(BOB, is_iri=True), g="") == []
    assert sort(loaded.query(o=Term("Alice"))) == [QUADS[2]]
    assert sort(loaded.query(o=Term("Alicia", language="es"))) == [QUADS[4]]
    assert loaded.query(o=Term("Alicia", language="en")) == []


def test_query_by_predicate(loaded):
    assert sort(loaded.query(p=KNOWS)) == sort([QUADS[0], QUADS[1], QUADS[8]])
    assert sort(loaded.query(p=KNOWS, g=GRAPH_SOURCE)) == [QUADS[0]]
    assert sort(loaded.query(p=AGE, o=Term("42"))) == [QUADS[6]]
    assert len(loaded.query(p=LABEL, limit=1)) == 1


def test_query_by_graph(loaded):
    assert sort(loaded.query(g=GRAPH_SOURCE)) == sort(q for q in QUADS if q.g == GRAPH_SOURCE)
    assert sort(loaded.query(g="")) == sort(q for q in QUADS if q.g == "")
    assert loaded.query(g="urn:graph:retrieval") == [QUADS[8]]
    assert loaded.query(g="urn:graph:none") == []


def test_collections_are_separate(loaded):
    loaded.insert([Quad(ALICE, LABEL, Term("other"), GRAPH_SOURCE)], collection="other")
    assert loaded.query(s=ALICE, collection="other") == [Quad(ALICE, LABEL, Term("other"), GRAPH_SOURCE)]
    assert Quad(ALICE, LABEL, Term("other"), GRAPH_SOURCE) not in loaded.query(s=ALICE)
    assert loaded.delete_subjects([ALICE], GRAPH_SOURCE, collection="other") == 1
    assert loaded.count(collection="other") == 0
    assert loaded.count(collection=DEFAULT_COLLECTION) == len(QUADS)


def test_delete_subjects(loaded):
    n = loaded.delete_subjects([ALICE, EX + "nobody"], GRAPH_SOURCE)
    assert n == 6
    remaining = [q for q in QUADS if not (q.s == ALICE and q.g == GRAPH_SOURCE)]
    assert sort(loaded.query()) == sort(remaining)
    assert loaded.query(s=ALICE) == [QUADS[1]]  # the default-graph quad stays
    # no leftovers in the object / predicate partitions (literal objects have theirs too)
    assert loaded.query(o=Term(BOB, is_iri=True)) == []
    assert loaded.query(o=Term("Alicia", language="es")) == []
    assert loaded.query(o=Term("42", datatype=XSD_INT)) == [] and loaded.query(p=AGE, o=Term("42")) == []
    assert loaded.query(o=Term(ALICE)) == [QUADS[7]]  # BOB's literal, untouched
    assert loaded.query(p=AGE) == []
    assert sort(loaded.query(p=LABEL)) == sort([QUADS[7], QUADS[9]])
    assert loaded.count() == len(remaining)
    assert loaded.delete_subjects([ALICE], "") == 1
    assert loaded.query(o=Term(CAROL, is_iri=True)) == []
    assert loaded.delete_subjects([BOB], "urn:graph:retrieval") == 1
    assert loaded.query(g="urn:graph:retrieval") == []
    assert loaded.query(o=Term(ALICE, is_iri=True)) == []
    assert sort(loaded.query()) == sort([QUADS[7], QUADS[9]])


def test_quoted_triples(triples):
    inner = Term.quoted(ALICE, KNOWS, Term(BOB, is_iri=True))
    sg = "urn:subgraph:1"
    quads = [Quad(sg, CONTAINS, inner, GRAPH_SOURCE), Quad(sg, LABEL, Term("subgraph"), GRAPH_SOURCE)]
    triples.insert(quads)
    got = triples.query(s=sg, p=CONTAINS)
    assert got == [quads[0]]
    assert got[0].o.is_triple and got[0].o.otype == "t"
    assert got[0].o.as_triple() == (ALICE, KNOWS, Term(BOB, is_iri=True))
    assert triples.query(o=inner) == [quads[0]]
    assert triples.delete_subjects([sg]) == 2
    assert triples.query(o=inner) == [] and triples.count() == 0


def test_many_quads(triples):
    quads = [Quad(f"urn:chunk:{i}", LABEL, Term(f"chunk {i}"), GRAPH_SOURCE) for i in range(500)]
    quads += [Quad(f"urn:chunk:{i}", KNOWS, Term(f"urn:chunk:{i + 1}", is_iri=True), GRAPH_SOURCE) for i in range(500)]
    assert triples.insert(quads) == 1000
    assert triples.count() == 1000
    assert len(triples.query(p=LABEL)) == 500
    assert len(triples.query(g=GRAPH_SOURCE, limit=123)) == 123
    assert triples.query(o=Term("urn:chunk:17", is_iri=True)) == [quads[516]]
    assert triples.delete_subjects([f"urn:chunk:{i}" for i in range(0, 500, 2)]) == 500
    assert triples.count() == 500
    assert len(triples.query(p=KNOWS)) == 250


def test_query_subjects_reads_the_quads_of_those_subjects_in_one_graph(loaded):
    def bag(quads):
        return sorted(map(repr, quads))

    def expected(subjects, g):
        return bag(q for q in QUADS if q.s in subjects and q.g == g)

    assert bag(loaded.query_subjects([ALICE, BOB, EX + "nobody"], GRAPH_SOURCE)) == expected({ALICE, BOB}, GRAPH_SOURCE)
    assert len(expected({ALICE, BOB}, GRAPH_SOURCE)) == 6
    assert len(loaded.query_subjects([ALICE, ALICE], GRAPH_SOURCE)) == 6  # a subject is read once
    assert bag(loaded.query_subjects([ALICE, BOB, CAROL], "")) == expected({ALICE, BOB, CAROL}, "")
    assert len(loaded.query_subjects([BOB], "urn:graph:retrieval")) == 1
    assert loaded.query_subjects([], GRAPH_SOURCE) == []
    assert loaded.query_subjects([ALICE], GRAPH_SOURCE, collection="other") == []
    # More subjects than one request holds (Cassandra: IN_PARTITIONS a request), most with no quads.
    many = [EX + f"nobody-{i}" for i in range(45)] + [ALICE]
    assert bag(loaded.query_subjects(many, GRAPH_SOURCE)) == expected({ALICE}, GRAPH_SOURCE)
    loaded.delete_subjects([ALICE], GRAPH_SOURCE)
    assert loaded.query_subjects([ALICE], GRAPH_SOURCE) == []  # read from the store, not remembered


def test_every_stored_quad_is_findable_by_its_object(loaded):
    assert loaded.missing_object_rows(loaded.query()) == []
    assert loaded.write_object_rows([]) == 0
