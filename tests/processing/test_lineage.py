"""Lineage and provenance export, from the triple store of both backends."""

import rdflib

from tests import docgen
from tests.defs.test_assets import children_tree, run, upload
from ud_assets.decoding.provenance import Triple
from ud_assets.decoding.serialize import serialize
from ud_assets.processing.lineage import document_quads, lineage


def test_lineage_from_an_image_back_to_the_document_with_positions(librarian_resource, instance):
    lib = librarian_resource.get()
    upload(lib, {"report.pdf": (docgen.pdf_with_text_and_image(), "application/pdf")})
    run(librarian_resource, instance, ["report.pdf"], raise_on_error=True)
    pages, images = children_tree(lib, "report.pdf")
    jpeg = next(i for i in images if i.kind == "image/jpeg")

    result = lineage(lib.triples, jpeg.id, lib.collection)
    entity, ancestors = result["entity"], result["ancestors"]
    assert entity["type"] == "image" and entity["page_number"] == 1
    assert entity["bounding_box"] == ",".join(f"{v:g}" for v in docgen.PDF_JPEG_BOX)
    assert [a["type"] for a in ancestors] == ["page", "document"]
    assert ancestors[0]["id"] == jpeg.parent_id and ancestors[0]["page_number"] == 1
    assert ancestors[0]["char_offset"] == 0 and ancestors[0]["char_length"] > 0
    assert ancestors[1]["id"] == "https://trustgraph.ai/doc/report.pdf"

    down = lineage(lib.triples, "report.pdf", lib.collection)["entity"]
    assert [c["type"] for c in down["children"]] == ["page", "page"]
    assert sum(1 for c in down["children"] for g in c.get("children", []) if g["type"] == "image") == 3
    assert all(any(g["type"] == "chunk" for g in c["children"]) for c in down["children"])
    page2 = down["children"][1]
    text = "\n\n".join(lib.get_content(p.id).decode() for p in sorted(pages, key=lambda p: p.title))
    assert (
        text[page2["char_offset"] : page2["char_offset"] + page2["char_length"]]
        == lib.get_content(page2["id"]).decode()
    )


def test_export_provenance_round_trips_through_rdflib(librarian_resource, instance):
    lib = librarian_resource.get()
    upload(lib, {"notes.md": (docgen.markdown(), "text/markdown")})
    run(librarian_resource, instance, ["notes.md"], raise_on_error=True, section_strategy="heading")
    quads = document_quads(lib.triples, "notes.md", lib.collection)
    assert len(set(quads)) == lib.triples.count(collection=lib.collection)  # the only document: all of the store
    triples = [Triple(q.s, q.p, q.o.value, "iri" if q.o.is_iri else "literal", q.o.datatype, q.g) for q in quads]
    dataset = rdflib.Dataset()
    dataset.parse(data=serialize(triples, "nquads"), format="nquads")
    assert len(list(dataset.quads((None, None, None, None)))) == len(set(quads))
    offsets = [o for _s, p, o, _g in dataset.quads((None, None, None, None)) if str(p).endswith("charOffset")]
    assert offsets and all(o.datatype == rdflib.XSD.integer for o in offsets)


def test_removing_a_decoded_document_leaves_nothing_behind(librarian_resource, instance):
    lib = librarian_resource.get()
    upload(lib, {"keep.md": (docgen.markdown(), "text/markdown")})
    run(librarian_resource, instance, ["keep.md"], raise_on_error=True)
    kept = lib.triples.count(collection=lib.collection)  # the store with keep.md alone: the reference
    stored_before = {c.id for c in lib.list_documents(include_children=True)}
    upload(lib, {"report.pdf": (docgen.pdf_with_text_and_image(), "application/pdf")})
    run(librarian_resource, instance, ["report.pdf"], raise_on_error=True)
    pages, images = children_tree(lib, "report.pdf")
    chunks = [c for p in pages for c in lib.list_children(p.id) if c.document_type == "chunk"]
    assert chunks
    assert lib.remove_document("report.pdf") == 1 + len(pages) + len(images) + len(chunks)
    assert not any(lib.exists(c.id) for c in pages + images + chunks)
    assert lib.triples.count(collection=lib.collection) == kept
    assert {c.id for c in lib.list_documents(include_children=True)} == stored_before
    assert lib.get_generation("report.pdf") is None


def test_chunks_have_exact_offsets_and_lineage_back_to_the_document(librarian_resource, instance):
    lib = librarian_resource.get()
    text = "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(30))
    upload(lib, {"long.md": (text.encode(), "text/markdown")})
    run(librarian_resource, instance, ["long.md"], raise_on_error=True, chunk_size=500, chunk_overlap=50)
    [section] = lib.list_children("long.md")
    section_text = lib.get_content(section.id).decode()
    chunks = [c for c in lib.list_children(section.id) if c.document_type == "chunk"]
    assert len(chunks) > 5
    for chunk in chunks:
        info = lineage(lib.triples, chunk.id, lib.collection)
        entity = info["entity"]
        assert (
            section_text[entity["char_offset"] : entity["char_offset"] + entity["char_length"]]
            == lib.get_content(chunk.id).decode()
        )
        assert [a["type"] for a in info["ancestors"]] == ["section", "document"]
        assert entity["document_span"][0] == info["ancestors"][0]["char_offset"] + entity["char_offset"]
    # New chunking options: new chunks replace the old ones, nothing else changes.
    run(librarian_resource, instance, ["long.md"], raise_on_error=True, chunk_size=800, chunk_overlap=0)
    rechunked = [c for c in lib.list_children(section.id) if c.document_type == "chunk"]
    assert rechunked and not {c.id for c in rechunked} & {c.id for c in chunks}
    assert not any(lib.triples.query(s=c.id, collection=lib.collection) for c in chunks)
    assert lib.list_children("long.md") == [section]
