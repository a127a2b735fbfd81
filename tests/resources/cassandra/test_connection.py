"""Which failed requests the connection may send again: only those the driver never wrote (issue 16).

The words and classes are the driver's own (cassandra.cluster.ResponseFuture._query,
cassandra.connection.Connection.send_msg and its reactors); test_reconnect.py meets them on a real
server through a relay, where a request that arrives between a connection's death and the host being
marked down finds its pool already shut down.
"""

from __future__ import annotations

import pytest
from cassandra import OperationTimedOut
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionBusy, ConnectionException, ConnectionShutdown
from cassandra.pool import NoConnectionsAvailable

from resources.cassandra.connection import CassandraConfig, unavailable

CONFIG = CassandraConfig.from_env(hosts=["127.0.0.1"], port=9042, env={})
HOST, OTHER = "127.0.0.1:9042", "127.0.0.2:9042"


def no_host(**errors: BaseException) -> NoHostAvailable:
    return NoHostAvailable("Unable to complete the operation against any hosts", errors)


@pytest.mark.parametrize(
    "refusal",
    [
        ConnectionException("Pool is shutdown"),
        ConnectionException("Host has been marked down or removed"),
        NoConnectionsAvailable(),
        ConnectionBusy(f"Connection {HOST} is overloaded"),
        ConnectionShutdown(f"Connection to {HOST} is closed"),
        ConnectionShutdown(f"Connection to {HOST} is defunct"),
    ],
    ids=["pool shut down", "host removed", "no free stream", "busy", "closed", "defunct"],
)
def test_a_request_every_host_refused_before_writing_was_never_sent(refusal):
    assert not unavailable(CONFIG, no_host(a=refusal), "writing").sent
    assert not unavailable(CONFIG, no_host(a=refusal, b=ConnectionException("Pool is shutdown")), "writing").sent


def test_a_request_with_no_host_to_go_to_was_never_sent():
    assert not unavailable(CONFIG, no_host(), "writing").sent


@pytest.mark.parametrize(
    "error",
    [
        no_host(a=ConnectionShutdown(f"Connection to {HOST} was closed")),  # cut off in flight
        no_host(a=ConnectionShutdown("[Errno 104] Connection reset by peer")),
        no_host(a=OperationTimedOut("timed out")),
        no_host(a=ConnectionException("Pool is shutdown"), b=OperationTimedOut(f"{OTHER} timed out")),
        ConnectionShutdown(f"Connection to {HOST} is closed"),  # raised as is, not by NoHostAvailable
        OperationTimedOut("timed out"),
    ],
    ids=["was closed", "reset", "timed out", "one host may have it", "bare shutdown", "bare timeout"],
)
def test_a_request_that_may_have_reached_a_server_counts_as_sent(error):
    assert unavailable(CONFIG, error, "writing").sent
