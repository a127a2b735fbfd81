"""Every asset check reads back what was stored, fails when that is wrong, and names the document
and the entity; on both librarians.

Each fault is made in storage, where it would really happen: either while the run writes (a
store that drops one image object, one chunk row, one triple) or afterwards, behind the project's
back (a section's text rewritten with one letter changed, a charOffset one off). A fault made
afterwards leaves the generation looking complete, so the next ordinary run skips decoding it, and
its checks still read what is stored. The other document of the batch stays good and is not named.
"""

from __future__ import annotations

import pytest

from resources.model import CHUNK, GRAPH_SOURCE, IMAGE, Child, Quad, Term
from tests import docgen
from tests.defs.test_subsets import materialize
from ud_assets.decoding.provenance import TG_CHAR_OFFSET

ALL = {"document", "elements", "sections", "images", "chunks", "provenance_triples"}
BAD, GOOD = "bad.pdf", "good.md"
CHECKS = {
    "offsets_exact": True,
    "no_stale_children": True,
    "children_present": True,
    "chunk_offsets_exact": True,
    "triple_count_consistent": True,
}


@pytest.fixture
def resource(librarian_resource, monkeypatch):
    # Each document's triples in writes of their own: a tampered write (tamper_with_one_triple) then
    # holds one document's quads, as the tests' choosers assume (a batch groups them on Cassandra).
    monkeypatch.setenv("UD_GROUP_LINGER_S", "0")
    lib = librarian_resource.get()
    lib.add_document(BAD, "application/pdf", docgen.pdf_with_text_and_image(), title=BAD)
    lib.add_document(GOOD, "text/markdown", docgen.markdown(), title=GOOD)
    return librarian_resource


def verdicts(result) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def evaluation(result, check: str):
    [found] = [e for e in result.get_asset_check_evaluations() if e.check_name == check]
    return found


def assert_fails_naming(result, check: str, *entities: str) -> str:
    """The check failed for BAD only, and its description names every entity given."""
    found = evaluation(result, check)
    assert found.passed is False, f"{check} passed"
    rows = found.metadata["failing_documents"].value.records
    assert [r.data["document_id"] for r in rows] == [BAD]
    assert found.metadata["documents_checked"].value == 2
    assert found.description.startswith(f"{BAD}: ")
    for entity in entities:
        assert entity in found.description, f"{entity!r} not named in {found.description!r}"
    return found.description


def children(lib, kind: str) -> list:
    pages = lib.list_children(BAD)
    below = [c for p in pages for c in lib.list_children(p.id)]
    return [c for c in pages + below if c.document_type == kind]


def test_all_checks_pass_when_everything_is_stored(resource, instance):
    result = materialize(resource, instance, [BAD, GOOD], ALL)
    assert result.success
    assert verdicts(result) == CHECKS
    # and again on a run that finds both generations current: the checks still read them back
    again = materialize(resource, instance, [BAD, GOOD], ALL)
    assert verdicts(again) == CHECKS
    assert all(e.metadata["documents_checked"].value == 2 for e in again.get_asset_check_evaluations())


def test_a_section_rewritten_with_one_letter_changed_is_named_with_its_element(resource, instance):
    assert materialize(resource, instance, [BAD, GOOD], ALL).success
    lib = resource.get()
    page = children(lib, "page")[0]
    text = lib.get_content(page.id)
    at = next(i for i, c in enumerate(text) if chr(c).isalpha())  # the first element's first letter
    changed = text[:at] + (b"Q" if text[at : at + 1] != b"Q" else b"R") + text[at + 1 :]
    lib.objects.put(page.object_id, changed, "text/plain")  # same length: the row still looks right

    result = materialize(resource, instance, [BAD, GOOD], ALL)
    assert result.success  # the document is current: nothing decoded again
    description = assert_fails_naming(result, "offsets_exact", page.id)
    assert "stored text is not the document's" in description
    assert "element " in description  # the element-offset loop names which element moved
    assert verdicts(result)["triple_count_consistent"] is True


def test_a_stored_char_offset_one_off_is_named(resource, instance):
    assert materialize(resource, instance, [BAD, GOOD], ALL).success
    lib = resource.get()
    page = children(lib, "page")[1]
    quads = lib.triples.query(s=page.id, g=GRAPH_SOURCE, collection=lib.collection)
    moved = [one_off(q) if q.p == TG_CHAR_OFFSET else q for q in quads]
    assert moved != quads
    lib.triples.delete_subjects([page.id], GRAPH_SOURCE, lib.collection)
    lib.triples.insert(moved, lib.collection)

    result = materialize(resource, instance, [BAD, GOOD], ALL)
    description = assert_fails_naming(result, "offsets_exact", page.id)
    assert "charOffset/charLength" in description
    assert verdicts(result)["triple_count_consistent"] is True  # as many triples as before: only the value is wrong


def test_an_image_object_not_written_is_named(resource, instance, monkeypatch):
    lib = resource.get()
    objects = type(lib.objects)
    real_put = objects.put
    dropped: list = []

    def put_all_but_one_image(self, object_id, data, content_type):
        if content_type.startswith("image/") and not dropped:
            dropped.append(object_id)  # the row is written, its object never is
            return None
        return real_put(self, object_id, data, content_type)

    monkeypatch.setattr(objects, "put", put_all_but_one_image)
    result = materialize(resource, instance, [BAD, GOOD], ALL)
    [image] = [c for c in children(lib, IMAGE) if c.object_id == dropped[0]]
    description = assert_fails_naming(result, "children_present", image.id)
    assert "has no object" in description


def test_an_image_row_not_written_is_named_by_children_present(resource, instance, monkeypatch):
    """The image's row is read back by id, below its page: one not written is named, its page is not."""
    lib = resource.get()
    documents = type(lib.documents)
    real_upsert = documents.upsert_many
    dropped: list = []

    def upsert_all_but_one_image(self, metas):
        metas = list(metas)
        first = next((m for m in metas if m.document_type == IMAGE), None)
        if first is not None and not dropped:
            dropped.append(first)
            metas = [m for m in metas if m.id != first.id]
        return real_upsert(self, metas)

    monkeypatch.setattr(documents, "upsert_many", upsert_all_but_one_image)
    result = materialize(resource, instance, [BAD, GOOD], ALL)
    [image] = dropped
    description = assert_fails_naming(result, "children_present", image.id)
    assert f"{image.id} has no row" in description
    assert image.parent_id not in description.replace(image.id, "")  # the page's own row is there


def test_a_page_object_deleted_is_named_by_children_present(resource, instance):
    assert materialize(resource, instance, [BAD, GOOD], ALL).success
    lib = resource.get()
    page = children(lib, "page")[0]
    lib.objects.delete(page.object_id)  # its row stays: the text the offset check reads is gone

    result = materialize(resource, instance, [BAD, GOOD], ALL)
    description = assert_fails_naming(result, "children_present", page.id)
    assert f"has no object ({page.object_id})" in description


def test_a_chunk_row_not_written_is_named(resource, instance, monkeypatch):
    lib = resource.get()
    documents = type(lib.documents)
    real_upsert = documents.upsert_many
    dropped: list[str] = []

    def upsert_all_but_one_chunk(self, metas):
        metas = list(metas)
        first = next((m for m in metas if m.document_type == CHUNK and m.parent_id.startswith("urn:page:")), None)
        if first is not None and not dropped:
            dropped.append(first.id)
            metas = [m for m in metas if m.id != first.id]
        return real_upsert(self, metas)

    monkeypatch.setattr(documents, "upsert_many", upsert_all_but_one_chunk)
    result = materialize(resource, instance, [BAD, GOOD], ALL)
    description = assert_fails_naming(result, "chunk_offsets_exact", dropped[0])
    assert "has no row" in description


def test_a_chunk_stored_with_another_text_is_named(resource, instance):
    assert materialize(resource, instance, [BAD, GOOD], ALL).success
    lib = resource.get()
    chunk = children(lib, CHUNK)[0]
    text = lib.get_content(chunk.id)
    changed = text[:-1] + (b"#" if text[-1:] != b"#" else b"%")
    lib.put_children([Child(chunk.parent_id, chunk.id, "text/plain", changed, CHUNK, chunk.title, tuple(chunk.tags))])
    result = materialize(resource, instance, [BAD, GOOD], {"chunks"})
    description = assert_fails_naming(result, "chunk_offsets_exact", chunk.id)
    assert "stored text is not" in description


def tamper_with_one_triple(monkeypatch, lib, choose, change) -> list[Quad]:
    """Make the triple store write the first quad `choose` picks as `change` makes it (None: not at
    all), once; returns [that quad] once written."""
    triples = type(lib.triples)
    real_insert = triples.insert
    done: list[Quad] = []

    def insert(self, quads, collection="default"):
        quads = list(quads)
        victim = None if done else next((q for q in quads if choose(q, quads)), None)
        if victim is not None:
            done.append(victim)
            quads = [q if q is not victim else change(q) for q in quads]
            quads = [q for q in quads if q is not None]
        return real_insert(self, quads, collection)

    monkeypatch.setattr(triples, "insert", insert)
    return done


def one_off(quad: Quad) -> Quad:
    return Quad(quad.s, quad.p, Term(str(int(quad.o.value) + 1), datatype=quad.o.datatype), quad.g)


def test_a_chunk_whose_char_offset_is_stored_one_off_is_named(resource, instance, monkeypatch):
    def a_chunk_offset_of_bad(quad, batch):  # BAD's chunks: only it has pages
        of_pages = any(q.o.value.startswith("urn:page:") for q in batch)
        return of_pages and quad.p == TG_CHAR_OFFSET and quad.s.startswith("urn:chunk:")

    moved = tamper_with_one_triple(monkeypatch, resource.get(), a_chunk_offset_of_bad, one_off)
    result = materialize(resource, instance, [BAD, GOOD], ALL)
    assert moved, "no chunk offset was written"
    assert_fails_naming(result, "chunk_offsets_exact", moved[0].s)


def test_triple_count_consistent_names_the_entity_missing_a_triple(resource, instance, monkeypatch):
    def an_image_triple(quad, batch):  # only BAD has images
        return quad.s.startswith("urn:image:")

    dropped = tamper_with_one_triple(monkeypatch, resource.get(), an_image_triple, lambda quad: None)
    result = materialize(resource, instance, [BAD, GOOD], ALL - {"chunks"})
    assert dropped, "no image triple was written"
    assert_fails_naming(result, "triple_count_consistent", dropped[0].s)


def test_no_stale_children_names_a_child_of_another_generation(resource, instance):
    lib = resource.get()
    lib.put_children(
        [Child(BAD, "urn:section:left-over", "text/plain", b"old", "section", "Old", ("generation:" + "0" * 32,))]
    )
    result = materialize(resource, instance, [BAD, GOOD], {"document", "elements", "sections"})
    assert_fails_naming(result, "no_stale_children", "urn:section:left-over")
