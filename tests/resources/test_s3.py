"""resources.s3: the per-document requests (obstore, and minio-py for streamed reads) fail as the
librarian's errors, like boto3's."""

from __future__ import annotations

import os
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
        lambda store, oid: store.read(oid),
        lambda store, oid: store.read_range(oid, 0, 10),
        lambda store, oid: store.read_range(oid, 0, 9 << 20),
        lambda store, oid: store.exists(oid),
        lambda store, oid: store.size(oid),
    ],
    ids=["put", "open", "read", "read_range", "read_range_streamed", "exists", "size"],
)
def test_a_request_to_an_unreachable_server_is_storage_unavailable_naming_it(unreachable_store, request_):
    started = time.perf_counter()
    with pytest.raises(StorageUnavailable) as err:
        request_(unreachable_store, uuid.uuid4())
    message = str(err.value)
    assert message.startswith("S3 at http://127.0.0.1:1 unreachable while ")
    assert "very-secret" not in message
    # The attempts boto3 is configured with (2: the first and a retry), not the clients' own.
    assert time.perf_counter() - started < 1.5


@pytest.mark.services
def test_a_refused_request_is_the_librarians_error_in_one_line_without_the_secret(monkeypatch):
    """MinIO answers 403 to a wrong secret: not a server away (no retry can help), and obstore's
    debug dump of the request stays out of the message."""
    from resources.model import LibrarianError
    from resources.s3 import S3ObjectStore, make_client

    if not os.environ.get("AWS_ENDPOINT_URL_S3"):
        pytest.fail("AWS_ENDPOINT_URL_S3 unset: start the services (make services-up)")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "a-wrong-very-secret-key")
    store = S3ObjectStore("library", client=make_client(max_attempts=2), create_bucket=False)
    for request in (lambda oid: store.put(oid, b"text", "text/plain"), store.read, store.exists):
        with pytest.raises(LibrarianError) as err:
            request(uuid.uuid4())
        message = str(err.value)
        assert not isinstance(err.value, StorageUnavailable), message
        assert message.startswith(f"S3 at {os.environ['AWS_ENDPOINT_URL_S3']}: ") and message.endswith(
            "failed: HTTP 403"
        )
        assert "\n" not in message and "very-secret" not in message


@pytest.mark.services
def test_a_child_forked_after_requests_leaves_the_store_working_and_may_not_use_it_itself():
    """obstore's runtime stays with the process that started it: a decoding child forked after the
    parent's requests (it never touches the librarian) exits at once and the parent goes on; a
    child that did use the store would hang, so it is refused as a bug, at once."""
    from resources.s3 import S3ObjectStore, make_client

    store = S3ObjectStore(f"udtest-fork-{uuid.uuid4().hex[:8]}", client=make_client(max_attempts=2))
    first = uuid.uuid4()
    store.put(first, b"before the fork", "text/plain")
    pid = os.fork()
    if pid == 0:  # the child: a parse's worth of work, then an attempt at the parent's store
        code = 3
        try:
            sum(range(100_000))
            store.read(first)
        except RuntimeError as e:
            code = 0 if "forked child" in str(e) else 4
        finally:
            os._exit(code)
    started = time.monotonic()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and time.monotonic() - started < 10
    second = uuid.uuid4()
    store.put(second, b"after the fork", "text/plain")
    assert store.read(first) == b"before the fork" and store.read(second) == b"after the fork"
    for oid in (first, second):
        store.delete(oid)
    store.client.delete_bucket(Bucket=store.bucket)
