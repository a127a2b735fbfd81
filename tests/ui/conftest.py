"""Fixtures of the browser tests: one `dagster dev`, one librarian with the documents, one Chromium.

Everything is session-scoped except the page: the server starts once (about 30 s on 2 cores), the
documents are uploaded once with `ud librarian add` right after, so the sensor decodes them all in
its first batch run, and every test waits only for the partitions it uses. Each test uses its own
documents, so one test's runs never change what another asserts.

A server that does not come up raises in the fixture: the tests using it error, never skip.
On a test failure the page is saved as a screenshot (and its HTML) in the test's tmp_path; the
path is printed in the failure report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ui.harness import SAMPLES, DagsterDev, dagster_dev, launch_browser

# Which document each test works on: its own, so that one test's runs never disturb another's.
# Upload order is partition order (the sensor adds new documents in the order of the upload log):
# the backfill's range must be contiguous.
WATCHED = "handbook.docx"  # (a) decoded by the sensor, watched in the UI
SECTIONS_ALONE = "menu.html"  # (b) `sections` alone from the Materialize… dialog
IMAGES_ALONE = "slides.pptx"  # (b) `images` alone
PDF = "report.pdf"  # (d) a PDF partition's metadata
BACKFILL_RANGE = ["notes.md", "cities.csv", "letter.eml"]  # (c) a backfill over a range
BAD = "bad.pdf"  # (e) garbage that claims to be a PDF
UPLOAD_ORDER = [WATCHED, PDF, SECTIONS_ALONE, IMAGES_ALONE, *BACKFILL_RANGE, BAD]

# Every test's timeout includes the session's set-up when it is the first to need it.
SERVER_BUDGET = 240  # dagster dev up and its code location loaded (START_TIMEOUT 180 s) + uploads
DECODE_BUDGET = 300  # the sensor's first tick (30 s interval) + its batch run on a loaded 2-core machine


def bad_pdf_bytes() -> bytes:
    """Bytes that claim to be a PDF (header and trailer) around garbage: no parser can open them."""
    body = bytes((i * 73 + 41) % 256 for i in range(4096))  # deterministic noise, no xref, no objects
    return b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + body + b"\n%%EOF\n"


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> DagsterDev:
    """`dagster dev -w workspace.yaml` on a free port, a temporary instance and an embedded librarian."""
    with dagster_dev(tmp_path_factory.mktemp("ui")) as running:
        yield running


@pytest.fixture(scope="session")
def documents(server, tmp_path_factory) -> dict[str, str]:
    """Every test's documents, uploaded with `ud librarian add FILE --id NAME`; {name: id}.

    The good ones go first and are decoded by the sensor's first batch run. The bad one is uploaded
    once the sensor has taken them (their partitions exist), so it is decoded by a run of its own:
    its failure, and the automatic retry of that run, touch no other test's partitions.
    """
    folder = tmp_path_factory.mktemp("uploads")
    bad = folder / BAD
    bad.write_bytes(bad_pdf_bytes())
    good = [name for name in UPLOAD_ORDER if name != BAD]
    ids = {name: server.upload(SAMPLES / name) for name in good}
    server.wait_partition_keys("document", good, DECODE_BUDGET)
    ids[BAD] = server.upload(bad)
    return ids


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_browser(playwright)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(request, browser, server, tmp_path):
    context = browser.new_context(base_url=server.url, viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    page = context.new_page()
    request.node.ud_page = (page, tmp_path)
    try:
        yield page
    finally:
        context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed or not hasattr(item, "ud_page"):
        return
    page, folder = item.ud_page
    shot = Path(folder) / "failure.png"
    try:
        page.screenshot(path=str(shot), full_page=True)
        (Path(folder) / "failure.html").write_text(page.content())
        report.sections.append(("browser", f"page {page.url}\nscreenshot {shot}\nhtml {shot.with_suffix('.html')}"))
    except Exception as error:  # a failed screenshot must not hide the test's failure
        report.sections.append(("browser", f"no screenshot: {error}"))
