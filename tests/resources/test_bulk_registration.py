"""Registering many documents and generations at once (an import), run against both backends."""

from __future__ import annotations

import hashlib
import random
import uuid
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from resources import librarian as librarian_module
from resources.model import CHUNK, DocumentMetadata, LibrarianError
from resources.records import Generation

T0 = datetime(2026, 12, 3, 9, 30, 15, 250000, tzinfo=UTC)  # milliseconds: what both stores keep


def record(librarian, id: str, **fields) -> DocumentMetadata:
    """The metadata of a document whose bytes some other tool stored."""
    values: dict = {
        "id": id,
        "kind": "text/plain",
        "object_id": uuid.uuid5(uuid.NAMESPACE_URL, id),
        "time": T0,
        "workspace": librarian.workspace,
        "size": len(id),
        "sha256": hashlib.sha256(id.encode()).hexdigest(),
    }
    return DocumentMetadata(**{**values, **fields})


def generation(id: str, unstructured: str = "0.18.0") -> Generation:
    return Generation(
        document_id=id,
        fingerprint=id[:32],
        sha256=hashlib.sha256(id.encode()).hexdigest(),
        unstructured_version=unstructured,
        decoder_version="7",
        config_json='{"strategy": "fast"}',
        elements_object_id=str(uuid.uuid5(uuid.NAMESPACE_OID, id)),
        time=T0,
    )


def test_registered_documents_are_stored_listed_and_logged_in_the_given_order(librarian, monkeypatch):
    # Several store calls a registration (batches of 400 here), and more rows than one Cassandra
    # batch holds: the split must not lose, duplicate or reorder anything.
    monkeypatch.setattr(librarian_module, "REGISTER_BATCH", 400)
    librarian.add_document("uploaded-first", "text/plain", b"an ordinary upload")
    cursor = librarian.uploads_since(None)[-1].cursor
    ids = [f"imported/{i:05d}.txt" for i in range(1100)]
    random.Random(15).shuffle(ids)  # the log follows the given order, not the ids'
    records = [record(librarian, i, title=f"title of {i}", tags=("import",)) for i in ids]
    records[7] = replace(records[7], metadata=(("urn:s", True, "urn:p", True, "o", False),))

    assert librarian.register_documents(records) == records
    assert librarian.get_metadata(ids[7]) == records[7]
    assert librarian.get_metadata(ids[-1]) == records[-1]
    listed = [d.id for d in librarian.iter_documents(page=300)]
    assert listed == sorted([*ids, "uploaded-first"])
    events = []
    while page := librarian.uploads_since(cursor, limit=500):
        events += page
        cursor = page[-1].cursor
    assert [(e.id, e.event, e.sha256) for e in events] == [(r.id, "added", r.sha256) for r in records]


def test_taken_ids_are_skipped_so_an_interrupted_import_is_run_again(librarian):
    uploaded = librarian.add_document("a.txt", "text/plain", b"uploaded by hand")
    records = [record(librarian, "a.txt"), record(librarian, "b.txt"), record(librarian, "c.txt")]
    assert [m.id for m in librarian.register_documents(records[:2])] == ["b.txt"]
    assert librarian.get_metadata("a.txt") == uploaded  # neither replaced...
    assert [m.id for m in librarian.register_documents(records)] == ["c.txt"]
    assert librarian.register_documents(records) == []
    # ...nor logged again: the sensor sees each document once.
    assert [e.id for e in librarian.uploads_since(None)] == ["a.txt", "b.txt", "c.txt"]
    assert librarian.register_documents([]) == []


FAULTS = [
    ({"document_type": CHUNK, "parent_id": "good-0"}, "not a source document"),
    ({"workspace": "someone-else"}, "belongs to workspace"),
    ({"sha256": "ABC"}, "sha256"),
    ({"size": -1}, "size"),
    ({"kind": " "}, "kind"),
    ({"id": "../escape"}, "'..'"),
    ({"id": "good-0"}, "registered twice"),
]


def test_a_bad_record_stops_the_registration_before_anything_is_written(librarian):
    # One librarian for every fault: a fresh Cassandra workspace costs a keyspace each.
    good = [record(librarian, f"good-{i}") for i in range(3)]
    for fault, message in FAULTS:
        with pytest.raises(LibrarianError, match=message):
            librarian.register_documents([*good, replace(record(librarian, "bad"), **fault)])
    assert list(librarian.iter_documents()) == []
    assert librarian.uploads_since(None) == []


def test_kind_and_time_are_stored_as_add_document_stores_them(librarian):
    (registered,) = librarian.register_documents(
        [record(librarian, "padded", kind=" text/plain ", time=datetime(2026, 12, 3, 9, 30, 15, 250999))]
    )
    assert registered.kind == "text/plain" and registered.time == T0  # UTC, to the millisecond
    assert librarian.get_metadata("padded") == registered


def test_generations_set_many_at_once_replace_and_page_like_single_ones(librarian, monkeypatch):
    monkeypatch.setattr(librarian_module, "REGISTER_BATCH", 400)
    ids = [f"doc-{i:04d}" for i in range(1100)]
    librarian.set_generation(generation(ids[0], unstructured="0.17.0"))
    generations = [generation(i) for i in reversed(ids)]
    librarian.set_generations(generations)
    assert librarian.get_generation(ids[0]) == generation(ids[0])  # replaced
    paged, after = [], ""
    while page := librarian.generations_after(after, 450):
        paged += page
        after = page[-1].document_id
    assert paged == sorted(generations, key=lambda g: g.document_id)
    librarian.set_generations([])
    with pytest.raises(LibrarianError, match="document id"):
        librarian.set_generations([generation("ok"), replace(generation("x"), document_id="")])
    assert librarian.get_generation("ok") is None  # checked before writing
