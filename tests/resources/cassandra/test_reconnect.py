"""A process that outlives a Cassandra restart uses the server again as soon as it answers.

After a crash and restart, the driver reconnects on its own schedule: pools at the next attempt of
an exponential backoff (up to 10 s apart), the control connection (schema metadata, schema
agreement) only after that. Until then every request failed with NoHostAvailable, and a schema
repair failed on the dead control connection with an exception that was not even classed as an
outage, so re-runs failed for as long as the driver lagged (issue 16).

The server here is the real Cassandra seen through a relay of the test's own, which can drop every
connection and refuse new ones, as a killed server does, without touching the server itself. The
driver's own reconnection is pushed two minutes out, so only the librarian's recovery can be what
makes the next request work.
"""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from resources.cassandra.connection import CassandraConfig, CassandraConnection
from resources.cassandra.triples import CassandraTripleStore, keyspace_for
from resources.model import GRAPH_SOURCE, Quad, StorageUnavailable, Term

pytestmark = pytest.mark.services


class Relay:
    """A TCP relay to the real Cassandra: down() resets every connection and refuses new ones."""

    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open |= {client, server}
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def down(self) -> None:
        assert self._listener is not None
        self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        self._listener.close()
        with self._lock:
            sockets, self._open = self._open, set()
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


@pytest.fixture
def relay(cassandra_run):
    if cassandra_run.error:
        pytest.fail(cassandra_run.error, pytrace=False)
    relay = Relay((os.environ["CASSANDRA_HOST"].split(",")[0].strip(), int(os.environ.get("CASSANDRA_PORT") or 9042)))
    relay.up()
    yield relay
    relay.down()


@pytest.fixture
def connection(relay):
    """A connection of the test's own (not the process's shared one), through the relay."""
    from cassandra.policies import ConstantReconnectionPolicy

    conn = CassandraConnection(
        CassandraConfig.from_env(
            hosts=["127.0.0.1"], port=relay.port, env={**os.environ, "CASSANDRA_CONNECT_TIMEOUT": "2"}
        )
    )
    conn.cluster.reconnection_policy = ConstantReconnectionPolicy(delay=120.0)
    yield conn
    conn.shutdown()


def quad(n: int) -> Quad:
    return Quad(f"urn:s{n}", "urn:p", Term(f"v{n}"), GRAPH_SOURCE)


def outage(relay: Relay, store: CassandraTripleStore) -> None:
    """The server goes away: requests fail as an outage (transient), whatever the driver raises."""
    relay.down()
    deadline = time.monotonic() + 30
    while True:
        try:
            store.count()
        except StorageUnavailable:
            break
        assert time.monotonic() < deadline, "the driver never noticed that the server went away"
        time.sleep(0.1)
    with pytest.raises(StorageUnavailable):  # still down: the same, every time
        store.insert([quad(99)])


def wait_until(condition, poke=lambda: None, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        try:
            poke()
        except StorageUnavailable:
            pass
        time.sleep(0.1)


def test_requests_work_as_soon_as_the_server_is_back(cassandra_run, relay, connection):
    store = CassandraTripleStore(connection, cassandra_run.new_workspace())
    store.insert([quad(1)])
    outage(relay, store)
    relay.up()
    started = time.monotonic()
    store.insert([quad(2)])  # at once: not two minutes later, when the driver would have tried again
    assert time.monotonic() - started < 15
    assert {q.s for q in store.query()} == {"urn:s1", "urn:s2"}


def test_a_keyspace_the_server_lost_comes_back_with_its_collection(cassandra_run, relay, connection):
    workspace = cassandra_run.new_workspace()
    store = CassandraTripleStore(connection, workspace)
    store.insert([quad(1)])
    outage(relay, store)
    # Restarted without it, as a node whose schema changes were not flushed did.
    cassandra_run.connection.ddl(f'DROP KEYSPACE "{keyspace_for(workspace)}"', "losing a keyspace")
    relay.up()
    store.insert([quad(2)])
    assert store.query() == [quad(2)]
    collections = cassandra_run.connection.execute(
        f'SELECT collection FROM "{keyspace_for(workspace)}".collection_metadata'
    )
    assert [r.collection for r in collections] == ["default"]


def test_a_dead_control_connection_does_not_stop_a_schema_repair(cassandra_run, relay, connection):
    """The state a restart leaves for a while: pools back, the control connection not yet."""
    workspace = cassandra_run.new_workspace()
    store = CassandraTripleStore(connection, workspace)
    store.insert([quad(1)])
    outage(relay, store)
    hosts = connection.cluster.metadata.all_hosts()
    wait_until(lambda: not any(h.is_up for h in hosts), store.count)  # its control connection now retries on a schedule
    relay.up()
    # The driver's pool reconnection fires first (as it did in issue 16); its control connection
    # waits for its own next attempt, two minutes out here.
    for host in hosts:
        connection.cluster.on_up(host)
    wait_until(lambda: all(h.is_up for h in hosts))
    # What a lost table sets off: the schema's DDL again, then a wait for schema agreement, which
    # asks the control connection (nothing changes here, so no DDL response refreshes it first).
    connection.repair_schema()
    store.insert([quad(2)])
    assert {q.s for q in store.query()} == {"urn:s1", "urn:s2"}
