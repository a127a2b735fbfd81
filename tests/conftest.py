"""Fixtures shared by the asset-graph tests: a fresh librarian on each backend, a Dagster instance."""

import os

import dagster as dg
import pytest

from tests.resources.conftest import CassandraRun

os.environ.setdefault("DO_NOT_TRACK", "true")


@pytest.fixture(scope="session")
def graph_cassandra_run():
    run = CassandraRun()
    yield run
    run.cleanup()


@pytest.fixture(params=["embedded", pytest.param("cassandra", marks=pytest.mark.services)])
def librarian_resource(request, tmp_path):
    """A LibrarianResource naming an empty librarian of the backend under test."""
    from ud_assets.defs.resources import LibrarianResource

    if request.param == "embedded":
        return LibrarianResource(backend="embedded", home=str(tmp_path / "ud"), workspace="default")
    run = request.getfixturevalue("graph_cassandra_run")
    if run.error:
        pytest.fail(run.error, pytrace=False)
    return LibrarianResource(backend="cassandra", workspace=run.new_workspace(), bucket=run.bucket)


@pytest.fixture
def instance():
    with dg.instance_for_test() as test_instance:
        yield test_instance
