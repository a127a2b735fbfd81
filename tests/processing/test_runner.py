"""processing.runner: whose fault a failure is, and stages that accept an empty result."""

import dagster as dg
import pytest

from tests import docgen
from tests.defs.test_subsets import materialize
from ud_assets.decoding.model import DecodeError, DecoderConfig
from ud_assets.defs.resources import LibrarianResource
from ud_assets.processing import runner
from ud_assets.processing.model import DocumentFailed, MissingInput
from ud_assets.processing.runner import document_failure, process_document

ALL = ("document", "elements", "sections", "images", "chunks", "provenance_triples")


@pytest.fixture
def resource(tmp_path):
    return LibrarianResource(backend="embedded", home=str(tmp_path / "ud"))


@pytest.mark.parametrize(
    ("error", "cause", "transient"),
    [
        (DecodeError("encrypted PDF: a password is needed"), "encrypted PDF: a password is needed", False),
        (MemoryError(), "ran out of memory while decoding", False),
        (ConnectionRefusedError("refused"), "storage unavailable: ConnectionRefusedError: refused", True),
    ],
)
def test_failures_caused_by_the_document_or_a_server_name_the_document(error, cause, transient):
    failure = document_failure("report.pdf", error)
    assert (failure.document_id, failure.cause, failure.transient) == ("report.pdf", cause, transient)
    assert str(failure) == f"report.pdf: {cause}"


@pytest.mark.parametrize(
    "error",
    [
        KeyError("section"),
        TypeError("unhashable"),
        AttributeError("x"),
        MissingInput("report.pdf", "materialize elements first"),
    ],
)
def test_a_bug_or_a_missing_input_is_not_the_documents_fault(error):
    assert document_failure("report.pdf", error) is None


def test_a_bug_in_a_stage_propagates_with_its_own_type(resource, monkeypatch):
    lib = resource.get()
    lib.add_document("notes.md", "text/markdown", docgen.markdown(), title="notes.md")

    def broken_stage(*args, **kwargs):
        raise KeyError("a bug of ours")

    monkeypatch.setattr(runner, "sections_stage", broken_stage)
    with pytest.raises(KeyError, match="a bug of ours"):
        process_document(lib, "notes.md", DecoderConfig(), ALL)


def test_a_program_error_fails_the_run_with_its_traceback_and_never_blocks_a_later_run(resource, instance, monkeypatch):
    lib = resource.get()
    lib.add_document(
        "handbook.docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        docgen.docx_with_headings_table_picture(),
        title="handbook.docx",
    )

    def broken_images(*args, **kwargs):
        raise ZeroDivisionError("division by zero in our own code")

    monkeypatch.setattr(runner, "images_stage", broken_images)
    failed = materialize(resource, instance, ["handbook.docx"], set(ALL))
    assert not failed.success
    [failure] = failed.get_step_failure_events()
    cause = failure.step_failure_data.error.cause  # the exception the step raised, with its traceback
    assert cause.cls_name == "ZeroDivisionError"
    assert "broken_images" in "".join(cause.stack)  # the traceback reaches the run log
    assert lib.list_failures() == []  # never recorded against the document

    monkeypatch.undo()
    fixed = materialize(resource, instance, ["handbook.docx"], set(ALL))  # no force needed
    assert fixed.success
    assert instance.get_materialized_partitions(dg.AssetKey("provenance_triples")) == {"handbook.docx"}


def test_a_document_failure_is_recorded_in_the_ledger(resource, instance):
    lib = resource.get()
    lib.add_document("broken.pdf", "application/pdf", docgen.pdf_truncated(), title="broken.pdf")
    result = materialize(resource, instance, ["broken.pdf"], set(ALL))
    assert not result.success
    [failure] = lib.list_failures()
    assert failure.document_id == "broken.pdf" and not failure.transient
    assert "could not be parsed" in failure.error


def test_a_workbook_without_sections_passes_every_stage(resource):
    """Zero sections is a valid result: chunks, images and provenance accept it, even stage by stage."""
    lib = resource.get()
    lib.add_document("empty.csv", "text/csv", b"", title="empty.csv")
    with pytest.raises(DocumentFailed, match="empty"):
        process_document(lib, "empty.csv", DecoderConfig(), ALL)
    lib.add_document("blank.html", "text/html", b"<html><body><p> </p></body></html>", title="blank.html")
    for stages in (("document", "elements"), ("sections",), ("images",), ("chunks",), ("provenance_triples",)):
        outcome = process_document(lib, "blank.html", DecoderConfig(), stages)
        assert not outcome.skipped, stages
    assert outcome.provenance is not None and outcome.provenance.triples_expected == outcome.provenance.triples_stored
    generation = lib.get_generation("blank.html")
    assert generation is not None and '"sections": 0' in generation.summary_json


def test_workspaces_sharing_a_store_never_share_a_generations_objects(tmp_path):
    """The same document in two workspaces of one store: removing it from one leaves the other whole."""
    first = LibrarianResource(backend="embedded", home=str(tmp_path / "ud"), workspace="first").get()
    second = LibrarianResource(backend="embedded", home=str(tmp_path / "ud"), workspace="second").get()
    for lib in (first, second):
        lib.add_document("notes.md", "text/markdown", docgen.markdown(), title="notes.md")
    process_document(first, "notes.md", DecoderConfig(), ALL)  # committed: removal deletes its elements
    process_document(second, "notes.md", DecoderConfig(), ("document", "elements"))
    first.remove_document("notes.md")
    outcome = process_document(second, "notes.md", DecoderConfig(), ("sections",))  # reads the stored elements
    assert outcome.sections is not None and outcome.sections.written == 1


def test_provenance_on_its_own_never_deletes_the_decoder_agents_shared_description(resource, monkeypatch):
    """Every document's provenance describes the same software agent. A stage run on its own
    clears its generation's subjects before writing them again; clearing the agent too would take
    its description away from documents stored at the same time (their triple check then failed)."""
    from ud_assets.decoding import ids
    from ud_assets.decoding.model import COMPONENT

    lib = resource.get()
    lib.add_document("a.md", "text/markdown", docgen.markdown(), title="a.md")
    process_document(lib, "a.md", DecoderConfig(), ["document", "elements", "sections", "images"])
    deleted: list[str] = []
    real_delete = type(lib.triples).delete_subjects

    def recording_delete(self, subjects, *args, **kwargs):
        subjects = list(subjects)
        deleted.extend(subjects)
        return real_delete(self, subjects, *args, **kwargs)

    monkeypatch.setattr(type(lib.triples), "delete_subjects", recording_delete)
    outcome = process_document(lib, "a.md", DecoderConfig(), ["provenance_triples"])
    assert deleted and ids.agent_iri(COMPONENT) not in deleted
    assert outcome.provenance.triples_stored == outcome.provenance.triples_expected
    assert lib.triples.query(s=ids.agent_iri(COMPONENT))  # still described
