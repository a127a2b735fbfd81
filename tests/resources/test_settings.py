"""Settings from the environment, the factory, and the per-process shared librarian."""

from __future__ import annotations

import pytest

from resources.cassandra.connection import CassandraConfig, parse_replication, replication_cql
from resources.cassandra.triples import keyspace_for
from resources.librarian import LibrarianService
from resources.model import LibrarianError, StorageUnavailable
from resources.settings import load_settings, open_librarian, shared_librarian


def test_defaults_are_embedded():
    s = load_settings({})
    assert (s.backend, s.workspace, s.home, s.bucket, s.collection) == (
        "embedded",
        "default",
        ".ud",
        "library",
        "default",
    )


def test_cassandra_host_selects_cassandra():
    s = load_settings({"CASSANDRA_HOST": "10.0.0.1, 10.0.0.2", "CASSANDRA_PORT": "9043", "UD_BUCKET": "b"})
    assert s.backend == "cassandra"
    assert s.cassandra_hosts == ["10.0.0.1", "10.0.0.2"] and s.cassandra_port == 9043 and s.bucket == "b"
    assert load_settings({"CASSANDRA_HOST": "h", "UD_BACKEND": "embedded"}).backend == "embedded"


def test_overrides_and_errors():
    s = load_settings({"UD_WORKSPACE": "env"}, workspace="given", home=None)
    assert s.workspace == "given" and s.home == ".ud"
    with pytest.raises(LibrarianError, match="backend 'mongo'"):
        load_settings({"UD_BACKEND": "mongo"})
    with pytest.raises(LibrarianError, match="CASSANDRA_HOST"):
        load_settings({}, backend="cassandra")
    with pytest.raises(LibrarianError, match="CASSANDRA_PORT"):
        load_settings({"CASSANDRA_PORT": "ninety"})


def test_secrets_stay_out_of_settings():
    env = {"CASSANDRA_HOST": "h", "CASSANDRA_USERNAME": "u", "CASSANDRA_PASSWORD": "hunter2-secret"}
    s = load_settings(env)
    assert "hunter2" not in repr(s)
    c = CassandraConfig.from_env(env)
    assert "hunter2" not in repr(c) and c.username == "u"


def test_cassandra_config_from_env():
    c = CassandraConfig.from_env({"CASSANDRA_HOST": "a,b", "CASSANDRA_TLS": "1", "CASSANDRA_CONSISTENCY": "one"})
    assert c.hosts == ("a", "b") and c.tls and c.consistency == "ONE" and c.endpoint == "a:9042,b:9042"
    with pytest.raises(LibrarianError, match="CASSANDRA_CONSISTENCY"):
        CassandraConfig.from_env({"CASSANDRA_HOST": "a", "CASSANDRA_CONSISTENCY": "most"})
    assert c.protocol_version == 4  # v5's checksummed segments cost the driver a third more CPU per write
    assert CassandraConfig.from_env({"CASSANDRA_HOST": "a", "CASSANDRA_PROTOCOL_VERSION": "5"}).protocol_version == 5
    with pytest.raises(LibrarianError, match="CASSANDRA_PROTOCOL_VERSION"):
        CassandraConfig.from_env({"CASSANDRA_HOST": "a", "CASSANDRA_PROTOCOL_VERSION": "6"})


def test_named_rows_keep_the_drivers_names_and_reuse_one_class():
    from resources.cassandra.connection import named_rows

    first = named_rows(["workspace", "id", "[applied]"], [("w", "a", True), ("w", "b", False)])
    again = named_rows(["workspace", "id", "[applied]"], [("w", "c", True)])
    assert [r.id for r in first] == ["a", "b"] and first[0].applied is True and first[1][2] is False
    assert type(again[0]) is type(first[0])  # one class per column list, not one per result
    assert named_rows(["id"], []) == []
    odd = named_rows(["count(*)", "class"], [(3, "x")])  # names namedtuple refuses: positional, as the driver does
    assert tuple(odd[0]) == (3, "x")


def test_s3_clients_share_the_parsed_model_and_read_credentials_afresh(monkeypatch):
    from resources import s3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "first-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "first-secret")
    first = s3._session()
    assert first.get_credentials().access_key == "first-key"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "second-key")
    second = s3._session()
    assert second.get_credentials().access_key == "second-key"  # a test or a rotation changes them
    loader = first._session.get_component("data_loader")
    assert second._session.get_component("data_loader") is loader
    assert len(loader.search_paths) == len(set(loader.search_paths))  # not one more path per session


def test_replication_parsing():
    assert parse_replication(None) == {"class": "SimpleStrategy", "replication_factor": 1}
    assert parse_replication("3") == {"class": "SimpleStrategy", "replication_factor": 3}
    assert parse_replication("NetworkTopologyStrategy:dc1=3,dc2=2") == {
        "class": "NetworkTopologyStrategy",
        "dc1": 3,
        "dc2": 2,
    }
    assert (
        replication_cql(parse_replication("SimpleStrategy:2")) == "{'class': 'SimpleStrategy', 'replication_factor': 2}"
    )
    for bad in ("SimpleStrategy:0", "Foo:1", "NetworkTopologyStrategy:dc'1=3", "SimpleStrategy:1}; DROP"):
        with pytest.raises(LibrarianError, match="UD_CASSANDRA_REPLICATION"):
            parse_replication(bad)


def test_keyspace_names_are_sanitised():
    assert keyspace_for("default") == "default"
    assert keyspace_for("Acme-Corp.eu") == "acme_corp_eu"
    assert keyspace_for("1st") == "r_1st"
    assert keyspace_for("a'; DROP KEYSPACE x; --") == "a___drop_keyspace_x____"
    long = keyspace_for("w" * 100)
    assert len(long) == 48 and long != keyspace_for("w" * 99)


def test_open_librarian_embedded(tmp_path):
    from resources.model import StoreSettings

    lib = open_librarian(StoreSettings(home=str(tmp_path), workspace="w"))
    assert isinstance(lib, LibrarianService) and lib.workspace == "w"
    lib.add_document("a", "text/plain", b"a")
    lib.close()
    lib.close()  # twice is fine
    assert (tmp_path / "librarian.sqlite3").exists()


def test_shared_librarian_is_cached_per_settings(tmp_path):
    from resources.model import StoreSettings

    a = shared_librarian(StoreSettings(home=str(tmp_path), workspace="w"))
    b = shared_librarian(StoreSettings(home=str(tmp_path), workspace="w"))
    c = shared_librarian(StoreSettings(home=str(tmp_path), workspace="v"))
    assert a is b and a is not c


def test_unreachable_cassandra_names_the_endpoint(monkeypatch):
    # Nothing listens on port 1 of the loopback address.
    monkeypatch.setenv("CASSANDRA_CONNECT_TIMEOUT", "2")
    monkeypatch.setenv("CASSANDRA_PASSWORD", "s3cr3t-value")
    monkeypatch.setenv("CASSANDRA_USERNAME", "someone")
    settings = load_settings({"CASSANDRA_HOST": "127.0.0.1", "CASSANDRA_PORT": "1"})
    with pytest.raises(StorageUnavailable) as err:
        open_librarian(settings)
    message = str(err.value)
    assert message.startswith("Cassandra at 127.0.0.1:1 unreachable")
    assert "s3cr3t" not in message


def test_unreachable_s3_names_the_endpoint(monkeypatch):
    from resources.s3 import S3ObjectStore, make_client

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "very-secret-key")
    with pytest.raises(StorageUnavailable) as err:
        S3ObjectStore("library", client=make_client(max_attempts=1, connect_timeout=1))
    message = str(err.value)
    assert message.startswith("S3 at http://127.0.0.1:1 unreachable")
    assert "very-secret" not in message
