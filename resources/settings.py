"""Where the librarian lives, read from the environment, and the factory that opens it.

Environment (all optional):
    UD_BACKEND        auto (default) | embedded | cassandra; auto = cassandra when CASSANDRA_HOST is set
    UD_WORKSPACE      workspace (TrustGraph's user/workspace; also the triples keyspace), default "default"
    UD_COLLECTION     triple-store collection of the librarian's provenance, default "default"
    UD_HOME           embedded backend's folder, default ".ud" in the working directory
    UD_BUCKET         S3 bucket, default "library"
    CASSANDRA_HOST    comma-separated contact points; CASSANDRA_PORT (9042)
    Cassandra credentials, TLS, consistency and replication: see resources.cassandra.connection;
    S3 endpoint, credentials and region: boto3's own variables, see resources.s3.

Secrets are never part of StoreSettings: they are read from the environment when connecting.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Mapping

from resources.model import DEFAULT_COLLECTION, DEFAULT_WORKSPACE, Librarian, LibrarianError, StoreSettings

BACKENDS = ("auto", "embedded", "cassandra")


def load_settings(env: Mapping[str, str] | None = None, **overrides) -> StoreSettings:
    """StoreSettings from the environment; keyword overrides (None = not given) win."""
    env = os.environ if env is None else env
    overrides = {k: v for k, v in overrides.items() if v is not None}
    backend = (overrides.pop("backend", None) or env.get("UD_BACKEND") or "auto").strip().lower()
    if backend not in BACKENDS:
        raise LibrarianError(f"unknown librarian backend {backend!r} (expected one of {', '.join(BACKENDS)})")
    hosts = [h.strip() for h in (env.get("CASSANDRA_HOST") or "").split(",") if h.strip()]
    if backend == "auto":
        backend = "cassandra" if hosts or overrides.get("cassandra_hosts") else "embedded"
    port_text = env.get("CASSANDRA_PORT") or "9042"
    try:
        port = int(port_text)
    except ValueError:
        raise LibrarianError(f"CASSANDRA_PORT {port_text!r} is not a port number") from None
    settings = StoreSettings(
        backend=backend,
        workspace=env.get("UD_WORKSPACE") or DEFAULT_WORKSPACE,
        home=env.get("UD_HOME") or ".ud",
        bucket=env.get("UD_BUCKET") or "library",
        cassandra_hosts=hosts,
        cassandra_port=port,
        collection=env.get("UD_COLLECTION") or DEFAULT_COLLECTION,
    )
    for key, value in overrides.items():
        if not hasattr(settings, key):
            raise TypeError(f"unknown store setting {key!r}")
        setattr(settings, key, value)
    if settings.backend == "cassandra" and not settings.cassandra_hosts:
        raise LibrarianError("the cassandra backend needs CASSANDRA_HOST (comma-separated contact points)")
    return settings


def open_librarian(settings: StoreSettings | None = None):
    """A new Librarian (resources.librarian.LibrarianService) for these settings; close() it when done.

    Cassandra connections are shared per process (resources.cassandra.connection); the S3 client and the
    SQLite connection belong to this librarian.
    """
    settings = load_settings() if settings is None else settings
    if settings.backend == "embedded":
        from resources.embedded import open_embedded

        return open_embedded(settings.home, settings.workspace, settings.collection)
    if settings.backend == "cassandra":
        from resources.cassandra.connection import CassandraConfig, acquire
        from resources.cassandra.documents import CassandraDocumentStore
        from resources.cassandra.triples import CassandraTripleStore
        from resources.librarian import LibrarianService
        from resources.s3 import S3ObjectStore

        config = CassandraConfig.from_env(hosts=settings.cassandra_hosts, port=settings.cassandra_port)
        connection = acquire(config)  # first: an unreachable Cassandra fails fast
        try:
            documents = CassandraDocumentStore(connection)
            triples = CassandraTripleStore(connection, settings.workspace)
            objects = S3ObjectStore(settings.bucket)
        except BaseException:
            connection.release()
            raise
        return LibrarianService(
            objects,
            documents,
            triples,
            workspace=settings.workspace,
            collection=settings.collection,
            on_close=connection.release,
            description=f"cassandra at {config.endpoint}, s3 bucket {settings.bucket!r} at {objects.endpoint}",
        )
    raise LibrarianError(f"unknown librarian backend {settings.backend!r} (expected embedded or cassandra)")


_shared: dict[tuple[object, ...], Librarian] = {}
_shared_lock = threading.Lock()


def _key(settings: StoreSettings) -> tuple:
    return (
        os.getpid(),
        settings.backend,
        settings.workspace,
        os.path.abspath(settings.home),
        settings.bucket,
        tuple(settings.cassandra_hosts),
        settings.cassandra_port,
        settings.collection,
        repr(sorted(settings.extra.items())),
    )


def shared_librarian(settings: StoreSettings | None = None):
    """The one Librarian of this process for these settings (opened on first use, closed at exit).

    Keyed by process id too, so a forked worker opens its own connections. Do not close() it.
    """
    settings = load_settings() if settings is None else settings
    key = _key(settings)
    with _shared_lock:
        lib = _shared.get(key)
        if lib is None:
            lib = _shared[key] = open_librarian(settings)
        return lib


def reset_shared() -> None:
    """Forget this process's shared librarians (the next use opens new ones) and give every Cassandra
    connection a new session, in place, so that librarians still held elsewhere keep working.

    Not needed after a server restart: a connection that finds the server back while its driver has
    not reconnected yet starts over by itself (resources.cassandra.connection.CassandraConnection.recover)."""
    from resources.cassandra.connection import reconnect_all

    with _shared_lock:
        _shared.clear()
    reconnect_all()


@atexit.register
def _close_shared() -> None:
    with _shared_lock:
        for key, lib in list(_shared.items()):
            if key[0] == os.getpid():
                try:
                    lib.close()
                except Exception:
                    pass
        _shared.clear()
