"""TrustGraph's librarian as a writer: a document it adds is decoded, one it removes is cleaned up.

The document row is written and removed by TrustGraph 2.11.1's own code
(trustgraph.tables.library.LibraryTableStore, PyPI sources: tests/trustgraph_code.py), the bytes put
at doc/{uuid4} in the bucket as its blob store does. Nothing passes through ud's upload log: the
sensor's sweep of the document table has to find both changes.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

import pytest

from tests import trustgraph_code
from tests.defs.test_sensors import apply_partition_requests, tick
from tests.defs.test_subsets import materialize
from ud_assets.defs.partitions import documents_partitions

pytestmark = pytest.mark.services

ALL = {"document", "elements", "sections", "images", "chunks", "provenance_triples"}
PUBLIC_PDF = Path(__file__).resolve().parents[1] / "corpus" / "public" / "pdf" / "unstructured-a1977-backus-p21.pdf"


@pytest.fixture
def trustgraph_library():
    trustgraph_code.use()
    from trustgraph.tables.library import LibraryTableStore

    store = LibraryTableStore(os.environ["CASSANDRA_HOST"], None, None, "librarian")
    yield store
    store.cluster.shutdown()


def trustgraph_adds(store, workspace: str, bucket: str, document_id: str, data: bytes, kind: str) -> uuid.UUID:
    """What TrustGraph's Librarian.add_document does: the blob at doc/{uuid4}, then the row."""
    from trustgraph.schema import DocumentMetadata

    from resources.s3 import make_client

    object_id = uuid.uuid4()
    make_client().put_object(Bucket=bucket, Key=f"doc/{object_id}", Body=data, ContentType=kind)
    document = DocumentMetadata(id=document_id, time=int(time.time()), kind=kind, title=document_id, tags=["tg"])
    asyncio.run(store.add_document(workspace, document, object_id))
    return object_id


def trustgraph_removes(store, workspace: str, bucket: str, document_id: str, object_id: uuid.UUID) -> None:
    """What TrustGraph's Librarian.remove_document does: the row, then the blob; nothing else."""
    from resources.s3 import make_client

    asyncio.run(store.remove_document(workspace, document_id))
    make_client().delete_object(Bucket=bucket, Key=f"doc/{object_id}")


def ticks_until(resource, instance, cursor, wanted, limit: int = 5):
    """Sensor ticks (as the daemon runs them) until wanted(result); the last result."""
    for _ in range(limit):
        result = tick(resource, instance, cursor)
        apply_partition_requests(instance, result)
        cursor = result.cursor
        if wanted(result):
            return result
    raise AssertionError(f"the sensor never saw it in {limit} ticks")


def test_a_document_trustgraph_adds_is_decoded_and_one_it_removes_is_cleaned_up(
    graph_cassandra_run, instance, trustgraph_library
):
    from ud_assets.defs.resources import LibrarianResource

    run = graph_cassandra_run
    if run.error:
        pytest.fail(run.error, pytrace=False)
    workspace = run.new_workspace()
    resource = LibrarianResource(backend="cassandra", workspace=workspace, bucket=run.bucket)
    lib = resource.get()
    first = tick(resource, instance, None)  # an empty library; the cursor as the daemon keeps it
    cursor = first.cursor

    data = PUBLIC_PDF.read_bytes()
    object_id = trustgraph_adds(trustgraph_library, workspace, run.bucket, "tg-paper.pdf", data, "application/pdf")
    assert lib.uploads_since(None) == []  # TrustGraph never writes ud's upload log
    found = ticks_until(resource, instance, cursor, lambda r: bool(r.run_requests))
    assert [r.partition_key for r in found.run_requests] == ["tg-paper.pdf"]
    assert instance.has_dynamic_partition(documents_partitions.name, "tg-paper.pdf")

    assert materialize(resource, instance, ["tg-paper.pdf"], ALL).success
    meta = lib.get_metadata("tg-paper.pdf")
    import hashlib

    assert meta.sha256 == hashlib.sha256(data).hexdigest() and meta.size == len(data)  # filled in once
    generation = lib.get_generation("tg-paper.pdf")
    assert generation is not None
    children = lib.list_children("tg-paper.pdf")
    assert children, "the decoded document has sections"
    from resources.model import document_iri

    subjects = [document_iri(i) for i in ("tg-paper.pdf", *(c.id for c in children))]
    assert lib.triples.query_subjects(subjects, collection=lib.collection) != []
    # TrustGraph still reads its row as its own (the two extra columns are ignored).
    listed = asyncio.run(trustgraph_library.list_documents(workspace))
    assert [d.id for d in listed if not d.parent_id] == ["tg-paper.pdf"]

    trustgraph_removes(trustgraph_library, workspace, run.bucket, "tg-paper.pdf", object_id)
    ticks_until(
        resource,
        instance,
        found.cursor,
        lambda r: not instance.has_dynamic_partition(documents_partitions.name, "tg-paper.pdf"),
    )
    assert lib.get_generation("tg-paper.pdf") is None
    assert lib.list_documents(include_children=True) == []  # every child row
    assert lib.triples.query_subjects(subjects, collection=lib.collection) == []  # every triple
    from botocore.exceptions import ClientError

    from resources.s3 import make_client

    for child in children:  # every child's object
        with pytest.raises(ClientError):
            make_client().head_object(Bucket=run.bucket, Key=f"doc/{child.object_id}")
    with pytest.raises(ClientError):
        make_client().head_object(Bucket=run.bucket, Key=f"doc/{generation.elements_object_id}")
