"""`ud verify [--repair]` and verify-before-skip: rows, objects and triples deleted behind the project's back."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from resources.model import CHUNK, GRAPH_SOURCE, IMAGE
from tests import docgen
from tests.defs.test_subsets import materialize
from ud_assets.cli import main
from ud_assets.decoding.ids import document_iri
from ud_assets.processing.verify import INCOMPLETE, OK, verify

REPO = Path(__file__).resolve().parents[2]
ALL = {"document", "elements", "sections", "images", "chunks", "provenance_triples"}
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def state(lib, doc_id: str) -> dict:
    """Everything stored for a document, read through the public interfaces (not the verifier)."""
    rows, frontier = {}, [doc_id]
    while frontier:
        children = [c for parent in frontier for c in lib.list_children(parent)]
        rows.update({c.id: (c.document_type, c.parent_id, c.sha256) for c in children})
        frontier = [c.id for c in children]
    objects = {i: lib.get_content(i) for i in rows}
    triples = sorted(
        (q.s, q.p, q.o.value)
        for s in [*rows, document_iri(doc_id)]
        for q in lib.triples.query(s=s, g=GRAPH_SOURCE, collection=lib.collection)
        if "Time" not in q.p  # timestamps change on rewrite
    )
    return {"rows": rows, "objects": objects, "triples": len(triples)}


@pytest.fixture
def decoded(librarian_resource, instance):
    lib = librarian_resource.get()
    lib.add_document("report.pdf", "application/pdf", docgen.pdf_with_text_and_image(), title="report.pdf")
    lib.add_document("handbook.docx", DOCX, docgen.docx_with_headings_table_picture(), title="handbook.docx")
    for key in ("report.pdf", "handbook.docx"):
        assert materialize(librarian_resource, instance, [key], ALL).success
    return lib


def children(lib, doc_id: str, kind: str):
    pages = lib.list_children(doc_id)
    return [c for c in pages if c.document_type == kind] + [
        c for p in pages for c in lib.list_children(p.id) if c.document_type == kind
    ]


def _cli_env(monkeypatch, librarian_resource, tmp_path):
    if librarian_resource.backend == "embedded":
        monkeypatch.delenv("CASSANDRA_HOST", raising=False)
        monkeypatch.setenv("UD_HOME", librarian_resource.home)
    else:
        monkeypatch.setenv("UD_BUCKET", librarian_resource.bucket)
    monkeypatch.setenv("UD_WORKSPACE", librarian_resource.workspace)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "no-instance"))  # no dagster.yaml: repair directly


@pytest.mark.timeout(600)
def test_verify_finds_what_was_deleted_behind_the_projects_back_and_repair_restores_it(
    decoded, librarian_resource, monkeypatch, tmp_path, capsys
):
    lib = decoded
    before = {d: state(lib, d) for d in ("report.pdf", "handbook.docx")}
    assert [verify(lib, lib.get_generation(d)).status for d in ("report.pdf", "handbook.docx")] == [OK, OK]

    page = children(lib, "report.pdf", "page")[1]
    image = children(lib, "report.pdf", IMAGE)[0]
    chunk = children(lib, "handbook.docx", CHUNK)[0]
    lib.documents.delete(lib.workspace, [page.id])  # a row
    lib.objects.delete(image.object_id)  # an object
    lib.triples.delete_subjects([chunk.id], GRAPH_SOURCE, lib.collection)  # a chunk's triples
    section = children(lib, "handbook.docx", "section")[0]
    lib.triples.delete_subjects([section.id], GRAPH_SOURCE, lib.collection)  # a section's triples

    report, handbook = (verify(lib, lib.get_generation(d)) for d in ("report.pdf", "handbook.docx"))
    assert report.status == handbook.status == INCOMPLETE
    assert any("rows missing" in p for p in report.problems) and any("objects missing" in p for p in report.problems)
    assert any("wrong number of triples" in p and section.id in p for p in handbook.problems)
    assert any("chunks without triples" in p for p in handbook.problems)

    _cli_env(monkeypatch, librarian_resource, tmp_path)
    assert main(["verify"]) == 1
    out = capsys.readouterr()
    assert "report.pdf\tincomplete" in out.out and "handbook.docx\tincomplete" in out.out
    assert "2 documents verified: 0 complete, 2 incomplete" in out.err

    assert main(["verify", "--repair"]) == 0
    assert "repaired 2 of 2" in capsys.readouterr().err
    assert main(["verify"]) == 0
    assert {d: state(lib, d) for d in before} == before  # exactly what the undisturbed run stored


def test_a_run_does_not_skip_an_incomplete_generation_and_says_it_repaired_it(decoded, librarian_resource, instance):
    lib = decoded
    before = state(lib, "report.pdf")
    image = children(lib, "report.pdf", IMAGE)[0]
    lib.documents.delete(lib.workspace, [image.id])
    lib.objects.delete(image.object_id)

    result = materialize(librarian_resource, instance, ["report.pdf"], ALL)  # no force
    assert result.success
    images = next(e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("images"))
    repaired = images.materialization.metadata["repaired"].value
    assert f"images of {image.parent_id} missing" in repaired
    assert state(lib, "report.pdf") == before
    # Complete again: the next run skips it.
    again = materialize(librarian_resource, instance, ["report.pdf"], ALL)
    sections = next(e for e in again.get_asset_materialization_events() if e.asset_key == dg.AssetKey("sections"))
    assert sections.materialization.metadata["up_to_date"].value is True


@pytest.mark.timeout(300)
def test_repair_goes_through_dagster_when_there_is_an_instance(tmp_path, instance):
    """`ud verify --repair` with DAGSTER_HOME: the repair is a run of that instance (the UI shows it).

    The command runs in its own process, as a person runs it (Dagster keeps per-process state
    about the instance it opened)."""
    from ud_assets.defs.resources import LibrarianResource

    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    resource = LibrarianResource(backend="embedded", home=str(tmp_path / "ud"))
    lib = resource.get()
    lib.add_document("notes.md", "text/markdown", docgen.markdown(), title="notes.md")
    assert materialize(resource, instance, ["notes.md"], ALL).success
    section = lib.list_children("notes.md")[0]
    lib.objects.delete(section.object_id)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CASSANDRA_", "UD_"))}
    env.update(UD_HOME=str(tmp_path / "ud"), DAGSTER_HOME=str(home), DO_NOT_TRACK="true", PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "ud_assets.cli", "verify", "--repair"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert "repaired 1 of 1 through Dagster" in done.stderr
    runs = subprocess.run(
        [
            sys.executable,
            "-c",
            "import dagster as dg\n"
            "with dg.DagsterInstance.get() as i:\n"
            "    print([(r.status.value, r.tags.get('ud/reason')) for r in i.get_runs()])",
        ],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert runs.stdout.strip() == "[('SUCCESS', 'repair')]"
    assert lib.objects.exists(section.object_id)


@pytest.mark.timeout(600)
def test_verify_compares_content_and_repair_rewrites_what_differs(
    decoded, librarian_resource, monkeypatch, tmp_path, capsys
):
    """A section's stored object rewritten with the same length and one letter changed: presence and
    counts are all right, the content is not. verify names the entity; --repair restores the bytes."""
    lib = decoded
    before = state(lib, "handbook.docx")
    section = children(lib, "handbook.docx", "section")[0]
    text = lib.get_content(section.id)
    position = next(i for i, byte in enumerate(text) if chr(byte).isalpha())
    altered = text[:position] + bytes([ord("x") if text[position] != ord("x") else ord("y")]) + text[position + 1 :]
    assert len(altered) == len(text) and altered != text
    lib.objects.put(section.object_id, altered, "text/plain")

    result = verify(lib, lib.get_generation("handbook.docx"))
    assert result.status == INCOMPLETE
    assert any("changed since they were stored" in p and section.id in p for p in result.problems), result.problems

    _cli_env(monkeypatch, librarian_resource, tmp_path)
    assert main(["verify", "handbook.docx"]) == 1
    assert main(["verify", "--repair", "handbook.docx"]) == 0
    assert lib.get_content(section.id) == text
    assert main(["verify", "handbook.docx"]) == 0
    assert state(lib, "handbook.docx") == before
