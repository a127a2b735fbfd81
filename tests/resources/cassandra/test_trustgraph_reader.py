"""TrustGraph 2.11.1's own reader over what the project writes: every quad, every pattern (issue #30).

The reader is trustgraph.direct.cassandra_kg.EntityCentricKnowledgeGraph from TrustGraph's own code
(`make trustgraph-code`, tests/trustgraph_code.py). Which patterns must find a quad is derived from
its writer, EntityCentricKnowledgeGraph.insert: it writes the quad's 'S' row (read by get_s, get_sp,
get_os, get_spo), its 'P' row (get_p), its 'O' row (get_o, get_po; literals included), its 'G' row
outside the default graph (its get_entity_as_g statement) and its quads_by_collection row (get_all,
get_g); the entity patterns are asked with no graph (all graphs) and with the quad's own graph.

These need the real Cassandra and TrustGraph's code: they fail, never skip, when either is missing.
"""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import pytest

from resources.model import GRAPH_SOURCE, Quad, Term
from tests.trustgraph_code import use
from ud_assets.decoding import ids

pytestmark = [pytest.mark.services, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[3]
LIMIT = 1_000_000  # TrustGraph's reads take a LIMIT before they filter: never the one that hides a quad
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDFS_SEE_ALSO = "http://www.w3.org/2000/01/rdf-schema#seeAlso"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
CONTAINS = "https://trustgraph.ai/ns/contains"
PROV_DERIVED = "http://www.w3.org/ns/prov#wasDerivedFrom"
ALL_STAGES = {"document", "elements", "sections", "images", "chunks", "provenance_triples"}
DOCS = {"report.pdf": "application/pdf", "notes.md": "text/markdown"}

Row = tuple[str, str, str, str, str, str, str]  # (s, p, o, g, otype, dtype, lang), as TrustGraph stores them


def row(q: Quad) -> Row:
    o = q.o
    literal = o.otype == "l"
    return q.s, q.p, o.value, q.g or "", o.otype, o.datatype if literal else "", o.language if literal else ""


def kind(r: Row) -> str:
    """IRI, literal^^datatype, literal@language, plain literal or quoted triple, and the graph."""
    g, otype, dtype, lang = r[3:]
    what = {"u": "IRI", "t": "quoted triple"}.get(otype) or (
        "literal^^datatype" if dtype else "literal@language" if lang else "plain literal"
    )
    return f"{what} in {g or 'the default graph'}"


def trustgraph_reader(workspace: str):
    """TrustGraph's EntityCentricKnowledgeGraph for the workspace, built as its triples writer and query
    service build it (keyspace=workspace), pointed at the test's servers: the port and credentials of the
    environment (TrustGraph assumes 9042, and TLS whenever it is given credentials)."""
    use()
    from cassandra import ConsistencyLevel
    from cassandra.cluster import Cluster
    from trustgraph.direct import cassandra_kg

    port = int(os.environ.get("CASSANDRA_PORT") or 9042)
    tls = os.environ.get("CASSANDRA_TLS", "").lower() in ("1", "true", "yes")

    def cluster(hosts, **options):
        if not tls:
            options.pop("ssl_context", None)
        return Cluster(hosts, port=port, **options)

    hosts = [h.strip() for h in os.environ["CASSANDRA_HOST"].split(",") if h.strip()]
    with mock.patch.object(cassandra_kg, "Cluster", cluster):
        tg = cassandra_kg.EntityCentricKnowledgeGraph(
            hosts=hosts,
            keyspace=workspace,
            username=os.environ.get("CASSANDRA_USERNAME"),
            password=os.environ.get("CASSANDRA_PASSWORD"),
        )
    if os.environ.get("CASSANDRA_CONSISTENCY"):  # QUORUM on the cluster (tests/cluster)
        tg.session.default_consistency_level = ConsistencyLevel.name_to_value[os.environ["CASSANDRA_CONSISTENCY"]]
    return tg


class Patterns:
    """Every read of TrustGraph's reader that its insert makes a quad findable by; each read once."""

    def __init__(self, tg, collection: str = "default"):
        self.tg, self.collection = tg, collection
        self._cache: dict[tuple, set[Row]] = {}

    def _read(self, name: str, *args: str, g: str | None = None) -> set[Row]:
        key = (name, args, g)
        if key not in self._cache:
            tg, c = self.tg, self.collection
            if name == "get_all":
                found = {(r.s, r.p, r.o, r.d, r.otype, r.dtype, r.lang) for r in tg.get_all(c, limit=LIMIT)}
            elif name == "get_g":
                found = {(r.s, r.p, r.o, args[0], r.otype, r.dtype, r.lang) for r in tg.get_g(c, args[0], limit=LIMIT)}
            elif name == "get_entity_as_g":  # the 'G' row: prepared by TrustGraph, read by none of its methods
                rows = tg.session.execute(tg.get_entity_as_g_stmt, (c, args[0], LIMIT))
                found = {(r.s, r.p, r.o, r.d, r.otype, r.dtype, r.lang) for r in rows}
            else:
                results = getattr(tg, name)(c, *args, g=g, limit=LIMIT)
                found = {(r.s, r.p, r.o, r.g, r.otype, r.dtype, r.lang) for r in results}
            self._cache[key] = found
        return self._cache[key]

    def reads(self, r: Row) -> dict[str, set[Row]]:
        s, p, o, g = r[:4]
        out: dict[str, set[Row]] = {}
        for graph in (None, g):  # all graphs, and the quad's own ("" = the default graph)
            at = f"g={graph!r}"
            out[f"get_s(s, {at})"] = self._read("get_s", s, g=graph)
            out[f"get_p(p, {at})"] = self._read("get_p", p, g=graph)
            out[f"get_o(o, {at})"] = self._read("get_o", o, g=graph)
            out[f"get_sp(s, p, {at})"] = self._read("get_sp", s, p, g=graph)
            out[f"get_po(p, o, {at})"] = self._read("get_po", p, o, g=graph)
            out[f"get_os(o, s, {at})"] = self._read("get_os", o, s, g=graph)
            out[f"get_spo(s, p, o, {at})"] = self._read("get_spo", s, p, o, g=graph)
        out["get_all()"] = self._read("get_all")
        out["get_g(g)"] = self._read("get_g", g)
        if g:
            out["get_entity_as_g_stmt(g)"] = self._read("get_entity_as_g", g)
        return out

    def missing(self, r: Row) -> list[str]:
        return [name for name, found in self.reads(r).items() if r not in found]

    def finding(self, r: Row) -> list[str]:
        return [name for name, found in self.reads(r).items() if r in found]


@pytest.fixture
def cassandra_resource(graph_cassandra_run):
    from ud_assets.defs.resources import LibrarianResource

    if graph_cassandra_run.error:
        pytest.fail(graph_cassandra_run.error, pytrace=False)
    return LibrarianResource(
        backend="cassandra", workspace=graph_cassandra_run.new_workspace(), bucket=graph_cassandra_run.bucket
    )


def decode(resource, instance, names: list[str]):
    from tests.defs.test_subsets import materialize

    lib = resource.get()
    for name in names:
        lib.add_document(name, DOCS[name], (REPO / "samples" / name).read_bytes(), title=name)
    for name in names:
        result = materialize(resource, instance, [name], ALL_STAGES)
        assert result.success, name
    return lib


def extra_quads(doc_id: str, page: str) -> list[Quad]:
    """The object kinds decoding does not give (languages, quoted triples, the default graph), about the
    document and its page, so that removing the document removes them."""
    doc = ids.document_iri(doc_id)
    quoted = Term.quoted(page, PROV_DERIVED, Term(doc, is_iri=True))
    out = []
    for g in ("", GRAPH_SOURCE):
        out += [
            Quad(page, RDFS_SEE_ALSO, Term(doc, is_iri=True), g),
            Quad(page, RDFS_LABEL, Term(f"Seite 1 {g}", language="de"), g),
            Quad(page, RDFS_LABEL, Term("1", datatype=XSD_INTEGER), g),
            Quad(page, RDFS_LABEL, Term("1"), g),  # same value, other kind: a quad of its own
            Quad(doc, CONTAINS, quoted, g),
        ]
    return out


def test_every_pattern_finds_every_quad_of_decoded_documents_and_none_after_removal(cassandra_resource, instance):
    lib = decode(cassandra_resource, instance, list(DOCS))
    page = lib.list_children("report.pdf")[0].id
    assert lib.triples.insert(extra_quads("report.pdf", page), lib.collection) == 10
    tg = trustgraph_reader(lib.workspace)
    try:
        assert tg.keyspace == lib.triples.keyspace  # TrustGraph names the workspace's keyspace as we do
        stored = [row(q) for q in lib.triples.query(collection=lib.collection)]
        kinds = {kind(r) for r in stored}
        for what in ("IRI", "literal^^datatype", "literal@language", "plain literal", "quoted triple"):
            for where in ("the default graph", GRAPH_SOURCE):
                assert f"{what} in {where}" in kinds, f"no {what} in {where} to read"
        patterns = Patterns(tg)
        missed = {r: m for r in stored if (m := patterns.missing(r))}
        checks = sum(len(patterns.reads(r)) for r in stored)
        print(f"\n{len(stored)} quads, {checks} pattern reads ({len(patterns._cache)} distinct), none missed")
        assert not missed, f"{len(missed)} of {len(stored)} quads missed, e.g. " + "; ".join(
            f"{kind(r)} {r[:3]}: {names}" for r, names in list(missed.items())[:5]
        )

        for doc_id in DOCS:
            lib.remove_document(doc_id)
        # The agents' descriptions (the decoder's, the chunker's) are shared by every document: they stay.
        agents = ids.agent_iri("")
        left = {row(q) for q in lib.triples.query(collection=lib.collection)}
        assert left and all(r[0].startswith(agents) for r in left), sorted({r[0] for r in left})
        patterns = Patterns(tg)  # read again
        found = {r: f for r in stored if r not in left and (f := patterns.finding(r))}
        assert not found, f"{len(found)} removed quads still found, e.g. " + "; ".join(
            f"{kind(r)} {r[:3]}: {names}" for r, names in list(found.items())[:5]
        )
        assert all(not patterns.missing(r) for r in left)
    finally:
        tg.close()


def test_the_rows_are_those_trustgraphs_own_insert_writes(graph_cassandra_run):
    """The same quads through TrustGraph's insert (as its triples writer calls it) and through ours: the same
    rows, column for column, in both tables."""
    from resources.cassandra.triples import CassandraTripleStore

    if graph_cassandra_run.error:
        pytest.fail(graph_cassandra_run.error, pytrace=False)
    quads = [
        *extra_quads("doc-tg", "urn:page:tg-1"),
        Quad("urn:page:tg-1", RDFS_LABEL, Term("Page 1"), GRAPH_SOURCE),
        Quad("urn:page:tg-1", PROV_DERIVED, Term("https://trustgraph.ai/doc/doc-tg", is_iri=True), GRAPH_SOURCE),
    ]
    theirs_ws, ours_ws = graph_cassandra_run.new_workspace(), graph_cassandra_run.new_workspace()
    ours = CassandraTripleStore(graph_cassandra_run.connection, ours_ws)
    ours.insert(quads)
    tg = trustgraph_reader(theirs_ws)
    try:
        for q in quads:
            s, p, o, g, otype, dtype, lang = row(q)
            tg.insert("default", s, p, o, g=g, otype=otype, dtype=dtype, lang=lang)
        c = graph_cassandra_run.connection
        for table in ("quads_by_entity", "quads_by_collection"):
            theirs = {tuple(r) for r in c.execute(f'SELECT * FROM "{tg.keyspace}".{table}')}
            mine = {tuple(r) for r in c.execute(f'SELECT * FROM "{ours.keyspace}".{table}')}
            assert mine == theirs, (table, sorted(mine ^ theirs)[:5])
        entity = [tuple(r) for r in c.execute(f'SELECT role, otype FROM "{tg.keyspace}".quads_by_entity')]
        assert entity.count(("O", "l")) == 7  # the literal objects' rows: three kinds in both graphs, and one more
    finally:
        tg.close()


def _delete_object_rows(lib, rows: list[Row]) -> None:
    """What the code before issue #30 left: no 'O' row for literal objects."""
    c, ks = lib.triples.c, lib.triples.keyspace
    for s, p, o, g, otype, dtype, lang in rows:
        c.execute(
            f'DELETE FROM "{ks}".quads_by_entity WHERE collection = ? AND entity = ? AND role = ? AND p = ? '
            "AND otype = ? AND s = ? AND o = ? AND d = ? AND dtype = ? AND lang = ?",
            (lib.collection, o, "O", p, otype, s, o, g, dtype, lang),
        )


def _entity_rows(lib) -> int:
    ks = lib.triples.keyspace
    return int(lib.triples.c.execute(f'SELECT COUNT(*) FROM "{ks}".quads_by_entity').one()[0])


def test_verify_repair_writes_the_object_rows_an_old_library_lacks_without_decoding_again(
    cassandra_resource, instance, monkeypatch, tmp_path, capsys
):
    from ud_assets.cli import main
    from ud_assets.processing.verify import INCOMPLETE, OK, verify

    lib = decode(cassandra_resource, instance, ["report.pdf"])
    stored = sorted(row(q) for q in lib.triples.query(collection=lib.collection))
    literals = [r for r in stored if r[4] == "l"]
    assert len(literals) > 10
    full = _entity_rows(lib)
    _delete_object_rows(lib, literals)
    assert _entity_rows(lib) == full - len(literals)
    tg = trustgraph_reader(lib.workspace)
    try:
        patterns = Patterns(tg)
        for r in literals:  # the bug, as an old library has it
            assert {n.split("(")[0] for n in patterns.missing(r)} == {"get_o", "get_po"}, r
        generation = lib.get_generation("report.pdf")
        result = verify(lib, generation)
        assert result.status == INCOMPLETE and result.lacks_only_object_rows
        assert result.object_rows_missing == len(literals)

        monkeypatch.setenv("UD_BUCKET", cassandra_resource.bucket)
        monkeypatch.setenv("UD_WORKSPACE", cassandra_resource.workspace)
        monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "no-instance"))  # no instance: nothing through Dagster
        assert main(["verify"]) == 1
        assert "report.pdf\tincomplete" in capsys.readouterr().out
        assert main(["verify", "--repair"]) == 0
        err = capsys.readouterr().err
        assert f"wrote {len(literals)} missing object rows of 1 documents" in err and "repaired" not in err

        # Not decoded again: the same quads (a new run would record a new prov:startedAtTime), generation, rows.
        assert sorted(row(q) for q in lib.triples.query(collection=lib.collection)) == stored
        assert lib.get_generation("report.pdf") == generation
        assert _entity_rows(lib) == full
        patterns = Patterns(tg)
        assert [r for r in stored if patterns.missing(r)] == []

        # Idempotent: nothing left to write, nothing doubled.
        assert main(["verify", "--repair"]) == 0
        assert "wrote" not in capsys.readouterr().err
        assert lib.triples.write_object_rows(lib.triples.query(collection=lib.collection), lib.collection) == len(
            stored
        )
        assert _entity_rows(lib) == full
        assert verify(lib, generation).status == OK
    finally:
        tg.close()
