"""The `import_documents` job: the import with its sources as run config, its summary in the run's log
and metadata, the documents in the upload log the sensor reads."""

from __future__ import annotations

import dagster as dg

from resources.model import StoreSettings
from resources.settings import open_librarian
from ud_assets.defs.importing import import_documents
from ud_assets.defs.resources import LibrarianResource


def run(home, sources, **config) -> tuple[dg.ExecuteInProcessResult, list[str]]:
    """The run's result and the messages of its log."""
    with dg.DagsterInstance.ephemeral() as instance:
        result = import_documents.execute_in_process(
            run_config={"ops": {"import_files": {"config": {"sources": sources, **config}}}},
            resources={"librarian": LibrarianResource(backend="embedded", home=str(home), workspace="default")},
            raise_on_error=False,
            instance=instance,
        )
        return result, [e.user_message for e in instance.all_logs(result.run_id)]


def materialized(result: dg.ExecuteInProcessResult) -> dict:
    (event,) = [e for e in result.all_node_events if e.event_type_value == "STEP_OUTPUT"]
    return {k: v.value for k, v in event.event_specific_data.metadata.items()}


def test_import_documents_job(tmp_path):
    src = tmp_path / "inbox"
    (src / "a").mkdir(parents=True)
    (src / "a" / "one.txt").write_bytes(b"first document")
    (src / "a" / "two.md").write_bytes(b"# second document\n")
    (src / "copy.txt").write_bytes(b"first document")
    (src / "skip.log").write_bytes(b"not imported")
    home = tmp_path / "ud"

    result, log = run(home, [str(src)], exclude=["*.log"], id_prefix="inbox/", tags=["job"])
    assert result.success
    assert result.output_for_node("import_files") == 2
    meta = materialized(result)
    assert (meta["files"], meta["added"], meta["duplicates"], meta["refused"]) == (3, 2, 1, 0)
    assert any("3 files in" in m and "2 added" in m and "1 skipped as duplicates" in m for m in log), log
    assert any("duplicate: " in m and "copy.txt: same bytes as document 'inbox/a/one.txt'" in m for m in log), log
    with open_librarian(StoreSettings(home=str(home))) as lib:
        docs = {d.id: d for d in lib.iter_documents()}
        assert set(docs) == {"inbox/a/one.txt", "inbox/a/two.md"}
        assert docs["inbox/a/one.txt"].tags == ("job",) and docs["inbox/a/two.md"].kind == "text/markdown"
        assert sorted(u.id for u in lib.uploads_since(None)) == sorted(docs)

    again, _ = run(home, [str(src)], exclude=["*.log"], id_prefix="inbox/")
    assert again.success and again.output_for_node("import_files") == 0
    assert materialized(again)["already_present"] == 2

    refused, _ = run(home, [str(tmp_path / "nowhere")])
    assert not refused.success


def test_the_sensor_decodes_an_import_in_batches(tmp_path, instance, monkeypatch):
    """No step after the import: the upload sensor's next tick adds every imported document's
    partition and plans runs of UD_BATCH_SIZE partitions; a second import adds only its new files."""
    from ud_assets.defs.partitions import documents_partitions
    from ud_assets.defs.sensors import RANGE_END, RANGE_START, librarian_uploads

    monkeypatch.setenv("UD_BATCH_SIZE", "50")
    src = tmp_path / "inbox"
    src.mkdir()
    for i in range(120):
        (src / f"doc-{i:03d}.txt").write_bytes(f"document {i}\n".encode())
    (src / "same-as-7.txt").write_bytes(b"document 7\n")
    home = tmp_path / "ud"
    resource = LibrarianResource(backend="embedded", home=str(home), workspace="default")

    def tick(cursor):
        context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"librarian": resource})
        result = librarian_uploads(context)
        for request in result.dynamic_partitions_requests:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        return result

    assert run(home, [str(src)])[0].success
    first = tick(None)
    assert sorted(instance.get_dynamic_partitions(documents_partitions.name)) == [
        f"doc-{i:03d}.txt" for i in range(120)
    ]
    ranges = [(r.tags[RANGE_START], r.tags[RANGE_END]) for r in first.run_requests]
    assert ranges == [("doc-000.txt", "doc-049.txt"), ("doc-050.txt", "doc-099.txt"), ("doc-100.txt", "doc-119.txt")]

    (src / "doc-120.txt").write_bytes(b"document 120\n")
    assert run(home, [str(src)])[0].success
    second = tick(first.cursor)
    assert [r.partition_key for r in second.run_requests] == ["doc-120.txt"]
