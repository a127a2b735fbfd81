"""Dagster's SQLite event log, keeping its connections: the default instance's per-event cost.

Dagster's `SqliteEventLogStorage` opens a new engine and connection for every event, commits
with a full fsync and closes the connection, which checkpoints the WAL (more fsyncs): about
13 ms per stored event on this project's machine, twice per asset event (the run's shard and the
cross-run index). A batch of small documents stores about a dozen events per document (six
materializations, six planned materializations), so that cost came to most of the graph's fixed
cost per document. This storage is the same schema and the same files, with three changes:

- one engine and connection per shard, kept (the least recently used beyond `KEPT_SHARDS` are
  closed), instead of one per event;
- `synchronous=NORMAL` on those WAL databases: a commit is durable against a crash of any process
  (SIGKILL included, the WAL is in the page cache) and only the last transactions before a power
  loss or kernel crash may roll back. Nothing the librarian stores depends on it: a document's
  generation lives in the librarian, the event log is Dagster's history;
- a batch of asset events (Dagster hands it the planned materializations of a run, one per
  partition and asset) is one transaction per shard instead of one per event;
- the asset_keys table's columns are reflected once, not for every asset event;
- materializations wait up to `MATERIALIZATIONS_WAIT_S` and are stored together, one transaction
  per shard (a batch of small documents yields six a document). Any other event, and any read or
  write through this storage, stores the waiting ones first, so the run's order is kept and this
  process always reads its own materializations. What a SIGKILL of the writing process can lose
  is the materializations of its last half second: the librarian already holds what they report
  (a materialization is yielded after its document is stored), the partitions show as not
  materialized, and the next run finds those documents up to date.

Writers keep the WAL open, so the run's .db file no longer changes with each commit; the file is
touched after each commit to a run's shard instead, which is what Dagster's watcher of a run (the
UI's live run log) waits for. Readers in other processes see committed WAL content as before.

The repository's dagster.yaml names `UdInstance` as its `instance_class`: Dagster's own instance,
whose default storage is Dagster's SQLite storage with this event log, in the folders Dagster's
default uses (history/, history/runs/, schedules/ under the instance's folder). The instance class
is told that folder however the instance is loaded (DAGSTER_HOME, `DagsterInstance.from_config`,
a run worker's instance ref); a storage block in dagster.yaml (`storage: postgres:`...) replaces it.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as db
import yaml
from dagster import DagsterInstance, Field, StringSource
from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS, DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME, SqliteEventLogStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._serdes import ConfigurableClassData
from dagster._time import datetime_from_timestamp
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

MATERIALIZATIONS_WAIT_S = 0.5  # how long a materialization may wait to be stored with others
MATERIALIZATIONS_BATCH = 200  # stored at once when this many wait
KEPT_SHARDS = 16  # open shards per process: a run's own and the index, plus runs a webserver reads
BATCH_SIZE = "10000"  # Dagster's DAGSTER_EVENT_BATCH_SIZE: a run's planned events as one batch


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """SqliteEventLogStorage with kept connections, NORMAL sync and one transaction per batch."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        self._asset_key_columns: dict[str, bool] = {}
        self._pending: list[EventLogEntry] = []  # materializations not stored yet, in order
        self._pending_lock = threading.RLock()
        self._flush_timer: threading.Timer | None = None
        self._flushing = threading.local()
        self._batch_json = threading.local()  # the JSON of the batch being stored, by id(event)
        _WRITERS.add(self)  # stores what waits when the process exits
        # Dagster only calls store_event_batch when this is set (it is read at each event);
        # every process that loads this storage stores a run's planned events in one batch.
        os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", BATCH_SIZE)
        super().__init__(base_dir, inst_data)

    @classmethod
    def config_type(cls) -> Any:
        return {"base_dir": Field(StringSource, is_required=False)}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> PooledSqliteEventLogStorage:
        base_dir = config_value.get("base_dir") or default_base_dir()
        return cls(base_dir, inst_data=inst_data)

    def _engine(self, shard: str) -> Engine:
        with self._engines_lock:
            engine = self._engines.get(shard)
            if engine is not None:
                self._engines.move_to_end(shard)
                return engine
            engine = db.create_engine(
                self.conn_string_for_shard(shard),
                # One connection per shard, used under the storage's lock (as Dagster's own is).
                poolclass=StaticPool,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            )
            db.event.listen(engine, "connect", _normal_sync)
            self._engines[shard] = engine
            while len(self._engines) > KEPT_SHARDS:
                self._engines.popitem(last=False)[1].dispose()
            return engine

    def store_event(self, event: EventLogEntry) -> None:
        """A materialization waits to be stored with others (at most MATERIALIZATIONS_WAIT_S);
        any other event is stored at once, after the waiting ones."""
        if event.is_dagster_event and event.dagster_event_type == DagsterEventType.ASSET_MATERIALIZATION:
            with self._pending_lock:
                self._pending.append(event)
                full = len(self._pending) >= MATERIALIZATIONS_BATCH
                if not full and self._flush_timer is None:
                    self._flush_timer = threading.Timer(MATERIALIZATIONS_WAIT_S, self.flush_pending)
                    self._flush_timer.daemon = True
                    self._flush_timer.start()
            if full:
                self.flush_pending()
            return
        self.flush_pending()
        super().store_event(event)

    def flush_pending(self) -> None:
        """Store the waiting materializations now, in order, one batch per run."""
        with self._pending_lock:
            events, self._pending = self._pending, []
            if self._flush_timer is not None:
                self._flush_timer.cancel()
                self._flush_timer = None
            if not events:
                return
            self._flushing.active = True
            try:
                for i, run_events in enumerate(groups := _by_run(events)):
                    try:
                        self.store_event_batch(run_events)
                    except BaseException:
                        # Kept for the next store or read, which raises in its caller's thread.
                        self._pending[:0] = [e for g in groups[i:] for e in g]
                        raise
            finally:
                self._flushing.active = False

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        if self._pending and not getattr(self._flushing, "active", False):
            self.flush_pending()  # whoever reads or writes next sees every materialization before
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn
            if shard != INDEX_SHARD_NAME:
                _touch(self.path_for_shard(shard))

    def _has_asset_key_col_on_connection(self, conn: Connection, column_name: str) -> bool:
        # Dagster reflects the asset_keys table's columns for every asset event it stores (a
        # PRAGMA and SQLAlchemy's reflection: about 1 ms each); they change only with a migration.
        known = self._asset_key_columns.get(column_name)
        if known is None:
            known = self._asset_key_columns[column_name] = super()._has_asset_key_col_on_connection(conn, column_name)
        return known

    def upgrade(self) -> None:
        self._asset_key_columns.clear()
        super().upgrade()

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """A run's asset events in one transaction per shard; any other event as Dagster stores it."""
        batch = [e for e in events if _is_asset_event(e)]
        if len({e.run_id for e in batch}) != 1:
            batch = []
        for event in events:
            if not any(event is e for e in batch):
                SqliteEventLogStorage.store_event(self, event)
        if not batch:
            return
        # Each event serialized once and each table written by one executemany: a statement per
        # event, compiled and executed one at a time, was most of a batch's cost (about 1.2 ms an
        # event, twice).
        rows = [self._event_to_row(event) for event in batch]
        with self.run_connection(batch[0].run_id) as conn:
            conn.execute(SqlEventLogStorageTable.insert(), rows)
        # Mirrored in the cross-run index, as store_event does for each asset event; RETURNING
        # gives each row's id in the order of the rows (SQLite >= 3.35).
        with self.index_transaction() as conn:
            inserted = conn.execute(
                SqlEventLogStorageTable.insert().returning(SqlEventLogStorageTable.c.id, sort_by_parameter_order=True),
                rows,
            )
            event_ids = [row[0] for row in inserted]
            self._store_asset_event_tags(conn, batch, event_ids)
            self._batch_json.events = {id(event): row["event"] for event, row in zip(batch, rows)}
            try:
                for event, event_id in _last_of_each_kind(batch, event_ids):
                    self._store_asset_event(conn, event, event_id)
            finally:
                self._batch_json.events = {}

    def _get_asset_entry_values(
        self, event: EventLogEntry, event_id: int, has_asset_key_index_cols: bool
    ) -> dict[str, Any]:
        """Dagster's values for the asset's entry, without serializing a batch's materialization a
        second time: the entry keeps it wrapped in an EventLogRecord, whose JSON is the event's
        JSON between the wrapper's two other fields (serdes writes fields in sorted order). About
        a millisecond an entry for the 4 KB materializations of a document's stages."""
        event_json = getattr(self._batch_json, "events", {}).get(id(event))
        dagster_event = event.dagster_event
        if event_json is None or dagster_event is None or not dagster_event.is_step_materialization:
            return super()._get_asset_entry_values(event, event_id, has_asset_key_index_cols)
        values: dict[str, Any] = {
            "last_materialization": _record_json(event_json, event_id),
            "last_run_id": event.run_id,
        }
        if has_asset_key_index_cols:
            values["last_materialization_timestamp"] = datetime_from_timestamp(event.timestamp)
        return values

    def dispose(self) -> None:
        self.flush_pending()
        super().dispose()  # stops the watchers' threads first: they read through these connections
        # A connection is only used under the storage's lock: closing one another thread is using
        # would crash the process (SQLite frees it under the other thread's feet).
        with self._db_lock, self._engines_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()


class UdInstance(DagsterInstance):
    """Dagster's instance, its default SQLite storage using PooledSqliteEventLogStorage."""

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        return {}

    @classmethod
    def config_defaults(cls, base_dir: str) -> Mapping[str, ConfigurableClassData | None]:
        defaults = dict(InstanceRef.config_defaults(base_dir))
        event_log = ConfigurableClassData(
            __name__,
            PooledSqliteEventLogStorage.__name__,
            yaml.dump({"base_dir": os.path.join(base_dir, "history", "runs", "")}, default_flow_style=False),
        )
        defaults["event_log_storage"] = event_log
        parts = {"run_storage": defaults["run_storage"], "event_log_storage": event_log}
        parts["schedule_storage"] = defaults["schedule_storage"]
        # Dagster's composite of the three storages, as it builds one from dagster.yaml's legacy keys.
        defaults["storage"] = ConfigurableClassData(
            "dagster._core.storage.legacy_storage",
            "CompositeStorage",
            yaml.dump(
                {
                    name: {"module_name": d.module_name, "class_name": d.class_name, "config_yaml": d.config_yaml}
                    for name, d in parts.items()
                    if d is not None
                },
                default_flow_style=False,
            ),
        )
        return defaults


def default_base_dir() -> str:
    """Where Dagster's default storage keeps the event log: $DAGSTER_HOME/history/runs."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        raise ValueError("PooledSqliteEventLogStorage needs base_dir in its config, or DAGSTER_HOME set")
    return os.path.join(os.path.abspath(home), "history", "runs")


_WRITERS: weakref.WeakSet[PooledSqliteEventLogStorage] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    for storage in list(_WRITERS):
        try:
            storage.flush_pending()
        except Exception:  # the process is ending: what cannot be stored is lost, as with a crash
            pass


def _record_json(event_json: str, storage_id: int) -> str:
    """serialize_value(EventLogRecord(storage_id, event)) given serialize_value(event)."""
    return f'{{"__class__": "EventLogRecord", "event_log_entry": {event_json}, "storage_id": {storage_id}}}'


def _by_run(events: list[EventLogEntry]) -> list[list[EventLogEntry]]:
    groups: list[list[EventLogEntry]] = []
    for event in events:
        if groups and groups[-1][0].run_id == event.run_id:
            groups[-1].append(event)
        else:
            groups.append([event])
    return groups


def _last_of_each_kind(events: Sequence[EventLogEntry], event_ids: Sequence[int]) -> list[tuple[EventLogEntry, int]]:
    """Of a batch's asset events, those whose asset entry update still shows once the batch is
    stored: per asset key, the last event of each type, in batch order.

    Dagster updates an asset's row of asset_keys for every asset event (the latest
    materialization, serialized again, its run, its time), each a failed INSERT then an UPDATE.
    An event type always sets the same columns, so the row after the batch is the row after the
    last event of each type; the earlier ones are overwritten within the same transaction. A run's
    planned events (one per partition and asset, 1,200 for 200 documents) then update six rows,
    not 1,200, and a flush of waiting materializations one row per asset."""
    last: dict[tuple[Any, Any], int] = {}
    for index, event in enumerate(events):
        dagster_event = event.dagster_event
        if dagster_event is not None:
            last[(dagster_event.asset_key, dagster_event.event_type_value)] = index
    return [(events[i], event_ids[i]) for i in sorted(last.values())]


def _is_asset_event(event: EventLogEntry) -> bool:
    return (
        event.is_dagster_event
        and event.dagster_event_type in ASSET_EVENTS
        and event.dagster_event_type not in ASSET_CHECK_EVENTS
    )


def _normal_sync(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def _touch(path: str) -> None:
    try:
        os.utime(path)
    except FileNotFoundError:  # wiped meanwhile: nobody is watching it
        pass
