"""`ud librarian ...` through a tiny argparse wrapper, on both backends."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import uuid

from ud_assets.cli.librarian import add_librarian_parser

PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


def ud(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="ud")
    add_librarian_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return args.handler(args)


def one_line_error(capsys, *fragments: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ud librarian: error: "), err
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, err
    return err


def test_add_list_show_rm(env, tmp_path, capsys):
    f = tmp_path / "report.pdf"
    f.write_bytes(PDF)
    assert ud("librarian", "add", str(f), "--id", "doc-a", "--title", "Report", "--tag", "x", "--tag", "y") == 0
    assert capsys.readouterr().out == "doc-a\n"
    assert ud("librarian", "add", str(f)) == 0  # id defaults to a new uuid4, kind is detected
    new_id = capsys.readouterr().out.strip()
    assert uuid.UUID(new_id).version == 4

    assert ud("librarian", "list", "--json") == 0
    docs = {d["id"]: d for d in json.loads(capsys.readouterr().out)}
    assert set(docs) == {"doc-a", new_id}
    assert docs["doc-a"]["kind"] == "application/pdf" and docs[new_id]["kind"] == "application/pdf"
    assert docs["doc-a"]["title"] == "Report" and docs[new_id]["title"] == "report.pdf"
    assert docs["doc-a"]["tags"] == ["x", "y"] and docs["doc-a"]["size"] == len(PDF)

    from resources.settings import open_librarian

    with open_librarian(env) as lib:
        lib.add_child_document("doc-a", "urn:page:a1", "text/plain", b"page", "page", title="Page 1")

    assert ud("librarian", "list") == 0
    out = capsys.readouterr().out
    assert "doc-a" in out and "urn:page:a1" not in out
    assert ud("librarian", "list", "--children") == 0
    assert "urn:page:a1" in capsys.readouterr().out

    assert ud("librarian", "show", "doc-a") == 0
    out = capsys.readouterr().out
    assert "id: doc-a" in out and "kind: application/pdf" in out and "children: 1" in out and "urn:page:a1" in out
    assert ud("librarian", "show", "doc-a", "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in shown["children"]] == ["urn:page:a1"]

    assert ud("librarian", "rm", "doc-a") == 0
    assert "2 documents" in capsys.readouterr().out
    assert ud("librarian", "list", "--json", "--children") == 0
    assert [d["id"] for d in json.loads(capsys.readouterr().out)] == [new_id]


def storage_exists(settings, request) -> bool:
    """Whether the storage of these settings' workspace is there, read without the librarian."""
    if settings.backend == "embedded":
        import os

        return os.path.isdir(settings.home) and any(os.scandir(settings.home))
    from resources.cassandra.triples import keyspace_for

    rows = request.getfixturevalue("cassandra_run").connection.execute(
        "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?", (keyspace_for(settings.workspace),)
    )
    return bool(list(rows))


def test_init_creates_the_storage_once_and_keeps_what_is_stored(env, tmp_path, capsys, request):
    assert not storage_exists(env, request)
    assert ud("librarian", "init") == 0
    out = capsys.readouterr().out
    assert out.startswith(f"librarian ready: workspace {env.workspace!r}, ") and out.count("\n") == 1, out
    assert storage_exists(env, request)
    f = tmp_path / "report.pdf"
    f.write_bytes(PDF)
    assert ud("librarian", "add", str(f), "--id", "doc-a") == 0
    assert ud("librarian", "init") == 0  # again, as every make cluster-up does
    capsys.readouterr()
    assert ud("librarian", "list") == 0
    assert capsys.readouterr().out.startswith("doc-a\t")


def test_kind_flag_wins(env, tmp_path, capsys):
    f = tmp_path / "notes.bin"
    f.write_bytes(PDF)
    assert ud("librarian", "add", str(f), "--id", "k", "--kind", "text/markdown") == 0
    capsys.readouterr()
    assert ud("librarian", "show", "k", "--json") == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "text/markdown"


def test_duplicate_id_is_one_line_error(env, tmp_path, capsys):
    f = tmp_path / "a.txt"
    f.write_bytes(b"hello")
    assert ud("librarian", "add", str(f), "--id", "same") == 0
    capsys.readouterr()
    assert ud("librarian", "add", str(f), "--id", "same") == 1
    one_line_error(capsys, "'same'", "already exists")


def test_unknown_document_is_one_line_error(env, capsys):
    assert ud("librarian", "show", "ghost") == 1
    one_line_error(capsys, "'ghost'", "not found")
    assert ud("librarian", "rm", "ghost") == 1
    one_line_error(capsys, "'ghost'", "not found")


def test_missing_file_and_bad_id(env, tmp_path, capsys):
    assert ud("librarian", "add", str(tmp_path / "absent.pdf")) == 1
    one_line_error(capsys, "absent.pdf")
    f = tmp_path / "a.txt"
    f.write_bytes(b"x")
    assert ud("librarian", "add", str(f), "--id", "bad\nid") == 1
    one_line_error(capsys, "document id 'bad\\nid'")


def test_unreachable_cassandra_is_one_line_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("CASSANDRA_HOST", "127.0.0.1")
    monkeypatch.setenv("CASSANDRA_PORT", "1")
    monkeypatch.setenv("CASSANDRA_CONNECT_TIMEOUT", "2")
    monkeypatch.delenv("UD_BACKEND", raising=False)
    f = tmp_path / "a.txt"
    f.write_bytes(b"x")
    assert ud("librarian", "add", str(f)) == 1
    one_line_error(capsys, "Cassandra at 127.0.0.1:1 unreachable")
    assert ud("librarian", "list") == 1
    one_line_error(capsys, "Cassandra at 127.0.0.1:1 unreachable")


def test_real_process_prints_no_traceback(tmp_path):
    """The same through a fresh interpreter: stderr is exactly one line."""
    code = (
        "import argparse, sys\n"
        "from ud_assets.cli.librarian import add_librarian_parser\n"
        "p = argparse.ArgumentParser(prog='ud')\n"
        "add_librarian_parser(p.add_subparsers(dest='command', required=True))\n"
        "a = p.parse_args(sys.argv[1:])\n"
        "sys.exit(a.handler(a))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "UD_HOME": str(tmp_path / "ud"), "DO_NOT_TRACK": "true"}
    proc = subprocess.run(
        [sys.executable, "-c", code, "librarian", "rm", "nothing-here"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "'nothing-here' not found" in proc.stderr
