import subprocess
import sys

import pytest

from ud_assets.defs.keys import partition_key_problem


@pytest.mark.parametrize("key", ["report.pdf", "urn:x:1", "a b/c-d_e.md", "https://trustgraph.ai/doc/abc"])
def test_usable_keys(key):
    assert partition_key_problem(key) is None


@pytest.mark.parametrize("key", ["", " padded", "a,b", "a[1]", "tab\there", "x" * 600, "a\\b", "{x}", "star*"])
def test_unusable_keys(key):
    assert partition_key_problem(key)


@pytest.mark.parametrize("doc_id, message", [("a,b", "partition keys"), ("../escape", "'..' path segment")])
def test_upload_refuses_ids_that_cannot_be_partitions_or_that_traverse_paths(tmp_path, doc_id, message):
    source = tmp_path / "x.txt"
    source.write_text("hello")
    env = {"PATH": "/usr/bin:/bin", "UD_HOME": str(tmp_path / "ud"), "DO_NOT_TRACK": "true"}
    done = subprocess.run(
        [sys.executable, "-m", "ud_assets.cli", "librarian", "add", str(source), "--id", doc_id],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 1
    assert message in done.stderr and "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
