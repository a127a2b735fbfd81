"""`ud librarian import`: folders and S3 prefixes into the librarian, on both backends.

Public documents the project did not make (tests/corpus/public), duplicates by content, ids the
librarian or Dagster refuse, resuming after SIGKILL of a real import, and the progress bar as a
person sees it in a terminal (tmux).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from resources.model import StoreSettings
from tests.cli.test_librarian import ud
from ud_assets.cli.librarian import _detect_kind
from ud_assets.processing.importing import (
    FolderSource,
    ImportProgress,
    ImportSummary,
    id_problem,
    import_sources,
    object_id_for,
    parse_s3_url,
)

REPO = Path(__file__).resolve().parents[2]
PUBLIC = REPO / "tests" / "corpus" / "public"


def public_files() -> list[Path]:
    """The documents of the public corpus (its notes and licences left out), distinct in bytes, with usable ids."""
    files = sorted((p for p in PUBLIC.rglob("*") if p.is_file()), key=lambda p: (p.stat().st_size, str(p)))
    chosen, seen = [], set()
    for p in files:
        digest = sha(p)
        if p.relative_to(PUBLIC).parts[0] in ("LICENSES", "SOURCES.md"):
            continue  # the corpus's own notes, not documents
        if digest not in seen and id_problem(p.relative_to(PUBLIC).as_posix()) is None and p.stat().st_size:
            seen.add(digest)
            chosen.append(p)
    assert len(chosen) >= 3, f"tests/corpus/public holds {len(chosen)} usable files"
    return chosen


def copy_public(folder: Path) -> dict[str, Path]:
    """A subset of the public corpus below folder, by relative path (the ids the import gives them)."""
    out: dict[str, Path] = {}
    for p in public_files():
        relative = p.relative_to(PUBLIC).as_posix()
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, target)
        out[relative] = target
    return out


def open_lib(settings):
    from resources.settings import open_librarian

    return open_librarian(settings)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def added_events(lib) -> list[str]:
    ids, cursor = [], None
    while True:
        page = lib.uploads_since(cursor, 5000)
        ids += [u.id for u in page if u.event == "added"]
        if len(page) < 5000:
            return ids
        cursor = page[-1].cursor


def assert_rows_have_their_bytes(lib, check_content: bool) -> None:
    """No document row without its complete bytes."""
    from resources.librarian import io_pool

    docs = list(lib.iter_documents())

    def check(meta) -> str | None:
        if check_content:
            data = b"".join(lib.objects.open(meta.object_id))
            ok = len(data) == meta.size and hashlib.sha256(data).hexdigest() == meta.sha256
        else:
            ok = lib.objects.size(meta.object_id) == meta.size
        return None if ok else meta.id

    bad = [b for b in io_pool().map(check, docs) if b]
    assert not bad, f"{len(bad)} rows without their bytes, e.g. {bad[:3]}"


def test_import_public_documents(env, tmp_path, capsys):
    src = tmp_path / "src"
    files = copy_public(src)
    first = next(iter(files))
    (src / "zz-copies").mkdir()
    shutil.copyfile(files[first], src / "zz-copies" / "same-bytes.bin")  # a duplicate within the run
    (src / "bad,name.txt").write_bytes(b"an id Dagster cannot take")
    (src / "skip.tmp").write_bytes(b"excluded")

    assert ud("librarian", "import", str(src), "--exclude", "*.tmp", "--tag", "imported") == 0
    out = capsys.readouterr().out
    n = len(files)
    assert f"{n + 2} files in" in out and f"{n} added" in out, out
    assert "1 skipped as duplicates, 1 refused" in out, out
    assert f"duplicate: zz-copies/same-bytes.bin: same bytes as document {first!r}" in out, out
    assert "refused: bad,name.txt: document id 'bad,name.txt' contains ','" in out, out

    with open_lib(env) as lib:
        docs = {d.id: d for d in lib.iter_documents()}
        assert set(docs) == set(files)
        for relative, path in files.items():
            meta = docs[relative]
            assert meta.sha256 == sha(path) and meta.size == path.stat().st_size
            assert meta.kind == _detect_kind(str(path)), relative  # as `ud librarian add` detects it
            assert meta.title == path.name and meta.tags == ("imported",)
            assert meta.object_id == object_id_for(lib.workspace, relative, meta.sha256)
            assert lib.get_content(relative) == path.read_bytes()
        assert sorted(added_events(lib)) == sorted(files)  # the sensor's upload log has each one
        # Against the librarian's documents: bytes it holds under another id are duplicates,
        # an id it holds with other bytes is refused.
        lib.add_document("added-by-hand", "application/octet-stream", b"held already")

    (src / "new.txt").write_bytes(b"held already")
    (src / "more.txt").write_bytes(b"really new")
    files[first].write_bytes(b"other bytes under an imported id")
    assert ud("librarian", "import", str(src), "--exclude", "*.tmp") == 0
    out = capsys.readouterr().out
    assert f"1 added (10 B), {n - 1} already present, 2 skipped as duplicates, 2 refused" in out, out
    assert "duplicate: new.txt: same bytes as document 'added-by-hand'" in out, out
    assert f"refused: {first}: document {first!r} exists with other bytes" in out, out
    with open_lib(env) as lib:
        assert lib.get_content("more.txt") == b"really new"
        assert sorted(added_events(lib)) == sorted([*files, "added-by-hand", "more.txt"])
        assert_rows_have_their_bytes(lib, check_content=True)


def test_include_exclude_and_id_prefix(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("CASSANDRA_HOST", raising=False)
    monkeypatch.setenv("UD_HOME", str(tmp_path / "ud"))
    monkeypatch.setenv("UD_WORKSPACE", "default")
    src = tmp_path / "src"
    for name in ("a/x.pdf", "a/y.txt", "b/z.pdf", "b/deep/w.pdf", "b/deep/skip.pdf"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(name.encode())
    report = tmp_path / "report.jsonl"
    argv = ["--include", "*.pdf", "--exclude", "skip.*", "--id-prefix", "batch-1/", "--report", str(report)]
    assert ud("librarian", "import", str(src), *argv) == 0
    assert "3 files in" in capsys.readouterr().out
    outcomes = [json.loads(line) for line in report.read_text().splitlines()]
    assert [(o["id"], o["status"]) for o in outcomes] == [
        ("batch-1/a/x.pdf", "added"),
        ("batch-1/b/deep/w.pdf", "added"),
        ("batch-1/b/z.pdf", "added"),
    ]
    assert parse_s3_url("s3://bucket") == ("bucket", "")
    assert parse_s3_url("s3://bucket/in/docs") == ("bucket", "in/docs/")
    assert ud("librarian", "import", "s3:///nobucket") == 1
    assert "names no bucket" in capsys.readouterr().err
    assert ud("librarian", "import", str(tmp_path / "missing")) == 1
    assert "not a folder" in capsys.readouterr().err


@pytest.mark.services
def test_import_s3_prefix(env, tmp_path, cassandra_run, capsys):
    from resources.s3 import make_client

    if cassandra_run.error:
        pytest.fail(cassandra_run.error, pytrace=False)
    client = make_client(max_attempts=2)
    bucket = f"udimport-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=bucket)
    try:
        files = {p.relative_to(PUBLIC).as_posix(): p for p in public_files()}
        for relative, path in files.items():
            client.put_object(Bucket=bucket, Key=f"in/docs/{relative}", Body=path.read_bytes())
        first = next(iter(files))
        client.put_object(Bucket=bucket, Key="in/docs/zz/copy", Body=files[first].read_bytes())
        client.put_object(Bucket=bucket, Key="in/docs/folder/", Body=b"")  # a folder marker
        client.put_object(Bucket=bucket, Key="in/docsx/outside.txt", Body=b"not under the prefix")
        client.put_object(Bucket=bucket, Key="elsewhere.txt", Body=b"not under the prefix")

        assert ud("librarian", "import", f"s3://{bucket}/in/docs") == 0
        out = capsys.readouterr().out
        assert f"{len(files) + 1} files in" in out and f"{len(files)} added" in out, out
        assert f"duplicate: zz/copy: same bytes as document {first!r}" in out, out
        with open_lib(env) as lib:
            docs = {d.id: d for d in lib.iter_documents()}
            assert set(docs) == set(files)
            for relative, path in files.items():
                assert lib.get_content(relative) == path.read_bytes()
                assert docs[relative].kind == _detect_kind(str(path))
            assert sorted(added_events(lib)) == sorted(files)
        assert ud("librarian", "import", f"s3://{bucket}/in/docs/") == 0
        assert f"0 added (0 B), {len(files)} already present, 1 skipped" in capsys.readouterr().out
        assert ud("librarian", "import", f"s3://{bucket}-missing/in") == 1  # one line naming what failed
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"listing s3://{bucket}-missing/in/" in err and "Traceback" not in err
    finally:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:
                client.delete_objects(Bucket=bucket, Delete={"Objects": keys})
        client.delete_bucket(Bucket=bucket)


def generated_folder(folder: Path, count: int) -> dict[str, bytes]:
    files = {}
    for i in range(count):
        relative = f"part{i % 10}/file-{i:05d}.txt"
        data = f"generated document {i}\n".encode() * (1 + i % 7)
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_bytes(data)
        files[relative] = data
    return files


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("DO_NOT_TRACK", "true")
    return env


def test_resume_after_sigkill(env, tmp_path):
    src = tmp_path / "src"
    files = generated_folder(src, 3000)
    command = [sys.executable, "-m", "ud_assets.cli", "librarian", "import", str(src)]
    proc = subprocess.Popen(command, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open_lib(env) as lib:
        deadline = time.monotonic() + 120
        registered = 0
        while time.monotonic() < deadline and proc.poll() is None:
            registered = len(lib.uploads_since(None, 5000))
            if registered >= 500:
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"the import ended before it was killed: {proc.communicate()}"
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        killed_with = len(list(lib.iter_documents()))
        assert 500 <= killed_with < len(files), killed_with
        assert_rows_have_their_bytes(lib, check_content=env.backend == "embedded")

    done = subprocess.run(command, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{len(files) - killed_with} added" in done.stdout and f"{killed_with} already present" in done.stdout
    assert "\r" not in done.stderr  # no terminal: plain progress lines
    with open_lib(env) as lib:
        docs = list(lib.iter_documents())
        assert sorted(d.id for d in docs) == sorted(files)  # each file exactly once
        assert all(d.sha256 == hashlib.sha256(files[d.id]).hexdigest() for d in docs)
        assert_rows_have_their_bytes(lib, check_content=env.backend == "embedded")
        events = added_events(lib)
        assert len(events) == len(set(events))  # never logged twice
        # Each row is stored with its event (one transaction; on Cassandra one batch of the
        # workspace's partition), so the kill left no row the upload log does not name.
        assert sorted(events) == sorted(files)
        if env.backend == "embedded":
            # The killed batch's bytes were written again to the same keys: no orphan objects.
            stored = {p.name for p in (Path(env.home) / "objects").iterdir() if not p.name.startswith(".tmp-")}
            assert stored == {str(d.object_id) for d in docs}


def test_ctrl_c_reports_and_resumes(tmp_path):
    """Ctrl-C (SIGINT): the summary so far, a one-line error naming the remedy, exit 1; then the rest."""
    src = tmp_path / "src"
    files = generated_folder(src, 3000)
    env = subprocess_env() | {"UD_HOME": str(tmp_path / "ud"), "UD_WORKSPACE": "default"}
    env.pop("CASSANDRA_HOST", None)
    command = [sys.executable, "-m", "ud_assets.cli", "librarian", "import", str(src)]
    # Started as from a terminal, where Ctrl-C is heard: a test run launched in the background by a
    # non-interactive shell passes SIGINT on ignored, and the import would rightly not hear it.
    proc = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    with open_lib(StoreSettings(home=str(tmp_path / "ud"))) as lib:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and len(lib.uploads_since(None, 5000)) < 500:
            time.sleep(0.02)
        assert proc.poll() is None, f"the import ended before Ctrl-C: {proc.communicate()}"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, (out, err)
        assert err.strip().splitlines()[-1] == (
            "ud librarian: error: interrupted; run the same command again to import the rest"
        )
        assert "Traceback" not in err
        interrupted_with = len(list(lib.iter_documents()))
        assert f"{interrupted_with} added" in out, out
        assert_rows_have_their_bytes(lib, check_content=True)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{len(files) - interrupted_with} added" in done.stdout, done.stdout
    with open_lib(StoreSettings(home=str(tmp_path / "ud"))) as lib:
        assert sorted(d.id for d in lib.iter_documents()) == sorted(files)
        assert sorted(added_events(lib)) == sorted(files)


def test_progress_bar_in_a_terminal(tmp_path):
    """What a person sees: the bar redrawn in place on one line while the import runs, then the summary."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (make setup installs it)", pytrace=False)
    src = tmp_path / "src"
    generated_folder(src, 4000)
    session = f"udimport-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "run.sh"
    script.write_text(
        f"cd {tmp_path}\nexport UD_HOME={tmp_path / 'ud'} UD_WORKSPACE=default\nunset CASSANDRA_HOST\n"
        f"{sys.executable} -m ud_assets.cli librarian import {src}\necho EXIT=$?\nsleep 60\n"
    )
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "20", f"bash {script}"],
        check=True,
        env=subprocess_env(),
    )
    screens: list[str] = []
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True, check=True
            ).stdout
            if not screens or screen != screens[-1]:
                screens.append(screen)
            if "EXIT=" in screen:
                break
            time.sleep(0.05)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    final = screens[-1]
    assert "EXIT=0" in final, final
    lines = [line for line in final.splitlines() if line.strip()]
    bars = [line for line in lines if line.startswith("[")]
    assert len(bars) == 1, final  # redrawn in place: one line, not one per update
    assert bars[0].startswith("[" + "#" * 10) and "4000/4000 100%" in bars[0] and "added 4000" in bars[0], bars[0]
    assert any("4000 files in" in line and "4000 added" in line for line in lines), final
    midway = [s for s in screens if "/4000" in s and "4000/4000" not in s]
    assert midway, f"no screen showed the bar before the end ({len(screens)} screens)"
    assert "." in next(line for line in midway[0].splitlines() if line.startswith("["))  # part filled


def test_bar_line_fills_with_the_fraction_done():
    summary = ImportSummary(total=10, seen=4, added=3, duplicates=1)
    assert ImportProgress.bar_line(summary, 100).startswith("[")
    assert " 4/10  40%" in ImportProgress.bar_line(summary, 100)


def test_import_library_function_dedupes_within_a_batch(tmp_path):
    from resources.settings import open_librarian

    src = tmp_path / "src"
    src.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (src / name).write_bytes(b"same")
    outcomes = []
    with open_librarian(StoreSettings(home=str(tmp_path / "ud"))) as lib:
        summary = import_sources(lib, [FolderSource(src)], on_outcome=outcomes.append)
        assert (summary.added, summary.duplicates) == (1, 2)
        assert [(o.id, o.status, o.detail) for o in outcomes] == [
            ("a.txt", "added", ""),
            ("b.txt", "duplicate", "a.txt"),
            ("c.txt", "duplicate", "a.txt"),
        ]


class ChangingFolder(FolderSource):
    """A folder whose files read differently the second time (a file rewritten during the import)."""

    def open(self, entry):
        import io

        if entry.name.startswith("changing"):
            self.opened = getattr(self, "opened", 0) + 1
            if self.opened > 1:
                return io.BytesIO(b"rewritten meanwhile" * 10)
        return super().open(entry)


def test_large_files_are_streamed_and_checked(env, tmp_path, monkeypatch):
    """Files above IN_MEMORY are hashed in a first read and streamed to the object store in a second;
    one whose bytes differ the second time is refused, its object deleted, no row written."""
    from ud_assets.processing import importing

    monkeypatch.setattr(importing, "IN_MEMORY", 64)
    src = tmp_path / "src"
    src.mkdir()
    big = {f"big-{i}.txt": (f"large document {i} " * 200).encode() for i in range(3)}
    for name, data in big.items():
        (src / name).write_bytes(data)
    (src / "changing.txt").write_bytes(b"first read " * 20)
    (src / "small.txt").write_bytes(b"small")
    outcomes = []
    with open_lib(env) as lib:
        summary = import_sources(lib, [ChangingFolder(src)], on_outcome=outcomes.append)
        assert (summary.added, summary.refused) == (4, 1), summary.lines()
        (refused,) = [o for o in outcomes if o.status == "refused"]
        assert (refused.id, refused.detail) == ("changing.txt", "the file changed while it was imported")
        assert not lib.exists("changing.txt")
        gone = object_id_for(lib.workspace, "changing.txt", sha(src / "changing.txt"))
        assert not lib.objects.exists(gone)
        for name, data in big.items():
            assert lib.get_content(name) == data and lib.get_metadata(name).sha256 == hashlib.sha256(data).hexdigest()
        assert lib.get_content("small.txt") == b"small"
