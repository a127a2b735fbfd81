"""The upload sensor and the upgrade schedule."""

import dataclasses
from datetime import UTC, datetime
from importlib.metadata import version as package_version

import dagster as dg
import pytest

from resources.model import Upload
from ud_assets.defs import schedules, sensors
from ud_assets.defs.partitions import documents_partitions
from ud_assets.defs.resources import LibrarianResource
from ud_assets.defs.schedules import reprocess_after_upgrade
from ud_assets.defs.sensors import RANGE_END, RANGE_START, SensorCursor, librarian_uploads, plan_sweep, plan_uploads

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def event(doc_id, kind="added", sha="s1", cursor="1"):
    return Upload(id=doc_id, event=kind, sha256=sha, time=NOW, cursor=cursor)


def test_plan_batches_new_uploads_in_ranges_and_runs_re_uploads_alone():
    existing = {"old.md", "gone.md"}
    events = [event(f"new-{i}.md") for i in range(5)] + [event("old.md", sha="s2"), event("gone.md", "removed")]
    partitions, runs, refused = plan_uploads(events, existing.__contains__, batch=2)
    added = [k for r in partitions if r.__class__.__name__ == "AddDynamicPartitionsRequest" for k in r.partition_keys]
    deleted = [
        k for r in partitions if r.__class__.__name__ == "DeleteDynamicPartitionsRequest" for k in r.partition_keys
    ]
    assert added == [f"new-{i}.md" for i in range(5)] and deleted == ["gone.md"]
    ranges = [(r.tags.get(RANGE_START), r.tags.get(RANGE_END), r.partition_key) for r in runs]
    assert ranges == [
        ("new-0.md", "new-1.md", None),
        ("new-2.md", "new-3.md", None),
        (None, None, "new-4.md"),
        (None, None, "old.md"),
    ]
    assert runs[-1].run_key == "upload:old.md@s2" and refused == []


def test_plan_last_event_wins_and_bad_ids_are_refused():
    events = [event("a"), event("a", "removed"), event("b"), event("bad,id")]
    _partitions, runs, refused = plan_uploads(events, lambda key: False, batch=10)
    assert [r.partition_key for r in runs] == ["b"]
    assert refused and "bad,id" in refused[0]


def test_plan_chunks_partition_requests_by_1000():
    events = [event(f"d{i:05d}") for i in range(2500)]
    partitions, runs, _ = plan_uploads(events, lambda key: False, batch=50)
    assert [len(r.partition_keys) for r in partitions] == [1000, 1000, 500]
    assert len(runs) == 50


def test_run_keys_carry_content_hashes():
    _, first, _ = plan_uploads([event("a", sha="s1"), event("b", sha="s1")], lambda k: False, batch=10)
    _, same, _ = plan_uploads([event("a", sha="s1"), event("b", sha="s1")], lambda k: False, batch=10)
    _, changed, _ = plan_uploads([event("a", sha="s9"), event("b", sha="s1")], lambda k: False, batch=10)
    assert first[0].run_key == same[0].run_key != changed[0].run_key


@pytest.fixture
def embedded(tmp_path):
    return LibrarianResource(backend="embedded", home=str(tmp_path / "ud"))


def tick(resource, instance, cursor):
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"librarian": resource})
    return librarian_uploads(context)


def apply_partition_requests(instance, result):
    for request in result.dynamic_partitions_requests:
        if request.__class__.__name__ == "AddDynamicPartitionsRequest":
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)


def test_sensor_on_new_old_re_uploaded_and_removed_documents(embedded, instance):
    lib = embedded.get()
    lib.add_document("old.md", "text/markdown", b"# Old\n\nAlready decoded.\n")
    lib.add_document("edited.md", "text/markdown", b"# Edited\n\nFirst version.\n")
    lib.add_document("removed.md", "text/markdown", b"# Gone soon\n")
    first = tick(embedded, instance, None)
    assert len(first.run_requests) == 1 and first.run_requests[0].tags[RANGE_START] == "old.md"
    apply_partition_requests(instance, first)
    cursor = first.cursor

    quiet = tick(embedded, instance, cursor)  # nothing new: no run
    assert quiet.skip_reason is not None and not quiet.run_requests and not quiet.dynamic_partitions_requests

    lib.remove_document("edited.md")
    lib.add_document("edited.md", "text/markdown", b"# Edited\n\nSecond version.\n")
    lib.add_document("new.md", "text/markdown", b"# New\n")
    lib.remove_document("removed.md")
    second = tick(embedded, instance, cursor)
    runs = {r.partition_key: r.run_key for r in second.run_requests}
    assert set(runs) == {"new.md", "edited.md"}
    assert runs["edited.md"] == f"upload:edited.md@{lib.get_metadata('edited.md').sha256}"
    repeated = tick(embedded, instance, cursor)  # the same tick again: the same run keys, so no second run
    assert {r.run_key for r in repeated.run_requests} == set(runs.values())
    apply_partition_requests(instance, second)
    assert set(instance.get_dynamic_partitions(documents_partitions.name)) == {"old.md", "edited.md", "new.md"}


def test_sensor_work_grows_with_new_uploads_not_with_the_library(embedded, instance, monkeypatch):
    lib = embedded.get()
    # The spies below count what a tick reads: a library of a few hundred shows O(new) as well as
    # one of millions would.
    keys = [f"doc-{i:05d}.txt" for i in range(300)]
    for key in keys:
        lib.add_document(key, "text/plain", key.encode())
    instance.add_dynamic_partitions(documents_partitions.name, keys)
    cursor = lib.uploads_since(None, limit=1000)[-1].cursor
    for i in range(3):
        lib.add_document(f"fresh-{i}.txt", "text/plain", b"fresh")

    lookups = []
    original = instance.has_dynamic_partition
    monkeypatch.setattr(instance, "has_dynamic_partition", lambda *a: lookups.append(a) or original(*a))
    seen = []
    real_since = type(lib).uploads_since
    monkeypatch.setattr(
        type(lib), "uploads_since", lambda self, c, limit=1000: seen.extend(real_since(self, c, limit)) or seen
    )
    # The sweep for other writers' documents reads a bounded slice and makes bounded lookups.
    monkeypatch.setattr(sensors, "SWEEP_ROWS", 50)
    monkeypatch.setattr(sensors, "MAX_SWEEP_LOOKUPS", 10)
    result = tick(embedded, instance, SensorCursor(log=cursor).dump())
    assert len(seen) == 3 and len(lookups) == 3 + 10
    assert len(result.run_requests) == 1  # three uploads, one batch run
    assert result.run_requests[0].tags[RANGE_START] == "fresh-0.txt"
    assert SensorCursor.parse(result.cursor).sweep == "doc-00009.txt"  # resumes after the last id looked up


def decode_all(resource, instance, keys):
    from tests.defs.test_assets import run

    assert run(resource, instance, keys, raise_on_error=True).success


def test_a_sensor_that_starts_after_the_demo_runs_nothing_for_documents_already_decoded(embedded, instance):
    """`make dev` after `make demo`: the sensor's first tick reads the whole upload log."""
    lib = embedded.get()
    for key in ("a.md", "b.md"):
        lib.add_document(key, "text/markdown", f"# {key}\n\nBody.\n".encode())
    decode_all(embedded, instance, ["a.md", "b.md"])  # the demo: partitions added, documents decoded
    lib.add_document("c.md", "text/markdown", b"# c\n\nNew after the demo.\n")
    result = tick(embedded, instance, None)
    assert [(r.partition_key, r.tags.get(RANGE_START)) for r in result.run_requests] == [("c.md", None)]
    # A removed document loses its generation with it: uploaded again, it is decoded again.
    lib.remove_document("a.md")
    lib.add_document("a.md", "text/markdown", b"# a.md\n\nBody.\n")
    apply_partition_requests(instance, result)
    later = tick(embedded, instance, result.cursor)
    assert [r.partition_key for r in later.run_requests] == ["a.md"]


def test_upgrade_schedule_re_decodes_only_documents_of_another_version(embedded, instance, monkeypatch):
    lib = embedded.get()
    keys = ["a.md", "b.md", "c.md"]
    for key in keys:
        lib.add_document(key, "text/markdown", f"# {key}\n\nBody of {key}.\n".encode())
    decode_all(embedded, instance, keys)
    context = dg.build_schedule_context(instance=instance, resources={"librarian": embedded})
    assert isinstance(reprocess_after_upgrade(context), dg.SkipReason)

    # b.md was decoded by an older unstructured: only it is due.
    old = lib.get_generation("b.md")
    lib.set_generation(dataclasses.replace(old, unstructured_version="0.26.0"))
    requests = reprocess_after_upgrade(context)
    assert [r.partition_key for r in requests] == ["b.md"]
    current = package_version("unstructured")  # what is installed, read independently
    assert requests[0].run_key.startswith(f"reprocess:{current}:")

    # An upgrade: every document is due, in bounded batches, with the target version in the run keys.
    monkeypatch.setattr(schedules, "current_target", lambda config: ("9.9.9", "1", config))
    monkeypatch.setenv("UD_BATCH_SIZE", "2")
    upgrade = reprocess_after_upgrade(context)
    assert [(r.tags.get(RANGE_START), r.tags.get(RANGE_END), r.partition_key) for r in upgrade] == [
        ("a.md", "b.md", None),
        (None, None, "c.md"),
    ]
    assert all(r.run_key.startswith("reprocess:9.9.9:") for r in upgrade)


def test_a_bump_of_one_format_familys_version_re_decodes_only_its_documents(embedded, instance, monkeypatch):
    from ud_assets.decoding import formats

    lib = embedded.get()
    lib.add_document("a.md", "text/markdown", b"# a\n\nBody.\n")
    lib.add_document("b.csv", "text/csv", b"name,city\nAda,London\n")
    lib.add_document("c.md", "text/markdown", b"# c\n\nBody.\n")
    decode_all(embedded, instance, ["a.md", "b.csv", "c.md"])
    context = dg.build_schedule_context(instance=instance, resources={"librarian": embedded})
    assert isinstance(reprocess_after_upgrade(context), dg.SkipReason)
    before = {key: lib.get_generation(key) for key in ("a.md", "b.csv", "c.md")}
    assert before["b.csv"].decoder_version == f"{formats.SHARED_LOGIC_VERSION}.delimited-1"

    # A fix to the CSV/TSV family: its documents only are due, in one run.
    bumped = tuple(
        dataclasses.replace(family, logic_version="2") if family.name == "delimited" else family
        for family in formats.FAMILIES
    )
    monkeypatch.setattr(formats, "FAMILIES", bumped)
    [request] = reprocess_after_upgrade(context)
    assert request.partition_key == "b.csv"
    decode_all(embedded, instance, [request.partition_key])
    after = {key: lib.get_generation(key) for key in ("a.md", "b.csv", "c.md")}
    assert after["b.csv"].decoder_version == f"{formats.SHARED_LOGIC_VERSION}.delimited-2"
    assert after["b.csv"].fingerprint != before["b.csv"].fingerprint
    assert (after["a.md"], after["c.md"]) == (before["a.md"], before["c.md"])
    # Then nothing is due.
    assert isinstance(reprocess_after_upgrade(context), dg.SkipReason)


def test_the_schedule_reads_the_library_page_by_page_keeping_only_stale_ids(embedded, monkeypatch):
    from resources.records import Generation

    lib = embedded.get()
    target = ("0.27.35", "7", '{"strategy": "auto"}')
    for i in range(7):
        current = i % 3 != 0  # doc-0, doc-3, doc-6 are stale
        lib.set_generation(
            Generation(
                document_id=f"doc-{i}",
                fingerprint=f"f{i}",
                sha256="s",
                unstructured_version=target[0] if current else "0.26.0",
                decoder_version=target[1],
                config_json=target[2],
                elements_object_id="00000000-0000-0000-0000-000000000000",
                time=NOW,
            )
        )
    pages = []
    real = type(lib).generations_after
    monkeypatch.setattr(type(lib), "generations_after", lambda self, a="", n=1000: pages.append(n) or real(self, a, n))
    monkeypatch.setattr(type(lib), "list_generations", lambda self: pytest.fail("the whole library read at once"))
    assert schedules.stale_in_library(lib, target, page=3) == ["doc-0", "doc-3", "doc-6"]
    assert pages == [3, 3, 3]  # 3 + 3 + 1 generations: the last, short page ends it


def test_re_running_the_schedule_request_touches_only_the_stale_document(embedded, instance):
    lib = embedded.get()
    keys = ["a.md", "b.md"]
    for key in keys:
        lib.add_document(key, "text/markdown", f"# {key}\n\nBody.\n".encode())
    decode_all(embedded, instance, keys)
    untouched = lib.get_generation("a.md")
    old = lib.get_generation("b.md")
    lib.set_generation(dataclasses.replace(old, unstructured_version="0.26.0", fingerprint="0" * 32))
    context = dg.build_schedule_context(instance=instance, resources={"librarian": embedded})
    [request] = reprocess_after_upgrade(context)
    decode_all(embedded, instance, [request.partition_key])
    assert lib.get_generation("a.md") == untouched
    assert lib.get_generation("b.md").unstructured_version == package_version("unstructured")


def test_the_sweep_finds_documents_added_and_removed_by_another_writer():
    partitions = {"a", "c"}
    new, removed, stopped = plan_sweep(["a", "b", "c", "d"], ["a", "x"], partitions.__contains__)
    assert (new, removed, stopped) == (["b", "d"], ["x"], None)  # x: decoded once, its row gone
    # Bounded lookups: the slice stops after the last document it could look up.
    new, removed, stopped = plan_sweep(["a", "b", "c", "d", "e"], ["a", "x", "d9"], partitions.__contains__, 2)
    assert (new, removed, stopped) == (["b"], [], "c")  # "d9" and "x" lie beyond what was covered
    assert plan_sweep(["a", "b"], ["a"], lambda key: False, 0) == ([], [], "a")
    assert plan_sweep(["b"], [], lambda key: False, 0) == ([], [], "")


def test_a_cursor_of_the_previous_version_is_the_upload_logs():
    assert SensorCursor.parse("17") == SensorCursor(log="17", sweep="")
    assert SensorCursor.parse(SensorCursor(log="17", sweep="m.md").dump()) == SensorCursor(log="17", sweep="m.md")
    assert SensorCursor.parse(None) == SensorCursor()


def test_a_document_registered_without_the_upload_log_is_found_and_decoded(embedded, instance):
    """Another writer (a migration, another program) puts a row and bytes, and never ud's log."""
    import uuid

    lib = embedded.get()
    lib.add_document("logged.md", "text/markdown", b"# Logged\n")
    first = tick(embedded, instance, None)
    apply_partition_requests(instance, first)
    object_id = uuid.uuid4()
    lib.objects.put(object_id, b"# Migrated\n\nNo log event.\n", "text/markdown")
    row = dataclasses.replace(lib.get_metadata("logged.md"), id="migrated.md", object_id=object_id, sha256="", size=0)
    lib.documents.upsert_many([row])  # the row alone: no upload event
    assert [e.id for e in lib.uploads_since(SensorCursor.parse(first.cursor).log)] == []
    found = tick(embedded, instance, first.cursor)
    assert [r.partition_key for r in found.run_requests] == ["migrated.md"]
    assert found.run_requests[0].run_key.startswith("found:")
    apply_partition_requests(instance, found)
    assert instance.has_dynamic_partition(documents_partitions.name, "migrated.md")
    again = tick(embedded, instance, found.cursor)  # a full sweep later: nothing new
    assert not again.run_requests
