"""The DDL of our Cassandra tables: each created with the id its names give (resources.cassandra.connection).

tests/cluster/test_schema.py shows why on a real cluster: created at once on several coordinators, tables
with random ids lose the rows written into the ids the cluster does not keep.
"""

from __future__ import annotations

import re
import uuid

from resources.cassandra import documents
from resources.cassandra.connection import stable_table_id
from resources.librarian import RECORD_TYPES

CREATE_TABLE = re.compile(r'CREATE TABLE IF NOT EXISTS "(\w+)"\."(\w+)" \(.*?\) WITH ID = ([0-9a-f-]{36})\b', re.S)


def test_every_librarian_table_is_created_with_the_id_its_names_give():
    statements = documents.schema("CREATE KEYSPACE IF NOT EXISTS librarian WITH replication = {}")
    creates = [s for s in statements if s.startswith("CREATE TABLE")]
    found = [CREATE_TABLE.match(s) for s in creates]
    assert all(found), [s for s, m in zip(creates, found) if m is None]
    tables = {m.group(2): uuid.UUID(m.group(3)) for m in found if m}
    assert set(tables) == {"document", "upload_log", "processing", *(f"record_{kind}" for kind in RECORD_TYPES)}
    assert tables == {name: stable_table_id("librarian", name) for name in tables}


def test_a_tables_id_is_the_same_in_every_version():
    # Two versions of ud starting together on a new cluster race as two processes of one version do,
    # unless they derive the same id: the namespace must never change.
    assert stable_table_id("librarian", "document") == uuid.UUID("2236941e-1dc7-5d0f-88c8-5077bc48ae6f")
    assert stable_table_id("librarian", "document") != stable_table_id("librarian", "processing")
    assert stable_table_id("ud_a", "quads_by_entity") != stable_table_id("ud_b", "quads_by_entity")
