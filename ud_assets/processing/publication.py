"""Processing requests: a document's triples in the collections that asked for them.

In TrustGraph, adding a document does not decode it; a processing request does
(librarian.processing: document, flow, collection), and its collection decides where the extracted
triples go. Here a document is decoded once per generation into the librarian's own collection
(`Librarian.collection`, UD_COLLECTION, "default" unless set): lineage, `ud verify` and the asset
checks read that one, whoever asked. A processing request then *publishes* a copy of the
document's quads (its own, its pages', sections', images' and chunks', their activities and the
agents those name) into the request's collection, and removing the request removes that copy,
unless another live request names the same collection. A document without any request is in the
librarian's collection only, exactly as before requests were honoured.

Which request put the document in which collection is the document's Publication record
({request id: collection}); a new generation of the document refreshes every published copy.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from resources.model import GRAPH_SOURCE, Librarian, ProcessingRequest, Quad, document_iri
from resources.records import Publication
from ud_assets.decoding.provenance import PROV_WAS_ASSOCIATED_WITH, PROV_WAS_GENERATED_BY

DEFAULT_GRAPH = ""
PROCESSING_TAG = "ud/processing_request"  # a run's tag: the processing request it honours
COLLECTION_TAG = "ud/collection"  # ... and the collection that request names


def requests_of(publication: Publication | None) -> dict[str, str]:
    """{request id: collection} of a publication record."""
    return json.loads(publication.requests_json) if publication is not None else {}


def document_subjects(librarian: Librarian, document_id: str) -> list[str]:
    """The subjects of the document's own quads: it, its children at every depth, and the
    activities that generated them (agents are shared between documents: not included)."""
    ids, frontier = [document_id], [document_id]
    while frontier:
        below = [c.id for c in librarian.list_children(frontier.pop())]
        ids.extend(below)
        frontier.extend(below)
    subjects = {document_iri(i) for i in ids}
    for subject in sorted(subjects):
        for quad in librarian.triples.query(s=subject, p=PROV_WAS_GENERATED_BY, collection=librarian.collection):
            if quad.o.is_iri:
                subjects.add(quad.o.value)
    return sorted(subjects)


def document_quads(librarian: Librarian, subjects: Iterable[str]) -> list[Quad]:
    """The stored quads of these subjects in the librarian's collection, and the descriptions of
    the agents their activities name (so a reader of the copy can follow prov links to the end)."""
    quads = [q for s in subjects for q in librarian.triples.query(s=s, collection=librarian.collection)]
    agents = sorted({q.o.value for q in quads if q.p == PROV_WAS_ASSOCIATED_WITH and q.o.is_iri})
    quads += [q for a in agents for q in librarian.triples.query(s=a, collection=librarian.collection)]
    return quads


def _replace_copy(librarian: Librarian, collection: str, subjects: list[str], quads: list[Quad] | None) -> None:
    for graph in (GRAPH_SOURCE, DEFAULT_GRAPH):
        librarian.triples.delete_subjects(subjects, graph, collection)
    if quads:
        librarian.triples.insert(quads, collection)


def publish(librarian: Librarian, request: ProcessingRequest) -> int:
    """Honour one processing request for a decoded document: its quads copied into the request's
    collection (replacing an older copy) and the request recorded. Idempotent. Returns the quads copied."""
    copied = 0
    if request.collection != librarian.collection:  # ud's own collection holds them already
        subjects = document_subjects(librarian, request.document_id)
        quads = document_quads(librarian, subjects)
        _replace_copy(librarian, request.collection, subjects, quads)
        copied = len(quads)
    requests = requests_of(librarian.get_publication(request.document_id))
    requests[request.id] = request.collection
    _record(librarian, request.document_id, requests)
    return copied


def refresh(librarian: Librarian, document_id: str) -> list[str]:
    """After a new generation: every published copy replaced by the current quads. The collections."""
    collections = sorted(set(requests_of(librarian.get_publication(document_id)).values()) - {librarian.collection})
    if collections:
        subjects = document_subjects(librarian, document_id)
        quads = document_quads(librarian, subjects)
        for collection in collections:
            _replace_copy(librarian, collection, subjects, quads)
    return collections


def withdraw(librarian: Librarian, document_id: str, request_ids: Iterable[str]) -> list[str]:
    """Requests removed: their copies deleted where no remaining request names the same
    collection (and never from the librarian's own). The collections emptied of the document."""
    requests = requests_of(librarian.get_publication(document_id))
    gone = {requests.pop(r) for r in request_ids if r in requests}
    emptied = sorted(gone - set(requests.values()) - {librarian.collection})
    if emptied:
        subjects = document_subjects(librarian, document_id)
        for collection in emptied:
            _replace_copy(librarian, collection, subjects, None)
    _record(librarian, document_id, requests)
    return emptied


def _record(librarian: Librarian, document_id: str, requests: dict[str, str]) -> None:
    from resources.librarian import now_utc

    if requests:
        librarian.set_publication(Publication(document_id, json.dumps(requests, sort_keys=True), now_utc()))
    else:
        librarian.clear_publication(document_id)
