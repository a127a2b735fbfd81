"""PooledSqliteEventLogStorage: the repository's Dagster instance stores and reads events as Dagster's
own SQLite event log does, a SIGKILLed writer loses nothing it committed, a run's watchers (the UI's
live run log) still hear of each new event, and materializations that wait to be stored together
are stored within their wait, in the run's order, and read at once by their own process."""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as db
from dagster._core.events import DagsterEvent, DagsterEventType, StepMaterializationData
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.base import EventLogCursor

from ud_assets.instance.event_log import MATERIALIZATIONS_WAIT_S, PooledSqliteEventLogStorage, UdInstance

REPO = Path(__file__).resolve().parents[2]
RUN_ID = "0" * 8 + "-0000-0000-0000-" + "1" * 12

letters = dg.DynamicPartitionsDefinition(name="letters")


@dg.multi_asset(specs=[dg.AssetSpec("first"), dg.AssetSpec("second")], partitions_def=letters, can_subset=True)
def two_assets(context: dg.AssetExecutionContext):
    for key in context.partition_keys:
        if key == "boom":
            raise RuntimeError("a bug in the step")
        for spec in ("first", "second"):
            yield dg.AssetMaterialization(asset_key=spec, partition=key, metadata={"n": len(key)})


job = dg.define_asset_job("letters_job", selection=["first", "second"])
defs = dg.Definitions(assets=[two_assets], jobs=[job])


@pytest.fixture
def repository_instance(tmp_path, monkeypatch):
    """A Dagster instance from the repository's own dagster.yaml, as `make dev` creates it."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as instance:
        yield instance


def materialization(key: str, partition: str, run_id: str = RUN_ID) -> EventLogEntry:
    event = DagsterEvent(
        DagsterEventType.ASSET_MATERIALIZATION.value,
        "letters_job",
        event_specific_data=StepMaterializationData(
            dg.AssetMaterialization(asset_key=key, partition=partition, metadata={"partition": partition})
        ),
    )
    return EventLogEntry(
        error_info=None, level=20, user_message="", run_id=run_id, timestamp=time.time(), dagster_event=event
    )


def run_range(instance, keys: list[str]):
    instance.add_dynamic_partitions("letters", keys)
    return defs.resolve_job_def("letters_job").execute_in_process(
        instance=instance,
        tags={"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]},
        raise_on_error=False,
    )


def test_the_repository_instance_stores_a_batched_run_as_dagster_reads_it(repository_instance):
    assert isinstance(repository_instance, UdInstance)
    assert isinstance(repository_instance.event_log_storage, PooledSqliteEventLogStorage)
    keys = ["a", "b", "c"]
    result = run_range(repository_instance, keys)
    assert result.success
    for asset in ("first", "second"):
        key = dg.AssetKey(asset)
        assert repository_instance.get_materialized_partitions(key) == set(keys)
        # The planned events, stored as one batch, are still one per partition: the UI marks each
        # partition of a failed run as failed from them.
        planned = repository_instance.get_event_records(
            dg.EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION_PLANNED, asset_key=key)
        )
        assert sorted(r.event_log_entry.dagster_event.event_specific_data.partition for r in planned) == keys
    run_events = {e.dagster_event_type for e in repository_instance.all_logs(result.run_id) if e.is_dagster_event}
    assert {DagsterEventType.RUN_SUCCESS, DagsterEventType.ASSET_MATERIALIZATION_PLANNED} <= run_events
    assert repository_instance.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.SUCCESS


def test_a_failed_run_shows_its_partitions_failed(repository_instance):
    """What the UI's partition bar shows: Dagster derives failed partitions from the planned events."""
    from dagster._core.storage.partition_status_cache import get_and_update_asset_status_cache_value

    assert run_range(repository_instance, ["a"]).success
    assert not run_range(repository_instance, ["boom", "d"]).success
    status = get_and_update_asset_status_cache_value(
        repository_instance, dg.AssetKey("first"), letters, dynamic_partitions_loader=repository_instance
    )
    assert set(status.deserialize_failed_partition_subsets(letters).get_partition_keys()) == {"boom", "d"}
    assert repository_instance.get_materialized_partitions(dg.AssetKey("first")) == {"a"}


def test_a_batch_of_mixed_events_stores_every_event(tmp_path):
    storage = PooledSqliteEventLogStorage(str(tmp_path))
    log_line = EventLogEntry(
        error_info=None, level=20, user_message="hello", run_id=RUN_ID, timestamp=time.time(), dagster_event=None
    )
    other_run = "9" * 8 + "-0000-0000-0000-" + "9" * 12
    batch = [
        materialization("first", "x"),
        log_line,
        materialization("first", "y"),
        materialization("first", "z", other_run),
    ]
    storage.store_event_batch(batch)
    assert [e.user_message for e in storage.get_logs_for_run(RUN_ID)][1] == "hello"
    assert len(storage.get_logs_for_run(RUN_ID)) == 3
    assert len(storage.get_logs_for_run(other_run)) == 1
    records = storage.get_event_records(
        dg.EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION, asset_key=dg.AssetKey("first"))
    )
    assert sorted(r.partition_key for r in records) == ["x", "y", "z"]
    storage.dispose()


def test_each_assets_entry_shows_its_latest_event_after_a_batch(tmp_path):
    """A batch updates each asset's entry (asset_keys) once per event type, not once per event:
    what Dagster reads afterwards is the same as after storing the events one by one."""
    batched = PooledSqliteEventLogStorage(str(tmp_path / "batched"))
    one_by_one = PooledSqliteEventLogStorage(str(tmp_path / "one_by_one"))
    other_run = "9" * 8 + "-0000-0000-0000-" + "9" * 12
    events = [
        materialization("first", "x"),
        materialization("second", "x"),
        materialization("first", "y"),
        materialization("first", "z", other_run),
        materialization("second", "y"),
    ]
    earlier, batch = [e for e in events if e.run_id == other_run], [e for e in events if e.run_id == RUN_ID]
    batched.store_event_batch(earlier)
    batched.store_event_batch(batch)
    for event in earlier + batch:
        one_by_one.store_event(event)
    for storage in (batched, one_by_one):
        storage.flush_pending()
    for asset, partition, run in (("first", "y", RUN_ID), ("second", "y", RUN_ID)):
        key = dg.AssetKey(asset)
        for storage in (batched, one_by_one):
            (record,) = storage.get_asset_records([key])
            latest = record.asset_entry.last_materialization_record
            assert (latest.partition_key, latest.run_id) == (partition, run), asset
            assert latest.storage_id == max(
                r.storage_id
                for r in storage.get_event_records(
                    dg.EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION, asset_key=key)
                )
            )
            assert record.asset_entry.last_run_id == run
    batched.dispose()
    one_by_one.dispose()


def test_an_assets_entry_holds_its_latest_materialization_as_dagster_serializes_it(tmp_path):
    """The entry's copy of the latest materialization is reused from the batch's own JSON, not
    serialized again: it must be exactly what Dagster would have written (a Dagster upgrade that
    changes its record's JSON fails here), metadata of every kind included."""
    from dagster._core.event_api import EventLogRecord
    from dagster._serdes import serialize_value

    storage = PooledSqliteEventLogStorage(str(tmp_path))
    rich = {
        "rows": dg.MetadataValue.table(
            [dg.TableRecord({"id": "urn:section:1", "page": 2})],
            schema=dg.TableSchema(columns=[dg.TableColumn("id"), dg.TableColumn("page", "int")]),
        ),
        "preview": dg.MetadataValue.md("**Section 1** \u2013 caf\u00e9"),
        "dagster/uri": dg.MetadataValue.url("s3://bucket/doc/1"),
        "dagster/row_count": 1,
        "seconds": 0.25,
    }
    events = [materialization("first", "x"), materialization("first", "y")]
    event = events[-1]
    payload = event.dagster_event.event_specific_data._replace(
        materialization=dg.AssetMaterialization(asset_key="first", partition="y", metadata=rich)
    )
    events[-1] = event._replace(dagster_event=event.dagster_event._replace(event_specific_data=payload))
    storage.store_event_batch(events)
    (record,) = storage.get_asset_records([dg.AssetKey("first")])
    latest = record.asset_entry.last_materialization_record
    assert latest.partition_key == "y"
    with storage.index_connection() as conn:
        (stored,) = conn.execute(db.text("SELECT last_materialization FROM asset_keys")).fetchone()
    assert stored == serialize_value(EventLogRecord(storage_id=latest.storage_id, event_log_entry=events[-1]))
    assert latest.asset_materialization.metadata["rows"] == rich["rows"]
    storage.dispose()


WRITER = """
import os, signal, sys, time
sys.path.insert(0, {repo!r})
from tests.instance.test_event_log import materialization
from ud_assets.instance.event_log import MATERIALIZATIONS_WAIT_S, PooledSqliteEventLogStorage, UdInstance
storage = PooledSqliteEventLogStorage({base_dir!r})
for i in range({count}):
    storage.store_event(materialization("first", f"p{{i}}"))
time.sleep({wait})  # nothing else happens: the waiting materializations are stored on their own
print("stored", flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no close, no checkpoint: only what each commit made durable
"""


def test_a_writer_killed_after_its_commits_loses_none_of_them(tmp_path):
    count = 40
    process = subprocess.run(
        [
            sys.executable,
            "-c",
            WRITER.format(repo=str(REPO), base_dir=str(tmp_path), count=count, wait=3 * MATERIALIZATIONS_WAIT_S),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == -signal.SIGKILL, process.stderr
    assert process.stdout.strip() == "stored"
    assert (tmp_path / f"{RUN_ID}.db-wal").exists()  # the commits were never checkpointed
    storage = PooledSqliteEventLogStorage(str(tmp_path))
    assert len(storage.get_logs_for_run(RUN_ID)) == count
    records = storage.get_event_records(
        dg.EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION, asset_key=dg.AssetKey("first")), limit=1000
    )
    assert {r.partition_key for r in records} == {f"p{i}" for i in range(count)}
    storage.dispose()


def log_line(message: str) -> EventLogEntry:
    return EventLogEntry(
        error_info=None, level=20, user_message=message, run_id=RUN_ID, timestamp=time.time(), dagster_event=None
    )


def partitions_stored(base_dir) -> set[str]:
    """What another process (the webserver, a sensor) reads from the files."""
    reader = PooledSqliteEventLogStorage(str(base_dir))
    try:
        records = reader.get_event_records(
            dg.EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION, asset_key=dg.AssetKey("first")), limit=1000
        )
        return {r.partition_key for r in records}
    finally:
        reader.dispose()


def test_waiting_materializations_are_stored_within_their_wait(tmp_path):
    writer = PooledSqliteEventLogStorage(str(tmp_path))
    try:
        for partition in ("a", "b", "c"):
            writer.store_event(materialization("first", partition))
        deadline = time.monotonic() + 10 * MATERIALIZATIONS_WAIT_S
        while partitions_stored(tmp_path) != {"a", "b", "c"} and time.monotonic() < deadline:
            time.sleep(MATERIALIZATIONS_WAIT_S / 5)
        assert partitions_stored(tmp_path) == {"a", "b", "c"}
    finally:
        writer.dispose()


@pytest.fixture
def patient_writer(tmp_path, monkeypatch):
    """A writer whose materializations would wait a minute: only what the test does stores them."""
    import ud_assets.instance.event_log as event_log

    monkeypatch.setattr(event_log, "MATERIALIZATIONS_WAIT_S", 60.0)
    writer = PooledSqliteEventLogStorage(str(tmp_path))
    yield writer
    writer.dispose()


def test_the_writing_process_reads_its_waiting_materializations_at_once(tmp_path, patient_writer):
    """A check result looks up the materialization it checks: its own step's, just yielded."""
    patient_writer.store_event(materialization("first", "a"))
    assert patient_writer._pending, "the materialization should wait"
    assert partitions_stored(tmp_path) == set()
    assert patient_writer.get_materialized_partitions(dg.AssetKey("first")) == {"a"}
    assert partitions_stored(tmp_path) == {"a"}


def test_any_other_event_stores_the_waiting_materializations_first(tmp_path, patient_writer):
    patient_writer.store_event(materialization("first", "a"))
    patient_writer.store_event(materialization("first", "b"))
    patient_writer.store_event(log_line("between"))
    patient_writer.store_event(materialization("first", "c"))
    patient_writer.store_event(log_line("after"))
    patient_writer.dispose()
    reader = PooledSqliteEventLogStorage(str(tmp_path))
    try:
        order = [
            e.user_message or e.dagster_event.event_specific_data.materialization.partition
            for e in reader.get_logs_for_run(RUN_ID)
        ]
        assert order == ["a", "b", "between", "c", "after"]
    finally:
        reader.dispose()


def test_a_watcher_of_the_run_hears_each_new_event(tmp_path):
    """The UI's live run log waits for the run's .db file to change: with the WAL kept open, each
    commit touches it instead."""
    writer = PooledSqliteEventLogStorage(str(tmp_path))
    writer.store_event(materialization("first", "before"))  # the run's shard exists before the watch
    reader = PooledSqliteEventLogStorage(str(tmp_path))
    heard: list[str] = []
    three = threading.Event()

    def callback(entry, _cursor):
        heard.append(entry.dagster_event.event_specific_data.materialization.partition)
        if len(heard) == 3:
            three.set()

    reader.watch(RUN_ID, str(EventLogCursor.from_storage_id(1)), callback)  # after the first event
    try:
        for partition in ("x", "y", "z"):
            writer.store_event(materialization("first", partition))
            time.sleep(0.2)
        assert three.wait(15), f"the watcher heard only {heard}"
        assert heard == ["x", "y", "z"]
    finally:
        reader.dispose()
        writer.dispose()


def test_without_base_dir_it_uses_the_folder_of_dagsters_default(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    storage = PooledSqliteEventLogStorage.from_config_value(None, {})
    assert Path(storage._base_dir) == tmp_path / "history" / "runs"
    monkeypatch.delenv("DAGSTER_HOME")
    with pytest.raises(ValueError, match="DAGSTER_HOME"):
        PooledSqliteEventLogStorage.from_config_value(None, {})
    assert os.environ.get("DAGSTER_EVENT_BATCH_SIZE")


def test_an_instance_loaded_from_its_folder_keeps_its_events_there(tmp_path, monkeypatch):
    """However the instance is loaded (here by folder, with DAGSTER_HOME naming another one), its
    events go to its own folder, where Dagster's default storage keeps them."""
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(elsewhere))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)
        instance.add_dynamic_partitions("letters", ["a"])
        assert run_range(instance, ["a"]).success
    assert (home / "history" / "runs" / "index.db").exists()
    assert not (elsewhere / "history").exists()
    monkeypatch.delenv("DAGSTER_HOME")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_materialized_partitions(dg.AssetKey("first")) == {"a"}
