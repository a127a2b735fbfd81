"""Dagster's PostgreSQL storage, keeping its connections: the cluster's per-event cost.

dagster-postgres opens a new connection for every event it stores, and for every read or write
of its run and schedule storage (its engines use NullPool, "to prevent accumulating connections
per DagsterInstance"). On PostgreSQL that is a server process forked and a SCRAM-SHA-256
handshake (4,096 PBKDF2 rounds on each side) each time. Measured on this project's PostgreSQL 15
(scripts/cluster), storing 300 materializations one at a time:

    NullPool (dagster-postgres)   PostgreSQL 10.5-13.5 ms, the writer 7.4-9.2 ms of CPU an event
    kept connections (here)       PostgreSQL  0.8-0.9 ms, the writer 1.7-2.0 ms

A small document is a dozen events (six planned materializations, six materializations), so the
connections were most of PostgreSQL's CPU per document, which was the cluster's first ceiling.

These storages are dagster-postgres's, same schema and same queries, each with a small pool
instead: `POOL_SIZE` connections kept, up to `MAX_OVERFLOW` more while threads of one process use
it at once (those are closed when returned). Each checkout pings the connection first (pool_pre_ping: a
round trip, 0.1-0.2 ms), so a PostgreSQL restart or failover costs a reconnect, not a run. The
webserver still swaps in its own pools (optimize_for_webserver), as with dagster-postgres.

A kept connection must not be used, or closed, by a process forked from its owner: the decoding
children are forked from the step process. They never touch the instance and leave with os._exit;
still, every forked child starts with empty pools of its own (_forget_parents_pools): a child that
pinged or queried through an inherited connection would read its parent's replies.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping
from typing import Any, Self

from dagster._serdes import ConfigurableClassData
from dagster_postgres.event_log import PostgresEventLogStorage
from dagster_postgres.run_storage import PostgresRunStorage
from dagster_postgres.schedule_storage import PostgresScheduleStorage
from dagster_postgres.utils import create_pg_engine, get_token_provider_from_config, pg_url_from_config
from sqlalchemy.engine import Engine

POOL_SIZE = 2  # the step's main thread and one store thread write events at once, now and then
# More while more threads of a process use one storage at once, closed when returned. Kept: 2 a
# storage, 3 storages a process, so 16 workers keep about 100 of scripts/cluster's 200.
MAX_OVERFLOW = 4
_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()  # this process's pooled engines


class _KeptConnections:
    """dagster-postgres's storage classes take the same arguments and keep their engine in
    `_engine`: this one replaces it with pooled_engine's once the storage is set up."""

    _engine: Engine

    def __init__(
        self,
        postgres_url: str,
        should_autocreate_tables: bool = True,
        inst_data: ConfigurableClassData | None = None,
        token_provider: Any = None,
    ):
        super().__init__(postgres_url, should_autocreate_tables, inst_data, token_provider)  # type: ignore[call-arg]
        nullpool = self._engine
        self._engine = pooled_engine(postgres_url, token_provider)
        nullpool.dispose()

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]) -> Self:
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )

    def dispose(self) -> None:
        super().dispose()  # type: ignore[misc]
        self._engine.dispose()


class PooledPostgresEventLogStorage(_KeptConnections, PostgresEventLogStorage):
    """dagster-postgres's event log storage with its connections kept: a dozen events a document."""


class PooledPostgresRunStorage(_KeptConnections, PostgresRunStorage):
    """dagster-postgres's run storage with its connections kept: the daemon polls it every few
    seconds, and each run step reads and updates its run."""


class PooledPostgresScheduleStorage(_KeptConnections, PostgresScheduleStorage):
    """dagster-postgres's schedule storage with its connections kept: every sensor tick."""


def pooled_engine(postgres_url: str, token_provider: Any = None) -> Engine:
    """An AUTOCOMMIT engine (as dagster-postgres's) that keeps POOL_SIZE connections and pings
    each before use; a forked child starts with an empty pool of its own (_forget_parents_pools)."""
    engine = create_pg_engine(
        postgres_url,
        token_provider,
        isolation_level="AUTOCOMMIT",
        pool_size=POOL_SIZE,
        max_overflow=MAX_OVERFLOW,
        pool_pre_ping=True,
        pool_use_lifo=True,  # the last connection returned is the next one used: the others may idle
    )
    _ENGINES.add(engine)
    return engine


def _forget_parents_pools() -> None:
    """In a forked child: give each pooled engine a new, empty pool, so that the child never
    sends anything (a query, a ping) on its parent's sessions: SQLAlchemy's recipe for pools
    across fork. close=False leaves the parent's connections alone (and psycopg2 does not close
    a connection in a process other than the one that opened it, even when it is collected)."""
    for engine in list(_ENGINES):
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_parents_pools)
