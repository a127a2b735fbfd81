import dataclasses
from dataclasses import fields

from ud_assets.decoding import detect, formats, ids
from ud_assets.decoding.model import DecoderConfig

MD = detect.MARKDOWN


def test_entity_ids_are_deterministic_and_depend_on_every_input():
    fp = ids.fingerprint("a" * 64, "0.27.35", DecoderConfig(), MD)
    first = ids.entity_id("doc-1", fp, "page", 1)
    assert first == ids.entity_id("doc-1", fp, "page", 1)
    assert first.startswith("urn:page:")
    others = {
        ids.entity_id("doc-2", fp, "page", 1),
        ids.entity_id("doc-1", fp, "page", 2),
        ids.entity_id("doc-1", fp, "section", 1),
        ids.entity_id("doc-1", ids.fingerprint("b" * 64, "0.27.35", DecoderConfig(), MD), "page", 1),
        ids.entity_id("doc-1", ids.fingerprint("a" * 64, "0.28.0", DecoderConfig(), MD), "page", 1),
        ids.entity_id(
            "doc-1", ids.fingerprint("a" * 64, "0.27.35", DecoderConfig(section_strategy="heading"), MD), "page", 1
        ),
    }
    assert first not in others and len(others) == 6


def test_the_fingerprint_covers_every_decoder_option_and_keeps_its_value():
    assert list(DecoderConfig().as_dict()) == [f.name for f in fields(DecoderConfig)]
    # Stored generations are keyed by fingerprints: a new value re-decodes every document, so
    # it changes only with SHARED_LOGIC_VERSION (update these then), and a format family's own
    # version changes its documents' only (below).
    # (A PDF: its family is still at its first version; text's bump to 2 changed Markdown's.)
    assert ids.fingerprint("a" * 64, "0.27.35", DecoderConfig(), detect.PDF) == "ad707c00fb8373d598d154c80234fd61"
    options = DecoderConfig(
        strategy="fast",
        languages=("eng", "deu"),
        section_strategy="size",
        section_element_count=3,
        section_max_size=99,
        section_within_pages=True,
    )
    assert ids.fingerprint("a" * 64, "0.27.35", options, detect.PDF) == "ded49134198376b67e4bd449a8d4c97f"


def test_a_bump_of_one_familys_version_changes_only_its_documents_fingerprints(monkeypatch):
    config = DecoderConfig()
    kinds = (detect.PDF, detect.CSV, detect.MARKDOWN, detect.DOCX)
    first = tuple(dataclasses.replace(family, logic_version="1") for family in formats.FAMILIES)
    monkeypatch.setattr(formats, "FAMILIES", first)  # from where every family is at its first version
    before = {kind: ids.fingerprint("a" * 64, "0.27.35", config, kind) for kind in kinds}
    assert len(set(before.values())) == 1  # every family at its first version: as before families had one
    bumped = tuple(
        dataclasses.replace(family, logic_version="2") if family.name == "delimited" else family
        for family in formats.FAMILIES
    )
    monkeypatch.setattr(formats, "FAMILIES", bumped)
    after = {kind: ids.fingerprint("a" * 64, "0.27.35", config, kind) for kind in kinds}
    assert [kind for kind in kinds if after[kind] != before[kind]] == [detect.CSV]


def test_document_iri_keeps_iris_and_places_plain_ids_under_the_doc_namespace():
    assert ids.document_iri("https://trustgraph.ai/doc/abc") == "https://trustgraph.ai/doc/abc"
    assert ids.document_iri("urn:x:1") == "urn:x:1"
    assert ids.document_iri("report 2024/q1") == "https://trustgraph.ai/doc/report%202024%2Fq1"
