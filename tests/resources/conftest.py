"""Fixtures running one contract suite against both librarian backends.

"embedded": files + SQLite in a tmp_path. "cassandra": the real MinIO and Cassandra named by the
environment (eval "$(scripts/services/env.sh)"), with a bucket and workspaces unique to this test
session, removed at its end. Unreachable servers make the cassandra tests fail, never skip.
"""

from __future__ import annotations

import os
import time
import uuid
import warnings

import pytest

from resources.model import StoreSettings

BACKENDS = ("embedded", "cassandra")
SERVICES_HINT = 'start them with: bash scripts/services/up.sh && eval "$(bash scripts/services/env.sh)"'


class CassandraRun:
    """One test session's footprint on the real servers: a bucket and some workspaces."""

    def __init__(self) -> None:
        missing = [v for v in ("CASSANDRA_HOST", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") if not os.environ.get(v)]
        if not (os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")):
            missing.append("AWS_ENDPOINT_URL_S3")
        self.tag = uuid.uuid4().hex[:10]
        self.bucket = f"udtest-{self.tag}"
        self.workspaces: list[str] = []
        self.error: str | None = None
        if missing:
            self.error = f"cassandra backend tests need {', '.join(missing)} set; {SERVICES_HINT}"
            return
        # Fail fast, with the endpoint in the message, when a server is down.
        from resources.cassandra.connection import CassandraConfig, acquire
        from resources.model import LibrarianError
        from resources.s3 import S3ObjectStore, make_client

        try:
            self.connection = acquire(CassandraConfig.from_env())
            self.objects = S3ObjectStore(self.bucket, client=make_client(max_attempts=2))
        except LibrarianError as e:
            self.error = f"{e}; {SERVICES_HINT}"

    def new_workspace(self) -> str:
        ws = f"udt_{self.tag}_{len(self.workspaces)}"
        self.workspaces.append(ws)
        return ws

    def settings(self, workspace: str) -> StoreSettings:
        from resources.settings import load_settings

        return load_settings(backend="cassandra", workspace=workspace, bucket=self.bucket)

    def cleanup(self) -> None:
        """Best effort (each step retried once): a server restarted meanwhile only leaves a warning."""
        if self.error:
            return
        from resources.cassandra.connection import CassandraConfig, acquire
        from resources.cassandra.triples import keyspace_for

        c = acquire(CassandraConfig.from_env())  # afresh: a test may have restarted the server
        steps = []
        for ws in self.workspaces:
            steps.append(
                (f"rows of {ws}", lambda ws=ws: c.execute("DELETE FROM librarian.document WHERE workspace = ?", (ws,)))
            )
            steps.append(
                (f"log of {ws}", lambda ws=ws: c.execute("DELETE FROM librarian.upload_log WHERE workspace = ?", (ws,)))
            )
            for kind in ("generation", "failure"):
                steps.append(
                    (
                        f"{kind}s of {ws}",
                        lambda ws=ws, kind=kind: c.execute(
                            f"DELETE FROM librarian.record_{kind} WHERE workspace = ?", (ws,)
                        ),
                    )
                )
            steps.append(
                (
                    f"keyspace of {ws}",
                    lambda ws=ws: c.ddl(f'DROP KEYSPACE IF EXISTS "{keyspace_for(ws)}"', "dropping a test keyspace"),
                )
            )
        steps.append((f"bucket {self.bucket}", self._drop_bucket))
        failed = []
        for name, step in steps:
            for attempt in (1, 2):
                try:
                    step()
                    break
                except Exception as e:
                    if attempt == 2:
                        failed.append(f"{name}: {e}")
                    else:
                        time.sleep(2)
        c.release()
        if failed:
            warnings.warn(
                f"cleanup of the cassandra test session left {len(failed)} things behind: {failed[:3]}", stacklevel=2
            )

    def _drop_bucket(self) -> None:
        client = self.objects.client
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:
                client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys})
        client.delete_bucket(Bucket=self.bucket)


@pytest.fixture(scope="session")
def cassandra_run():
    run = CassandraRun()
    yield run
    run.cleanup()


@pytest.fixture(params=["embedded", pytest.param("cassandra", marks=pytest.mark.services)])
def backend(request) -> str:
    return request.param


@pytest.fixture
def fresh_settings(backend, tmp_path, request):
    """A factory of settings, each naming a fresh, empty librarian of the backend under test."""
    count = iter(range(1000))

    def make() -> StoreSettings:
        n = next(count)
        if backend == "embedded":
            # One UD_HOME, several workspaces: that is how workspaces share an embedded store.
            return StoreSettings(backend="embedded", workspace=f"ws{n}" if n else "default", home=str(tmp_path / "ud"))
        run = request.getfixturevalue("cassandra_run")
        if run.error:
            pytest.fail(run.error, pytrace=False)
        return run.settings(run.new_workspace())

    return make


@pytest.fixture
def store_settings(fresh_settings) -> StoreSettings:
    return fresh_settings()


@pytest.fixture
def librarian(store_settings):
    from resources.settings import open_librarian

    lib = open_librarian(store_settings)
    yield lib
    lib.close()


@pytest.fixture
def triples(librarian):
    return librarian.triples
