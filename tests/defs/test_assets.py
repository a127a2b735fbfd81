"""The asset graph materialized for real, on both librarian backends."""

import dagster as dg
import pytest

from resources.model import GRAPH_SOURCE, IMAGE, Term
from tests import docgen
from ud_assets.decoding.ids import document_iri
from ud_assets.decoding.provenance import PROV_WAS_DERIVED_FROM, RDF_TYPE, TG_DOCUMENT_TYPE
from ud_assets.defs.assets import universal_decoder
from ud_assets.defs.jobs import decode_documents
from ud_assets.defs.partitions import documents_partitions
from ud_assets.processing.model import GENERATION_TAG

ASSETS = ["document", "elements", "sections", "images", "chunks", "provenance_triples"]


def upload(lib, documents: dict[str, tuple[bytes, str]]) -> list[str]:
    for doc_id, (data, kind) in documents.items():
        lib.add_document(doc_id, kind, data, title=doc_id)
    return list(documents)


def run(resource, instance, keys: list[str], raise_on_error: bool = False, **options):
    instance.add_dynamic_partitions(documents_partitions.name, keys)
    defs = dg.Definitions(assets=[universal_decoder], jobs=[decode_documents], resources={"librarian": resource})
    job = defs.resolve_job_def("decode_documents")
    tags = (
        {"dagster/partition": keys[0]}
        if len(keys) == 1
        else {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}
    )
    run_config = {"ops": {"universal_decoder": {"config": options}}} if options else None
    return job.execute_in_process(instance=instance, tags=tags, run_config=run_config, raise_on_error=raise_on_error)


def children_tree(lib, doc_id):
    sections = lib.list_children(doc_id)
    images = [c for s in sections for c in lib.list_children(s.id) if c.document_type == IMAGE]
    return sections, images


def subjects_in_store(lib, ids):
    return {i for i in ids if lib.triples.query(s=i, g=GRAPH_SOURCE, collection=lib.collection)}


FORMATS = {
    "report.pdf": (docgen.pdf_with_text_and_image, "application/pdf"),
    "notes.md": (docgen.markdown, "text/markdown"),
    "handbook.docx": (
        docgen.docx_with_headings_table_picture,
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    "cities.csv": (docgen.csv_utf16, "text/csv"),
}


def test_materializes_documents_of_several_formats_into_the_librarian(librarian_resource, instance):
    lib = librarian_resource.get()
    keys = upload(lib, {k: (gen(), kind) for k, (gen, kind) in FORMATS.items()})
    result = run(librarian_resource, instance, sorted(keys), raise_on_error=True)
    assert result.success

    for asset in ASSETS:
        assert instance.get_materialized_partitions(dg.AssetKey(asset)) == set(keys)
    evaluations = result.get_asset_check_evaluations()
    assert len(evaluations) == 5
    for evaluation in evaluations:
        assert evaluation.passed, evaluation.check_name

    for doc_id in keys:
        generation = lib.get_generation(doc_id)
        assert generation is not None
        sections, images = children_tree(lib, doc_id)
        assert sections and all(s.document_type in ("page", "section") for s in sections)
        assert all(any(t.startswith(GENERATION_TAG) for t in s.tags) for s in sections)
        doc = document_iri(doc_id)
        assert Term(TG_DOCUMENT_TYPE, is_iri=True) in {
            q.o for q in lib.triples.query(s=doc, p=RDF_TYPE, collection=lib.collection)
        }
        for child in sections + images:
            derived = lib.triples.query(s=child.id, p=PROV_WAS_DERIVED_FROM, collection=lib.collection)
            assert len(derived) == 1
            assert derived[0].o.value in ({doc} | {s.id for s in sections})

    pdf_sections, pdf_images = children_tree(lib, "report.pdf")
    assert [s.document_type for s in pdf_sections] == ["page", "page"]
    assert len(pdf_images) == 3 and all(i.document_type == IMAGE for i in pdf_images)
    assert {i.kind for i in pdf_images} == {"image/jpeg", "image/png"}
    jpeg = next(i for i in pdf_images if i.kind == "image/jpeg")
    assert lib.get_content(jpeg.id) == docgen.pdf_jpeg()
    _, docx_images = children_tree(lib, "handbook.docx")
    assert len(docx_images) == 1 and lib.get_content(docx_images[0].id) == docgen.docx_picture()

    text = lib.get_content(children_tree(lib, "cities.csv")[0][0].id).decode()
    assert text.startswith("<table>") and "São Paulo" in text


def test_a_batch_writes_its_documents_triples_together_and_stores_every_one(librarian_resource, instance, monkeypatch):
    """A batch's documents share their triple writes (resources/grouped_inserts.py): the run says
    how many writes its inserts took, and every materialized document's triples are stored (the
    checks read them back)."""
    # A wait ends when the batch says (every document in storage waits, or one ends): no timing in the test.
    monkeypatch.setenv("UD_GROUP_LINGER_S", "30")
    monkeypatch.setenv("UD_GROUP_SETTLE_S", "30")
    lib = librarian_resource.get()
    notes = {
        f"note-{n}.md": (f"# Note {n}\n\nThe {n}th paragraph of a batch.\n".encode(), "text/markdown") for n in range(6)
    }
    keys = upload(lib, notes)
    result = run(librarian_resource, instance, keys, raise_on_error=True)

    assert instance.get_materialized_partitions(dg.AssetKey("provenance_triples")) == set(keys)
    evaluations = result.get_asset_check_evaluations()
    assert evaluations and all(e.passed for e in evaluations)
    said = [e.user_message for e in instance.all_logs(result.run_id) if e.user_message.startswith("triples: ")]
    assert len(said) == 1, said
    inserts, writes = int(said[0].split()[1]), int(said[0].split(" in ")[1].split()[0])
    assert inserts >= 2 * len(keys)  # each document's provenance and chunks
    assert writes < inserts
    for key in keys:
        assert subjects_in_store(lib, [document_iri(key)]) == {document_iri(key)}


def test_rematerializing_gives_the_same_ids_and_no_duplicates(librarian_resource, instance):
    lib = librarian_resource.get()
    keys = upload(
        lib,
        {
            "report.pdf": (docgen.pdf_with_text_and_image(), "application/pdf"),
            "notes.md": (docgen.markdown(), "text/markdown"),
        },
    )
    run(librarian_resource, instance, keys, raise_on_error=True)
    first = {k: children_tree(lib, k) for k in keys}
    first_count = lib.triples.count(collection=lib.collection)
    run(librarian_resource, instance, keys, raise_on_error=True, force=True)
    again = {k: children_tree(lib, k) for k in keys}
    assert {k: sorted(c.id for c in v[0] + v[1]) for k, v in first.items()} == {
        k: sorted(c.id for c in v[0] + v[1]) for k, v in again.items()
    }
    assert lib.triples.count(collection=lib.collection) == first_count
    # Without force, an up-to-date document is skipped: same state, quickly.
    run(librarian_resource, instance, keys, raise_on_error=True)
    assert lib.triples.count(collection=lib.collection) == first_count


def test_a_new_generation_replaces_the_old_one_and_records_the_change(librarian_resource, instance):
    lib = librarian_resource.get()
    keys = upload(lib, {"notes.md": (docgen.markdown(), "text/markdown")})
    run(librarian_resource, instance, keys, raise_on_error=True)
    old_sections, _ = children_tree(lib, "notes.md")
    result = run(librarian_resource, instance, keys, raise_on_error=True, section_strategy="heading")
    new_sections, _ = children_tree(lib, "notes.md")
    assert len(old_sections) == 1 and len(new_sections) == 4
    assert not {s.id for s in old_sections} & {s.id for s in new_sections}
    assert not any(lib.exists(s.id) for s in old_sections)
    assert subjects_in_store(lib, [s.id for s in old_sections]) == set()
    assert subjects_in_store(lib, [s.id for s in new_sections]) == {s.id for s in new_sections}
    diff = next(
        m for m in result.get_asset_materialization_events() if m.asset_key == dg.AssetKey("provenance_triples")
    ).materialization.metadata
    change = diff["changes_from_previous_generation"].value
    # matched by label: "Section 1" changed, sections 2-4 are new
    assert (change["sections_added"], change["sections_removed"], change["sections_changed"]) == (3, 0, 1)
    assert change["elements_added"] == 0 and change["elements_removed"] == 0  # same elements, regrouped


def test_a_bad_document_fails_alone_in_a_batch(librarian_resource, instance):
    lib = librarian_resource.get()
    keys = upload(
        lib,
        {
            "a.md": (docgen.markdown(), "text/markdown"),
            "b-broken.pdf": (docgen.pdf_truncated(), "application/pdf"),
            "c.csv": (docgen.csv_utf16(), "text/csv"),
        },
    )
    result = run(librarian_resource, instance, keys)
    assert not result.success
    assert instance.get_materialized_partitions(dg.AssetKey("provenance_triples")) == {"a.md", "c.csv"}
    status = instance.get_status_by_partition(dg.AssetKey("sections"), keys, documents_partitions)
    assert status["b-broken.pdf"] == dg.AssetPartitionStatus.FAILED
    failures = {f.document_id: f for f in lib.list_failures()}
    assert set(failures) == {"b-broken.pdf"}
    assert "could not be parsed" in failures["b-broken.pdf"].error and not failures["b-broken.pdf"].transient
    assert lib.list_children("b-broken.pdf") == []
    assert lib.get_generation("a.md") and lib.get_generation("c.csv")


def test_a_failed_materialization_leaves_the_previous_generation_intact(librarian_resource, instance):
    lib = librarian_resource.get()
    keys = upload(lib, {"report.pdf": (docgen.pdf_text(2), "application/pdf")})
    run(librarian_resource, instance, keys, raise_on_error=True)
    before = children_tree(lib, "report.pdf")
    count = lib.triples.count(collection=lib.collection)
    result = run(librarian_resource, instance, keys, strategy="hi_res")  # no local layout weights here
    assert not result.success
    assert children_tree(lib, "report.pdf") == before
    assert lib.triples.count(collection=lib.collection) == count
    # An option the machine cannot honour is the run's settings, not the document's fault (the
    # ledger's rule, processing/runner.py): the run says why, the ledger stays empty.
    [failure] = result.get_step_failure_events()
    assert "UNSTRUCTURED_DEFAULT_MODEL_INITIALIZE_PARAMS_JSON_PATH" in failure.step_failure_data.error.message
    assert lib.list_failures() == []


def test_invalid_options_are_rejected_before_any_work(tmp_path, instance):
    from ud_assets.defs.resources import LibrarianResource

    resource = LibrarianResource(backend="embedded", home=str(tmp_path / "ud"))
    keys = upload(resource.get(), {"notes.md": (docgen.markdown(), "text/markdown")})
    # Dagster's config schema rejects what it can express (an enum); the options' own validation,
    # run before the step touches anything, rejects the rest with the field named.
    rejected = (
        ({"strategy": "magic"}, dg.DagsterInvalidConfigError, r"strategy not in enum .* got magic"),
        ({"section_element_count": 0}, ValueError, r"section_element_count\s+Input should be greater than 0"),
        ({"languages": "eng;rm -rf"}, ValueError, r"languages\s+Value error, invalid OCR language code 'eng;rm -rf'"),
    )
    for options, error, message in rejected:
        with pytest.raises(error, match=message):
            run(resource, instance, keys, raise_on_error=True, **options)
    assert instance.get_materialized_partitions(dg.AssetKey("elements")) == set()
    assert resource.get().list_children("notes.md") == []


def test_a_deterministic_failure_is_not_retried_until_its_input_changes(librarian_resource, instance):
    lib = librarian_resource.get()
    keys = upload(lib, {"broken.pdf": (docgen.pdf_truncated(), "application/pdf")})
    run(librarian_resource, instance, keys)
    first = lib.get_failure("broken.pdf")
    assert first is not None and not first.transient and first.fingerprint
    result = run(librarian_resource, instance, keys)
    assert not result.success
    [failure] = result.get_step_failure_events()
    assert "known failure" in failure.step_failure_data.error.message
    assert lib.get_failure("broken.pdf") == first  # not decoded again, not recorded again
    run(librarian_resource, instance, keys, force=True)
    assert lib.get_failure("broken.pdf").attempts == 2


def test_ud_failures_lists_the_ledger(tmp_path, instance, monkeypatch, capsys):
    from ud_assets.cli import main
    from ud_assets.defs.resources import LibrarianResource

    monkeypatch.delenv("CASSANDRA_HOST", raising=False)
    monkeypatch.setenv("UD_HOME", str(tmp_path / "ud"))
    resource = LibrarianResource(backend="embedded", home=str(tmp_path / "ud"))
    keys = upload(resource.get(), {"broken.pdf": (docgen.pdf_truncated(), "application/pdf")})
    run(resource, instance, keys)
    assert main(["failures"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("broken.pdf\t") and "deterministic" in line and "could not be parsed" in line


def test_an_oversize_document_is_refused_without_reading_it(tmp_path, instance, monkeypatch):
    from ud_assets.defs.resources import LibrarianResource

    monkeypatch.setenv("UD_DECODE_MAX_BYTES", "1000")
    resource = LibrarianResource(backend="embedded", home=str(tmp_path / "ud"))
    lib = resource.get()
    keys = upload(lib, {"large.md": (b"# Large\n\n" + b"word " * 1000, "text/markdown")})
    reads = []
    monkeypatch.setattr(type(lib), "get_content", lambda self, doc_id: reads.append(doc_id) or b"")
    monkeypatch.setattr(type(lib.objects), "open", lambda self, object_id, *a: reads.append(object_id) or iter([b""]))
    run(resource, instance, keys)
    assert reads == []
    assert "above the limit of 1000 (UD_DECODE_MAX_BYTES)" in lib.get_failure("large.md").error
