"""RDF serialisations of provenance triples, with rdflib."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .provenance import Triple

if TYPE_CHECKING:  # rdflib is imported when a serialisation is asked for
    from rdflib import Dataset


def to_dataset(triples: Iterable[Triple]) -> Dataset:
    from rdflib import Dataset, Literal, URIRef

    from .provenance import DC, PROV, TG

    dataset = Dataset()
    for prefix, namespace in (("tg", TG), ("prov", PROV), ("dc", DC)):
        dataset.bind(prefix, namespace)
    for t in triples:
        obj = URIRef(t.o) if t.o_type == "iri" else Literal(t.o, datatype=URIRef(t.datatype) if t.datatype else None)
        graph = dataset.graph(URIRef(t.g)) if t.g else dataset.default_graph
        graph.add((URIRef(t.s), URIRef(t.p), obj))
    return dataset


def serialize(triples: Iterable[Triple], fmt: str = "nquads") -> str:
    """fmt: nquads | trig | turtle (turtle flattens the named graphs)."""
    dataset = to_dataset(triples)
    if fmt == "turtle":
        from rdflib import Graph

        flat = Graph()
        for prefix, namespace in dataset.namespaces():
            flat.bind(prefix, namespace)
        for s, p, o, _g in dataset.quads((None, None, None, None)):
            flat.add((s, p, o))
        return flat.serialize(format="turtle")
    return dataset.serialize(format=fmt)


def to_nquads(triples: Iterable[Triple]) -> str:
    return serialize(triples, "nquads")
