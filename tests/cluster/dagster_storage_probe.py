"""Run by test_dagster_storage.py as a process of its own, in the cluster's environment
(DAGSTER_HOME of make cluster-up): stores events and reads runs and sensor states through the
deployment's instance, as a run worker and the daemon do, and prints what it saw as JSON.

    python -m tests.cluster.dagster_storage_probe TAG EVENTS
"""

from __future__ import annotations

import gc
import json
import os
import sys

import dagster as dg
import psycopg2
from sqlalchemy import event, text

FORKED_EVENTS = 20


def main(tag: str, events: int) -> dict:
    instance = dg.DagsterInstance.get()
    storage = instance.event_log_storage
    opened: list[int] = []
    event.listen(storage._engine, "connect", lambda *_: opened.append(os.getpid()))
    others = {"runs": instance.run_storage, "schedules": instance.schedule_storage}
    others_opened: dict[str, list[int]] = {name: [] for name in others}
    for name, other in others.items():
        event.listen(other._engine, "connect", lambda *_, name=name: others_opened[name].append(os.getpid()))
    key = dg.AssetKey(["ud_test", tag, "probe"])

    def store(partition: str) -> None:
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=partition))

    def backend_pid() -> int:
        with storage._connect() as conn:
            return conn.execute(text("SELECT pg_backend_pid()")).scalar_one()

    for i in range(events):
        store(f"p{i}")
    for _ in range(events):  # what the daemon does on every tick, and a run worker on every step
        instance.get_runs(limit=1)
        instance.all_instigator_state()
    out: dict = {
        "storages": sorted(type(s).__name__ for s in (storage, *others.values())),
        "connections_for_events": len(opened),
        "connections_for_reads": {name: len(pids) for name, pids in others_opened.items()},
    }

    # A forked child writes while its parent does, then collects its garbage: each through a
    # connection of its own, and the parent's session survives the child.
    before = backend_pid()
    child = os.fork()
    if child == 0:
        code = 1
        try:
            for i in range(FORKED_EVENTS):
                store(f"child{i}")
            gc.collect()
            code = 0
        finally:
            os._exit(code)
    for i in range(FORKED_EVENTS):
        store(f"parent{i}")
    _, status = os.waitpid(child, 0)
    out["child_exit"] = os.waitstatus_to_exitcode(status)
    out["parent_session_kept"] = backend_pid() == before

    # The server ends the kept session (a restart, a failover, an idle timeout): the next event reconnects.
    with psycopg2.connect(
        host=os.environ["DAGSTER_PG_HOST"],
        port=os.environ["DAGSTER_PG_PORT"],
        user=os.environ["DAGSTER_PG_USER"],
        password=os.environ["DAGSTER_PG_PASSWORD"],
        dbname=os.environ["DAGSTER_PG_DB"],
    ) as admin:
        admin.autocommit = True
        admin.cursor().execute("SELECT pg_terminate_backend(%s)", (before,))
    store("after-termination")

    records = instance.fetch_materializations(key, limit=events + 2 * FORKED_EVENTS + 10).records
    out["stored_partitions"] = sorted(r.partition_key for r in records if r.partition_key)
    instance.dispose()
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]))))
