"""The decoder's per-document records (resources.records) kept by the librarian, on both backends."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

from resources.records import Failure, Generation

T0 = datetime(2026, 3, 4, 5, 6, 7, 123000, tzinfo=UTC)  # milliseconds: what both stores keep


def generation(doc_id: str, elements: uuid.UUID | None = None, fingerprint: str = "fp1") -> Generation:
    return Generation(
        document_id=doc_id,
        fingerprint=fingerprint,
        sha256="ab" * 32,
        unstructured_version="0.27.35",
        decoder_version="2",
        config_json='{"strategy": "fast"}',
        elements_object_id=str(elements or uuid.uuid4()),
        time=T0,
        summary_json='{"sections": 3}',
    )


def failure(doc_id: str, attempts: int = 1, transient: bool = False) -> Failure:
    return Failure(
        document_id=doc_id,
        time=T0,
        sha256="cd" * 32,
        unstructured_version="0.27.35",
        decoder_version="2",
        error="PDF is encrypted",
        transient=transient,
        attempts=attempts,
    )


def test_generation_round_trip_and_replace(librarian):
    librarian.add_document("d1", "application/pdf", b"%PDF")
    assert librarian.get_generation("d1") is None
    g = generation("d1")
    librarian.set_generation(g)
    assert librarian.get_generation("d1") == g
    g2 = replace(g, fingerprint="fp2", summary_json="{}")
    librarian.set_generation(g2)
    assert librarian.get_generation("d1") == g2
    assert librarian.list_generations() == [g2]


def test_failures_ledger(librarian):
    assert librarian.list_failures() == []
    librarian.record_failure(failure("b", transient=True))
    librarian.record_failure(failure("a"))
    librarian.record_failure(failure("a", attempts=2))
    assert librarian.list_failures() == [failure("a", attempts=2), failure("b", transient=True)]
    librarian.clear_failure("a")
    librarian.clear_failure("never-failed")
    assert librarian.list_failures() == [failure("b", transient=True)]


def test_generations_and_failures_of_many_documents_are_read_by_id_as_one_at_a_time(librarian):
    """A batch's records in a few reads, past the backends' 500 ids a read: each as the single
    read returns it, a document without one left out, a repeated id once, an empty list nothing."""
    ids = [f"doc-{i:04d}" for i in range(620)]
    stored = {i: generation(i, fingerprint=f"fp-{i}") for i in ids[::3]}
    librarian.set_generations(list(stored.values()))
    for i in ids[1::5]:
        librarian.record_failure(failure(i, attempts=2))
    asked = [*ids, "never-seen", ids[0]]
    generations, failures = librarian.get_generations(asked), librarian.get_failures(asked)
    assert sorted(generations) == ids[::3] and sorted(failures) == ids[1::5]
    assert generations == stored and generations["doc-0600"] == librarian.get_generation("doc-0600")
    assert failures["doc-0606"] == librarian.get_failure("doc-0606") == failure("doc-0606", attempts=2)
    assert librarian.get_generations([]) == {} and librarian.get_failures([]) == {}


def test_remove_document_drops_records_and_elements_object(librarian):
    librarian.add_document("src", "application/pdf", b"%PDF")
    librarian.add_document("other", "application/pdf", b"%PDF")
    elements = uuid.uuid4()
    librarian.objects.put(elements, b'{"elements": []}', "application/json")
    librarian.set_generation(generation("src", elements))
    librarian.set_generation(generation("other"))
    librarian.record_failure(failure("src"))
    librarian.remove_document("src")
    assert librarian.get_generation("src") is None
    assert [f.document_id for f in librarian.list_failures()] == []
    assert not librarian.objects.exists(elements)
    assert librarian.get_generation("other") is not None
