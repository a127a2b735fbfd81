"""Lineage from the triple store: any page, section, image or chunk up to its source document
(with positions) and down to its children; and a document's whole provenance for export."""

from __future__ import annotations

from dataclasses import dataclass, field

from resources.model import GRAPH_SOURCE, Quad, document_iri
from ud_assets.decoding import provenance as P

_POSITION = {
    P.TG_PAGE_NUMBER: "page_number",
    P.TG_CHAR_OFFSET: "char_offset",
    P.TG_CHAR_LENGTH: "char_length",
    P.TG_CHUNK_INDEX: "chunk_index",
    P.TG_BOUNDING_BOX: "bounding_box",
    P.TG_MIME_TYPE: "mime_type",
    P.TG_ELEMENT_TYPES: "element_types",
}
_TYPES = {
    P.TG_DOCUMENT_TYPE: "document",
    P.TG_PAGE_TYPE: "page",
    P.TG_SECTION_TYPE: "section",
    P.TG_IMAGE_TYPE: "image",
    P.TG_CHUNK_TYPE: "chunk",
}


@dataclass
class Node:
    id: str
    type: str = ""
    label: str = ""
    position: dict = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)

    def as_dict(self) -> dict:
        out = {"id": self.id, "type": self.type, "label": self.label, **self.position}
        if self.children:
            out["children"] = [c.as_dict() for c in self.children]
        return out


class LineageNotFound(LookupError):
    pass


def describe(triples, iri: str, collection: str) -> Node:
    node = Node(iri)
    for quad in triples.query(s=iri, g=GRAPH_SOURCE, collection=collection):
        if quad.p == P.RDF_TYPE and quad.o.value in _TYPES:
            node.type = _TYPES[quad.o.value]
        elif quad.p == P.RDFS_LABEL:
            node.label = quad.o.value
        elif quad.p in _POSITION:
            value = quad.o.value
            node.position[_POSITION[quad.p]] = int(value) if quad.o.datatype == P.XSD_INTEGER else value
    return node


def _parent(triples, iri: str, collection: str) -> str | None:
    found = triples.query(s=iri, p=P.PROV_WAS_DERIVED_FROM, g=GRAPH_SOURCE, collection=collection)
    return found[0].o.value if found else None


def _children(triples, iri: str, collection: str) -> list[str]:
    from resources.model import Term

    found = triples.query(p=P.PROV_WAS_DERIVED_FROM, o=Term(iri, is_iri=True), g=GRAPH_SOURCE, collection=collection)
    return sorted({q.s for q in found})


def resolve(triples, entity_id: str, collection: str) -> str:
    """The IRI under which an id (a librarian id or an IRI) has provenance."""
    for candidate in dict.fromkeys([entity_id, document_iri(entity_id)]):
        if triples.query(s=candidate, g=GRAPH_SOURCE, collection=collection, limit=1):
            return candidate
    raise LineageNotFound(f"no provenance for {entity_id!r} in {GRAPH_SOURCE}")


def lineage(triples, entity_id: str, collection: str, depth: int = 3) -> dict:
    """{"entity", "ancestors" (nearest first, up to the document), "descendants"}."""
    iri = resolve(triples, entity_id, collection)
    entity = describe(triples, iri, collection)
    ancestors = []
    seen = {iri}
    parent = _parent(triples, iri, collection)
    while parent and parent not in seen:
        seen.add(parent)
        ancestors.append(describe(triples, parent, collection))
        parent = _parent(triples, parent, collection)
    _add_document_span(entity, ancestors)
    entity.children = _descend(triples, iri, collection, depth)
    return {"entity": entity.as_dict(), "ancestors": [a.as_dict() for a in ancestors]}


def _add_document_span(entity: Node, ancestors: list[Node]) -> None:
    """A chunk's offset is in its section: place it in the document text too."""
    if entity.type == "chunk" and ancestors and "char_offset" in ancestors[0].position:
        start = ancestors[0].position["char_offset"] + entity.position.get("char_offset", 0)
        entity.position["document_span"] = [start, start + entity.position.get("char_length", 0)]
    elif "char_offset" in entity.position and entity.type in ("page", "section"):
        start = entity.position["char_offset"]
        entity.position["document_span"] = [start, start + entity.position.get("char_length", 0)]


def _descend(triples, iri: str, collection: str, depth: int) -> list[Node]:
    if depth <= 0:
        return []
    nodes = []
    for child in _children(triples, iri, collection):
        node = describe(triples, child, collection)
        node.children = _descend(triples, child, collection, depth - 1)
        nodes.append(node)
    nodes.sort(
        key=lambda n: (
            n.type,
            n.position.get("page_number") or 0,
            n.position.get("char_offset") or 0,
            n.position.get("chunk_index") or 0,
            n.id,
        )
    )
    return nodes


def document_quads(triples, document_id: str, collection: str) -> list[Quad]:
    """Every provenance quad of a document: itself, its descendants, their activities and agents."""
    root = resolve(triples, document_id, collection)
    subjects, frontier = [root], [root]
    while frontier:
        nxt: list[str] = []
        for iri in frontier:
            nxt.extend(c for c in _children(triples, iri, collection) if c not in subjects)
        subjects.extend(nxt)
        frontier = nxt
    quads: dict = {}
    for subject in subjects:
        for quad in triples.query(s=subject, g=GRAPH_SOURCE, collection=collection):
            quads[quad] = None
            if quad.p == P.PROV_WAS_GENERATED_BY:
                for aq in triples.query(s=quad.o.value, g=GRAPH_SOURCE, collection=collection):
                    quads[aq] = None
                    if aq.p == P.PROV_WAS_ASSOCIATED_WITH:
                        for gq in triples.query(s=aq.o.value, g=GRAPH_SOURCE, collection=collection):
                            quads[gq] = None
    return list(quads)


def format_tree(result: dict) -> str:
    lines = []
    for depth, node in enumerate(reversed(result["ancestors"])):
        lines.append("  " * depth + _line(node))
    base = len(result["ancestors"])
    _tree_lines(result["entity"], base, lines, marker="▶ ")
    return "\n".join(lines)


def _tree_lines(node: dict, depth: int, lines: list[str], marker: str = "") -> None:
    lines.append("  " * depth + marker + _line(node))
    for child in node.get("children", []):
        _tree_lines(child, depth + 1, lines)


def _line(node: dict) -> str:
    keys = ("page_number", "chunk_index", "char_offset", "char_length", "document_span", "bounding_box", "mime_type")
    where = ", ".join(f"{k}={node[k]}" for k in keys if k in node)
    return f"{node.get('type') or '?'} {node.get('label', '')!r} <{node['id']}>" + (f" [{where}]" if where else "")
