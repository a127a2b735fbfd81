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

The relay can also cut one request, or its reply, with its connection: an upload's row insert
whose outcome the librarian cannot know from the driver, and reads back instead.
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


EXECUTE = 0x0A  # the opcode in a native protocol v4 frame's header (version, flags, stream, opcode)


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
        self._cut: str | None = None  # armed by cut_next
        self._cut_marker: bytes | None = None  # armed by cut_next: cut the request carrying these bytes
        self._down_after_cut = False
        self._cut_replies: set[socket.socket] = set()  # servers whose next reply is dropped
        self.cuts = 0
        self._hold: tuple[bytes, float, int] | None = None  # armed by hold_reply
        self._held_replies: dict[socket.socket, float] = {}  # servers whose next reply waits
        self.holds = 0

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
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def cut_next(self, what: str, then_down: bool = False, marker: bytes | None = None) -> None:
        """The next EXECUTE any connection carries is lost with its connection ("request": the
        server never sees it), or reaches the server, whose reply is then lost with the connection
        ("reply": the server has done the work, the client cannot know); then_down: the relay
        goes down as it cuts the reply, as a server killed at that moment. marker: instead of the
        next EXECUTE, the next request of any kind (a BATCH, say) whose bytes carry it."""
        self._cut, self._down_after_cut, self._cut_marker = what, then_down, marker

    def hold_reply(self, marker: bytes, seconds: float, times: int = 1) -> None:
        """The replies to the next `times` requests carrying `marker` reach the client `seconds`
        late each, as from a server that busy (the requests go through at once). A held reply
        holds up those behind it on its connection, as a server's replies come in order."""
        self._hold = (marker, seconds, times)

    def _pump(self, source: socket.socket, sink: socket.socket, requests: bool) -> None:
        try:
            while data := source.recv(65536):
                if requests and self._hold and self._hold[0] in data:
                    marker, seconds, times = self._hold
                    self._held_replies[sink] = seconds
                    self._hold = (marker, seconds, times - 1) if times > 1 else None
                if not requests and source in self._held_replies:
                    self.holds += 1
                    time.sleep(self._held_replies.pop(source))
                # Only an EXECUTE (a prepared statement's request), or a request carrying the
                # armed marker, is cut: the control connection's own queries (metadata refreshed
                # after a schema change) go on as they come.
                if self._cut_marker is None:
                    execute = requests and len(data) > 4 and data[4] == EXECUTE
                else:
                    execute = requests and self._cut is not None and self._cut_marker in data
                if execute and self._cut == "request":
                    self._cut, self._cut_marker, self.cuts = None, None, self.cuts + 1
                    break  # lost: both ends reset below
                if not requests and source in self._cut_replies:
                    self._cut_replies.discard(source)
                    self.cuts += 1
                    if self._down_after_cut:
                        self.down()
                    break
                sink.sendall(data)
                if execute and self._cut == "reply":
                    self._cut, self._cut_marker = None, None
                    self._cut_replies.add(sink)
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


def test_a_schema_statement_that_times_out_twice_is_sent_again(cassandra_run, relay, connection):
    """A fresh multi-node cluster under several clients' schema changes took 30-60 s a DDL (CI on
    8021ab9): a DDL that timed out is not a failure while the server still answers. One timeout
    was always sent again (through any node); a second one failed the schema. It is idempotent,
    so all of it goes again."""
    workspace = cassandra_run.new_workspace()
    # Each held reply comes after its request gave up (3 s); the third request's comes in time.
    connection.ddl_timeout = 3.0
    relay.hold_reply(f'CREATE KEYSPACE IF NOT EXISTS "{keyspace_for(workspace)}"'.encode(), seconds=3.5, times=2)
    store = CassandraTripleStore(connection, workspace)  # creates its keyspace and tables
    assert relay.holds == 2
    store.insert([quad(1)])
    assert store.query() == [quad(1)]


# -- an upload whose request or reply is lost with its connection ---------------------------------


@pytest.fixture
def relayed_librarian(cassandra_run, relay):
    """A librarian whose Cassandra requests go through the relay (its bytes go to MinIO directly)."""
    from dataclasses import replace

    from resources.settings import open_librarian

    settings = cassandra_run.settings(cassandra_run.new_workspace())
    lib = open_librarian(replace(settings, cassandra_hosts=("127.0.0.1",), cassandra_port=relay.port))
    lib.documents.c.prepare(lib.documents._insert)  # so that the insert is the next request it sends
    yield lib
    lib.close()


def cut_at_insert(lib, relay: Relay, what: str, then_down: bool = False) -> list:
    """Arm the relay's cut just before the librarian's row insert; the object ids it stores."""
    documents, objects = lib.documents, lib.objects
    insert, put = documents.insert, objects.put
    stored: list = []

    def armed_insert(meta, event):
        if not stored[1:]:  # the first upload's insert only
            relay.cut_next(what, then_down)
        return insert(meta, event)

    def recorded_put(object_id, *args, **kwargs):
        stored.append(object_id)
        return put(object_id, *args, **kwargs)

    documents.insert, objects.put = armed_insert, recorded_put
    return stored


def added_events(lib, document_id: str) -> list[str]:
    return [u.event for u in lib.documents.events_since(lib.workspace, None, 1000) if u.id == document_id]


def test_an_upload_whose_reply_was_lost_is_stored_once_with_its_bytes(relayed_librarian, relay):
    """The server wrote the row; the reply died with the connection. The driver does not send a
    lightweight transaction again (it would find its own row and answer "not applied"); the
    librarian reads the row back at LOCAL_SERIAL, finds its own object id, and logs the upload."""
    lib = relayed_librarian
    cut_at_insert(lib, relay, "reply")
    meta = lib.add_document("lost-reply.md", "text/markdown", b"# Lost reply\n", title="lost-reply.md")
    assert relay.cuts == 1, "the relay did not cut the insert's reply"
    assert lib.get_content("lost-reply.md") == b"# Lost reply\n"
    assert lib.get_metadata("lost-reply.md").object_id == meta.object_id
    assert added_events(lib, "lost-reply.md") == ["added"]  # the sensor sees it, once


def test_an_upload_whose_request_was_lost_leaves_nothing_and_can_be_sent_again(relayed_librarian, relay):
    lib = relayed_librarian
    stored = cut_at_insert(lib, relay, "request")
    with pytest.raises(StorageUnavailable):
        lib.add_document("lost-request.md", "text/markdown", b"# Lost request\n", title="lost-request.md")
    assert relay.cuts == 1, "the relay did not cut the insert"
    assert not lib.objects.exists(stored[0]), "the bytes of a row that was never written stayed"
    assert added_events(lib, "lost-request.md") == []
    lib.add_document("lost-request.md", "text/markdown", b"# Lost request\n", title="lost-request.md")
    assert lib.get_content("lost-request.md") == b"# Lost request\n"


def test_an_upload_whose_outcome_cannot_be_read_keeps_its_bytes(relayed_librarian, relay):
    """The reply is lost and the server stays away: the row may exist, so its bytes stay."""
    from resources.model import OutcomeUnknown

    lib = relayed_librarian
    stored_ids = cut_at_insert(lib, relay, "reply", then_down=True)
    with pytest.raises(OutcomeUnknown):
        lib.add_document("unknown.md", "text/markdown", b"# Unknown\n", title="unknown.md")
    assert lib.objects.exists(stored_ids[0])
    relay.up()

    def stored() -> bool:
        try:
            return lib.get_metadata("unknown.md").object_id == stored_ids[0]
        except StorageUnavailable:
            return False

    wait_until(stored, timeout=60)  # the row was written: the server did the work before the cut
    assert lib.get_content("unknown.md") == b"# Unknown\n"  # the row found its bytes


# -- an import whose connection dies mid-way ---------------------------------------------------


def test_an_import_cut_short_logs_every_document_once_when_run_again(relayed_librarian, relay):
    """The first request carrying 'added' events is lost with its connection, and the import is
    run again, as its docstring says to. A document whose row the first attempt stored must have
    its event too: the second attempt skips it as taken, and without its event the upload sensor
    would only find it in its sweep of the whole table. (Rows and their events went in separate
    batches before: every row was stored, no event, and the second attempt logged nothing.)"""
    from tests.resources.test_bulk_registration import record

    lib = relayed_librarian
    records = [record(lib, f"imported/{i:04d}.txt") for i in range(1100)]  # several batches
    relay.cut_next("request", marker=b"added")
    with pytest.raises(StorageUnavailable):
        lib.register_documents(records)
    assert relay.cuts == 1, "the relay did not cut a request carrying events"
    lib.register_documents(records)
    events = lib.documents.events_since(lib.workspace, None, 5000)
    assert [(e.id, e.event) for e in events] == [(r.id, "added") for r in records]
    assert [d.id for d in lib.iter_documents(page=500)] == sorted(r.id for r in records)
