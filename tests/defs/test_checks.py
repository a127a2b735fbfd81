"""Every asset check fails when what it guards is broken, and names the document.

Each fault is injected where it would really happen (a wrong offset out of the decoder, a child
the store lost, a child of another generation left behind, a triple the store dropped, a chunk cut
at the wrong place); the other document of the batch stays good and is not named.
"""

import dataclasses

import pytest

from resources.model import Child
from tests import docgen
from tests.defs.test_subsets import materialize
from ud_assets.decoding import chunking
from ud_assets.defs.resources import LibrarianResource
from ud_assets.processing import elements as elements_module
from ud_assets.processing import runner
from ud_assets.processing.model import Built

ALL = {"document", "elements", "sections", "images", "chunks", "provenance_triples"}
BAD, GOOD = "bad.pdf", "good.md"


@pytest.fixture
def resource(tmp_path):
    resource = LibrarianResource(backend="embedded", home=str(tmp_path / "ud"))
    lib = resource.get()
    lib.add_document(BAD, "application/pdf", docgen.pdf_with_text_and_image(), title=BAD)
    lib.add_document(GOOD, "text/markdown", docgen.markdown(), title=GOOD)
    return resource


def evaluation(result, check: str):
    [found] = [e for e in result.get_asset_check_evaluations() if e.check_name == check]
    return found


def assert_fails_naming_bad(result, check: str) -> None:
    found = evaluation(result, check)
    assert found.passed is False
    rows = found.metadata["failing_documents"].value.records
    assert [r.data["document_id"] for r in rows] == [BAD]
    assert found.metadata["documents_checked"].value == 2
    assert found.description.startswith(f"{BAD}: ")


def only_for_bad(real, fault):
    """Wrap a stage so that the fault applies to the bad document only."""

    def wrapped(attempt, *args, **kwargs):
        return fault(attempt, *args, **kwargs) if attempt.document_id == BAD else real(attempt, *args, **kwargs)

    return wrapped


def test_all_checks_pass_on_good_documents(resource, instance):
    result = materialize(resource, instance, [BAD, GOOD], ALL)
    assert result.success
    assert {e.check_name: e.passed for e in result.get_asset_check_evaluations()} == {
        "offsets_exact": True,
        "no_stale_children": True,
        "children_present": True,
        "chunk_offsets_exact": True,
        "triple_count_consistent": True,
    }


def test_offsets_exact_fails_on_a_section_one_character_off(resource, instance, monkeypatch):
    def shifted(attempt, elements):
        built = elements_module.build(attempt, elements)
        first = dataclasses.replace(built.sections[0], char_offset=built.sections[0].char_offset + 1)
        return Built([first, *built.sections[1:]], built.images)

    monkeypatch.setattr(runner, "build", only_for_bad(elements_module.build, shifted))
    assert_fails_naming_bad(
        materialize(resource, instance, [BAD, GOOD], {"document", "elements", "sections"}), "offsets_exact"
    )


def test_children_present_fails_when_the_store_loses_an_image(resource, instance, monkeypatch):
    lib = resource.get()
    real_put = type(lib).put_children

    def losing_put(self, children, known_parents=()):
        return real_put(
            self,
            [
                c
                for c in children
                if not (c.document_type == "image" and c.title == "Image 1" and c.parent_id.startswith("urn:page:"))
            ],
            known_parents,
        )

    monkeypatch.setattr(type(lib), "put_children", losing_put)
    result = materialize(resource, instance, [BAD, GOOD], {"document", "elements", "sections", "images"})
    assert_fails_naming_bad(result, "children_present")


def test_no_stale_children_fails_on_a_child_of_another_generation(resource, instance):
    lib = resource.get()
    lib.put_children(
        [Child(BAD, "urn:section:left-over", "text/plain", b"old", "section", "Old", ("generation:" + "0" * 32,))]
    )
    result = materialize(resource, instance, [BAD, GOOD], {"document", "elements", "sections"})
    assert_fails_naming_bad(result, "no_stale_children")
    assert "urn:section:left-over" in evaluation(result, "no_stale_children").description


def test_triple_count_consistent_fails_when_the_store_drops_one_triple(resource, instance, monkeypatch):
    lib = resource.get()
    real_insert = lib.triples.insert

    def dropping_insert(quads, collection="default"):
        quads = list(quads)
        if any(BAD in q.s for q in quads):
            quads = quads[:-1]
        return real_insert(quads, collection)

    monkeypatch.setattr(lib.triples, "insert", dropping_insert)
    assert_fails_naming_bad(materialize(resource, instance, [BAD, GOOD], ALL - {"chunks"}), "triple_count_consistent")


def test_chunk_offsets_exact_fails_on_a_chunk_off_its_offset(resource, instance, monkeypatch):
    real_chunk_text = chunking.chunk_text

    def shifted(text, *args, **kwargs):
        chunks = real_chunk_text(text, *args, **kwargs)
        return [dataclasses.replace(chunks[0], offset=chunks[0].offset + 1), *chunks[1:]]

    monkeypatch.setattr(chunking, "chunk_text", shifted)
    real_stage = runner.chunks_stage

    def only_bad(attempt, *args, **kwargs):
        if attempt.document_id != BAD:
            monkeypatch.setattr(chunking, "chunk_text", real_chunk_text)
            try:
                return real_stage(attempt, *args, **kwargs)
            finally:
                monkeypatch.setattr(chunking, "chunk_text", shifted)
        return real_stage(attempt, *args, **kwargs)

    monkeypatch.setattr(runner, "chunks_stage", only_bad)
    assert_fails_naming_bad(materialize(resource, instance, [BAD, GOOD], ALL), "chunk_offsets_exact")
