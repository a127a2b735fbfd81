"""Secrets stay in the environment: never in logs, run config, asset metadata or error messages."""

import pytest

from tests import docgen
from tests.defs.test_assets import run, upload
from tests.test_reliability import PrivateMinio
from ud_assets.defs.resources import LibrarianResource

SECRET = "Zq8-not-a-real-secret-4411"


def _all_text_of_run(instance, run_id: str) -> str:
    parts = [str(instance.get_run_by_id(run_id).run_config), str(instance.get_run_by_id(run_id).tags)]
    for record in instance.all_logs(run_id):
        parts.append(record.user_message or "")
        if record.dagster_event is not None:
            parts.append(repr(record.dagster_event.event_specific_data))
    return "\n".join(parts)


def test_credentials_never_reach_logs_config_metadata_or_errors(tmp_path, monkeypatch, graph_cassandra_run, instance):
    if graph_cassandra_run.error:
        pytest.fail(graph_cassandra_run.error, pytrace=False)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    server = PrivateMinio(tmp_path / "minio")
    server.start()
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{server.port}")
        resource = LibrarianResource(
            backend="cassandra", workspace=graph_cassandra_run.new_workspace(), bucket="secrets"
        )
        lib = resource.get()
        upload(
            lib,
            {
                "notes.md": (docgen.markdown(), "text/markdown"),
                "broken.pdf": (docgen.pdf_truncated(), "application/pdf"),
            },
        )
        result = run(resource, instance, ["broken.pdf", "notes.md"])
        assert lib.get_generation("notes.md") is not None  # the secret really was used
        server.stop()  # and a storage failure's message must not carry it either
        outage = run(resource, instance, ["notes.md"], force=True)
        assert not outage.success
        # Both runs' logs carry their failure (the document's, then the store's) and never the secret.
        for run_result, failure_named in ((result, "broken.pdf"), (outage, f"127.0.0.1:{server.port}")):
            text = _all_text_of_run(instance, run_result.run_id)
            assert failure_named in text
            assert SECRET not in text
        # The ledger: the document's own failure, and the outage as a transient one (retried later).
        failures = {f.document_id: f for f in lib.list_failures()}
        assert set(failures) == {"broken.pdf", "notes.md"}
        assert "could not be parsed" in failures["broken.pdf"].error and not failures["broken.pdf"].transient
        assert f"127.0.0.1:{server.port}" in failures["notes.md"].error and failures["notes.md"].transient
        assert all(SECRET not in f.error for f in failures.values())
    finally:
        server.stop()


def test_the_cli_never_prints_credentials(tmp_path, monkeypatch, capsys):
    from ud_assets.cli import main

    monkeypatch.setenv("CASSANDRA_HOST", "127.0.0.1")
    monkeypatch.setenv("CASSANDRA_PORT", "1")  # nothing listens there
    monkeypatch.setenv("CASSANDRA_USERNAME", "reader")
    monkeypatch.setenv("CASSANDRA_PASSWORD", SECRET)
    assert main(["librarian", "list"]) == 1
    err = capsys.readouterr().err
    assert "127.0.0.1:1" in err and SECRET not in err and "Traceback" not in err
