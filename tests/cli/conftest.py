"""The CLI's librarian commands run against both backends, with the resources' fixtures."""

import pytest

from tests.resources.conftest import backend, cassandra_run, fresh_settings, store_settings  # noqa: F401 - fixtures


@pytest.fixture
def env(store_settings, monkeypatch):  # noqa: F811 - the fixture imported above
    """Point the CLI's environment (this process's and subprocesses') at the librarian under test."""
    s = store_settings
    monkeypatch.setenv("UD_WORKSPACE", s.workspace)
    if s.backend == "embedded":
        monkeypatch.delenv("CASSANDRA_HOST", raising=False)
        monkeypatch.setenv("UD_HOME", s.home)
    else:
        monkeypatch.setenv("UD_BUCKET", s.bucket)
    return s
