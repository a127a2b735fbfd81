"""Processing requests honoured as TrustGraph defines them: the request's collection decides where
the document's triples go. On the embedded librarian with ud's own requests; on MinIO + Cassandra
with requests written and removed by TrustGraph 2.11.1's own librarian code."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import dagster as dg
import pytest

from tests import trustgraph_code
from tests.defs.test_sensors import apply_partition_requests, tick
from tests.defs.test_subsets import materialize
from ud_assets.definitions import defs
from ud_assets.defs.resources import LibrarianResource
from ud_assets.processing.publication import COLLECTION_TAG, PROCESSING_TAG, document_subjects, requests_of

ALL = {"document", "elements", "sections", "images", "chunks", "provenance_triples"}
PUBLIC = Path(__file__).resolve().parents[1] / "corpus" / "public"
DOC = "paper.pdf"


def quads_of(lib, collection: str) -> set[tuple]:
    """The document's quads in a collection (its subjects as the librarian's collection names them)."""
    subjects = document_subjects(lib, DOC)
    return {
        (q.s, q.p, q.o.value, q.o.datatype, q.g)
        for s in subjects
        for q in lib.triples.query(s=s, collection=collection)
    }


def run_requested(resource, instance, run: dg.RunRequest) -> None:
    """What the daemon launches for the sensor's run request: the job, on its partition, with its tags."""
    job = defs.resolve_job_def("decode_documents")
    result = job.execute_in_process(
        instance=instance,
        partition_key=run.partition_key,
        tags=run.tags,
        resources={"librarian": resource},
        raise_on_error=False,
    )
    assert result.success


def honour(resource, instance, cursor):
    """One tick; its processing runs launched. The tick's result."""
    result = tick(resource, instance, cursor)
    apply_partition_requests(instance, result)
    for run in result.run_requests:
        if PROCESSING_TAG in run.tags:
            run_requested(resource, instance, run)
    return result


def two_collections_then_one_removed(resource, instance, add_request, remove_request, read_collection=None):
    """read_collection(collection): the document's quads as another reader finds them there."""
    lib = resource.get()
    lib.add_document(DOC, "application/pdf", (PUBLIC / "pdf" / "unstructured-a1977-backus-p21.pdf").read_bytes())
    first = tick(resource, instance, None)
    apply_partition_requests(instance, first)
    assert materialize(resource, instance, [DOC], ALL).success
    own = quads_of(lib, lib.collection)
    assert len(own) > 50
    assert quads_of(lib, "research") == set()  # no request: the librarian's collection only

    add_request("req-research", "research")
    add_request("req-archive", "archive")
    asked = honour(resource, instance, first.cursor)
    runs = {r.tags[PROCESSING_TAG]: r for r in asked.run_requests if PROCESSING_TAG in r.tags}
    assert set(runs) == {"req-research", "req-archive"}
    assert {r.tags[COLLECTION_TAG] for r in runs.values()} == {"research", "archive"}
    assert all(r.run_key.startswith(f"processing:{i}@") for i, r in runs.items())  # the request id keys the run
    own = quads_of(lib, lib.collection)  # as the runs left it (the chunks' activities carry their run's time)
    assert quads_of(lib, "research") == own and quads_of(lib, "archive") == own
    assert requests_of(lib.get_publication(DOC)) == {"req-research": "research", "req-archive": "archive"}
    again = tick(resource, instance, asked.cursor)  # honoured: nothing more to run
    assert not [r for r in again.run_requests if PROCESSING_TAG in r.tags]

    remove_request("req-research")
    honour(resource, instance, again.cursor)
    assert quads_of(lib, "research") == set()  # that collection's triples, and nothing else
    assert quads_of(lib, "archive") == own and quads_of(lib, lib.collection) == own
    if read_collection is not None:
        assert read_collection("archive") and not read_collection("research")

    lib.remove_document(DOC)  # the document's removal takes every copy with it
    assert quads_of(lib, "archive") == set() and quads_of(lib, lib.collection) == set()


def test_processing_requests_on_the_embedded_librarian(tmp_path, instance):
    resource = LibrarianResource(backend="embedded", home=str(tmp_path / "ud"))
    lib = resource.get()
    two_collections_then_one_removed(
        resource,
        instance,
        lambda request_id, collection: lib.add_processing(DOC, collection, flow="default", id=request_id),
        lib.remove_processing,
    )


@pytest.mark.services
def test_processing_requests_written_by_trustgraphs_librarian(graph_cassandra_run, instance):
    run = graph_cassandra_run
    if run.error:
        pytest.fail(run.error, pytrace=False)
    trustgraph_code.use()
    from trustgraph.schema import ProcessingMetadata
    from trustgraph.tables.library import LibraryTableStore

    workspace = run.new_workspace()
    resource = LibrarianResource(backend="cassandra", workspace=workspace, bucket=run.bucket)
    store = LibraryTableStore(os.environ["CASSANDRA_HOST"], None, None, "librarian")
    try:

        def add(request_id: str, collection: str) -> None:
            request = ProcessingMetadata(
                id=request_id, document_id=DOC, time=int(time.time()), flow="default", collection=collection, tags=[]
            )
            asyncio.run(store.add_processing(workspace, request))

        def remove(request_id: str) -> None:
            asyncio.run(store.remove_processing(workspace, request_id))

        from resources.model import document_iri
        from tests.resources.cassandra.test_trustgraph_reader import trustgraph_reader

        tg = trustgraph_reader(workspace)

        def read(collection: str) -> list:  # TrustGraph's own reader, in the collection the request named
            return list(tg.get_s(collection, document_iri(DOC), limit=100))  # g=None: every graph

        two_collections_then_one_removed(resource, instance, add, remove, read)
        assert read("archive") == []  # removed with the document
    finally:
        store.cluster.shutdown()
