"""Any subset of the six assets, as a person selects it in the UI: for one partition and for a range.

A stage takes its input from the stage before it when both are selected, else from what an
earlier run stored; when storage lacks it the run fails saying what to materialize first, and
nothing is written to the failure ledger (a missing input is not the document's fault).

All 63 subsets run on both librarians (embedded; MinIO + Cassandra), batched: one workspace and
one Dagster instance per test, a document of its own for each subset on a fresh library.
"""

from itertools import combinations

import dagster as dg
import pytest
from dagster._core.storage.defs_state.base import set_defs_state_storage

from resources.model import IMAGE
from tests import docgen
from ud_assets.defs.assets import universal_decoder
from ud_assets.defs.partitions import documents_partitions
from ud_assets.defs.resources import LibrarianResource

ASSETS = ("document", "elements", "sections", "images", "chunks", "provenance_triples")
SUBSETS = [set(c) for n in range(1, len(ASSETS) + 1) for c in combinations(ASSETS, n)]
# What each asset reads from an earlier one, written out here rather than taken from the code.
NEEDS = {
    "sections": {"elements"},
    "images": {"elements", "sections"},
    "chunks": {"elements", "sections"},
    "provenance_triples": {"elements", "sections", "images"},
}
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def materialize(resource, instance, keys: list[str], subset: set[str], **options) -> dg.ExecuteInProcessResult:
    """What "Materialize…" on a selection of assets and partitions launches."""
    instance.add_dynamic_partitions(documents_partitions.name, keys)
    tags = (
        {}
        if len(keys) == 1
        else {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}
    )
    # The live instance's definitions-state storage, whatever an earlier run left current.
    with set_defs_state_storage(instance.defs_state_storage):
        return _materialize(resource, instance, keys, subset, tags, options)


def _materialize(resource, instance, keys, subset, tags, options) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [universal_decoder],
        selection=[dg.AssetKey(a) for a in sorted(subset)],
        instance=instance,
        resources={"librarian": resource},
        partition_key=keys[0] if len(keys) == 1 else None,
        tags=tags,
        raise_on_error=False,
        run_config={"ops": {"universal_decoder": {"config": options}}} if options else None,
    )


def missing_for(subset: set[str]) -> set[str]:
    return {need for asset in subset for need in NEEDS.get(asset, set())} - subset


def stored_state(lib, doc_id: str) -> dict[str, bool]:
    """What is in the librarian for the document, read through its public interface."""
    sections = [c for c in lib.list_children(doc_id) if c.document_type in ("page", "section")]
    below = [c for s in sections for c in lib.list_children(s.id)]
    return {
        "sections": bool(sections),
        "images": any(c.document_type == IMAGE for c in below),
        "chunks": any(c.document_type == "chunk" for c in below),
        "committed": lib.get_generation(doc_id) is not None,
    }


def error_message(result: dg.ExecuteInProcessResult) -> str:
    [failure] = result.get_step_failure_events()
    return failure.step_failure_data.user_failure_data.description


@pytest.mark.timeout(600)
def test_every_subset_on_a_fresh_library_succeeds_or_names_what_to_materialize_first(librarian_resource, instance):
    lib = librarian_resource.get()
    data = docgen.docx_with_headings_table_picture()
    outcomes = {}
    for n, subset in enumerate(SUBSETS):
        key = f"handbook-{n:02d}.docx"  # nothing stored for it: a fresh library as far as it goes
        lib.add_document(key, DOCX, data, title=key)
        result = materialize(librarian_resource, instance, [key], subset)
        name = "+".join(a for a in ASSETS if a in subset)
        missing = missing_for(subset)
        outcomes[name] = result.success
        if missing:
            assert not result.success, name
            message = error_message(result)
            first = next(a for a in ASSETS if a in missing)
            assert f"materialize {first}" in message, (name, message)
            assert lib.get_failure(key) is None, name  # not the document's fault
            continue
        assert result.success, (name, result.get_step_failure_events())
        materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
        assert materialized == subset, name
        state = stored_state(lib, key)
        assert state == {
            "sections": "sections" in subset,
            "images": "images" in subset,
            "chunks": "chunks" in subset,
            "committed": "provenance_triples" in subset,
        }, name
    # 63 selections: those holding every input they need succeed, the others are refused.
    assert len(outcomes) == 63
    assert sum(outcomes.values()) == sum(1 for s in SUBSETS if not missing_for(s)) == 15
    assert lib.list_failures() == []


@pytest.mark.timeout(600)
def test_every_subset_of_a_current_document_succeeds_and_shows_the_stored_generation(librarian_resource, instance):
    resource = librarian_resource
    lib = resource.get()
    lib.add_document("report.pdf", "application/pdf", docgen.pdf_with_text_and_image(), title="report.pdf")
    first = materialize(resource, instance, ["report.pdf"], set(ASSETS))
    assert first.success
    stored = {
        e.asset_key.to_user_string(): e.materialization.metadata for e in first.get_asset_materialization_events()
    }
    generation = lib.get_generation("report.pdf")
    for subset in SUBSETS:
        result = materialize(resource, instance, ["report.pdf"], subset)
        assert result.success, subset
        for event in result.get_asset_materialization_events():
            asset, metadata = event.asset_key.to_user_string(), event.materialization.metadata
            assert metadata["generation"].value == generation.fingerprint
            if asset in ("elements", "sections", "images", "provenance_triples"):
                # Up to date: nothing redone, and the partition page keeps the stored metadata.
                assert metadata["up_to_date"].value is True
                assert {k: v for k, v in metadata.items() if k not in ("up_to_date", "document_id", "document_s")} == {
                    k: v for k, v in stored[asset].items() if k not in ("document_id", "document_s")
                }
    assert lib.get_generation("report.pdf") == generation


def test_a_range_of_partitions_materializes_stage_by_stage(tmp_path, instance):
    resource = LibrarianResource(backend="embedded", home=str(tmp_path / "ud"))
    lib = resource.get()
    keys = ["a.md", "b.pdf", "c.docx"]
    lib.add_document("a.md", "text/markdown", docgen.markdown(), title="a.md")
    lib.add_document("b.pdf", "application/pdf", docgen.pdf_with_text_and_image(), title="b.pdf")
    lib.add_document("c.docx", DOCX, docgen.docx_with_headings_table_picture(), title="c.docx")
    for step in ({"document", "elements"}, {"sections"}, {"images"}, {"chunks"}, {"provenance_triples"}):
        result = materialize(resource, instance, keys, step)
        assert result.success, (step, result.get_step_failure_events())
        assert {(e.asset_key.to_user_string(), e.partition) for e in result.get_asset_materialization_events()} == {
            (asset, key) for asset in step for key in keys
        }
    for key in keys:
        assert stored_state(lib, key) == {"sections": True, "images": key != "a.md", "chunks": True, "committed": True}
    evaluations = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert evaluations == {"triple_count_consistent": True}
