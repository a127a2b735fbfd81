"""resources.s3: the per-document requests (minio-py) fail as the librarian's errors, like boto3's."""

from __future__ import annotations

import time
import uuid

import pytest

from resources.model import StorageUnavailable


@pytest.fixture
def unreachable_store(monkeypatch):
    from resources.s3 import S3ObjectStore, make_client

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "very-secret-key")
    return S3ObjectStore("library", client=make_client(max_attempts=2, connect_timeout=1), create_bucket=False)


@pytest.mark.parametrize(
    "request_",
    [
        lambda store, oid: store.put(oid, b"text", "text/plain"),
        lambda store, oid: b"".join(store.open(oid)),
        lambda store, oid: store.read_range(oid, 0, 10),
        lambda store, oid: store.exists(oid),
        lambda store, oid: store.size(oid),
    ],
    ids=["put", "open", "read_range", "exists", "size"],
)
def test_a_request_to_an_unreachable_server_is_storage_unavailable_naming_it(unreachable_store, request_):
    started = time.perf_counter()
    with pytest.raises(StorageUnavailable) as err:
        request_(unreachable_store, uuid.uuid4())
    message = str(err.value)
    assert message.startswith("S3 at http://127.0.0.1:1 unreachable while ")
    assert "very-secret" not in message
    # The attempts boto3 is configured with (3: the first and 2 retries), not minio-py's own six.
    assert time.perf_counter() - started < 1.5
