"""Legacy Office (formats/legacy_office.py): DOC and PPT through LibreOffice (issue 13)."""

from __future__ import annotations

import pytest

from tests import docgen
from ud_assets.decoding import detect
from ud_assets.decoding.decoder import decode
from ud_assets.decoding.model import DecodeError

# -- legacy Office through LibreOffice ----------------------------------------------------------


@pytest.fixture(scope="module")
def legacy():
    """.doc and .ppt made by LibreOffice from docgen's DOCX and PPTX, and all four decoded."""
    made = {"doc": docgen.doc(), "ppt": docgen.ppt()}
    sources = {"doc": docgen.docx_with_headings_table_picture(), "ppt": docgen.pptx_with_picture()}
    decoded = {}
    for kind in ("doc", "ppt"):
        decoded[kind] = decode(made[kind], f"r.{kind}", filename=f"r.{kind}")
        decoded[kind + "x"] = decode(sources[kind], f"r.{kind}x", filename=f"r.{kind}x")
    return made, decoded


def texts(result):
    return [e.text for e in result.elements]


def test_a_doc_decodes_as_its_docx_does(legacy):
    _made, decoded = legacy
    doc, docx = decoded["doc"], decoded["docx"]
    assert doc.document.mime_type == detect.DOC
    assert (
        texts(doc)
        == texts(docx)
        == [
            "Introduction",
            "This document introduces the widget.",
            "Details",
            "The widget has three parts.",
            "Part Weight Gear 10 g Spring 2 g",
            "",
            "Conclusion",
            "The widget works.",
        ]
    )
    assert [s.text for s in doc.sections] == [s.text for s in docx.sections]
    assert [s.type for s in doc.sections] == ["section"]
    # The picture comes out as DOCX's do: its bytes, type and size, in the same place.
    assert [(i.mime_type, i.width, i.height, i.data) for i in doc.images] == [
        ("image/png", 48, 36, docgen.docx_picture())
    ]
    assert [e.category for e in doc.elements] == [e.category for e in docx.elements]


def test_a_ppt_decodes_as_its_pptx_does(legacy):
    _made, decoded = legacy
    ppt, pptx = decoded["ppt"], decoded["pptx"]
    assert ppt.document.mime_type == detect.PPT
    assert texts(ppt) == texts(pptx)
    assert [(s.type, s.label, s.page_number) for s in ppt.sections] == [("page", "Slide 1", 1), ("page", "Slide 2", 2)]
    assert [s.text for s in ppt.sections] == [s.text for s in pptx.sections]
    assert [(i.mime_type, i.width, i.height, i.page_number) for i in ppt.images] == [("image/jpeg", 64, 48, 2)]
    assert [(i.mime_type, i.width, i.height, i.page_number) for i in pptx.images] == [("image/jpeg", 64, 48, 2)]


def test_a_damaged_doc_fails_naming_the_document_and_libreoffices_reason(legacy):
    made, _decoded = legacy
    damaged = made["doc"][: len(made["doc"]) // 2]
    with pytest.raises(DecodeError) as raised:
        decode(damaged, "half.doc", filename="uploads/half.doc")
    assert str(raised.value) == (
        "LibreOffice could not convert 'half.doc' (DOC) to DOCX: LibreOffice wrote no output "
        "(damaged, encrypted or not a document of this kind): Error: source file could not be loaded"
    )


def _soffice_processes(marker: str) -> list[int]:
    """Processes whose command line names `marker` (a private profile's folder)."""
    import os

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def test_conversion_has_a_time_limit_and_leaves_no_process_or_profile(legacy, tmp_path, monkeypatch):
    import tempfile

    from ud_assets.decoding.formats import legacy_office

    made, _decoded = legacy
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(DecodeError) as raised:
        legacy_office.convert(made["doc"], detect.DOC, "slow.doc", timeout_s=0.05, memory_mb=4096)
    assert (
        str(raised.value)
        == "LibreOffice could not convert 'slow.doc' (DOC) to DOCX: timed out after 0.05 s (UD_DECODE_TIMEOUT_S)"
    )
    assert _soffice_processes(str(tmp_path)) == []
    assert list(tmp_path.iterdir()) == []


def test_conversion_has_a_memory_limit(legacy, monkeypatch):
    from ud_assets.decoding.formats import legacy_office

    made, _decoded = legacy
    monkeypatch.setattr(legacy_office, "SOFFICE_BASE_MB", 100)  # far below what LibreOffice needs to start
    with pytest.raises(
        DecodeError,
        match=r"^LibreOffice could not convert 'big.doc' \(DOC\) to DOCX: LibreOffice ran out of memory \(UD_DECODE_MEMORY_MB, plus 100 MB for LibreOffice\)",
    ):
        legacy_office.convert(made["doc"], detect.DOC, "big.doc", timeout_s=120, memory_mb=1)


def test_parallel_conversions_each_have_a_private_profile(legacy, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from ud_assets.decoding.formats import legacy_office

    made, _decoded = legacy
    commands = []
    real_run = legacy_office._run

    def recording_run(command, *args):
        commands.append(command)
        return real_run(command, *args)

    monkeypatch.setattr(legacy_office, "_run", recording_run)
    jobs = [(made["doc"], detect.DOC), (made["ppt"], detect.PPT), (made["doc"], detect.DOC)]
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda job: legacy_office.convert(job[0], job[1], None, 240, 4096), jobs))
    assert [r[:2] for r in results] == [b"PK"] * 3
    profiles = {next(arg for arg in command if arg.startswith("-env:UserInstallation=")) for command in commands}
    assert len(profiles) == 3  # each conversion started (and restarted once) on its own profile
    assert len(commands) == 6


def test_without_libreoffice_the_error_says_how_to_install_it(monkeypatch):
    from ud_assets.decoding.formats import legacy_office

    monkeypatch.setattr(legacy_office, "soffice_path", lambda: None)
    with pytest.raises(DecodeError) as raised:
        legacy_office.convert(b"x", detect.PPT, "deck.ppt", timeout_s=10, memory_mb=100)
    assert str(raised.value) == (
        "LibreOffice could not convert 'deck.ppt' (PPT) to PPTX: LibreOffice is not installed "
        "(make setup installs libreoffice-*-nogui)"
    )
