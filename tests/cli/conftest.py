"""The CLI's librarian commands run against both backends, with the resources' fixtures."""

from tests.resources.conftest import backend, cassandra_run, fresh_settings, store_settings  # noqa: F401 - fixtures
