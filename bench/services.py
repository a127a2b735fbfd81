"""What a bench run creates on the real MinIO + Cassandra, and its removal."""

from __future__ import annotations

import time
import uuid
from pathlib import Path


class Footprint:
    """What this bench run creates on MinIO + Cassandra: one bucket, some workspaces; removed at the end."""

    def __init__(self) -> None:
        self.tag = uuid.uuid4().hex[:8]
        self.bucket = f"udbench-{self.tag}"
        self.workspaces: list[str] = []

    def workspace(self, purpose: str) -> str:
        ws = f"udbench_{self.tag}_{purpose}"
        self.workspaces.append(ws)
        return ws

    def upload(self, workspace: str, files: dict[str, Path]) -> None:
        from resources.settings import load_settings, open_librarian
        from ud_assets.decoding.detect import detect_mime

        with open_librarian(load_settings(backend="cassandra", workspace=workspace, bucket=self.bucket)) as lib:
            for key, path in files.items():
                data = path.read_bytes()
                lib.add_document(key, detect_mime(data, path.name), data, title=path.name)

    def cleanup(self, delays: tuple[float, ...] = (2.0, 5.0, 10.0)) -> list[str]:
        """Best effort: each step is retried after each of delays (a server restarting meanwhile, as
        other test runs may do, gets about 20 s to come back); returns what could not be removed."""
        from resources.cassandra.connection import CassandraConfig, acquire
        from resources.cassandra.triples import keyspace_for
        from resources.s3 import make_client

        def attempt(step):
            for delay in (*delays, None):
                try:
                    return step()
                except Exception:
                    if delay is None:
                        raise
                    time.sleep(delay)

        failed: list[str] = []
        connection = None
        try:
            connection = attempt(lambda: acquire(CassandraConfig.from_env()))
        except Exception as exc:
            failed.append(f"cassandra (workspaces {', '.join(self.workspaces)}): {exc}")
        steps = []
        for ws in self.workspaces if connection else ():
            for table in ("document", "upload_log", "record_generation", "record_failure"):
                steps.append(
                    (
                        f"librarian.{table} of {ws}",
                        lambda ws=ws, table=table: connection.execute(
                            f"DELETE FROM librarian.{table} WHERE workspace = ?", (ws,)
                        ),
                    )
                )
            steps.append(
                (
                    f"keyspace of {ws}",
                    lambda ws=ws: connection.ddl(
                        f'DROP KEYSPACE IF EXISTS "{keyspace_for(ws)}"', "dropping a bench keyspace"
                    ),
                )
            )

        def drop_bucket():
            from botocore.exceptions import ClientError

            client = make_client()
            try:
                for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
                    keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                    if keys:
                        client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys})
                client.delete_bucket(Bucket=self.bucket)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("NoSuchBucket", "404"):
                    raise

        steps.append((f"bucket {self.bucket}", drop_bucket))
        for name, step in steps:
            try:
                attempt(step)
            except Exception as exc:
                failed.append(f"{name}: {exc}")
        if connection:
            connection.release()
        return failed


def upload_embedded(home: Path, workspace: str, files: dict[str, Path]) -> None:
    """files into the embedded librarian (files + SQLite) in home, as Footprint.upload does on the servers."""
    from resources.settings import load_settings, open_librarian
    from ud_assets.decoding.detect import detect_mime

    with open_librarian(load_settings(backend="embedded", workspace=workspace, home=str(home))) as lib:
        for key, path in files.items():
            data = path.read_bytes()
            lib.add_document(key, detect_mime(data, path.name), data, title=path.name)
