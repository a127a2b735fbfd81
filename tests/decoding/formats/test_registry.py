"""The registry of format families (formats/__init__.py): each kind has one family, and the
versions a generation records."""

from __future__ import annotations

import dataclasses

import pytest

from ud_assets.decoding import detect, formats


def test_every_kind_detection_knows_has_exactly_one_family():
    kinds = set(detect.EXTENSIONS.values()) | {"image/png", "image/tiff"}
    for kind in kinds:
        claimed = [family.name for family in formats.FAMILIES if family.decodes(kind)]
        assert len(claimed) == 1, (kind, claimed)
    assert formats.family_of("audio/mpeg") is formats.OTHER
    names = [family.name for family in (*formats.FAMILIES, formats.OTHER)]
    assert len(names) == len(set(names))


def test_the_families_answer_what_format_free_code_asks():
    assert formats.family_of(detect.DOC).name == "legacy_office"
    assert formats.family_of(detect.CSV).name == "delimited"
    assert [formats.page_label(kind) for kind in (detect.PDF, detect.PPTX, detect.PPT, detect.XLS, detect.DOCX)] == [
        "Page",
        "Slide",
        "Slide",
        "Sheet",
        None,
    ]
    assert formats.warm_imports(detect.TSV) == ("tsv", "csv")
    assert formats.warm_imports(detect.HTML) == ()
    assert formats.warm_imports("image/png") is None  # not known: warm everything


def test_a_batch_warms_the_parsers_of_its_kinds_and_every_one_when_a_kind_is_unknown():
    assert formats.warm_modules({detect.HTML, detect.MARKDOWN}) == formats.BASE_IMPORTS
    assert formats.warm_modules([detect.TSV, detect.DOCX, detect.ODT]) == (
        *formats.BASE_IMPORTS,
        *("tsv", "csv", "docx", "odt"),
    )
    assert formats.warm_modules(detect.PDF) == (*formats.BASE_IMPORTS, "pdf")  # one kind, as a lone document's
    everything = formats.warm_modules()
    assert "pdf" in everything and "xlsx" in everything
    assert formats.warm_modules([detect.HTML, "application/octet-stream"]) == everything
    assert formats.warm_modules([detect.HTML, ""]) == everything  # a row that declares no kind


def _bump(monkeypatch, name: str, version: str) -> None:
    bumped = tuple(
        dataclasses.replace(family, logic_version=version) if family.name == name else family
        for family in formats.FAMILIES
    )
    monkeypatch.setattr(formats, "FAMILIES", bumped)


def test_a_generation_records_its_familys_version(monkeypatch):
    shared = formats.SHARED_LOGIC_VERSION
    for family in formats.FAMILIES:  # from where every family is at its first version
        _bump(monkeypatch, family.name, "1")
    assert formats.decoder_version(detect.PDF) == f"{shared}.pdf-1"
    assert formats.versions_label() == shared  # every family at its first version
    _bump(monkeypatch, "pdf", "2")
    assert formats.decoder_version(detect.PDF) == f"{shared}.pdf-2"
    assert formats.decoder_version(detect.MARKDOWN) == f"{shared}.text-1"
    assert formats.versions_label() == f"{shared}.pdf-2"


@pytest.mark.parametrize(
    "recorded, label, current",
    [
        ("2.pdf-1", "2", True),
        ("2", "2", True),  # recorded before per-format versions: every family at 1
        ("2.pdf-1", "2.pdf-2", False),
        ("2.text-1", "2.pdf-2", True),  # another family's bump leaves it current
        ("2", "2.pdf-2", False),  # its family is not known: decoded again, to be safe
        ("2.pdf-2", "2.pdf-2", True),
        ("2.pdf-1", "3", False),
        ("2", "1", False),
    ],
)
def test_which_recorded_versions_are_current(recorded, label, current):
    assert formats.is_current(recorded, label) is current


def test_the_families_bumped_so_far_name_themselves_in_the_label():
    """text 2 (a .txt is text; RTF fragments), legacy_office 2 (a .doc of no known kind goes to
    LibreOffice): their documents, and theirs alone, are due after this upgrade."""
    assert formats.versions_label() == f"{formats.SHARED_LOGIC_VERSION}.legacy_office-2.text-2"
    assert formats.is_current(f"{formats.SHARED_LOGIC_VERSION}.pdf-1", formats.versions_label())
    assert not formats.is_current(f"{formats.SHARED_LOGIC_VERSION}.text-1", formats.versions_label())
