"""TrustGraph's entity-centric triple store in Cassandra (trustgraph direct/cassandra_kg.py).

Keyspace = the workspace, sanitised like TrustGraph does (non-[a-zA-Z0-9_] -> "_", "r_" prefix
when it does not start with a letter, lower case; names over 48 characters are cut and given a
hash suffix). Two tables, exactly as upstream:

    quads_by_entity     PRIMARY KEY ((collection, entity), role, p, otype, s, o, d, dtype, lang)
    quads_by_collection PRIMARY KEY (collection, d, s, p, o, otype, dtype, lang)

plus upstream's collection_metadata(collection, created_at). Each quad is the rows upstream's
EntityCentricKnowledgeGraph.insert writes: one quads_by_collection row and one quads_by_entity row
per role, 'S' (subject), 'P' (predicate), 'O' (object: IRIs, quoted triples and literals alike, so
that its get_o and get_po find a quad by its literal value) and 'G' (graph, only outside the default
graph ""). Every row carries the same (p, otype, s, o, d, dtype, lang); otype is 'u' IRI, 'l'
literal, 't' quoted triple; dtype/lang are kept for literals only ("" otherwise), as upstream's
writer (storage/triples/cassandra/write.py) passes them. Deleting a quad deletes all of its rows.

Upstream writes each quad's rows in one logged batch; here they go in unlogged batches grouped by
partition, so a writer killed mid-write leaves some of a quad's rows and not others. The subject's
own row (role 'S') is how delete_subjects finds a quad, so it is written first and deleted last:
whatever rows of a quad are stored, its subject row is too, and a re-run or a removal finds them.

Quads written before the object row of literals was (issue #30) lack it: missing_object_rows
finds them and write_object_rows adds it (`ud verify --repair`, without decoding anything again).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator

from resources.cassandra.connection import CassandraConnection, check_identifier, create_table_cql, quote
from resources.model import DEFAULT_COLLECTION, GRAPH_SOURCE, Quad, Term

DEFAULT_GRAPH = ""
S, P, O, G = "S", "P", "O", "G"


# Partitions one read names (entity IN ...): a few per request spares round trips; many would
# make one coordinator hold them all (the reason IN over partitions is discouraged).
IN_PARTITIONS = 20


def keyspace_for(workspace: str) -> str:
    """TrustGraph's sanitize_name, bounded to Cassandra's 48-character identifiers."""
    name = re.sub(r"[^a-zA-Z0-9_]", "_", workspace)
    if not name or not name[0].isalpha():
        name = "r_" + name
    name = name.lower()
    if len(name) > 48:
        digest = hashlib.sha1(workspace.encode()).hexdigest()[:8]
        name = f"{name[:39]}_{digest}"
    return check_identifier(name)


# The tables schema() creates in a workspace's keyspace.
TABLES = ("quads_by_entity", "quads_by_collection", "collection_metadata")


def schema(connection: CassandraConnection, ks: str) -> list[str]:
    return [
        connection.create_keyspace_cql(ks),
        create_table_cql(
            ks,
            "quads_by_entity",
            """
            collection text,
            entity     text,
            role       text,
            p          text,
            otype      text,
            s          text,
            o          text,
            d          text,
            dtype      text,
            lang       text,
            PRIMARY KEY ((collection, entity), role, p, otype, s, o, d, dtype, lang)
            """,
        ),
        create_table_cql(
            ks,
            "quads_by_collection",
            """
            collection text,
            d          text,
            s          text,
            p          text,
            o          text,
            otype      text,
            dtype      text,
            lang       text,
            PRIMARY KEY (collection, d, s, p, o, otype, dtype, lang)
            """,
        ),
        create_table_cql(
            ks,
            "collection_metadata",
            """
            collection text,
            created_at timestamp,
            PRIMARY KEY (collection)
            """,
        ),
    ]


def _parts(q: Quad) -> tuple[str, str, str, str, str, str, str]:
    """(s, p, o, d, otype, dtype, lang) as stored."""
    o = q.o
    otype = o.otype
    literal = otype == "l"
    return q.s, q.p, o.value, q.g or DEFAULT_GRAPH, otype, o.datatype if literal else "", o.language if literal else ""


def _quad(s: str, p: str, o: str, d: str, otype: str, dtype: str, lang: str) -> Quad:
    return Quad(
        s=s,
        p=p,
        o=Term(o, is_iri=otype == "u", datatype=dtype or "", language=lang or "", is_triple=otype == "t"),
        g=d or "",
    )


class CassandraTripleStore:
    """TripleStore (resources.model) over one workspace's keyspace."""

    def __init__(self, connection: CassandraConnection, workspace: str, concurrency: int = 64, batch_rows: int = 100):
        self.c = connection
        self.workspace = workspace
        self.keyspace = ks = keyspace_for(workspace)
        qks = quote(ks)  # quoted: a workspace may be named like a CQL keyword ("default")
        self.concurrency = concurrency
        self.batch_rows = batch_rows  # rows of one partition per UNLOGGED batch; 1 = one request a row
        self.c.ensure_schema(ks, schema(connection, ks), TABLES)
        self._collections: set[str] = set()  # known to have their collection_metadata row
        self._collections_epoch = connection.epoch
        cols = "collection, entity, role, p, otype, s, o, d, dtype, lang"
        self._ins_entity = f"INSERT INTO {qks}.quads_by_entity ({cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        self._ins_coll = f"INSERT INTO {qks}.quads_by_collection (collection, d, s, p, o, otype, dtype, lang) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        sel = f"SELECT p, otype, s, o, d, dtype, lang FROM {qks}.quads_by_entity WHERE collection = ? AND entity = ? AND role = ?"
        self._sel_role = sel
        self._sel_role_d = f"SELECT d FROM {qks}.quads_by_entity WHERE collection = ? AND entity = ? AND role = ?"
        self._sel_role_p = sel + " AND p = ?"
        self._sel_in = sel.replace("entity = ?", "entity IN ?")
        self._sel_coll = f"SELECT d, s, p, o, otype, dtype, lang FROM {qks}.quads_by_collection WHERE collection = ?"
        self._sel_coll_d = self._sel_coll + " AND d = ?"
        self._del_entity = (
            f"DELETE FROM {qks}.quads_by_entity WHERE collection = ? AND entity = ? AND role = ? AND p = ? "
            "AND otype = ? AND s = ? AND o = ? AND d = ? AND dtype = ? AND lang = ?"
        )
        self._del_coll = (
            f"DELETE FROM {qks}.quads_by_collection WHERE collection = ? AND d = ? AND s = ? AND p = ? "
            "AND o = ? AND otype = ? AND dtype = ? AND lang = ?"
        )
        self._sel_row = (
            f"SELECT s FROM {qks}.quads_by_entity WHERE collection = ? AND entity = ? AND role = ? AND p = ? "
            "AND otype = ? AND s = ? AND o = ? AND d = ? AND dtype = ? AND lang = ?"
        )
        self._count = f"SELECT COUNT(*) FROM {qks}.quads_by_collection WHERE collection = ?"
        self._count_d = self._count + " AND d = ?"
        self._coll_get = f"SELECT collection FROM {qks}.collection_metadata WHERE collection = ?"
        self._coll_put = (
            f"INSERT INTO {qks}.collection_metadata (collection, created_at) VALUES (?, toTimestamp(now()))"
        )

    def _entity_rows(self, collection: str, s: str, p: str, o: str, d: str, otype: str, dtype: str, lang: str):
        """(entity, role) partitions a quad is written to, as upstream's insert does (its object's too
        when it is a literal, whatever upstream's docstring says)."""
        yield s, S
        yield p, P
        yield o, O
        if d != DEFAULT_GRAPH:
            yield d, G

    def _ensure_collection(self, collection: str) -> None:
        if self._collections_epoch != self.c.epoch:  # the server may have lost the rows (and their keyspace)
            self._collections, self._collections_epoch = set(), self.c.epoch
        if collection in self._collections:
            return
        if not list(self.c.execute(self._coll_get, (collection,), f"reading collection {collection!r}")):
            self.c.execute(self._coll_put, (collection,), f"creating collection {collection!r}")
        self._collections.add(collection)

    def _write(self, rows: list[tuple[str, tuple, object]], what: str) -> None:
        self.c.write_partitioned(rows, what, self.concurrency, max_rows=self.batch_rows)

    def _rows_of(
        self,
        collection: str,
        s: str,
        p: str,
        o: str,
        d: str,
        otype: str,
        dtype: str,
        lang: str,
        coll_cql: str,
        ent_cql: str,
    ):
        """(cql, params, partition) of every row of one quad: quads_by_collection, then each entity role."""
        yield coll_cql, (collection, d, s, p, o, otype, dtype, lang), collection
        for entity, role in self._entity_rows(collection, s, p, o, d, otype, dtype, lang):
            yield ent_cql, (collection, entity, role, p, otype, s, o, d, dtype, lang), (collection, entity)

    def _subject_first(self, rows: list[tuple[str, tuple, object]], what: str, deleting: bool = False) -> None:
        """Write rows so that a quad's subject row (role 'S') is stored before any other row of it
        and deleted after all of them: the other rows wait for every subject row to be acknowledged
        (deleting: the subject rows wait for the others). A writer that dies between the two steps
        leaves rows that delete_subjects still finds from their subject."""
        subject_rows: list[tuple[str, tuple, object]] = []
        other_rows: list[tuple[str, tuple, object]] = []
        for row in rows:  # quads_by_entity's params are (collection, entity, role, ...)
            is_subject_row = row[0] in (self._ins_entity, self._del_entity) and row[1][2] == S
            (subject_rows if is_subject_row else other_rows).append(row)
        for step in (other_rows, subject_rows) if deleting else (subject_rows, other_rows):
            self._write(step, what)

    def insert(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> int:
        self._ensure_collection(collection)
        what = f"writing triples to keyspace {self.keyspace}"
        n = 0
        rows: list[tuple[str, tuple, object]] = []
        for q in quads:
            rows.extend(self._rows_of(collection, *_parts(q), self._ins_coll, self._ins_entity))
            n += 1
            if len(rows) >= 50_000:  # bounded memory for very large inputs
                self._subject_first(rows, what)
                rows = []
        self._subject_first(rows, what)
        self._ensure_collection(collection)  # again if the keyspace had to be recreated meanwhile
        return n

    def _scan(self, cql: str, params: tuple, keep) -> Iterator[Quad]:
        what = f"reading triples of keyspace {self.keyspace}"
        with self.c.errors(what):
            for r in self.c.execute(cql, params, what, fetch_size=1000):
                q = _quad(r.s, r.p, r.o, r.d, r.otype, r.dtype, r.lang)
                if keep(q):
                    yield q

    def query(
        self,
        s: str | None = None,
        p: str | None = None,
        o: Term | None = None,
        g: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        limit: int | None = None,
    ) -> list[Quad]:
        want_o = None
        if o is not None:
            want_o = (o.value, o.otype, o.datatype if o.otype == "l" else "", o.language if o.otype == "l" else "")

        def keep(q: Quad) -> bool:
            if (s is not None and q.s != s) or (p is not None and q.p != p) or (g is not None and q.g != g):
                return False
            if want_o is not None:
                qo = q.o
                return (qo.value, qo.otype, qo.datatype, qo.language) == want_o
            return True

        # The cheapest partition: subject, else object (any kind), else predicate, else the collection.
        params: tuple[str, ...]
        if s is not None:
            cql, params = (
                (self._sel_role_p, (collection, s, S, p)) if p is not None else (self._sel_role, (collection, s, S))
            )
        elif o is not None:
            cql, params = (
                (self._sel_role_p, (collection, o.value, O, p))
                if p is not None
                else (self._sel_role, (collection, o.value, O))
            )
        elif p is not None:
            cql, params = self._sel_role, (collection, p, P)
        elif g is not None:
            cql, params = self._sel_coll_d, (collection, g)
        else:
            cql, params = self._sel_coll, (collection,)
        out: list[Quad] = []
        if limit is not None and limit <= 0:
            return out
        for q in self._scan(cql, params, keep):
            out.append(q)
            if limit is not None and len(out) >= limit:
                break
        return out

    def delete_subjects(
        self, subjects: Iterable[str], g: str = GRAPH_SOURCE, collection: str = DEFAULT_COLLECTION
    ) -> int:
        """Delete every quad of graph g whose subject is one of subjects, from both tables."""
        g = g or DEFAULT_GRAPH
        subjects = list(dict.fromkeys(subjects))
        what = f"deleting triples from keyspace {self.keyspace}"
        results = self.c.execute_many(((self._sel_role, (collection, s, S)) for s in subjects), what, self.concurrency)
        work: list[tuple[str, tuple, object]] = []
        n = 0
        with self.c.errors(what):
            for rows in results:
                for r in rows:  # pages on for partitions larger than one page
                    if r.d != g:
                        continue
                    n += 1
                    work.extend(
                        self._rows_of(
                            collection, r.s, r.p, r.o, r.d, r.otype, r.dtype, r.lang, self._del_coll, self._del_entity
                        )
                    )
        self._subject_first(work, what, deleting=True)
        return n

    def query_subjects(
        self, subjects: Iterable[str], g: str = GRAPH_SOURCE, collection: str = DEFAULT_COLLECTION
    ) -> list[Quad]:
        """Each subject's partition read, IN_PARTITIONS partitions per request (a document's checks
        read a handful: one request where there was one each), the requests concurrently."""
        g = g or DEFAULT_GRAPH
        what = f"reading triples of keyspace {self.keyspace}"
        subjects = list(dict.fromkeys(subjects))
        groups = [subjects[i : i + IN_PARTITIONS] for i in range(0, len(subjects), IN_PARTITIONS)]
        results = self.c.execute_many(
            ((self._sel_in, (collection, group, S)) for group in groups), what, self.concurrency
        )
        with self.c.errors(what):
            return [_quad(r.s, r.p, r.o, r.d, r.otype, r.dtype, r.lang) for rows in results for r in rows if r.d == g]

    def count(self, collection: str = DEFAULT_COLLECTION, g: str | None = None) -> int:
        what = f"counting triples of keyspace {self.keyspace}"
        if g is None:
            rows = self.c.execute(self._count, (collection,), what)
        else:
            rows = self.c.execute(self._count_d, (collection, g), what)
        return int(rows.one()[0])

    def missing_object_rows(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> list[Quad]:
        """Those of the (stored) quads whose object row (role 'O' of quads_by_entity) is missing, as
        quads of literals written before issue #30 are: one point read per quad, concurrently, a
        thousand at a time."""
        what = f"reading object rows of keyspace {self.keyspace}"
        out: list[Quad] = []
        for chunk in _chunks(quads, 1000):
            params = [_parts(q) for q in chunk]
            results = self.c.execute_many(
                (
                    (self._sel_row, (collection, o, O, p, otype, s, o, d, dtype, lang))
                    for s, p, o, d, otype, dtype, lang in params
                ),
                what,
                self.concurrency,
            )
            with self.c.errors(what):
                out.extend(q for q, rows in zip(chunk, results, strict=True) if rows.one() is None)
        return out

    def write_object_rows(self, quads: Iterable[Quad], collection: str = DEFAULT_COLLECTION) -> int:
        """Write the object row of each quad (the repair of missing_object_rows); idempotent."""
        what = f"writing object rows to keyspace {self.keyspace}"
        n = 0
        for chunk in _chunks(quads, 10_000):
            rows: list[tuple[str, tuple, object]] = [
                (self._ins_entity, (collection, o, O, p, otype, s, o, d, dtype, lang), (collection, o))
                for s, p, o, d, otype, dtype, lang in map(_parts, chunk)
            ]
            self._write(rows, what)
            n += len(rows)
        return n


def _chunks(items: Iterable[Quad], size: int) -> Iterator[list[Quad]]:
    chunk: list[Quad] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
