"""Cassandra cluster/session management: one Cluster + Session per process and settings.

Environment:
    CASSANDRA_HOST          comma-separated contact points (required for the cassandra backend)
    CASSANDRA_PORT          native protocol port, default 9042
    CASSANDRA_USERNAME / CASSANDRA_PASSWORD   PlainTextAuthProvider when both are set
    CASSANDRA_TLS=1         TLS; CASSANDRA_TLS_CA_FILE (CA bundle), CASSANDRA_TLS_CERT_FILE +
                            CASSANDRA_TLS_KEY_FILE (client certificate), CASSANDRA_TLS_VERIFY=0
                            (no certificate/hostname check; development only)
    CASSANDRA_CONSISTENCY   default LOCAL_QUORUM (= ONE on a single node with replication 1)
    CASSANDRA_LOCAL_DC      local data centre for DC-aware load balancing (else the driver infers it)
    CASSANDRA_CONNECT_TIMEOUT  seconds, default 5
    CASSANDRA_PROTOCOL_VERSION native protocol version, default 4 (v5 frames every message in
                            checksummed segments, which the driver builds and checks in Python:
                            about a third more of its CPU per write, measured on 2 cores)
    UD_CASSANDRA_REPLICATION   replication of keyspaces we create: "1" or "SimpleStrategy:1" (default),
                            or "NetworkTopologyStrategy:dc1=3,dc2=3"

Only prepared statements carry values; keyspace and table names are formatted into CQL only after
validation as identifiers. The password is read at connect time and kept nowhere else.

A server that crashed and came back is used again at once: the driver reconnects on its own
schedule (pools at the next attempt of a backoff, the control connection only after them), so when
a request finds no live connection while a contact point answers, the connection starts over with
a new Cluster and Session (CassandraConnection.recover); keyspaces and tables of ours that the
server lost are created again (repair_schema).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from resources.model import LibrarianError, StorageUnavailable

log = logging.getLogger(__name__)

IDENTIFIER = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]{0,47}$")
_DC = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def check_identifier(name: str) -> str:
    """A keyspace/table name safe to format into CQL ([a-zA-Z][a-zA-Z0-9_]{0,47})."""
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise LibrarianError(f"{name!r} is not a valid Cassandra identifier ([a-zA-Z][a-zA-Z0-9_]{{0,47}})")
    return name


def quote(name: str) -> str:
    """A validated identifier, double-quoted (so CQL keywords such as "default" work as names)."""
    return f'"{check_identifier(name)}"'


# Names the ids of our tables (uuid5 of "keyspace.table"): a fixed namespace, so every process and
# every version of ud derives the same id for the same table.
_TABLE_ID_NAMESPACE = uuid.UUID("5d0a3c1e-6f0b-4d43-9a53-2b7e0c4f8a11")


def stable_table_id(keyspace: str, table: str) -> uuid.UUID:
    """The id our CREATE TABLE gives keyspace.table, the same in every process.

    Cassandra (without transactional cluster metadata, CEP-21) gives a new table a random id on the node that
    coordinates its CREATE. Processes that start together (the daemon's sensor, Celery workers, a
    CLI call) each create the schema they need; on a cluster their IF NOT EXISTS can run on
    different coordinators before either has seen the other's, and the cluster then settles on one
    id: rows acknowledged into the other ids are gone (measured on make cluster-up's 3 nodes: 40 of
    60 rows written at ONE right after a concurrent CREATE). With one id, those CREATEs are the same
    change and nothing is lost.
    """
    return uuid.uuid5(_TABLE_ID_NAMESPACE, f"{check_identifier(keyspace)}.{check_identifier(table)}")


def create_table_cql(keyspace: str, table: str, definition: str, *options: str) -> str:
    """CREATE TABLE IF NOT EXISTS keyspace.table (definition) WITH its stable id AND options.

    definition: the columns and PRIMARY KEY; options: further table options ("CLUSTERING ORDER BY (...)").
    A table that exists already keeps whatever id it has: IF NOT EXISTS returns before the id is looked at.
    """
    clauses = " AND ".join((f"ID = {stable_table_id(keyspace, table)}", *options))
    return f"CREATE TABLE IF NOT EXISTS {quote(keyspace)}.{quote(table)} ({definition}) WITH {clauses}"


def parse_replication(text: str | None) -> dict[str, object]:
    """UD_CASSANDRA_REPLICATION -> a validated replication map."""
    text = (text or "SimpleStrategy:1").strip()
    if text.isdigit():
        text = f"SimpleStrategy:{text}"
    strategy, _, rest = text.partition(":")
    strategy = strategy.strip()
    try:
        if strategy in ("SimpleStrategy", "simple"):
            rf = int(rest.strip())
            if rf < 1:
                raise ValueError
            return {"class": "SimpleStrategy", "replication_factor": rf}
        if strategy in ("NetworkTopologyStrategy", "network"):
            out: dict[str, object] = {"class": "NetworkTopologyStrategy"}
            for part in rest.split(","):
                dc, _, n = part.partition("=")
                dc = dc.strip()
                if not _DC.match(dc) or int(n) < 1:
                    raise ValueError
                out[dc] = int(n)
            if len(out) < 2:
                raise ValueError
            return out
    except ValueError:
        pass
    raise LibrarianError(
        f"UD_CASSANDRA_REPLICATION {text!r} is not 'SimpleStrategy:N' or 'NetworkTopologyStrategy:dc1=N,dc2=M'"
    )


def replication_cql(replication: Mapping[str, object]) -> str:
    parts = []
    for k, v in replication.items():
        if k == "class":
            if v not in ("SimpleStrategy", "NetworkTopologyStrategy"):
                raise LibrarianError(f"unknown replication strategy {v!r}")
            parts.append(f"'class': '{v}'")
        else:
            if not _DC.match(str(k)) or not isinstance(v, int):
                raise LibrarianError(f"invalid replication entry {k!r}: {v!r}")
            parts.append(f"'{k}': {int(v)}")
    return "{" + ", ".join(parts) + "}"


@dataclass(frozen=True)
class CassandraConfig:
    """Non-secret connection settings (the key of the per-process cache)."""

    hosts: tuple[str, ...]
    port: int = 9042
    username: str = ""
    tls: bool = False
    tls_ca_file: str = ""
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_verify: bool = True
    consistency: str = "LOCAL_QUORUM"
    local_dc: str = ""
    replication: tuple[tuple[str, object], ...] = (("class", "SimpleStrategy"), ("replication_factor", 1))
    connect_timeout: float = 5.0
    protocol_version: int = 4

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, hosts: Sequence[str] | None = None, port: int | None = None
    ) -> CassandraConfig:
        env = os.environ if env is None else env
        if not hosts:
            hosts = [h.strip() for h in (env.get("CASSANDRA_HOST") or "").split(",") if h.strip()]
        if not hosts:
            raise LibrarianError("CASSANDRA_HOST is not set (comma-separated Cassandra contact points)")
        if port is None:
            try:
                port = int(env.get("CASSANDRA_PORT") or 9042)
            except ValueError:
                raise LibrarianError(f"CASSANDRA_PORT {env.get('CASSANDRA_PORT')!r} is not a port number") from None
        consistency = (env.get("CASSANDRA_CONSISTENCY") or "LOCAL_QUORUM").strip().upper()
        from cassandra import ConsistencyLevel

        if consistency not in ConsistencyLevel.name_to_value:
            raise LibrarianError(f"CASSANDRA_CONSISTENCY {consistency!r} is not a consistency level")
        try:
            timeout = float(env.get("CASSANDRA_CONNECT_TIMEOUT") or 5)
        except ValueError:
            raise LibrarianError("CASSANDRA_CONNECT_TIMEOUT is not a number of seconds") from None
        protocol = (env.get("CASSANDRA_PROTOCOL_VERSION") or "4").strip()
        if protocol not in ("3", "4", "5"):
            raise LibrarianError(f"CASSANDRA_PROTOCOL_VERSION {protocol!r} is not 3, 4 or 5")
        return cls(
            hosts=tuple(hosts),
            port=int(port),
            username=env.get("CASSANDRA_USERNAME") or "",
            tls=_truthy(env.get("CASSANDRA_TLS")),
            tls_ca_file=env.get("CASSANDRA_TLS_CA_FILE") or "",
            tls_cert_file=env.get("CASSANDRA_TLS_CERT_FILE") or "",
            tls_key_file=env.get("CASSANDRA_TLS_KEY_FILE") or "",
            tls_verify=not _falsy(env.get("CASSANDRA_TLS_VERIFY")),
            consistency=consistency,
            local_dc=env.get("CASSANDRA_LOCAL_DC") or "",
            replication=tuple(parse_replication(env.get("UD_CASSANDRA_REPLICATION")).items()),
            connect_timeout=timeout,
            protocol_version=int(protocol),
        )

    @property
    def endpoint(self) -> str:
        return ",".join(f"{h}:{self.port}" for h in self.hosts)

    @property
    def replication_map(self) -> dict[str, object]:
        return dict(self.replication)


def _truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in ("1", "true", "yes", "on")


def _falsy(v: str | None) -> bool:
    return (v or "").strip().lower() in ("0", "false", "no", "off")


def _ssl_context(config: CassandraConfig) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=config.tls_ca_file or None)
    if not config.tls_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if config.tls_cert_file:
        ctx.load_cert_chain(config.tls_cert_file, config.tls_key_file or None)
    return ctx


def _value_size(v: object) -> int:
    """An upper bound of a value's size on the wire (UTF-8 takes at most 4 bytes a character)."""
    if isinstance(v, str):
        return len(v) if v.isascii() else 4 * len(v)
    if isinstance(v, (bytes, bytearray)):
        return len(v)
    return 16


# Cassandra's defaults for a batch across partitions: a warning above 10 partitions
# (unlogged_batch_across_partitions_warn_threshold) and above 5 KiB (batch_size_warn_threshold).
# The size it counts is the values plus about 20 bytes a row (measured on Cassandra 5.0: rows
# whose values sum to 5,040 bytes made a batch of 5,180); a row is counted here as its values plus
# REPLICA_ROW_OVERHEAD. Batches stop at 3.5 KiB, well short of the threshold: filled to 5 KiB
# they made a run of 200 small documents 2-3 s slower (fewer, larger mutations for Cassandra's
# threads to share), at 3.5 KiB 2-3 s faster than at 3 KiB of values.
REPLICA_BATCH_PARTITIONS = 10
REPLICA_ROW_OVERHEAD = 32
REPLICA_BATCH_BYTES = 3584

# Times ensure_schema sends its (idempotent) DDL before it gives up on a server that times out.
SCHEMA_ATTEMPTS = 3
# Seconds a schema statement may take: a fresh multi-node cluster takes tens of seconds per DDL.
DDL_TIMEOUT = 60.0


# What a statement's CQL may contain that makes a second application differ from the first: a
# lightweight transaction (replayed, it finds its own row and answers "not applied") and now()
# (replayed, it writes a second upload-log event or a later created_at).
_NOT_REPLAYABLE = re.compile(r"\bIF\s+(NOT\s+)?EXISTS\b|\bIF\s+\w+\s*[=<>!]|\bnow\(\)", re.IGNORECASE)


def replay_safe(cql: str, stmt) -> bool:
    """Whether applying the prepared `stmt` (of `cql`) twice with the same client timestamp, as the
    driver does when it resends a request whose connection died in flight, stores what applying it
    once does. Reads and deletes of rows are; so are writes of plain values. A write that binds a
    list is not: Cassandra keys each element of a non-frozen list by a time UUID it makes when it
    applies the write, and a whole-list write clears the old elements with a tombstone one
    microsecond older than its own timestamp, so a replay at the same timestamp keeps both copies
    (a Cassandra node killed mid-run left a child document's tags holding its generation twice).
    The result metadata does not say whether a list is frozen, so every list counts."""
    verb = cql.lstrip().split(None, 1)[0].upper() if cql.strip() else ""
    if verb == "SELECT":
        return True
    if _NOT_REPLAYABLE.search(cql):
        return False
    return not any(getattr(column.type, "typename", None) == "list" for column in stmt.column_metadata or ())


@lru_cache(maxsize=1)
def replay_safe_retry_policy():
    """The driver's default RetryPolicy, except that a request whose connection failed after it may
    have been sent (a node killed under it) goes to the next node only when it is replay-safe
    (statement.is_idempotent, set by CassandraConnection.prepare from replay_safe). Any other
    request fails to its caller, whose retry (a document's transient retry) sends it anew with
    a new timestamp, which a whole-list write's tombstone then covers."""
    from cassandra.policies import RetryPolicy

    class ReplaySafeRetryPolicy(RetryPolicy):
        def on_request_error(self, query, consistency, error, retry_num):
            if not getattr(query, "is_idempotent", False):
                return self.RETHROW, None
            return super().on_request_error(query, consistency, error, retry_num)

    return ReplaySafeRetryPolicy()


_TEXT_TYPES = frozenset({"varchar", "text"})  # serialized as the value's UTF-8 bytes


def text_binder(stmt):
    """stmt.bind for rows of str values, without the driver's per-value work when every column of
    stmt is text: each value's bytes are its UTF-8 encoding, which is all the driver's
    serialization does for text (same values, same routing key). Any other row (a None, a
    non-str, a wrong width) and any other statement binds through the driver. About 2.4 us a row
    instead of 7.5-9.4 us (measured): a small document's triples are some 350 rows."""
    from cassandra.query import BoundStatement

    meta = stmt.column_metadata
    slow = stmt.bind
    if getattr(stmt, "column_encryption_policy", None) is not None or not meta:
        return slow
    if any(getattr(column.type, "typename", None) not in _TEXT_TYPES for column in meta):
        return slow
    width = len(meta)

    def bind(params: Sequence):
        if len(params) != width or not all(v.__class__ is str for v in params):
            return slow(params)
        bound = BoundStatement(stmt)
        bound.raw_values = params
        bound.values = [v.encode() for v in params]
        return bound

    return bind


def row_size(params: Sequence) -> int:
    """_value_size summed over a row, inlined: it runs for every value of every triple written."""
    size = 0
    for v in params:
        kind = v.__class__
        if kind is str:
            size += len(v) if v.isascii() else 4 * len(v)
        elif kind is bytes or kind is bytearray:
            size += len(v)
        else:
            size += _value_size(v)
    return size


class SchemaMissing(LibrarianError):
    """A table or keyspace the statement needs does not exist (any more)."""


def _schema_missing(e: BaseException) -> bool:
    from cassandra import InvalidRequest

    text = str(e).lower()
    return isinstance(e, InvalidRequest) and ("does not exist" in text or "unconfigured table" in text)


class CassandraUnavailable(StorageUnavailable):
    """No Cassandra node took the request; sent=False when it never left this process (safe to send again)."""

    def __init__(self, message: str, sent: bool = True):
        super().__init__(message)
        self.sent = sent


def unavailable(config: CassandraConfig, e: BaseException, what: str = "") -> CassandraUnavailable:
    from cassandra.cluster import NoHostAvailable

    detail = str(e) or type(e).__name__
    # NoHostAvailable whose every host refused before writing (or with no host at all): the
    # request never left this process.
    sent = not (isinstance(e, NoHostAvailable) and all(map(_refused_before_sending, e.errors.values())))
    return CassandraUnavailable(
        f"Cassandra at {config.endpoint} unreachable{' while ' + what if what else ''}: {detail}", sent
    )


# What the driver's ResponseFuture._query and Connection.send_msg record for a host they did not
# write the request to: its pool gone or shut down (a dying connection shuts it down before the
# host is marked down, so a request in that window meets it), no free connection or stream, or a
# connection already closed. A request cut off in flight is told apart by other words ("was
# closed", or the socket's error). Words the driver changes fall on the safe side: sent.
_NOT_WRITTEN = ("Pool is shutdown", "Host has been marked down or removed")
_CLOSED_BEFORE_WRITING = (" is closed", " is defunct")


def _refused_before_sending(error: BaseException) -> bool:
    from cassandra.connection import ConnectionBusy, ConnectionException, ConnectionShutdown
    from cassandra.pool import NoConnectionsAvailable

    if isinstance(error, (NoConnectionsAvailable, ConnectionBusy)):
        return True
    if isinstance(error, ConnectionShutdown):
        return str(error).startswith("Connection to ") and str(error).endswith(_CLOSED_BEFORE_WRITING)
    return type(error) is ConnectionException and str(error) in _NOT_WRITTEN


def _transient_errors() -> tuple[type[BaseException], ...]:
    """The driver's ways of saying that no node could serve a request just now."""
    from cassandra import OperationTimedOut, ReadTimeout, Unavailable, WriteTimeout
    from cassandra.cluster import NoHostAvailable
    from cassandra.connection import ConnectionException
    from cassandra.protocol import IsBootstrappingErrorMessage, OverloadedErrorMessage

    # ConnectionException (ConnectionShutdown, ConnectionBusy...) and the two error messages are
    # not DriverExceptions: a connection dying under a request (a server killed) raised them as is.
    return (
        NoHostAvailable,
        OperationTimedOut,
        Unavailable,
        ReadTimeout,
        WriteTimeout,
        ConnectionError,
        ConnectionException,
        IsBootstrappingErrorMessage,
        OverloadedErrorMessage,
    )


@lru_cache(maxsize=512)
def _row_class(colnames: tuple[str, ...]) -> type:
    from cassandra.query import named_tuple_factory

    # The driver's own factory builds the class (same names, same fallback for odd column names);
    # asked with no rows, it returns just the class's instances: none. So build it from one row.
    return type(named_tuple_factory(list(colnames), [(None,) * len(colnames)])[0])


def named_rows(colnames: list[str], rows: list) -> list:
    """The driver's named-tuple rows, with the class made once per column list: its default
    factory makes a new namedtuple class for every result, a quarter of the CPU the driver spent
    handling responses in a run of small documents."""
    cls = _row_class(tuple(colnames))
    return [cls(*row) for row in rows]


class CassandraConnection:
    """A Cluster + Session shared by every store of this process with the same CassandraConfig."""

    def __init__(self, config: CassandraConfig):
        self.config = config
        self._lock = threading.RLock()
        self._refs = 0
        self._prepared: dict[str, tuple[object, object]] = {}  # cql -> (session, prepared statement)
        self._binders: dict[int, tuple[object, object]] = {}  # id(prepared) -> (prepared, its binder)
        self._ready: set[str] = set()
        self._schemas: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}
        self.ddl_timeout = DDL_TIMEOUT
        # Bumped whenever the server may have lost what stores remember (a new session, a schema
        # repair): they check again what they cached (e.g. the triple store's collection rows).
        self.epoch = 0
        self._retired: list = []  # clusters replaced by recover(), shut down a little later
        self._quiet_until = 0.0  # recover() does not probe the server before then
        self.cluster, self.session = self._connect()

    def _connect(self):
        """A new Cluster and its Session."""
        from cassandra import ConsistencyLevel
        from cassandra.auth import PlainTextAuthProvider
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
        from cassandra.policies import DCAwareRoundRobinPolicy, ExponentialReconnectionPolicy, TokenAwarePolicy

        config = self.config
        password = os.environ.get("CASSANDRA_PASSWORD") or ""
        auth = (
            PlainTextAuthProvider(username=config.username, password=password) if config.username and password else None
        )
        profile = ExecutionProfile(
            load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=config.local_dc or None)),
            consistency_level=ConsistencyLevel.name_to_value[config.consistency],
            serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL,
            request_timeout=30.0,
            row_factory=named_rows,
            retry_policy=replay_safe_retry_policy(),
        )
        cluster = Cluster(
            list(config.hosts),
            port=config.port,
            protocol_version=config.protocol_version,
            auth_provider=auth,
            ssl_context=_ssl_context(config) if config.tls else None,
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
            connect_timeout=config.connect_timeout,
            control_connection_timeout=config.connect_timeout,
            max_schema_agreement_wait=30,
            # Nagle's algorithm off, as the driver leaves it on: a small request written behind an
            # unacknowledged one waits for the server's delayed ACK (about 40 ms on Linux). Measured
            # writing 200 small documents' quads one document at a time: 66 ms a document with it,
            # 23 ms without, and Cassandra's own CPU 35-37 ms a document against 18-19 ms.
            sockopts=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            # A restarted node is retried within seconds, not the driver's default 10 minutes.
            reconnection_policy=ExponentialReconnectionPolicy(base_delay=0.5, max_delay=10.0),
        )
        try:
            return cluster, cluster.connect()
        except Exception as e:
            try:
                cluster.shutdown()
            except Exception:
                pass
            from cassandra import AuthenticationFailed
            from cassandra.cluster import NoHostAvailable

            if isinstance(e, NoHostAvailable) and any(isinstance(x, AuthenticationFailed) for x in e.errors.values()):
                raise LibrarianError(
                    f"Cassandra at {config.endpoint} refused the credentials of user {config.username!r}"
                ) from None
            raise unavailable(config, e) from None

    # -- a server that went away and came back --------------------------------------------------

    def _driver_live(self) -> bool:
        """Whether the driver has a node it considers up, a connection pool it can send requests on,
        and a working control connection."""
        cluster = self.cluster
        if not any(host.is_up for host in cluster.metadata.all_hosts()):
            return False
        # A node can still be marked up while its pool is shut down (its connection just died, and
        # the driver's reconnection has not run yet): every request fails with "Pool is shutdown"
        # until it does, which can be seconds.
        pools = self.session.get_pool_state().values()
        if not any(not state["shutdown"] and state["open_count"] > 0 for state in pools):
            return False
        control = cluster.control_connection.get_connections()
        return bool(control) and not any(c.is_defunct or c.is_closed for c in control)

    def _server_answers(self) -> bool:
        """Whether a contact point accepts connections (Cassandra opens its CQL port once it serves)."""
        for host in self.config.hosts:
            try:
                socket.create_connection(
                    (host, self.config.port), timeout=min(1.0, self.config.connect_timeout)
                ).close()
                return True
            except OSError:
                continue
        return False

    def recover(self, seen: object | None = None, force: bool = False) -> bool:
        """After a request found no live connection: start over with a new Cluster and Session when a
        contact point answers but the driver has not reconnected yet. True when the cluster `seen` by
        the failed request is no longer the one in use (replaced here, or by another thread).

        The driver would get there by itself, but on its own schedule: its pools retry a down node
        up to 10 s apart, and its control connection (schema metadata and agreement) only once a
        pool is back and its own next attempt comes, which left re-runs failing for tens of seconds
        after the server answered. The old cluster is shut down a minute later, so that requests
        still running on it are not cut short. force: start over whatever the driver's state.
        """
        with self._lock:
            if seen is not None and self.cluster is not seen:
                return True
            if not force:
                # A refused connection answers at once; one that hangs (a host gone from the network) is
                # not tried again for a few seconds, so that each failing request stays cheap.
                if time.monotonic() < self._quiet_until or self._driver_live():
                    return False
                started = time.monotonic()
                if not self._server_answers():
                    if time.monotonic() - started > 0.5:
                        self._quiet_until = time.monotonic() + 5.0
                    return False
                log.warning(
                    "Cassandra at %s answers but this process's driver has not reconnected yet: connecting anew",
                    self.config.endpoint,
                )
            try:
                cluster, session = self._connect()
            except LibrarianError as e:
                log.warning("connecting anew to Cassandra at %s failed: %s", self.config.endpoint, e)
                return False
            old, self.cluster, self.session = self.cluster, cluster, session
            self._prepared.clear()
            self._binders.clear()
            self._ready.clear()
            self.epoch += 1
            self._retired.append(old)
            timer = threading.Timer(60.0, self._shutdown_retired, args=(old,))
            timer.daemon = True
            timer.start()
            return True

    def _shutdown_retired(self, cluster) -> None:
        with self._lock:
            if cluster not in self._retired:
                return
            self._retired.remove(cluster)
        try:
            cluster.shutdown()
        except Exception as e:  # pragma: no cover - best effort
            log.debug("cassandra shutdown: %s", e)

    # -- sharing -------------------------------------------------------------------------------

    def retain(self) -> CassandraConnection:
        with self._lock:
            self._refs += 1
        return self

    def release(self) -> None:
        with self._lock:
            self._refs -= 1
            last = self._refs <= 0
        if last:
            _forget(self)
            self.shutdown()

    def shutdown(self) -> None:
        with self._lock:
            clusters, self._retired = [self.cluster, *self._retired], []
        for cluster in clusters:
            try:
                cluster.shutdown()
            except Exception as e:  # pragma: no cover - best effort at exit
                log.debug("cassandra shutdown: %s", e)

    # -- statements ----------------------------------------------------------------------------

    @contextmanager
    def errors(self, what: str) -> Iterator[None]:
        """Turn the driver's transient failures into CassandraUnavailable naming the endpoint (after
        recovering the connection when the server answers again), its other errors into LibrarianError."""
        from cassandra import DriverException

        seen = self.cluster
        try:
            yield
        except LibrarianError:
            raise
        except _transient_errors() as e:
            self.recover(seen)
            raise unavailable(self.config, e, what) from None
        except DriverException as e:
            message = f"Cassandra at {self.config.endpoint}: {what} failed: {e}"
            if _schema_missing(e):
                raise SchemaMissing(message) from None
            raise LibrarianError(message) from None

    def _retry(self, run):
        """run(), and once more after what a restarted server needs: a table or keyspace of ours that is
        gone (dropped, or lost by the server) recreated; a request that never left because the driver
        had not reconnected yet sent again on the new session (requests that may have reached the
        server are not: the caller decides)."""
        repaired = resent = False
        while True:
            seen = self.cluster
            try:
                return run()
            except SchemaMissing as e:
                if repaired or not self._schemas:
                    raise
                repaired = True
                log.warning("%s; recreating the librarian's schema and retrying", e)
                self.repair_schema()
            except CassandraUnavailable as e:
                if resent or e.sent or self.cluster is seen:
                    raise
                resent = True
                log.warning("%s; sending it again on the new connection", e)

    def repair_schema(self) -> None:
        """Run every schema this connection created again (all idempotent), forgetting prepared statements."""
        with self._lock:
            self._prepared.clear()
            self._binders.clear()
            self.epoch += 1
            for name in list(self._schemas):
                self._ready.discard(name)
                statements, tables, indexes = self._schemas[name]
                self.ensure_schema(name, statements, tables, indexes, force=True)

    def prepare(self, cql: str, session=None):
        """The prepared statement of cql on session (default: the current one)."""
        session = session or self.session
        cached = self._prepared.get(cql)
        if cached is not None and cached[0] is session:
            return cached[1]
        with self.errors("preparing a statement"):
            stmt = session.prepare(cql)
        stmt.is_idempotent = replay_safe(cql, stmt)  # what the retry policy resends after a lost connection
        self._prepared[cql] = (session, stmt)
        return stmt

    def execute(
        self,
        cql: str,
        params: Sequence = (),
        what: str = "a query",
        fetch_size: int | None = None,
        consistency: str | None = None,
    ):
        """cql, prepared, with params; consistency (a level's name) instead of the connection's."""

        def run():
            session = self.session
            stmt, values = self.prepare(cql, session), params
            values_or_bound: Sequence | None = values
            if fetch_size is not None or consistency is not None:
                from cassandra import ConsistencyLevel

                stmt = stmt.bind(values)
                if fetch_size is not None:
                    stmt.fetch_size = fetch_size
                if consistency is not None:
                    stmt.consistency_level = ConsistencyLevel.name_to_value[consistency]
                values_or_bound = None  # bound into the statement already
            with self.errors(what):
                return session.execute(stmt, values_or_bound)

        return self._retry(run)

    def execute_many(
        self, statements_and_params: Iterable[tuple[str, Sequence]], what: str = "writing rows", concurrency: int = 64
    ) -> list:
        """Run many prepared statements concurrently (cassandra.concurrent); results in order."""
        from cassandra.concurrent import execute_concurrent

        work = [(cql, tuple(params)) for cql, params in statements_and_params]
        if not work:
            return []

        def run():
            session = self.session
            items = [(self.prepare(cql, session), params) for cql, params in work]
            with self.errors(what):
                return execute_concurrent(session, items, concurrency=concurrency, raise_on_first_error=True)

        return [r.result_or_exc for r in self._retry(run)]

    def write_partitioned(
        self,
        rows: Iterable[tuple[str, Sequence, object]],
        what: str = "writing rows",
        concurrency: int = 64,
        max_rows: int = 100,
        max_bytes: int = 16 * 1024,
    ) -> int:
        """Write (cql, params, partition) rows as UNLOGGED batches; returns the requests sent.

        Rows of one partition become one mutation on its replicas; batches stay under max_rows and
        about max_bytes of values (Cassandra refuses batches over 50 KiB by default). Partitions
        with few rows (a quad's literal or predicate entity, most of a document's triples) are
        packed together when they have the same replicas, as the Spark connector's replica_set
        grouping does: the coordinator is then one of those replicas and every mutation is local,
        and one request carries what would be many. Such a batch stays within Cassandra's default
        warning thresholds for batches across partitions (REPLICA_BATCH_PARTITIONS partitions,
        REPLICA_BATCH_BYTES), so no server or client log fills with warnings. Batches go
        concurrently.
        """
        groups: dict[tuple[str, object], list[Sequence]] = {}
        for cql, params, partition in rows:
            groups.setdefault((cql, partition), []).append(params)
        if not groups:
            return 0
        return self._retry(lambda: self._write_groups(groups, what, concurrency, max_rows, max_bytes))

    def _write_groups(self, groups: dict, what: str, concurrency: int, max_rows: int, max_bytes: int) -> int:
        session = self.session
        # Each partition's rows in pieces of at most max_rows and about max_bytes; small pieces
        # wait in `packing`, by replica set, to share a batch with other partitions' pieces. Each
        # row is bound once: its first row's routing key finds the partition's replicas, and the
        # batch takes the bound rows as they are.
        batches: list[list] = []
        packing: dict[object, tuple[list, int, int]] = {}  # replicas -> (bound rows, bytes, partitions)
        only_host = self._only_host()  # one node: every partition's replicas are that node
        for (cql, _), params_list in groups.items():
            stmt = self.prepare(cql, session)
            bind = self._binder(stmt)
            pieces: list[tuple[list, int]] = []
            piece: list = []
            size = 0
            for params in params_list:
                row_bytes = row_size(params) + REPLICA_ROW_OVERHEAD
                if piece and (len(piece) >= max_rows or size + row_bytes > max_bytes):
                    pieces.append((piece, size))
                    piece, size = [], 0
                piece.append(bind(params))
                size += row_bytes
            if piece:
                pieces.append((piece, size))
            if len(pieces) > 1 or size > REPLICA_BATCH_BYTES:  # a large partition: batches of its own
                batches.extend(rows for rows, _ in pieces)
                continue
            replicas = only_host if only_host is not None else self._replicas(stmt, piece[0])
            held, held_bytes, partitions = packing.get(replicas, ([], 0, 0))
            if held and (
                partitions >= REPLICA_BATCH_PARTITIONS
                or held_bytes + size > REPLICA_BATCH_BYTES
                or len(held) + len(piece) > max_rows
            ):
                batches.append(held)
                held, held_bytes, partitions = [], 0, 0
            packing[replicas] = (held + piece, held_bytes + size, partitions + 1)
        batches.extend(held for held, _, _ in packing.values())
        return self._send_batches(session, batches, what, concurrency)

    def _send_batches(self, session, batches: list[list], what: str, concurrency: int) -> int:
        """Each list of bound rows as one UNLOGGED batch (a single row as its own statement),
        `concurrency` at a time; returns the requests sent."""
        from cassandra.concurrent import execute_concurrent
        from cassandra.query import BatchStatement, BatchType

        requests: list[tuple[object, None]] = []
        for batch_rows in batches:
            if len(batch_rows) == 1:  # a batch of one row is sent as that row's statement
                requests.append((batch_rows[0], None))
            else:
                batch = BatchStatement(batch_type=BatchType.UNLOGGED)
                for bound in batch_rows:
                    batch.add(bound)
                batch.is_idempotent = all(bound.is_idempotent for bound in batch_rows)
                requests.append((batch, None))
        if requests:
            with self.errors(what):
                execute_concurrent(session, requests, concurrency=concurrency, raise_on_first_error=True)
        return len(requests)

    def write_batches(
        self, batches: Iterable[Sequence[tuple[str, Sequence]]], what: str = "writing rows", concurrency: int = 1
    ) -> int:
        """Each batch's (cql, params) rows as one UNLOGGED batch; returns the batches sent.

        For rows that must be stored together: the caller gives each batch rows of one partition
        key, in tables of one keyspace, and Cassandra applies such a batch as one mutation, which a
        replica holds whole or not at all (a lost reply or a killed client leaves no half). Batches
        go `concurrency` at a time, in order when 1.
        """
        work = [list(rows) for rows in batches if rows]

        def run() -> int:
            session = self.session
            bound = [[self._binder(self.prepare(cql, session))(params) for cql, params in rows] for rows in work]
            return self._send_batches(session, bound, what, concurrency)

        return self._retry(run)

    def _binder(self, stmt):
        """text_binder(stmt), made once per prepared statement."""
        binder = self._binders.get(id(stmt))
        if binder is None or binder[0] is not stmt:
            binder = self._binders[id(stmt)] = (stmt, text_binder(stmt))
        return binder[1]

    def _only_host(self) -> object:
        """The replica set of every partition when the cluster has a single node, else None."""
        try:
            hosts = self.cluster.metadata.all_hosts()
        except Exception:
            return None
        return frozenset(host.host_id for host in hosts) if len(hosts) == 1 else None

    def _replicas(self, stmt, bound) -> object:
        """The replica set the partition of `bound` (a row bound to stmt) lives on, as the driver's
        token map knows it; None when it does not (those partitions are packed together all the
        same: the coordinator forwards what is not its own, as for any request)."""
        try:
            routing_key = bound.routing_key
            hosts = self.cluster.metadata.get_replicas(stmt.keyspace, routing_key)
        except Exception:  # no token map (metadata disabled), or a key the driver cannot route
            return None
        return frozenset(host.host_id for host in hosts) or None

    def ddl(self, cql: str, what: str, host=None) -> None:
        """A schema statement (not prepared: DDL carries no values), through `host` when given.
        Resent to the next node after a lost connection, as before replay_safe_retry_policy: our
        schemas are CREATE ... IF NOT EXISTS with stable table ids, which a replay leaves as they are."""
        from cassandra.query import SimpleStatement

        with self.errors(what):
            self.session.execute(SimpleStatement(cql, is_idempotent=True), timeout=self.ddl_timeout, host=host)

    def schema_coordinator(self):
        """One node for all of a schema's statements (None: any node). A node always knows the schema
        changes it made itself, where another may not have heard of them yet: on make cluster-up's
        three nodes under load, a CREATE INDEX sent to a second node right after the CREATE TABLE
        went through a first one failed with "Table 'document' doesn't exist". Only a node this
        session holds open connections to (a node the driver has just heard of may have none yet);
        the control connection's node first: the driver reads schema agreement through it."""
        try:
            pools = self.session.get_pool_state()
            control = getattr(getattr(self.cluster.control_connection, "_connection", None), "endpoint", None)
        except Exception:  # no pools or metadata yet: the driver picks, as before
            return None
        open_hosts = [
            host
            for host, state in pools.items()
            if host.is_up and not state.get("shutdown") and state.get("open_count", 0) > 0
        ]
        for host in open_hosts:
            if host.endpoint == control:
                return host
        return open_hosts[0] if open_hosts else None

    def ensure_schema(
        self,
        name: str,
        statements: Sequence[str],
        tables: Sequence[str] = (),
        indexes: Sequence[str] = (),
        force: bool = False,
    ) -> None:
        """Run idempotent DDL once per process and wait for schema agreement.

        When the driver's schema metadata already shows keyspace `name` with all `tables` and `indexes`, the DDL
        is skipped (a CLI call then costs no schema round trips).
        """
        with self._lock:
            self._schemas[name] = (tuple(statements), tuple(tables), tuple(indexes))
            if name in self._ready:
                return
            ks = self.cluster.metadata.keyspaces.get(name)
            if (
                not force
                and tables
                and ks is not None
                and all(t in ks.tables for t in tables)
                and all(i in ks.indexes for i in indexes)
            ):
                self._ready.add(name)
                return
            for attempt in range(1, SCHEMA_ATTEMPTS + 1):
                try:
                    coordinator = self.schema_coordinator()
                    for cql in statements:
                        try:
                            self.ddl(cql, f"creating schema {name}", coordinator)
                        except CassandraUnavailable:
                            if coordinator is None:
                                raise
                            # That node went away meanwhile: the rest through any node, as before.
                            coordinator = None
                            self.ddl(cql, f"creating schema {name}")
                    with self.errors(f"waiting for schema agreement on {name}"):
                        if not self.cluster.control_connection.wait_for_schema_agreement(wait_time=60):
                            raise CassandraUnavailable(
                                f"Cassandra at {self.config.endpoint}: no schema agreement for {name} after 60 s"
                            )
                    break
                except CassandraUnavailable as e:
                    # Every statement is idempotent (IF NOT EXISTS, stable table ids), so all of them
                    # go again: after a DDL that timed out, a heartbeat lost or nodes that did not
                    # agree in time. On a fresh multi-node cluster busy with several clients' schema
                    # changes a DDL took 30-60 s (CI on 8021ab9): such a wait is not a failure yet.
                    if attempt == SCHEMA_ATTEMPTS:
                        raise
                    log.warning(
                        "%s; creating schema %s again (attempt %d of %d)", e, name, attempt + 1, SCHEMA_ATTEMPTS
                    )
            self._ready.add(name)

    def create_keyspace_cql(self, keyspace: str) -> str:
        return f"CREATE KEYSPACE IF NOT EXISTS {quote(keyspace)} WITH replication = {replication_cql(self.config.replication_map)}"


_connections: dict[tuple[int, CassandraConfig], CassandraConnection] = {}
_connections_lock = threading.Lock()


def acquire(config: CassandraConfig | None = None) -> CassandraConnection:
    """The shared connection for this config in this process (created on first use); release() when done."""
    config = config or CassandraConfig.from_env()
    key = (os.getpid(), config)
    with _connections_lock:
        conn = _connections.get(key)
        if conn is None:
            conn = _connections[key] = CassandraConnection(config)
        return conn.retain()


def _forget(conn: CassandraConnection) -> None:
    with _connections_lock:
        for key, c in list(_connections.items()):
            if c is conn:
                del _connections[key]


def reconnect_all() -> None:
    """Every connection of this process starts over with a new Cluster and Session, in place: the
    stores holding them keep working (their old sessions are shut down a minute later)."""
    with _connections_lock:
        conns = [c for (pid, _), c in _connections.items() if pid == os.getpid()]
    for c in conns:
        c.recover(force=True)


@atexit.register
def shutdown_all() -> None:
    with _connections_lock:
        conns = [c for (pid, _), c in _connections.items() if pid == os.getpid()]
        _connections.clear()
    for c in conns:
        c.shutdown()
