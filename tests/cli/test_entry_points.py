"""The shipped entry points as users run them: the `ud` console script and Dagster's own CLI, each a
fresh process with a plain environment (no pytest, nothing of tests/ importable, default limits),
on public documents other projects made (tests/corpus/public, SOURCES.md there).

A decode that passes only inside pytest's large process proves nothing about these: the legacy
Office regression of 2026-12-04 (LibreOffice's preexec_fn asking for a hard limit above the one the
small `ud` process held) never showed in pytest. Every Python process started here also carries an
audit hook (NET_GUARD) that records and refuses any connection or name lookup other than loopback,
so "offline" is observed, not assumed.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Fresh processes that import unstructured and decode every format: up to ~250 s each on a busy
# 2-core machine (the default limit is 120 s).
pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus" / "public"
BIN = Path(sys.executable).parent  # the project's environment: ud, dagster

NET_GUARD = textwrap.dedent(
    """
    # Installed as sitecustomize in the processes this suite starts: any network use other than
    # loopback is written to UD_NET_LOG and refused.
    import os, sys

    _LOG = os.environ.get("UD_NET_LOG")
    _LOCAL = ("127.", "::1", "localhost", "")

    def _refuse(event, what):
        with open(_LOG, "a") as log:
            log.write(f"{os.getpid()} {event} {what!r}\\n")
        raise ConnectionRefusedError(f"network blocked by the test: {event} {what!r}")

    def _hook(event, args):
        if event == "socket.connect":
            address = args[1]
            if isinstance(address, tuple) and not str(address[0]).startswith(_LOCAL):
                _refuse(event, address)
        elif event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex"):
            host = args[0]
            if isinstance(host, bytes):
                host = host.decode(errors="replace")
            if host is not None and not str(host).startswith(_LOCAL):
                _refuse(event, host)
        elif event == "urllib.Request":
            _refuse(event, args[0])

    if _LOG:
        sys.addaudithook(_hook)
    """
)


def plain_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """What a person's shell gives: PATH with the project's environment, a HOME, no PYTHONPATH to
    tests/ (only the network guard), no pytest; the servers' variables only when passed in."""
    guard = tmp_path / "guard"
    guard.mkdir(exist_ok=True)
    (guard / "sitecustomize.py").write_text(NET_GUARD)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(guard),
        "UD_NET_LOG": str(tmp_path / "network.log"),
        "UD_HOME": str(tmp_path / "ud"),
    }
    env.update(extra)
    return env


def network_attempts(tmp_path: Path) -> list[str]:
    log = tmp_path / "network.log"
    return log.read_text().splitlines() if log.exists() else []


def run(command: list[str], env: dict[str, str], cwd: Path, timeout: int = 600, limit_as: int | None = None):
    """A fresh process, as from a terminal; limit_as lowers its hard address-space limit first (as
    a container, or `ulimit -v`, would): it can never raise it again."""

    def lower() -> None:
        if limit_as is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    return subprocess.run(
        command, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, preexec_fn=lower, check=False
    )


# One public document per format the decoder takes, legacy Office and macro-enabled packages
# included, with the kind it must be decoded as.
FORMAT_FILES = {
    "pdf/unstructured-a1977-backus-p21.pdf": "application/pdf",
    "office/unstructured-fake.doc": "application/msword",
    "office/unstructured-fake-power-point.ppt": "application/vnd.ms-powerpoint",
    "mail/unstructured-mime-attach-mp3.eml": "message/rfc822",
}


def corpus_file(name: str) -> Path:
    path = CORPUS / name
    assert path.is_file(), f"{path} is missing from the public corpus"
    return path


def test_the_corpus_has_every_format_the_suite_names():
    for name in FORMAT_FILES:
        corpus_file(name)


def test_ud_decode_decodes_every_format_offline_in_a_fresh_process(tmp_path):
    files = [corpus_file(name) for name in FORMAT_FILES]
    env = plain_env(tmp_path)
    done = run(
        ["unshare", "--net", "--", str(BIN / "ud"), "decode", "--format", "json", *map(str, files)], env, tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    decoded = {Path(r["document"]["id"]).name: r for r in json.loads(done.stdout)}
    for name, kind in FORMAT_FILES.items():
        result = decoded[Path(name).name]
        assert result["document"]["mime_type"] == kind, name
        assert any(section["text"].strip() for section in result["sections"]), f"{name}: no text"
    assert network_attempts(tmp_path) == []
    assert "Whisper" not in done.stderr and "urlopen" not in done.stderr


def test_an_audio_attachment_is_skipped_without_any_network_attempt(tmp_path):
    """unstructured would hand the MP3 to Whisper, which it downloads on first use."""
    eml = corpus_file("mail/unstructured-mime-attach-mp3.eml")
    env = plain_env(tmp_path)  # the network is there: only the guard would see an attempt
    done = run([str(BIN / "ud"), "decode", "--format", "json", str(eml)], env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert [note for note in result["document"]["notes"] if "skipped" in note and "audio/" in note], result["document"]
    assert "MP3 attachment" in " ".join(s["text"] for s in result["sections"])
    assert network_attempts(tmp_path) == []


def test_legacy_office_decodes_under_a_hard_address_space_limit(tmp_path):
    """A process whose hard RLIMIT_AS is below what the decoder would ask for (1 GiB for LibreOffice
    plus UD_DECODE_MEMORY_MB, or the child's inherited size plus it): asking above it fails, so the
    decoder must take the minimum. 6 GiB: below 1 GiB + 4096 MB + the warm process's own size."""
    files = [corpus_file("office/unstructured-fake.doc"), corpus_file("office/unstructured-fake-power-point.ppt")]
    done = run(
        [str(BIN / "ud"), "decode", "--format", "json", *map(str, files)],
        plain_env(tmp_path),
        tmp_path,
        limit_as=6 * 1024**3,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    assert [r["document"]["mime_type"] for r in results] == ["application/msword", "application/vnd.ms-powerpoint"]
    assert all(r["sections"] for r in results)


GRAPH_FILES = [
    "office/unstructured-fake.doc",
    "office/unstructured-fake-power-point.ppt",
    "mail/unstructured-mime-attach-mp3.eml",
    "pdf/unstructured-a1977-backus-p21.pdf",
]


def _dagster_home(tmp_path: Path) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    return home


def _through_the_graph(tmp_path: Path, env: dict[str, str]) -> list[str]:
    """ud librarian add (with the partition), Dagster's CLI on each partition, then ud verify and
    ud failures: the ids added."""
    ids = []
    for n, name in enumerate(GRAPH_FILES):
        doc_id = f"{n:02d}-{Path(name).name}"
        added = run(
            [str(BIN / "ud"), "librarian", "add", "--id", doc_id, "--partition", str(corpus_file(name))], env, tmp_path
        )
        assert added.returncode == 0, added.stderr[-2000:]
        assert added.stdout.strip() == doc_id
        ids.append(doc_id)
    # One partition per command, as a person does from a terminal: Dagster's CLI takes a range only
    # for single-run backfill policies (this graph's runs batch several partitions: multi_run).
    for doc_id in ids:
        materialized = run(
            [
                str(BIN / "dagster"),
                "asset",
                "materialize",
                "-m",
                "ud_assets.definitions",
                "--select",
                "*",
                "--partition",
                doc_id,
            ],
            env,
            ROOT,  # where a person runs it: -m resolves the package from here
            timeout=600,
        )
        assert materialized.returncode == 0, (materialized.stdout + materialized.stderr)[-4000:]
        assert "RUN_SUCCESS" in materialized.stdout + materialized.stderr
    verified = run([str(BIN / "ud"), "verify"], env, tmp_path)
    assert verified.returncode == 0, (verified.stdout + verified.stderr)[-3000:]
    n = len(ids)
    assert f"{n} documents verified: {n} complete, 0 incomplete" in verified.stderr, verified.stderr
    failures = run([str(BIN / "ud"), "failures"], env, tmp_path)
    assert failures.returncode == 0 and not any(doc_id in failures.stdout for doc_id in ids), failures.stdout
    return ids


def test_librarian_add_then_dagsters_cli_materializes_every_format_embedded(tmp_path):
    env = plain_env(tmp_path, DAGSTER_HOME=str(_dagster_home(tmp_path)), DO_NOT_TRACK="true")
    _through_the_graph(tmp_path, env)
    assert network_attempts(tmp_path) == []


@pytest.mark.services
def test_librarian_add_then_dagsters_cli_materializes_every_format_on_the_servers(tmp_path, cassandra_run):
    run_ = cassandra_run
    if run_.error:
        pytest.fail(run_.error, pytrace=False)
    servers = {
        name: os.environ[name]
        for name in os.environ
        if name.startswith(("CASSANDRA_", "AWS_", "UD_CASSANDRA", "UD_S3"))
    }
    env = plain_env(
        tmp_path,
        DAGSTER_HOME=str(_dagster_home(tmp_path)),
        DO_NOT_TRACK="true",
        UD_BACKEND="cassandra",
        UD_WORKSPACE=run_.new_workspace(),
        UD_BUCKET=run_.bucket,
        **servers,
    )
    _through_the_graph(tmp_path, env)
    assert network_attempts(tmp_path) == []


def test_ud_parity_compares_in_a_fresh_process(tmp_path):
    folder = tmp_path / "two"
    folder.mkdir()
    for name in ("office/unstructured-fake.doc", "office/unstructured-fake-power-point.ppt"):
        shutil.copy(corpus_file(name), folder)
    done = run([str(BIN / "ud"), "parity", str(folder)], plain_env(tmp_path, DO_NOT_TRACK="true"), tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "2 files: unstructured decodes" in done.stdout and "; 0 regressions" in done.stdout, done.stdout
    assert network_attempts(tmp_path) == []


def inet_connects(command: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run command under strace (every process it starts followed): its result and every connect()
    it made to an IPv4 or IPv6 address, a DNS resolver's included. The kernel's view: an attempt no
    Python hook saw (or a native library made) shows here too."""
    trace = cwd / "connect.trace"
    done = run(["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace), *command], env, cwd)
    calls = [line for line in trace.read_text().splitlines() if "AF_INET" in line]
    return done, calls


def test_no_process_connects_anywhere_for_an_audio_attachment(tmp_path):
    """unstructured hands an e-mail's MP3 to Whisper, whose model it downloads: neither `ud decode` nor
    `ud parity` (whose bare side runs unstructured as it is) makes a single network connection."""
    folder = tmp_path / "mail"
    folder.mkdir()
    shutil.copy(corpus_file("mail/unstructured-mime-attach-mp3.eml"), folder)
    env = {k: v for k, v in plain_env(tmp_path, DO_NOT_TRACK="true").items() if k not in ("PYTHONPATH", "UD_NET_LOG")}
    decoded, calls = inet_connects(
        [str(BIN / "ud"), "decode", str(folder / "unstructured-mime-attach-mp3.eml")], env, tmp_path
    )
    assert decoded.returncode == 0, decoded.stderr[-2000:]
    assert calls == []
    compared, calls = inet_connects([str(BIN / "ud"), "parity", str(folder)], env, tmp_path)
    assert compared.returncode == 0, (compared.stdout + compared.stderr)[-2000:]
    assert "1 ud only; 0 regressions" in compared.stdout  # bare unstructured fails on it, offline
    assert calls == [], calls


# The assets `make demo` materializes for every sample (the whole graph).
GRAPH_ASSETS = ("document", "elements", "sections", "images", "provenance_triples", "chunks")


def demo_statuses(output: str) -> dict[str, str]:
    """{document: status} from the table `make demo` prints (the status column may hold spaces)."""
    lines = output.splitlines()
    header = next(
        i for i, line in enumerate(lines) if line.startswith("document ") and line.rstrip().endswith("status")
    )
    at = lines[header].index("status")
    statuses = {}
    for line in lines[header + 1 :]:
        if not line.strip():
            break
        statuses[line.split()[0]] = line[at:].strip()
    return statuses


def test_make_demo_on_a_fresh_instance_decodes_every_sample_offline_and_again_changes_nothing(tmp_path):
    """README's quick start as typed: `make demo` (its `make setup` included) with no network, into a
    Dagster instance and a librarian that do not exist yet. Every sample is decoded and every asset
    materialized for its partition, where `make dev` shows them; the same command again decodes
    nothing a second time."""
    from dagster import AssetKey, DagsterInstance

    from resources.settings import load_settings, open_librarian

    samples = sorted(p.name for p in (ROOT / "samples").iterdir() if p.is_file() and not p.name.startswith("."))
    assert len(samples) >= 8, samples
    uv = shutil.which("uv")
    assert uv, "uv, which `make setup` runs, is not on PATH"
    dagster_home, ud_home = tmp_path / "dagster", tmp_path / "ud"
    env = plain_env(
        tmp_path,
        # A person's own HOME and PATH (uv's cache and its install), the demo's folders fresh.
        HOME=os.environ["HOME"],
        PATH=f"{BIN}:{Path(uv).parent}:/usr/local/bin:/usr/bin:/bin",
        DAGSTER_HOME=str(dagster_home),
        UD_HOME=str(ud_home),
    )
    command = ["unshare", "--net", "--", "make", "-s", "-C", str(ROOT), "demo"]

    first = run(command, env, tmp_path)
    assert first.returncode == 0, (first.stdout + first.stderr)[-4000:]
    assert demo_statuses(first.stdout) == dict.fromkeys(samples, "ok"), first.stdout[-3000:]
    with DagsterInstance.from_config(str(dagster_home)) as instance:
        for asset in GRAPH_ASSETS:
            assert instance.get_materialized_partitions(AssetKey(asset)) == set(samples), asset
    settings = load_settings({"UD_BACKEND": "embedded", "UD_HOME": str(ud_home)})
    with open_librarian(settings) as librarian:
        generations = {name: librarian.get_generation(name) for name in samples}
        assert all(generations.values()), [name for name, generation in generations.items() if not generation]
        assert librarian.list_failures() == []

    again = run(command, env, tmp_path)
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    assert demo_statuses(again.stdout) == dict.fromkeys(samples, "ok"), again.stdout[-3000:]
    with open_librarian(settings) as librarian:
        # The same generations, down to their time: nothing was decoded or written again.
        assert {name: librarian.get_generation(name) for name in samples} == generations
    assert network_attempts(tmp_path) == []
