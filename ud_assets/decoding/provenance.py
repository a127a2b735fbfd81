"""Provenance triples with TrustGraph's vocabulary, all in the named graph urn:graph:source.

Unlike upstream, the document-level triples go to urn:graph:source too, and numbers and times
are typed literals (xsd:integer, xsd:dateTime) as TrustGraph's ontology says they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from .geometry import Coordinates

PROV = "http://www.w3.org/ns/prov#"
DC = "http://purl.org/dc/elements/1.1/"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
TG = "https://trustgraph.ai/ns/"
XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_INTEGER = XSD + "integer"
XSD_DATETIME = XSD + "dateTime"

GRAPH_SOURCE = "urn:graph:source"

PROV_ENTITY = PROV + "Entity"
PROV_ACTIVITY = PROV + "Activity"
PROV_AGENT = PROV + "Agent"
PROV_WAS_DERIVED_FROM = PROV + "wasDerivedFrom"
PROV_WAS_GENERATED_BY = PROV + "wasGeneratedBy"
PROV_USED = PROV + "used"
PROV_WAS_ASSOCIATED_WITH = PROV + "wasAssociatedWith"
PROV_STARTED_AT_TIME = PROV + "startedAtTime"
DC_TITLE = DC + "title"

TG_DOCUMENT_TYPE = TG + "Document"
TG_PAGE_TYPE = TG + "Page"
TG_SECTION_TYPE = TG + "Section"
TG_IMAGE_TYPE = TG + "Image"
TG_CHUNK_TYPE = TG + "Chunk"
TG_PAGE_COUNT = TG + "pageCount"
TG_MIME_TYPE = TG + "mimeType"
TG_PAGE_NUMBER = TG + "pageNumber"
TG_CHUNK_INDEX = TG + "chunkIndex"
TG_CHAR_OFFSET = TG + "charOffset"
TG_CHAR_LENGTH = TG + "charLength"
TG_CHUNK_SIZE = TG + "chunkSize"
TG_CHUNK_OVERLAP = TG + "chunkOverlap"
TG_COMPONENT_VERSION = TG + "componentVersion"
TG_ELEMENT_TYPES = TG + "elementTypes"
TG_TABLE_COUNT = TG + "tableCount"
TG_IMAGE_COUNT = TG + "imageCount"
# Image details (extensions in the TG namespace).
TG_ELEMENT_ID = TG + "elementId"
TG_WIDTH = TG + "width"
TG_HEIGHT = TG + "height"
TG_BYTE_SIZE = TG + "byteSize"
TG_BOUNDING_BOX = TG + "boundingBox"  # "x0,y0,x1,y1" in the coordinate system below
TG_COORDINATE_SYSTEM = TG + "coordinateSystem"

ENTITY_TYPES = {"page": TG_PAGE_TYPE, "section": TG_SECTION_TYPE, "image": TG_IMAGE_TYPE, "chunk": TG_CHUNK_TYPE}


class TripleDict(TypedDict):
    """A Triple as JSON (`ud decode --format json`, lineage)."""

    s: str
    p: str
    o: str
    o_type: str
    datatype: str
    g: str


@dataclass(frozen=True)
class Triple:
    s: str
    p: str
    o: str
    o_type: str = "literal"  # "iri" | "literal"
    datatype: str = ""
    g: str = GRAPH_SOURCE

    def as_dict(self) -> TripleDict:
        return {"s": self.s, "p": self.p, "o": self.o, "o_type": self.o_type, "datatype": self.datatype, "g": self.g}


def iri(s: str, p: str, o: str) -> Triple:
    return Triple(s, p, o, "iri")


def literal(s: str, p: str, value: str | int | float, datatype: str = "") -> Triple:
    if isinstance(value, bool):
        raise TypeError("booleans are not used in provenance")
    if isinstance(value, int) and not datatype:
        datatype = XSD_INTEGER
    return Triple(s, p, str(value), "literal", datatype)


def document_triples(doc: str, title: str, mime_type: str, page_count: int | None = None) -> list[Triple]:
    triples = [
        iri(doc, RDF_TYPE, PROV_ENTITY),
        iri(doc, RDF_TYPE, TG_DOCUMENT_TYPE),
        literal(doc, TG_MIME_TYPE, mime_type),
    ]
    if title:
        triples += [literal(doc, DC_TITLE, title), literal(doc, RDFS_LABEL, title)]
    if page_count is not None:
        triples.append(literal(doc, TG_PAGE_COUNT, page_count))
    return triples


def activity_triples(
    activity: str, parent: str, agent: str, component: str, version: str, started_at: str
) -> list[Triple]:
    return [
        iri(activity, RDF_TYPE, PROV_ACTIVITY),
        literal(activity, RDFS_LABEL, f"{component} extraction"),
        iri(activity, PROV_USED, parent),
        iri(activity, PROV_WAS_ASSOCIATED_WITH, agent),
        literal(activity, PROV_STARTED_AT_TIME, started_at, XSD_DATETIME),
        literal(activity, TG_COMPONENT_VERSION, version),
        iri(agent, RDF_TYPE, PROV_AGENT),
        literal(agent, RDFS_LABEL, component),
    ]


def derived_entity_triples(
    entity: str,
    kind: str,
    parent: str,
    activity: str,
    label: str,
    *,
    page_number: int | None = None,
    chunk_index: int | None = None,
    char_offset: int | None = None,
    char_length: int | None = None,
    mime_type: str | None = None,
    element_types: list[str] | None = None,
    table_count: int | None = None,
    image_count: int | None = None,
) -> list[Triple]:
    """The entity's own triples (its activity's come from activity_triples)."""
    triples = [
        iri(entity, RDF_TYPE, PROV_ENTITY),
        iri(entity, RDF_TYPE, ENTITY_TYPES[kind]),
        iri(entity, PROV_WAS_DERIVED_FROM, parent),
        iri(entity, PROV_WAS_GENERATED_BY, activity),
        literal(entity, RDFS_LABEL, label),
    ]
    optional = [
        (TG_PAGE_NUMBER, page_number),
        (TG_CHUNK_INDEX, chunk_index),
        (TG_CHAR_OFFSET, char_offset),
        (TG_CHAR_LENGTH, char_length),
        (TG_MIME_TYPE, mime_type),
        (TG_ELEMENT_TYPES, ",".join(element_types) if element_types is not None else None),
        (TG_TABLE_COUNT, table_count),
        (TG_IMAGE_COUNT, image_count),
    ]
    triples += [literal(entity, p, v) for p, v in optional if v is not None and v != ""]
    return triples


def image_detail_triples(
    image: str,
    element_id: str | None,
    width: int | None,
    height: int | None,
    size: int,
    coordinates: Coordinates | None,
) -> list[Triple]:
    triples = [literal(image, TG_BYTE_SIZE, size)]
    if element_id:
        triples.append(literal(image, TG_ELEMENT_ID, element_id))
    if width:
        triples.append(literal(image, TG_WIDTH, int(width)))
    if height:
        triples.append(literal(image, TG_HEIGHT, int(height)))
    box = bounding_box(coordinates)
    if coordinates and box:
        triples.append(literal(image, TG_BOUNDING_BOX, ",".join(f"{v:g}" for v in box)))
        triples.append(literal(image, TG_COORDINATE_SYSTEM, str(coordinates.get("system") or "PixelSpace")))
    return triples


def bounding_box(coordinates: Coordinates | None) -> tuple[float, float, float, float] | None:
    points = (coordinates.get("points") if coordinates else None) or []
    if not points:
        return None
    xs = [float(p[0]) for p in points]
    ys = [float(p[1]) for p in points]
    return (round(min(xs), 2), round(min(ys), 2), round(max(xs), 2), round(max(ys), 2))
