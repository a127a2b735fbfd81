"""processing.runner: whose fault a failure is, and stages that accept an empty result."""

from types import SimpleNamespace

import dagster as dg
import pytest

from resources.model import CHUNK, DocumentNotFound, LibrarianError
from tests import docgen
from tests.defs.test_subsets import materialize
from ud_assets.decoding.model import ConfigError, DecodeError, DecoderBug, DecoderConfig
from ud_assets.defs.resources import LibrarianResource
from ud_assets.processing import images as images_module
from ud_assets.processing import runner as runner_module
from ud_assets.processing import sections as sections_module
from ud_assets.processing.generations import elements_object_id
from ud_assets.processing.model import DocumentFailed, MissingInput
from ud_assets.processing.runner import document_failure, process_document
from ud_assets.processing.stages import check_key

ALL = ("document", "elements", "sections", "images", "chunks", "provenance_triples")
TRIPLES_CHECK = check_key("provenance_triples", "triple_count_consistent")


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
        DecoderBug("could not start LibreOffice: Exception occurred in preexec_fn."),
        ConfigError("strategy must be one of auto, fast, hi_res, ocr_only"),
        LibrarianError("writing object 1 failed"),
        DocumentNotFound("document 'report.pdf' not found"),
        FileNotFoundError(2, "No such file or directory"),
        ImportError("No module named 'docx'"),
    ],
)
def test_a_bug_or_a_missing_input_is_not_the_documents_fault(error):
    assert document_failure("report.pdf", error) is None


def test_a_bug_in_a_stage_propagates_with_its_own_type(resource, monkeypatch):
    lib = resource.get()
    lib.add_document("notes.md", "text/markdown", docgen.markdown(), title="notes.md")

    def broken_stage(*args, **kwargs):
        raise KeyError("a bug of ours")

    monkeypatch.setattr(sections_module, "sections_stage", broken_stage)
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

    monkeypatch.setattr(images_module, "images_stage", broken_images)
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
        outcome = process_document(lib, "blank.html", DecoderConfig(), stages, checks=[TRIPLES_CHECK])
        assert not outcome.skipped, stages
    assert outcome.provenance is not None and outcome.checks == {TRIPLES_CHECK: ""}
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
    outcome = process_document(lib, "a.md", DecoderConfig(), ["provenance_triples"], checks=[TRIPLES_CHECK])
    assert deleted and ids.agent_iri(COMPONENT) not in deleted
    assert outcome.checks == {TRIPLES_CHECK: ""}
    assert lib.triples.query(s=ids.agent_iri(COMPONENT))  # still described


# -- the ledger's rule, class by class ----------------------------------------------------------
# Each of our own failures is injected where it really happens (in the decoding child, around
# LibreOffice, in storage, in a stage) and the graph is materialized as from the UI: the run fails
# with that failure's traceback and the ledger stays empty. Each of the document's own faults and
# an unavailable server, by contrast, is recorded.


@pytest.fixture
def fresh_children():
    """Decoding children forked after the test's injections (a reusable child forked earlier would
    run the code as it was)."""
    from ud_assets.decoding import isolation

    isolation.close_workers()
    yield
    isolation.close_workers()


def _refuse_setrlimit(monkeypatch):
    """LibreOffice's limits cannot be set (as when a hard limit would have to be raised)."""
    from ud_assets.decoding import process_limits as real
    from ud_assets.decoding.formats import legacy_office

    def refuse(which, soft, hard=None):
        raise ValueError("not allowed to raise maximum limit")

    monkeypatch.setattr(
        legacy_office, "process_limits", SimpleNamespace(lower_limit=refuse, die_with_parent=real.die_with_parent)
    )


def _no_work_folder(monkeypatch):
    import tempfile as real

    from ud_assets.decoding.formats import legacy_office

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", real.gettempdir())

    monkeypatch.setattr(
        legacy_office, "tempfile", SimpleNamespace(TemporaryDirectory=refuse, gettempdir=real.gettempdir)
    )


def _child_plumbing(monkeypatch):
    from ud_assets.decoding.isolation import child

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the child's set-up")

    monkeypatch.setattr(child, "enter", broken)


def _parser_import(monkeypatch):
    from ud_assets.decoding import partitioning

    def missing(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'docx'")

    monkeypatch.setattr(partitioning, "_partition", missing)


def _object_store_refusal(monkeypatch):
    from resources.embedded import FileObjectStore
    from resources.model import LibrarianError

    def refuse(self, object_id, data, content_type):
        raise LibrarianError(f"writing object {object_id} failed: a request of ours the store refuses")

    monkeypatch.setattr(FileObjectStore, "put", refuse)


def _file_error_in_a_stage(monkeypatch):
    def broken(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", "/nonexistent/ours")

    monkeypatch.setattr(sections_module, "sections_stage", broken)


OUR_FAILURES = {
    # name: (injection, document, the exception class the run fails with)
    "LibreOffice's limits (preexec_fn)": (_refuse_setrlimit, "old.doc", "DecoderBug"),
    "LibreOffice's work folder": (_no_work_folder, "old.doc", "DecoderBug"),
    "the decoding child's set-up": (_child_plumbing, "notes.md", "DecoderBug"),
    "a parser's import": (_parser_import, "notes.md", "DecoderBug"),
    "a librarian refusal that is no outage": (_object_store_refusal, "notes.md", "LibrarianError"),
    "a file error in our own stage": (_file_error_in_a_stage, "notes.md", "FileNotFoundError"),
}


def _add(lib, key: str) -> None:
    if key == "old.doc":
        lib.add_document(key, "application/msword", docgen.doc(), title=key)
    else:
        lib.add_document(key, "text/markdown", docgen.markdown(), title=key)


@pytest.mark.parametrize("name", list(OUR_FAILURES))
def test_our_own_failures_fail_the_run_and_never_reach_the_ledger(
    name, resource, instance, monkeypatch, fresh_children
):
    inject, key, raised = OUR_FAILURES[name]
    lib = resource.get()
    _add(lib, key)
    inject(monkeypatch)
    failed = materialize(resource, instance, [key], set(ALL))
    assert not failed.success
    [failure] = failed.get_step_failure_events()
    cause = failure.step_failure_data.error.cause
    assert cause is not None and cause.cls_name == raised, failure.step_failure_data.error.to_string()[-2000:]
    assert lib.list_failures() == [], name

    monkeypatch.undo()  # fixed: the next ordinary run decodes the document, nothing to force
    from ud_assets.decoding import isolation

    isolation.close_workers()
    assert materialize(resource, instance, [key], set(ALL)).success
    assert lib.list_failures() == []


def test_an_invalid_option_fails_the_run_and_never_reaches_the_ledger(resource, instance, monkeypatch):
    monkeypatch.delenv("UNSTRUCTURED_DEFAULT_MODEL_INITIALIZE_PARAMS_JSON_PATH", raising=False)
    lib = resource.get()
    lib.add_document("scan.pdf", "application/pdf", docgen.pdf_text(1), title="scan.pdf")
    failed = materialize(resource, instance, ["scan.pdf"], set(ALL), strategy="hi_res")
    assert not failed.success
    [failure] = failed.get_step_failure_events()
    assert "UNSTRUCTURED_DEFAULT_MODEL_INITIALIZE_PARAMS_JSON_PATH" in failure.step_failure_data.error.message
    assert lib.list_failures() == []


DOCUMENT_FAULTS = {
    # name: (document id, declared kind, bytes, environment, what the ledger's error says)
    "cannot be parsed": ("broken.pdf", "application/pdf", docgen.pdf_truncated, {}, "could not be parsed"),
    "encrypted": ("locked.pdf", "application/pdf", docgen.pdf_encrypted, {}, "password-protected"),
    "over a limit": ("big.md", "text/markdown", docgen.markdown, {"UD_DECODE_MAX_BYTES": "10"}, "above the limit"),
    "mislabelled": ("report.pdf", "application/pdf", docgen.docx_with_headings_table_picture, {}, "declared as"),
    "empty": ("empty.pdf", "application/pdf", lambda: b"", {}, "empty"),
}


@pytest.mark.parametrize("name", list(DOCUMENT_FAULTS))
def test_the_documents_own_faults_are_ledgered_as_deterministic(name, resource, instance, monkeypatch):
    key, kind, content, environment, said = DOCUMENT_FAULTS[name]
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    lib = resource.get()
    lib.add_document(key, kind, content(), title=key)
    assert not materialize(resource, instance, [key], set(ALL)).success
    [failure] = lib.list_failures()
    assert failure.document_id == key and not failure.transient
    assert said in failure.error, failure.error


def test_an_unavailable_server_is_ledgered_as_transient(resource, instance, monkeypatch):
    from resources.embedded import FileObjectStore
    from resources.model import StorageUnavailable

    lib = resource.get()
    lib.add_document("notes.md", "text/markdown", docgen.markdown(), title="notes.md")

    def unavailable(self, object_id, data, content_type):
        raise StorageUnavailable("object folder unusable: the disk went away")

    monkeypatch.setattr(FileObjectStore, "put", unavailable)
    assert not materialize(resource, instance, ["notes.md"], set(ALL)).success
    [failure] = lib.list_failures()
    assert failure.transient and "the disk went away" in failure.error


def test_a_documents_checks_read_its_stored_triples_together(resource, monkeypatch):
    """Every check that reads triples names its entities first; they are read in one request (the
    embedded store's one query; Cassandra's one per 20 partitions), not one request per check."""
    from ud_assets.processing.stages import STAGES

    lib = resource.get()
    lib.add_document("a.pdf", "application/pdf", docgen.pdf_with_text_and_image(), title="a.pdf")
    asked: list[list[str]] = []
    real = lib.triples.query_subjects
    monkeypatch.setattr(
        lib.triples, "query_subjects", lambda subjects, *a, **k: asked.append(list(subjects)) or real(subjects, *a, **k)
    )
    every_check = [check_key(stage.name, check.name) for stage in STAGES for check in stage.checks]
    outcome = process_document(lib, "a.pdf", DecoderConfig(), ALL, checks=every_check)
    assert outcome.checks == dict.fromkeys(every_check, "")
    assert len(asked) == 1, asked
    sections = [c.id for c in lib.list_children("a.pdf")]
    chunks = [c.id for s in sections for c in lib.list_children(s) if c.document_type == CHUNK]
    assert sections and chunks
    assert set(sections) | set(chunks) <= set(asked[0])  # what check_offsets and chunk_offsets read
    assert len(asked[0]) == len(set(asked[0]))


def test_provenance_on_its_own_lists_the_documents_children_once(resource, monkeypatch):
    """Provenance run on its own over a new generation whose sections are stored: the document's
    children are listed once, for its check of what is stored, the change summary and the commit."""
    from collections import Counter

    lib = resource.get()
    lib.add_document("notes.md", "text/markdown", docgen.markdown(), title="notes.md")
    process_document(lib, "notes.md", DecoderConfig(), ALL)
    old = [c.id for c in lib.list_children("notes.md")]
    config = DecoderConfig(section_strategy="heading")
    process_document(lib, "notes.md", config, ("document", "elements", "sections", "images"))  # not committed
    current = lib.get_generation("notes.md").fingerprint
    assert all(lib.exists(child) for child in old)  # the old generation is still the current one
    calls: Counter = Counter()
    real = lib.list_children
    monkeypatch.setattr(lib, "list_children", lambda key: calls.update([key]) or real(key))
    result = process_document(lib, "notes.md", config, ("provenance_triples",)).results["provenance_triples"]
    assert lib.get_generation("notes.md").fingerprint != current  # committed now
    assert sorted(result.removed_children) == sorted(old)
    assert not any(lib.exists(child) for child in old)
    assert "changes_from_previous_generation" in result.metadata  # the summary read the old sections
    assert calls["notes.md"] == 1


def test_a_commit_removes_what_the_sections_stage_listed_and_clears_only_a_recorded_failure(resource, monkeypatch):
    """A new generation's commit removes the old generation's children as its sections stage
    listed them (the document's children are listed once), and deletes a ledger entry only when
    one was recorded: an empty ledger costs no delete (a tombstone in Cassandra)."""
    from collections import Counter
    from datetime import UTC, datetime

    from resources.records import Failure

    lib = resource.get()
    lib.add_document("notes.md", "text/markdown", docgen.markdown(), title="notes.md")
    process_document(lib, "notes.md", DecoderConfig(), ALL)
    old = [c.id for c in lib.list_children("notes.md")]
    calls: Counter = Counter()
    for name in ("list_children", "clear_failure"):
        real = getattr(lib, name)
        monkeypatch.setattr(lib, name, lambda key, real=real, name=name: calls.update([(name, key)]) or real(key))
    outcome = process_document(lib, "notes.md", DecoderConfig(section_strategy="heading"), ALL)
    assert sorted(outcome.results["provenance_triples"].removed_children) == sorted(old)
    assert not any(lib.exists(child) for child in old)
    assert calls[("list_children", "notes.md")] == 1 and calls[("clear_failure", "notes.md")] == 0
    # a failure in the ledger (a transient one, retried) is cleared by the commit that succeeds
    failed = Failure("notes.md", datetime.now(UTC), "", "", "", "storage unavailable", transient=True)
    lib.record_failure(failed)
    process_document(lib, "notes.md", DecoderConfig(section_strategy="count"), ALL)
    assert calls[("clear_failure", "notes.md")] == 1 and lib.get_failure("notes.md") is None


def test_the_images_stage_reads_which_images_are_stored_at_once_and_writes_only_the_missing(resource, monkeypatch):
    """A run that stopped after one of a document's images was stored: the next run writes the other
    one, having asked which are stored in one read, not one read an image."""
    lib = resource.get()
    lib.add_document("a.pdf", "application/pdf", docgen.pdf_with_text_and_image(), title="a.pdf")
    process_document(lib, "a.pdf", DecoderConfig(), ("document", "elements", "sections", "images"))
    parents = [c.id for c in lib.list_children("a.pdf")]

    def stored_images() -> set[str]:
        return {c.id for p in parents for c in lib.list_children(p) if c.document_type == "image"}

    images = sorted(stored_images())
    assert len(images) > 1
    lib.remove_document(images[1])  # as a crash between the two writes leaves them
    reads: list[list[str]] = []
    real = lib.get_metadata_many
    monkeypatch.setattr(lib, "get_metadata_many", lambda ids: reads.append(list(ids)) or real(ids))
    monkeypatch.setattr(lib, "exists", lambda id: pytest.fail(f"read one image at a time: {id}"))
    result = process_document(lib, "a.pdf", DecoderConfig(), ("images",)).results["images"]
    assert result.metadata["written"] == 1
    assert images in [sorted(r) for r in reads]
    assert stored_images() == set(images)


def test_a_lone_small_documents_row_and_object_are_read_once(resource, monkeypatch):
    """Without parse-ahead (a run of one document, as the upload sensor requests), the document's
    row is read once, as its attempt begins, and a small document's object once, whole, for both
    its detection and its parse."""
    lib = resource.get()
    meta = lib.add_document("notes.md", "text/markdown", docgen.markdown(), title="notes.md")
    reads: list[str] = []
    real_get = lib.documents.get
    monkeypatch.setattr(lib.documents, "get", lambda workspace, id: reads.append(id) or real_get(workspace, id))
    for method in ("read", "read_range", "open"):
        real = getattr(lib.objects, method)
        monkeypatch.setattr(
            lib.objects,
            method,
            lambda object_id, *a, _real=real, **k: reads.append(object_id) or _real(object_id, *a, **k),
        )
    outcome = process_document(lib, "notes.md", DecoderConfig(), ("document", "elements"))
    assert outcome.results["elements"].elements
    assert (reads.count("notes.md"), reads.count(meta.object_id)) == (1, 1)


@pytest.mark.parametrize("filler", [0, 70_000], ids=["small, read whole", "large, read again"])
def test_a_document_replaced_during_its_parse_is_never_decoded_as_the_new_upload(resource, monkeypatch, filler):
    """TrustGraph's librarian replaces a document by removing it (and its object) and adding the
    new bytes. If that happens between the attempt's read of the row and the parse, the generation
    the old hash named is never made of the new upload's bytes: a small document is parsed from
    the bytes read for its detection; a large one's object is gone, so the run fails (not recorded
    against the document). Either way, the next run decodes the new upload."""
    lib = resource.get()
    padding = "Filler text.\n\n" * (filler // 14)
    lib.add_document("notes.md", "text/markdown", f"# Old\n\nThe first upload.\n\n{padding}".encode(), title="notes.md")
    real_open = runner_module.open_attempt
    opened = []

    def open_then_replace(*args, **kwargs):
        attempt = real_open(*args, **kwargs)
        opened.append(attempt.fingerprint)
        lib.remove_document("notes.md")
        lib.add_document(
            "notes.md", "text/markdown", f"# New\n\nA second upload.\n\n{padding}".encode(), title="notes.md"
        )
        return attempt

    monkeypatch.setattr(runner_module, "open_attempt", open_then_replace)
    if filler:
        with pytest.raises(LibrarianError, match="missing"):
            process_document(lib, "notes.md", DecoderConfig(), ALL)
        assert lib.get_generation("notes.md") is None and lib.get_failure("notes.md") is None
        assert not lib.objects.exists(elements_object_id(lib.workspace, "notes.md", opened[0]))
    else:
        outcome = process_document(lib, "notes.md", DecoderConfig(), ALL)
        assert "The first upload." in " ".join(e.text for e in outcome.results["elements"].elements)
        assert lib.get_generation("notes.md").fingerprint == opened[0]
    monkeypatch.setattr(runner_module, "open_attempt", real_open)
    outcome = process_document(lib, "notes.md", DecoderConfig(), ALL)
    assert "A second upload." in " ".join(e.text for e in outcome.results["elements"].elements)
    assert lib.get_generation("notes.md").fingerprint == outcome.fingerprint != opened[0]
