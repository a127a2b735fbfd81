"""What only the embedded backend promises: its layout, atomic files, several processes at once."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3

import pytest

from resources.embedded import FileObjectStore, open_embedded
from resources.model import LibrarianError


def test_layout_under_home(tmp_path):
    home = tmp_path / "home"
    with open_embedded(home, "default") as lib:
        meta = lib.add_document("/etc/passwd", "text/plain", b"not a path")
        files = sorted(p.name for p in (home / "objects").iterdir())
        assert files == [str(meta.object_id)]  # named by object_id, never by the document id
        assert (home / "objects" / str(meta.object_id)).read_bytes() == b"not a path"
    conn = sqlite3.connect(home / "librarian.sqlite3")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    row = conn.execute("SELECT id, kind, object_id, document_type FROM document").fetchone()
    assert row == ("/etc/passwd", "text/plain", str(meta.object_id), "source")


def test_object_writes_are_atomic(tmp_path):
    import uuid

    store = FileObjectStore(tmp_path / "objects")
    oid = uuid.uuid4()

    class Failing:
        def __init__(self):
            self.calls = 0

        def read(self, n=-1):
            self.calls += 1
            if self.calls > 2:
                raise OSError("source vanished")
            return b"x" * 1000

    with pytest.raises(LibrarianError, match="source vanished"):
        store.put(oid, Failing(), "text/plain")
    assert not store.exists(oid)
    assert list((tmp_path / "objects").iterdir()) == []  # no temp file left behind
    store.put(oid, b"complete", "text/plain")
    assert store.read_range(oid, 2, 3) == b"mpl"
    assert store.size(oid) == 8
    store.delete(oid)
    store.delete(oid)  # idempotent
    with pytest.raises(LibrarianError, match=str(oid)):
        store.size(oid)


def _contend(home: str, worker: int, n: int) -> None:
    from resources.model import DocumentExists

    with open_embedded(home, "default") as lib:
        for i in range(n):
            lib.add_document(f"w{worker}-{i}", "text/plain", f"{worker}:{i}".encode())
            try:
                lib.add_document(f"contested-{i}", "text/plain", f"winner {worker}".encode())
            except DocumentExists:
                pass


def test_several_processes_share_one_home(tmp_path):
    home = str(tmp_path / "shared")
    open_embedded(home, "default").close()  # create the schema once, as a real deployment would
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_contend, args=(home, w, 25)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with open_embedded(home, "default") as lib:
        ids = {d.id for d in lib.list_documents()}
        assert ids == {f"w{w}-{i}" for w in range(3) for i in range(25)} | {f"contested-{i}" for i in range(25)}
        events = lib.uploads_since(None, limit=10000)
        assert len(events) == 100  # one per stored document: no lost or doubled events
        assert sorted(e.id for e in events) == sorted(ids)
        assert [int(e.cursor) for e in events] == sorted(int(e.cursor) for e in events)
        for i in range(25):
            assert lib.get_content(f"contested-{i}").startswith(b"winner ")
        # each worker's own documents appear in the log in the order it wrote them
        for w in range(3):
            mine = [e.id for e in events if e.id.startswith(f"w{w}-")]
            assert mine == [f"w{w}-{i}" for i in range(25)]
        objects = list((tmp_path / "shared" / "objects").iterdir())
        assert len(objects) == 100  # the losers of each contested id left no object behind
