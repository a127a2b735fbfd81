"""Fixtures shared by the asset-graph tests: a fresh librarian on each backend, a Dagster instance."""

import os
import uuid

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
def isolated_librarian(librarian_resource, tmp_path, request):
    """Makes librarians of the backend under test that share nothing with any other: a home of
    their own, or a workspace and a bucket of their own (removed afterwards), so that their whole
    stored state can be compared with a reference (tests/end_state.py)."""
    from tests.end_state import drop_bucket
    from ud_assets.defs.resources import LibrarianResource

    buckets: list[str] = []

    def make(name: str) -> LibrarianResource:
        if librarian_resource.backend == "embedded":
            return LibrarianResource(backend="embedded", home=str(tmp_path / name), workspace="default")
        buckets.append(f"udtest-{name.replace('_', '-')}-{uuid.uuid4().hex[:8]}")
        run = request.getfixturevalue("graph_cassandra_run")
        return LibrarianResource(backend="cassandra", workspace=run.new_workspace(), bucket=buckets[-1])

    yield make
    for bucket in buckets:
        drop_bucket(bucket)


@pytest.fixture
def instance():
    with dg.instance_for_test() as test_instance:
        yield test_instance


@pytest.fixture(autouse=True)
def _dagster_state_storage_of_this_test():
    """Each test starts without another test's Dagster definitions-state storage.

    Dagster keeps the storage of the instance last entered in a context variable; an instance of an
    earlier test that was garbage-collected leaves it pointing nowhere, and the next Definitions
    load fails with "Attempted to resolve undefined DagsterInstance weakref" (seen once in 500)."""
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    with set_defs_state_storage(None):
        yield


def pytest_collection_modifyitems(items):
    """A test that needs the real servers, through any fixture, is a `services` test: `make
    test-fast` (-m "not services") leaves it out instead of failing on an absent server."""
    for item in items:
        if "graph_cassandra_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.services)


_SUITE_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Adds up each test file's time (set-up, call and tear-down) for the summary below."""
    suite = report.nodeid.split("::", 1)[0]
    _SUITE_SECONDS[suite] = _SUITE_SECONDS.get(suite, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    """The time of every suite, slowest first: what each one adds to `make test`."""
    if not _SUITE_SECONDS:
        return
    terminalreporter.section("time per suite")
    for suite, seconds in sorted(_SUITE_SECONDS.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{seconds:8.1f} s  {suite}")
    terminalreporter.write_line(f"{sum(_SUITE_SECONDS.values()):8.1f} s  in all (summed over workers)")
