"""The librarian contract, run against both backends (the `backend` fixture's params)."""

from __future__ import annotations

import hashlib
import io
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from resources.librarian import PROV_WAS_GENERATED_BY
from resources.model import (
    CHUNK,
    GRAPH_SOURCE,
    IMAGE,
    PAGE,
    SECTION,
    SOURCE,
    Child,
    DocumentExists,
    DocumentNotFound,
    LibrarianError,
    Quad,
    StorageUnavailable,
    Term,
)

MiB = 1 << 20
PROV = "http://www.w3.org/ns/prov#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


def payload(n: int, seed: int = 1) -> bytes:
    """n pseudo-random bytes (not compressible, not repetitive: offsets matter)."""
    out = bytearray()
    block = hashlib.sha256(str(seed).encode()).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:n])


class OneWayStream(io.RawIOBase):
    """A non-seekable binary stream that hands out at most `step` bytes per read()."""

    def __init__(self, data: bytes, step: int = 65536):
        self._buf = io.BytesIO(data)
        self._step = step

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        chunk = self._buf.read(min(len(b), self._step))
        b[: len(chunk)] = chunk
        return len(chunk)


# -- bytes ---------------------------------------------------------------------------------------


def test_small_document_round_trip(librarian):
    data = b"hello librarian\x00\xff"
    meta = librarian.add_document("doc-1", "text/plain", data, title="Hello")
    assert meta.size == len(data)
    assert meta.sha256 == hashlib.sha256(data).hexdigest()
    assert librarian.get_content("doc-1") == data
    assert librarian.exists("doc-1")
    assert not librarian.exists("doc-2")


def test_a_small_object_is_read_whole_in_one_request_and_a_missing_one_is_named(librarian):
    data = b"a child's text \x00\xff" * 100
    meta = librarian.add_document("small", "text/plain", data)
    assert librarian.objects.read(meta.object_id) == data
    empty = librarian.add_document("nothing", "text/plain", b"")
    assert librarian.objects.read(empty.object_id) == b""
    ghost = uuid.uuid4()
    with pytest.raises(LibrarianError, match=str(ghost)) as err:
        librarian.objects.read(ghost)
    assert not isinstance(err.value, StorageUnavailable)  # missing, not a server away


def test_empty_document_round_trip(librarian):
    meta = librarian.add_document("empty", "application/octet-stream", b"")
    assert meta.size == 0 and meta.sha256 == hashlib.sha256(b"").hexdigest()
    assert librarian.get_content("empty") == b""
    assert librarian.read_range("empty", 0, 10) == b""


def test_large_streamed_document_above_multipart_threshold(librarian):
    data = payload(20 * MiB + 12345, seed=7)
    meta = librarian.add_document("big", "application/pdf", OneWayStream(data))
    assert meta.size == len(data)
    assert meta.sha256 == hashlib.sha256(data).hexdigest()
    chunks = list(librarian.stream_content("big", chunk_size=MiB))
    assert all(0 < len(c) <= MiB for c in chunks)
    assert len(chunks) >= 21
    assert b"".join(chunks) == data
    # Ranges: inside one part, across the 8 MiB part boundary, at the end, beyond the end.
    assert librarian.read_range("big", 0, 100) == data[:100]
    assert librarian.read_range("big", 8 * MiB - 10, 20) == data[8 * MiB - 10 : 8 * MiB + 10]
    assert librarian.read_range("big", len(data) - 5, 100) == data[-5:]
    assert librarian.read_range("big", len(data) + 10, 5) == b""
    assert librarian.read_range("big", 5, 0) == b""
    assert librarian.objects.size(meta.object_id) == len(data)


def test_file_object_content(librarian, tmp_path):
    data = payload(3 * MiB + 1, seed=3)
    path = tmp_path / "in.bin"
    path.write_bytes(data)
    with open(path, "rb") as f:
        meta = librarian.add_document("from-file", "application/octet-stream", f)
    assert meta.size == len(data)
    assert librarian.read_range("from-file", MiB, 17) == data[MiB : MiB + 17]


def test_stream_and_range_of_missing_document(librarian):
    with pytest.raises(DocumentNotFound, match="nope"):
        librarian.get_content("nope")
    with pytest.raises(DocumentNotFound, match="nope"):
        list(librarian.stream_content("nope"))
    with pytest.raises(DocumentNotFound, match="nope"):
        librarian.read_range("nope", 0, 1)
    librarian.add_document("x", "text/plain", b"abc")
    with pytest.raises(LibrarianError, match="range"):
        librarian.read_range("x", -1, 2)
    with pytest.raises(LibrarianError, match="chunk size"):
        list(librarian.stream_content("x", chunk_size=0))


# -- metadata ------------------------------------------------------------------------------------


def test_metadata_round_trip(librarian):
    before = datetime.now(UTC) - timedelta(seconds=1)
    triples = (
        ("https://example.org/doc/1", True, "http://purl.org/dc/elements/1.1/title", True, "Zürich report", False),
        (
            "https://example.org/doc/1",
            True,
            "http://purl.org/dc/elements/1.1/creator",
            True,
            "https://example.org/p/ann",
            True,
        ),
    )
    meta = librarian.add_document(
        "meta-doc",
        "application/pdf",
        b"%PDF-1.7 ...",
        title="Zürich report",
        comments="first draft\nsecond line",
        tags=["finance", "2026", "ünïcode"],
        metadata=triples,
    )
    got = librarian.get_metadata("meta-doc")
    assert got == meta
    assert got.id == "meta-doc" and got.kind == "application/pdf"
    assert got.title == "Zürich report" and got.comments == "first draft\nsecond line"
    assert got.tags == ("finance", "2026", "ünïcode")
    assert got.metadata == triples
    assert got.workspace == librarian.workspace
    assert got.parent_id == "" and got.document_type == SOURCE
    assert isinstance(got.object_id, uuid.UUID) and got.object_id.version == 4
    assert got.time.tzinfo is not None and before <= got.time <= datetime.now(UTC) + timedelta(seconds=1)
    assert got.size == 12 and got.sha256 == hashlib.sha256(b"%PDF-1.7 ...").hexdigest()
    # The object key comes from object_id, never from the document id.
    assert librarian.objects.exists(got.object_id)


def test_kind_is_required(librarian):
    for kind in ("", "   ", None):
        with pytest.raises(LibrarianError, match="kind"):
            librarian.add_document("no-kind", kind, b"abc")
    assert not librarian.exists("no-kind")


@pytest.mark.parametrize(
    "bad",
    ["", "x" * 513, "a\nb", "tab\there", "nul\x00", "del\x7f", "../up", "a/../b"],
    ids=["empty", "too-long", "newline", "tab", "nul", "del", "dotdot", "inner-dotdot"],
)
def test_bad_ids_are_refused(librarian, bad):
    with pytest.raises(LibrarianError) as err:
        librarian.add_document(bad, "text/plain", b"abc")
    assert "id" in str(err.value)
    assert librarian.list_documents(include_children=True) == []


def test_long_and_unicode_ids_are_fine(librarian):
    long_id = "urn:doc:" + "é" * 504
    assert len(long_id) == 512
    librarian.add_document(long_id, "text/plain", b"x")
    librarian.add_document("https://example.org/a b/ü?q=1#frag", "text/plain", b"y")
    assert librarian.get_content(long_id) == b"x"
    assert librarian.get_content("https://example.org/a b/ü?q=1#frag") == b"y"


def test_duplicate_id_is_refused_and_keeps_the_first(librarian):
    first = librarian.add_document("dup", "text/plain", b"first")
    with pytest.raises(DocumentExists, match="dup"):
        librarian.add_document("dup", "text/html", b"second")
    assert librarian.get_content("dup") == b"first"
    assert librarian.get_metadata("dup") == first
    parent = librarian.add_document("parent", "text/plain", b"p")
    with pytest.raises(DocumentExists, match="dup"):
        librarian.add_child_document(parent.id, "dup", "text/plain", b"c", PAGE)
    assert librarian.list_children("parent") == []


def test_get_metadata_of_missing_document(librarian):
    with pytest.raises(DocumentNotFound, match="'ghost'"):
        librarian.get_metadata("ghost")


def test_get_metadata_many_reads_existing_rows_by_id_and_leaves_out_missing_ones(librarian):
    """A batch's rows in a few reads: sources and children by id, across the backend's read chunks
    (ids asked for past the 500th), each row as get_metadata reads it, a missing id left out."""
    librarian.add_document("first", "text/plain", b"one", title="first.txt")
    librarian.add_document("last", "text/markdown", b"# two", title="last.md")
    librarian.put_children([Child("first", "urn:page:first/1", "text/plain", b"page one", PAGE, "Page 1")])
    ids = ["first", *(f"ghost-{i:03d}" for i in range(550)), "urn:page:first/1", "last", "first"]
    found = librarian.get_metadata_many(ids)
    assert sorted(found) == ["first", "last", "urn:page:first/1"]
    for id, meta in found.items():
        assert meta == librarian.get_metadata(id)
    assert found["urn:page:first/1"].parent_id == "first" and found["last"].size == 5
    assert librarian.get_metadata_many([]) == {}
    with pytest.raises(LibrarianError):
        librarian.get_metadata_many(["first", ""])  # an id the librarian refuses, as get_metadata does


# -- children ------------------------------------------------------------------------------------


def test_child_of_missing_parent_is_refused(librarian):
    with pytest.raises(DocumentNotFound, match="missing-parent"):
        librarian.add_child_document("missing-parent", "urn:page:1", "text/plain", b"page", PAGE)
    assert not librarian.exists("urn:page:1")


def test_put_children_stores_them_idempotently_under_existing_parents(librarian):
    librarian.add_document("src", "text/plain", b"source")
    page = Child("src", "urn:page:src/1", "text/plain", b"page one", PAGE, "Page 1", ("generation:g",))
    chunk = Child("urn:page:src/1", "urn:chunk:src/1/0", "text/plain", b"chunk", CHUNK, "Chunk 0")
    assert [m.id for m in librarian.put_children([page])] == ["urn:page:src/1"]
    librarian.put_children([chunk])
    librarian.put_children([page, chunk])  # again: each replaces itself
    assert [c.id for c in librarian.list_children("src")] == ["urn:page:src/1"]
    assert librarian.get_content("urn:chunk:src/1/0") == b"chunk"
    assert librarian.get_metadata("urn:page:src/1").tags == ("generation:g",)
    orphan = Child("ghost", "urn:page:ghost/1", "text/plain", b"x", PAGE)
    with pytest.raises(DocumentNotFound, match="ghost"):
        librarian.put_children([orphan])
    assert not librarian.exists("urn:page:ghost/1")


def test_put_children_reads_only_the_parents_it_is_not_told_about(librarian, monkeypatch):
    """A stage that has just stored (or read) the parents says so: a small document's children
    then cost no reads of their parents."""
    librarian.add_document("src", "text/plain", b"source")
    librarian.put_children([Child("src", "urn:page:src/1", "text/plain", b"p1", PAGE)])
    librarian.put_children([Child("src", "urn:page:src/2", "text/plain", b"p2", PAGE)])
    read: list[str] = []
    real_get = librarian.documents.get
    monkeypatch.setattr(librarian.documents, "get", lambda ws, id: read.append(id) or real_get(ws, id))
    chunks = [
        Child("urn:page:src/1", "urn:chunk:src/1/0", "text/plain", b"c1", CHUNK),
        Child("urn:page:src/2", "urn:chunk:src/2/0", "text/plain", b"c2", CHUNK),
    ]
    librarian.put_children(chunks, known_parents=["urn:page:src/1"])
    assert read == ["urn:page:src/2"]
    read.clear()
    librarian.put_children(chunks, known_parents=["urn:page:src/1", "urn:page:src/2"])
    assert read == []
    assert librarian.get_content("urn:chunk:src/2/0") == b"c2"


def test_child_document_type_is_checked(librarian):
    librarian.add_document("src", "text/plain", b"s")
    for bad in ("paragraph", "", SOURCE):
        with pytest.raises(LibrarianError, match="document type"):
            librarian.add_child_document("src", f"urn:x:{bad}", "text/plain", b"c", bad)
    assert librarian.list_children("src") == []


def test_children_and_listing(librarian):
    a = librarian.add_document("a", "application/pdf", b"A")
    b = librarian.add_document("b", "text/html", b"B")
    p1 = librarian.add_child_document("a", "urn:page:1", "text/plain", b"page one", PAGE, title="Page 1")
    p2 = librarian.add_child_document("a", "urn:page:2", "text/plain", b"page two", PAGE, title="Page 2", tags=["t"])
    img = librarian.add_child_document("urn:page:1", "urn:image:1", "image/png", b"\x89PNG", IMAGE)
    sec = librarian.add_child_document("b", "urn:section:1", "text/plain", b"sec", SECTION)
    chunk = librarian.add_child_document("urn:section:1", "urn:chunk:1", "text/plain", b"chu", CHUNK)

    assert p1.parent_id == "a" and p1.document_type == PAGE and p1.title == "Page 1"
    assert librarian.get_metadata("urn:page:2").tags == ("t",)
    assert librarian.get_content("urn:image:1") == b"\x89PNG"

    sources = librarian.list_documents()
    assert {d.id for d in sources} == {"a", "b"}
    assert all(d.document_type == SOURCE for d in sources)
    assert set(sources) == {a, b}
    everything = librarian.list_documents(include_children=True)
    assert {d.id for d in everything} == {
        "a",
        "b",
        "urn:page:1",
        "urn:page:2",
        "urn:image:1",
        "urn:section:1",
        "urn:chunk:1",
    }
    assert set(everything) == {a, b, p1, p2, img, sec, chunk}

    assert {d.id for d in librarian.list_children("a")} == {"urn:page:1", "urn:page:2"}  # direct only
    assert [d.id for d in librarian.list_children("urn:page:1")] == ["urn:image:1"]
    assert [d.id for d in librarian.list_children("b")] == ["urn:section:1"]
    assert librarian.list_children("urn:chunk:1") == []


def test_workspaces_are_separate(store_settings, fresh_settings):
    from resources.settings import open_librarian

    other = fresh_settings()
    assert other.workspace != store_settings.workspace
    one, two = open_librarian(store_settings), open_librarian(other)
    try:
        one.add_document("shared-id", "text/plain", b"one")
        assert not two.exists("shared-id")
        two.add_document("shared-id", "text/plain", b"two")
        assert one.get_content("shared-id") == b"one" and two.get_content("shared-id") == b"two"
        assert [d.id for d in two.list_documents()] == ["shared-id"]
        two.triples.insert([Quad("shared-id", LABEL, Term("two"), GRAPH_SOURCE)])
        assert one.triples.query(s="shared-id") == []
        assert two.remove_document("shared-id") == 1
        assert one.get_content("shared-id") == b"one"
        assert [u.event for u in one.uploads_since(None)] == ["added"]
        assert [u.event for u in two.uploads_since(None)] == ["added", "removed"]
    finally:
        one.close()
        two.close()


# -- removal -------------------------------------------------------------------------------------


def _provenance(entity: str, parent: str, activity: str, graph: str = GRAPH_SOURCE) -> list[Quad]:
    return [
        Quad(entity, RDF_TYPE, Term(PROV + "Entity", is_iri=True), graph),
        Quad(entity, PROV + "wasDerivedFrom", Term(parent, is_iri=True), graph),
        Quad(entity, PROV_WAS_GENERATED_BY, Term(activity, is_iri=True), graph),
        Quad(entity, LABEL, Term("Page", language="en"), graph),
        Quad(activity, RDF_TYPE, Term(PROV + "Activity", is_iri=True), graph),
        Quad(activity, PROV + "used", Term(parent, is_iri=True), graph),
        Quad(
            activity,
            PROV + "startedAtTime",
            Term("2026-01-01T00:00:00Z", datatype="http://www.w3.org/2001/XMLSchema#dateTime"),
            graph,
        ),
    ]


def _build_tree(lib, root: str, tag: str) -> dict[str, object]:
    """root -> 2 pages -> an image under page 1 and a chunk under page 2, with triples."""
    docs = [lib.add_document(root, "application/pdf", payload(5000, seed=ord(tag[0])), title=tag)]
    quads = [
        Quad(root, RDF_TYPE, Term("https://trustgraph.ai/ns/Document", is_iri=True), ""),
        Quad(root, "http://purl.org/dc/elements/1.1/title", Term(tag), ""),
    ]
    layout = [
        (f"urn:page:{tag}-1", root, PAGE),
        (f"urn:page:{tag}-2", root, PAGE),
        (f"urn:image:{tag}-1", f"urn:page:{tag}-1", IMAGE),
        (f"urn:chunk:{tag}-1", f"urn:page:{tag}-2", CHUNK),
    ]
    for child, parent, kind in layout:
        docs.append(lib.add_child_document(parent, child, "text/plain", child.encode() * 10, kind))
        quads += _provenance(child, parent, f"https://trustgraph.ai/activity/{child}")
    lib.triples.insert(quads, collection=lib.collection)
    return {"docs": docs, "quads": quads}


def test_remove_document_is_recursive_and_leaves_nothing(librarian):
    doomed = _build_tree(librarian, "doomed", "d")
    kept = _build_tree(librarian, "kept", "k")
    unrelated = [Quad("https://example.org/x", LABEL, Term("doomed"), "")]  # mentions the id as a literal only
    librarian.triples.insert(unrelated, collection=librarian.collection)
    col = librarian.collection
    total_before = librarian.triples.count(col)
    assert total_before == len(doomed["quads"]) + len(kept["quads"]) + 1

    assert librarian.remove_document("doomed") == 5

    # metadata: none of the five rows remain
    for d in doomed["docs"]:
        assert not librarian.exists(d.id)
        with pytest.raises(DocumentNotFound):
            librarian.get_metadata(d.id)
        assert not librarian.objects.exists(d.object_id)
        assert librarian.list_children(d.id) == []
    # triples: nothing with a removed id or one of their activities as subject, in any graph
    subjects = {d.id for d in doomed["docs"]} | {f"https://trustgraph.ai/activity/{d.id}" for d in doomed["docs"][1:]}
    for s in subjects:
        assert librarian.triples.query(s=s, collection=col) == []
    remaining = librarian.triples.query(collection=col)
    assert not [q for q in remaining if q.s in subjects]
    # ...and nothing left behind in the entity partitions of objects either
    for d in doomed["docs"]:
        assert librarian.triples.query(o=Term(d.id, is_iri=True), collection=col) == []
    generated = librarian.triples.query(p=PROV_WAS_GENERATED_BY, collection=col)
    assert sorted(generated, key=repr) == sorted((q for q in kept["quads"] if q.p == PROV_WAS_GENERATED_BY), key=repr)
    assert librarian.triples.count(col) == len(kept["quads"]) + 1
    # the other tree is untouched
    assert {d.id for d in librarian.list_documents(include_children=True)} == {d.id for d in kept["docs"]}
    for d in kept["docs"]:
        assert librarian.get_metadata(d.id) == d
        assert librarian.objects.exists(d.object_id)
    assert sorted(remaining, key=repr) == sorted(kept["quads"] + unrelated, key=repr)


def test_remove_child_removes_its_subtree_only(librarian):
    tree = _build_tree(librarian, "root", "r")
    assert librarian.remove_document("urn:page:r-1") == 2  # the page and its image
    assert {d.id for d in librarian.list_documents(include_children=True)} == {"root", "urn:page:r-2", "urn:chunk:r-1"}
    assert [d.id for d in librarian.list_children("root")] == ["urn:page:r-2"]
    assert librarian.triples.query(s="urn:page:r-1", collection=librarian.collection) == []
    assert librarian.triples.query(s="urn:image:r-1", collection=librarian.collection) == []
    assert len(librarian.triples.query(s="urn:page:r-2", collection=librarian.collection)) == 4
    # a child's removal is no upload event
    assert [u.event for u in librarian.uploads_since(None)] == ["added"]
    assert tree


def test_remove_missing_document(librarian):
    with pytest.raises(DocumentNotFound, match="never-there"):
        librarian.remove_document("never-there")


# -- upload log ----------------------------------------------------------------------------------


def test_uploads_since_cursor(librarian):
    assert librarian.uploads_since(None) == []
    ids = [f"u{i}" for i in range(7)]
    for i in ids:
        librarian.add_document(i, "text/plain", i.encode())
    librarian.add_child_document("u0", "urn:page:u0", "text/plain", b"p", PAGE)  # children are not uploads

    everything = librarian.uploads_since(None)
    assert [u.id for u in everything] == ids
    assert all(u.event == "added" for u in everything)
    assert everything[3].sha256 == hashlib.sha256(b"u3").hexdigest()
    assert [u.time for u in everything] == sorted(u.time for u in everything)
    assert len({u.cursor for u in everything}) == 7

    first = librarian.uploads_since(None, limit=3)
    assert [u.id for u in first] == ids[:3]
    second = librarian.uploads_since(first[-1].cursor, limit=3)
    assert [u.id for u in second] == ids[3:6]
    third = librarian.uploads_since(second[-1].cursor, limit=3)
    assert [u.id for u in third] == ids[6:]
    assert librarian.uploads_since(third[-1].cursor) == []

    librarian.remove_document("u2")
    librarian.add_document("u7", "text/plain", b"u7")
    news = librarian.uploads_since(third[-1].cursor)
    assert [(u.id, u.event) for u in news] == [("u2", "removed"), ("u7", "added")]
    assert news[0].sha256 == hashlib.sha256(b"u2").hexdigest()
    assert librarian.uploads_since(news[0].cursor)[0].id == "u7"
    # a refused duplicate is no event
    with pytest.raises(DocumentExists):
        librarian.add_document("u7", "text/plain", b"again")
    assert librarian.uploads_since(news[-1].cursor) == []


def test_uploads_since_rejects_foreign_cursor(librarian):
    librarian.add_document("one", "text/plain", b"1")
    with pytest.raises(LibrarianError, match="cursor"):
        librarian.uploads_since("not-a-cursor")
    with pytest.raises(LibrarianError):
        librarian.uploads_since(None, limit=0)


def test_failed_upload_leaves_no_metadata(librarian):
    class Broken(io.RawIOBase):
        def __init__(self):
            self.n = 0

        def readable(self):
            return True

        def readinto(self, b):
            self.n += 1
            if self.n > 3:
                raise OSError("disk on fire")
            b[:10] = b"0123456789"
            return 10

    with pytest.raises(Exception, match="disk on fire"):
        librarian.add_document("broken", "text/plain", Broken())
    assert not librarian.exists("broken")
    assert librarian.uploads_since(None) == []
    # and the id is still free
    librarian.add_document("broken", "text/plain", b"fine")
    assert librarian.get_content("broken") == b"fine"


def test_metadata_failure_removes_the_object(librarian, monkeypatch):
    written = []
    real_put = librarian.objects.put

    def spy_put(object_id, data, content_type):
        written.append(object_id)
        return real_put(object_id, data, content_type)

    def failing_insert(meta, event):
        raise LibrarianError("metadata store down")

    monkeypatch.setattr(librarian.objects, "put", spy_put)
    monkeypatch.setattr(librarian.documents, "insert", failing_insert)
    with pytest.raises(LibrarianError, match="metadata store down"):
        librarian.add_document("orphan", "text/plain", b"bytes")
    assert len(written) == 1 and not librarian.objects.exists(written[0])


def test_many_documents_listing(librarian):
    for i in range(60):
        librarian.add_document(f"doc-{i:03d}", "text/plain", b"x" * i)
    docs = librarian.list_documents()
    assert len(docs) == 60
    assert {d.id for d in docs} == {f"doc-{i:03d}" for i in range(60)}
    assert sum(d.size for d in docs) == sum(range(60))


def test_iter_documents_pages_in_id_order_and_skips_children_across_pages(librarian):
    for i in range(7):
        librarian.add_document(f"doc-{i}", "text/plain", b"x")
    # Children named to sort between the sources ("doc-3a-*" between doc-3 and doc-4): a page
    # may hold only children, and listing must go on past it.
    for i in range(5):
        librarian.add_child_document("doc-3", f"doc-3a-{i}", "text/plain", b"c", CHUNK)
    pages = []
    real = librarian.documents.page_rows
    librarian.documents.page_rows = lambda w, a, n: pages.append(a) or real(w, a, n)
    ids = [d.id for d in librarian.iter_documents(page=3)]
    assert ids == [f"doc-{i}" for i in range(7)]
    # 12 rows, 3 a page: the third page (doc-3a-2 .. doc-3a-4) is children only; the fifth is empty.
    assert pages == ["", "doc-2", "doc-3a-1", "doc-3a-4", "doc-6"]
    everything = [d.id for d in librarian.iter_documents(include_children=True, page=3)]
    assert everything == sorted([f"doc-{i}" for i in range(7)] + [f"doc-3a-{i}" for i in range(5)])
    with pytest.raises(LibrarianError, match="page must be positive"):
        next(librarian.iter_documents(page=0))


class GeneratedStream(io.RawIOBase):
    """n pseudo-random bytes made on the fly: the whole never exists in memory."""

    def __init__(self, n: int):
        self.left = n
        self.block = hashlib.sha256(b"gen").digest() * 2048  # 64 KiB

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        k = min(len(b), self.left, len(self.block))
        b[:k] = self.block[:k]
        self.left -= k
        return k


def test_streaming_keeps_memory_bounded(librarian):
    import tracemalloc

    n = 48 * MiB
    meta = librarian.add_document("stream-big", "application/octet-stream", GeneratedStream(n))
    assert meta.size == n
    tracemalloc.start()
    try:
        total = 0
        for chunk in librarian.stream_content("stream-big", chunk_size=MiB):
            total += len(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == n
    assert peak < 8 * MiB, f"reading {n} bytes peaked at {peak} bytes of Python memory"


@pytest.mark.parametrize("child", [False, True], ids=["source", "child"])
def test_losing_a_race_for_an_id_keeps_the_winners_bytes(librarian, monkeypatch, child):
    """Two writers pass the existence check; the one whose metadata insert loses must not hurt the other."""
    librarian.add_document("parent", "text/plain", b"p")

    def add():
        if child:
            return librarian.add_child_document("parent", "urn:page:race", "text/plain", b"same bytes", PAGE)
        return librarian.add_document("urn:page:race", "text/plain", b"same bytes")

    winner = add()
    real_get = librarian.documents.get
    calls = []

    def blind_first_look(workspace, id):
        if id == "urn:page:race":
            calls.append(id)
            if len(calls) == 1:
                return None
        return real_get(workspace, id)

    monkeypatch.setattr(librarian.documents, "get", blind_first_look)
    with pytest.raises(DocumentExists, match="urn:page:race"):
        add()
    monkeypatch.undo()
    assert librarian.get_metadata("urn:page:race") == winner
    assert librarian.get_content("urn:page:race") == b"same bytes"
    assert librarian.objects.exists(winner.object_id)
