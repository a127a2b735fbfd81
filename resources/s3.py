"""ObjectStore over S3 (MinIO or any S3 server), laid out like TrustGraph's librarian.

Bucket UD_BUCKET (default "library"), key doc/{object_id}, ContentType = the document's kind.
boto3 finds the endpoint (AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL), the credentials
(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) and the region (AWS_DEFAULT_REGION; us-east-1 when
unset) itself. Addressing is path-style; retries use botocore's "standard" mode with exponential
backoff (UD_S3_MAX_ATTEMPTS, default 5 attempts). Uploads go through boto3's managed transfer
(multipart above UD_S3_MULTIPART_THRESHOLD bytes, default 8 MiB); reads stream the body in chunks.

boto3 resolves that configuration and makes the rare requests (the bucket, large uploads, deletes).
The requests made for every document (small PUTs, whole reads of small objects, ranged GETs, HEADs)
go through obstore (Rust's object_store), with the same endpoint, region, credentials (boto3's
chain, refreshed as boto3 refreshes them), timeouts and number of attempts; streamed reads of any
size through minio-py, the client TrustGraph's own librarian uses, whose timeout is per read of
the socket rather than for the whole body. Per request, measured on MinIO with 1.5 KB objects:
botocore about 1 ms of CPU, minio-py 0.42-0.50 ms, obstore 0.15-0.23 ms, most of it outside the
GIL; a small document makes about seven.
"""

from __future__ import annotations

import io
import os
import re
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING

import boto3
import botocore.exceptions as bce
import obstore
import urllib3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from minio import Minio
from minio import error as minio_error
from minio.credentials import Credentials, Provider
from obstore.exceptions import BaseError as ObstoreError
from obstore.store import S3Store

from resources.model import SMALL_OBJECT, BinaryReader, LibrarianError, StorageUnavailable

if TYPE_CHECKING:
    from obstore.store import ClientConfig, S3Credential

MiB = 1 << 20
_BUSY = ("SlowDown", "ServiceUnavailable", "XMinioServerNotInitialized")
_UNREACHABLE = (
    bce.EndpointConnectionError,
    bce.ConnectTimeoutError,
    bce.ReadTimeoutError,
    bce.ConnectionClosedError,
    bce.ConnectionError,
)


def object_key(object_id: uuid.UUID) -> str:
    return f"doc/{uuid.UUID(str(object_id))}"


def _int_env(name: str, default: int) -> int:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise LibrarianError(f"{name} {text!r} is not a whole number") from None


def make_client(max_attempts: int | None = None, connect_timeout: float = 5.0, read_timeout: float = 60.0):
    """An S3 client configured from boto3's standard environment variables."""
    region = os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1"
    config = Config(
        region_name=region,
        s3={"addressing_style": "path"},
        retries={"max_attempts": max_attempts or _int_env("UD_S3_MAX_ATTEMPTS", 5), "mode": "standard"},
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        # Checksums only where S3 requires them: MinIO and other S3 servers vary in support.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    return _session().client("s3", config=config)


@cache
def _loader_of(pid: int):
    import botocore.loaders

    return botocore.loaders.create_loader()


def _session() -> boto3.session.Session:
    """A new session (credentials and region are read afresh) sharing the process's model loader:
    the loader keeps the S3 model it parsed (0.1-0.65 s of CPU here, depending on load), so a
    second client in the same process (another librarian, the next run in a code server) does not
    parse it again. Keyed by pid: a forked child makes its own."""
    import botocore.session

    loader = _loader_of(os.getpid())
    core = botocore.session.Session()
    core.register_component("data_loader", loader)
    with _LOADER_LOCK:
        session = boto3.session.Session(botocore_session=core)
        # boto3 appends its data folder to the loader's paths for every session: keep one of each.
        loader.search_paths[:] = dict.fromkeys(loader.search_paths)
    return session


_LOADER_LOCK = threading.Lock()


class _BotocoreCredentials(Provider):
    """minio-py's view of boto3's credentials: the frozen set, which botocore refreshes when they
    come from a source that expires (a role, SSO)."""

    def __init__(self, credentials):
        self._credentials = credentials

    def retrieve(self) -> Credentials:
        if self._credentials is None:
            raise bce.NoCredentialsError()
        frozen = self._credentials.get_frozen_credentials()
        return Credentials(frozen.access_key, frozen.secret_key, frozen.token)


def _endpoint_and_attempts(client) -> tuple[str | None, str, int]:
    """The boto3 client's endpoint as scheme and host (it must name one), and its attempts, the
    first included."""
    endpoint = urllib3.util.parse_url(client.meta.endpoint_url)
    if not endpoint.netloc:
        raise LibrarianError(f"S3 endpoint {client.meta.endpoint_url!r} has no host")
    # botocore keeps the first attempt and its retries as total_max_attempts.
    return endpoint.scheme, endpoint.netloc, (client.meta.config.retries or {}).get("total_max_attempts") or 5


def _request_client(client, credentials) -> Minio:
    """A minio-py client to the boto3 client's endpoint, with its region, timeouts and attempts."""
    scheme, host, attempts = _endpoint_and_attempts(client)
    config = client.meta.config
    pool = urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=config.connect_timeout, read=config.read_timeout),
        maxsize=10,  # boto3's max_pool_connections
        cert_reqs="CERT_REQUIRED",
        ca_certs=os.environ.get("AWS_CA_BUNDLE") or None,
        # botocore's "standard" mode retries the same failures: no connection, a timeout, a 5xx.
        retries=urllib3.Retry(total=max(0, attempts - 1), backoff_factor=0.2, status_forcelist=[500, 502, 503, 504]),
    )
    return Minio(
        host,
        secure=scheme == "https",
        region=client.meta.region_name,
        http_client=pool,
        credentials=_BotocoreCredentials(credentials),
    )


def _request_store(client, bucket: str, credentials) -> S3Store:
    """An obstore S3Store for the bucket at the boto3 client's endpoint, with its region, timeouts,
    attempts, CA bundle and credentials."""
    scheme, _, attempts = _endpoint_and_attempts(client)
    config = client.meta.config
    options: ClientConfig = {
        "allow_http": scheme == "http",
        "connect_timeout": timedelta(seconds=config.connect_timeout),
        "timeout": timedelta(seconds=config.read_timeout),  # the whole request: bodies are small here
    }
    bundle = os.environ.get("AWS_CA_BUNDLE")
    if bundle:
        try:
            with open(bundle, "rb") as f:
                options["root_certificate"] = f.read()
        except OSError as e:
            raise LibrarianError(f"AWS_CA_BUNDLE {bundle!r} unreadable: {e.strerror}") from None
    url = client.meta.endpoint_url.rstrip("/")
    return S3Store(
        bucket,
        # Both keys: obstore, like boto3, lets AWS_ENDPOINT_URL_S3 override a plain endpoint.
        config={"endpoint": url, "aws_endpoint_url_s3": url, "region": client.meta.region_name or "us-east-1"},
        client_options=options,
        # botocore's "standard" mode retries the same failures: no connection, a timeout, a 5xx.
        retry_config={
            "max_retries": max(0, attempts - 1),
            "backoff": {"init_backoff": timedelta(seconds=0.1), "max_backoff": timedelta(seconds=20), "base": 2},
            "retry_timeout": timedelta(seconds=attempts * (config.connect_timeout + config.read_timeout)),
        },
        credential_provider=_ObstoreCredentials(credentials),
    )


class _ObstoreCredentials:
    """obstore's view of boto3's credentials: the frozen set, asked for again every few minutes when
    they come from a source that expires (a role, SSO), which botocore refreshes."""

    def __init__(self, credentials):
        self._credentials = credentials

    def __call__(self) -> S3Credential:
        if self._credentials is None:
            raise LibrarianError("no S3 credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
        frozen = self._credentials.get_frozen_credentials()
        refreshing = hasattr(self._credentials, "refresh_needed")
        return {
            "access_key_id": frozen.access_key,
            "secret_access_key": frozen.secret_key,
            "token": frozen.token,
            "expires_at": datetime.now(UTC) + timedelta(minutes=5) if refreshing else None,
        }


# What obstore raises for a request that failed; anything else out of it is a bug of ours.
_OBSTORE_ERRORS: tuple[type[Exception], ...] = (ObstoreError, OSError)

# obstore names the HTTP status of a refused request in its message; a failure without one never
# reached an answer (no connection, a timeout, a connection lost mid-body).
_STATUS = re.compile(r"status code: (\d{3})")


class S3ObjectStore:
    """ObjectStore (resources.model) over one S3 bucket."""

    def __init__(
        self,
        bucket: str | None = None,
        *,
        client=None,
        create_bucket: bool = True,
        multipart_threshold: int | None = None,
        multipart_chunksize: int | None = None,
        max_concurrency: int = 4,
    ):
        self.bucket = bucket or os.environ.get("UD_BUCKET") or "library"
        self.client = client or make_client()
        self.endpoint = self.client.meta.endpoint_url
        # boto3's credential chain, resolved once for both request clients (refreshed as boto3 does).
        credentials = _session().get_credentials()
        self.requests = _request_client(self.client, credentials)
        self._store, self._pid = _request_store(self.client, self.bucket, credentials), os.getpid()
        threshold = multipart_threshold or _int_env("UD_S3_MULTIPART_THRESHOLD", 8 * MiB)
        self.transfer = TransferConfig(
            multipart_threshold=threshold,
            multipart_chunksize=multipart_chunksize or max(5 * MiB, min(threshold, 64 * MiB)),
            max_concurrency=max_concurrency,
        )
        if create_bucket:
            self.ensure_bucket()

    def __repr__(self) -> str:
        return f"<S3ObjectStore bucket={self.bucket!r} endpoint={self.endpoint!r}>"

    def _requests(self):
        """The obstore store, in the process that made it. obstore's runtime does not survive fork
        (its threads stay in the parent): a forked child that used it would hang, so that is
        refused as the bug it is. Decoding children never touch the librarian; Dagster's step
        processes are spawned and Celery's pool children fork before any request."""
        if os.getpid() != self._pid:
            raise RuntimeError(f"{self!r} made in process {self._pid} used in its forked child {os.getpid()}")
        return self._store

    def _error(self, e: Exception, what: str) -> LibrarianError:
        where = f"S3 at {self.endpoint}"
        if isinstance(e, ObstoreError):
            # Its first line: the rest is a debug dump of the request.
            message = str(e).split("\n", 1)[0]
            answered = _STATUS.search(message)
            if answered is None:
                return StorageUnavailable(f"{where} unreachable while {what}: {message}")
            if int(answered.group(1)) >= 500 or any(code in str(e) for code in _BUSY):
                return StorageUnavailable(f"{where} unavailable while {what}: HTTP {answered.group(1)}")
            return LibrarianError(f"{where}: {what} failed: HTTP {answered.group(1)}")
        if isinstance(e, minio_error.S3Error):
            if (e.response is not None and e.response.status in (500, 502, 503, 504)) or e.code in _BUSY:
                return StorageUnavailable(f"{where} unavailable while {what}: {e.code} {e.message or ''}".rstrip())
            return LibrarianError(f"{where}: {what} failed: {e.code} {e.message or ''}".rstrip())
        if isinstance(e, minio_error.ServerError):
            return StorageUnavailable(f"{where} unavailable while {what}: HTTP {e.status_code}")
        if isinstance(e, urllib3.exceptions.HTTPError):
            # Out of attempts (no connection, a timeout, 5xx answers) or the connection lost mid-body.
            return StorageUnavailable(f"{where} unreachable while {what}: {getattr(e, 'reason', None) or e}")
        if isinstance(e, _UNREACHABLE):
            return StorageUnavailable(f"{where} unreachable while {what}: {e}")
        if isinstance(e, bce.NoCredentialsError):
            return LibrarianError(
                f"{where}: no credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) while {what}"
            )
        if isinstance(e, bce.ClientError):
            err = e.response.get("Error", {})
            code = err.get("Code", "?")
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status in (500, 502, 503, 504) or code in _BUSY:
                return StorageUnavailable(f"{where} unavailable while {what}: {code} {err.get('Message', '')}".rstrip())
            return LibrarianError(f"{where}: {what} failed: {code} {err.get('Message', '')}".rstrip())
        return LibrarianError(f"{where}: {what} failed: {e}")

    def ensure_bucket(self) -> None:
        try:
            self.client.head_bucket(Bucket=self.bucket)
            return
        except bce.ClientError as e:
            if e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") != 404:
                raise self._error(e, f"checking bucket {self.bucket!r}") from None
        except Exception as e:
            raise self._error(e, f"checking bucket {self.bucket!r}") from None
        try:
            region = self.client.meta.region_name
            kwargs = (
                {}
                if region in (None, "", "us-east-1")
                else {"CreateBucketConfiguration": {"LocationConstraint": region}}
            )
            self.client.create_bucket(Bucket=self.bucket, **kwargs)
        except bce.ClientError as e:
            if e.response.get("Error", {}).get("Code") not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise self._error(e, f"creating bucket {self.bucket!r}") from None
        except Exception as e:
            raise self._error(e, f"creating bucket {self.bucket!r}") from None

    def put(self, object_id: uuid.UUID, data: bytes | BinaryReader, content_type: str) -> None:
        key = object_key(object_id)
        if isinstance(data, (bytes, bytearray, memoryview)) and len(data) < self.transfer.multipart_threshold:
            store = self._requests()
            try:
                obstore.put(store, key, data, attributes={"Content-Type": content_type}, use_multipart=False)
            except _OBSTORE_ERRORS as e:
                raise self._error(e, f"writing {key} to bucket {self.bucket!r}") from None
            return
        try:
            if isinstance(data, (bytes, bytearray, memoryview)):
                data = io.BytesIO(bytes(data))
            self.client.upload_fileobj(
                data, self.bucket, key, ExtraArgs={"ContentType": content_type}, Config=self.transfer
            )
        except LibrarianError:
            raise
        except Exception as e:
            raise self._error(e, f"writing {key} to bucket {self.bucket!r}") from None

    def _get(self, key: str, what: str, offset: int = 0, length: int = 0) -> urllib3.BaseHTTPResponse | None:
        """The object's body, streaming (None when a range starts beyond its end)."""
        try:
            return self.requests.get_object(self.bucket, key, offset=offset, length=length)
        except minio_error.S3Error as e:
            if e.code in ("NoSuchKey", "NotFound"):
                raise LibrarianError(
                    f"S3 at {self.endpoint}: object {key} missing from bucket {self.bucket!r}"
                ) from None
            if e.code == "InvalidRange":
                return None
            raise self._error(e, what) from None
        except Exception as e:
            raise self._error(e, what) from None

    def open(self, object_id: uuid.UUID, chunk_size: int = MiB) -> Iterator[bytes]:
        key = object_key(object_id)
        response = self._get(key, f"reading {key}")
        assert response is not None  # only a range can start beyond the end
        return self._chunks(response, key, chunk_size)

    def _chunks(self, body: urllib3.BaseHTTPResponse, key: str, chunk_size: int) -> Iterator[bytes]:
        try:
            for chunk in body.stream(chunk_size):
                if chunk:
                    yield chunk
        except LibrarianError:
            raise
        except Exception as e:
            raise self._error(e, f"reading {key}") from None
        finally:
            body.close()
            body.release_conn()

    def read_range(self, object_id: uuid.UUID, start: int, length: int) -> bytes:
        if start < 0 or length < 0:
            raise LibrarianError(f"invalid range start={start} length={length} of object {object_id}")
        if length == 0:
            return b""
        key = object_key(object_id)
        if length <= SMALL_OBJECT:  # one request: obstore's timeout is for the whole body
            return self._read(key, (start, start + length))
        response = self._get(key, f"reading {key}", offset=start, length=length)
        if response is None:  # start beyond the end
            return b""
        try:
            return response.read()
        except Exception as e:
            raise self._error(e, f"reading {key}") from None
        finally:
            response.close()
            response.release_conn()

    def read(self, object_id: uuid.UUID) -> bytes:
        """The whole object in one request (ObjectStore.read: a small one)."""
        return self._read(object_key(object_id), None)

    def _read(self, key: str, byte_range: tuple[int, int] | None) -> bytes:
        store = self._requests()
        try:
            result = obstore.get(store, key, options={"range": byte_range} if byte_range else None)
            return bytes(result.bytes())
        except FileNotFoundError:  # obstore's NotFoundError
            raise LibrarianError(f"S3 at {self.endpoint}: object {key} missing from bucket {self.bucket!r}") from None
        except _OBSTORE_ERRORS as e:
            if byte_range and "status code: 416" in str(e):  # the range starts beyond the end
                return b""
            raise self._error(e, f"reading {key}") from None

    def _head(self, key: str) -> int | None:
        """The object's size, None when there is none."""
        store = self._requests()
        try:
            return int(obstore.head(store, key)["size"])
        except FileNotFoundError:  # obstore's NotFoundError
            return None
        except _OBSTORE_ERRORS as e:
            raise self._error(e, f"checking {key}") from None

    def size(self, object_id: uuid.UUID) -> int:
        key = object_key(object_id)
        size = self._head(key)
        if size is None:
            raise LibrarianError(f"S3 at {self.endpoint}: object {key} missing from bucket {self.bucket!r}")
        return int(size)

    def uri(self, object_id: uuid.UUID) -> str:
        return f"s3://{self.bucket}/{object_key(object_id)}"

    def exists(self, object_id: uuid.UUID) -> bool:
        return self._head(object_key(object_id)) is not None

    def delete(self, object_id: uuid.UUID) -> None:
        key = object_key(object_id)
        try:
            self.client.delete_object(Bucket=self.bucket, Key=key)
        except Exception as e:
            raise self._error(e, f"deleting {key}") from None
