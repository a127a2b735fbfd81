"""ObjectStore over S3 (MinIO or any S3 server), laid out like TrustGraph's librarian.

Bucket UD_BUCKET (default "library"), key doc/{object_id}, ContentType = the document's kind.
boto3 finds the endpoint (AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL), the credentials
(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) and the region (AWS_DEFAULT_REGION; us-east-1 when
unset) itself. Addressing is path-style; retries use botocore's "standard" mode with exponential
backoff (UD_S3_MAX_ATTEMPTS, default 5 attempts). Uploads go through boto3's managed transfer
(multipart above UD_S3_MULTIPART_THRESHOLD bytes, default 8 MiB); reads stream the body in chunks.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from functools import cache

import boto3
import botocore.exceptions as bce
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

from resources.model import BinaryReader, LibrarianError, StorageUnavailable

MiB = 1 << 20
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

    def _error(self, e: Exception, what: str) -> LibrarianError:
        where = f"S3 at {self.endpoint}"
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
            if status in (500, 502, 503, 504) or code in (
                "SlowDown",
                "ServiceUnavailable",
                "XMinioServerNotInitialized",
            ):
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
        try:
            if isinstance(data, (bytes, bytearray, memoryview)) and len(data) < self.transfer.multipart_threshold:
                self.client.put_object(Bucket=self.bucket, Key=key, Body=bytes(data), ContentType=content_type)
            else:
                if isinstance(data, (bytes, bytearray, memoryview)):
                    import io

                    data = io.BytesIO(bytes(data))
                self.client.upload_fileobj(
                    data, self.bucket, key, ExtraArgs={"ContentType": content_type}, Config=self.transfer
                )
        except LibrarianError:
            raise
        except Exception as e:
            raise self._error(e, f"writing {key} to bucket {self.bucket!r}") from None

    def _get(self, key: str, what: str, **kwargs):
        try:
            return self.client.get_object(Bucket=self.bucket, Key=key, **kwargs)
        except bce.ClientError as e:
            code = e.response.get("Error", {}).get("Code")
            if code in ("NoSuchKey", "404", "NotFound"):
                raise LibrarianError(
                    f"S3 at {self.endpoint}: object {key} missing from bucket {self.bucket!r}"
                ) from None
            if code == "InvalidRange":
                return None
            raise self._error(e, what) from None
        except Exception as e:
            raise self._error(e, what) from None

    def open(self, object_id: uuid.UUID, chunk_size: int = MiB) -> Iterator[bytes]:
        key = object_key(object_id)
        response = self._get(key, f"reading {key}")
        return self._chunks(response["Body"], key, chunk_size)

    def _chunks(self, body, key: str, chunk_size: int) -> Iterator[bytes]:
        try:
            for chunk in body.iter_chunks(chunk_size):
                if chunk:
                    yield chunk
        except LibrarianError:
            raise
        except Exception as e:
            raise self._error(e, f"reading {key}") from None
        finally:
            body.close()

    def read_range(self, object_id: uuid.UUID, start: int, length: int) -> bytes:
        if start < 0 or length < 0:
            raise LibrarianError(f"invalid range start={start} length={length} of object {object_id}")
        if length == 0:
            return b""
        key = object_key(object_id)
        response = self._get(key, f"reading {key}", Range=f"bytes={start}-{start + length - 1}")
        if response is None:  # start beyond the end
            return b""
        try:
            with response["Body"] as body:
                return body.read()
        except Exception as e:
            raise self._error(e, f"reading {key}") from None

    def _head(self, key: str):
        try:
            return self.client.head_object(Bucket=self.bucket, Key=key)
        except bce.ClientError as e:
            if e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                return None
            raise self._error(e, f"checking {key}") from None
        except Exception as e:
            raise self._error(e, f"checking {key}") from None

    def size(self, object_id: uuid.UUID) -> int:
        key = object_key(object_id)
        head = self._head(key)
        if head is None:
            raise LibrarianError(f"S3 at {self.endpoint}: object {key} missing from bucket {self.bucket!r}")
        return int(head["ContentLength"])

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
