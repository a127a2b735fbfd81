"""The Dagster UI in a real browser, as a person uses it: uploads decoded by the sensor, one asset of
one partition launched from the Materialize… dialog, a backfill over a range, a partition's
metadata, a bad document's cause.

Assertions are on what the pages show; GraphQL only adds what a page cannot say precisely (which
run materialized what). See conftest.py for the server, the documents and the screenshots taken on
failure.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.ui.conftest import (
    BACKFILL_RANGE,
    BAD,
    DECODE_BUDGET,
    IMAGES_ALONE,
    PDF,
    SECTIONS_ALONE,
    SERVER_BUDGET,
    WATCHED,
)
from tests.ui.harness import RUNS_QUERY, DagsterDev
from tests.ui.pages import (
    backfill_state,
    follow_toast,
    full_run_id,
    latest_materialization_run,
    metadata_entry,
    metadata_labels,
    open_materialize_dialog,
    open_partition,
    partition_state,
    pick_partitions,
    reload_until,
    run_page_status,
)

pytestmark = pytest.mark.browser

ASSETS = ["document", "elements", "sections", "chunks", "images", "provenance_triples"]
RUN_BUDGET = 300  # a launched run queued, started (a new process) and finished
BACKFILL_BUDGET = 420  # the backfill daemon's ticks, then its run(s)
SECTION_COLUMNS = ["id", "label", "type", "page", "char_offset", "char_length", "text"]

RUN_QUERY = """
query Run($runId: ID!) {
  runOrError(runId: $runId) {
    __typename
    ... on Run { runId status assetSelection { path } tags { key value } }
  }
}
"""

RUN_ERRORS_QUERY = """
query Logs($runId: ID!) {
  logsForRun(runId: $runId) {
    ... on EventConnection { events { __typename ... on ExecutionStepFailureEvent { error { message } } } }
  }
}
"""

BACKFILL_RUNS_QUERY = """
query BackfillRuns($backfillId: String!) {
  partitionBackfillOrError(backfillId: $backfillId) {
    __typename
    ... on PartitionBackfill { id status partitionNames runs { runId status } }
  }
}
"""

MATERIALIZATIONS_QUERY = """
query Materializations($path: [String!]!, $partitions: [String!]) {
  assetNodeOrError(assetKey: {path: $path}) {
    ... on AssetNode { assetMaterializations(partitions: $partitions) { runId partition timestamp } }
  }
}
"""


def run_failure(server: DagsterDev, run_id: str) -> str:
    events = server.graphql(RUN_ERRORS_QUERY, {"runId": run_id})["logsForRun"].get("events", [])
    return "\n".join(e["error"]["message"].strip() for e in events if e.get("error"))


# -- (a) the sensor decodes an upload without a click -------------------------------------------


@pytest.mark.timeout(SERVER_BUDGET + DECODE_BUDGET + 60, method="signal")
def test_an_upload_turns_materialized_without_a_click(server, documents, page):
    assert documents[WATCHED] == WATCHED  # `ud librarian add samples/handbook.docx --id handbook.docx`
    state = reload_until(
        page,
        lambda: open_partition(page, "sections", WATCHED),
        lambda: partition_state(page),
        DECODE_BUDGET,
        f"partition {WATCHED} of sections materialized",
    )
    assert state == "materialized", f"{WATCHED} failed:\n{server.runs_summary()}"
    expect(page.get_by_text(re.compile(r"^Materialized \([1-9]\d*\)$"))).to_be_visible()  # the status filter
    short_id = latest_materialization_run(page)
    # No one clicked: the run that materialized it was requested by the sensor.
    page.get_by_text("Run", exact=True).locator("xpath=..").get_by_role("link").click()
    expect(page).to_have_url(re.compile(rf"/runs/{short_id}"))
    run = server.graphql(RUN_QUERY, {"runId": full_run_id(page)})["runOrError"]
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert tags.get("dagster/sensor_name") == "librarian_uploads", tags


# -- (b) one asset, one partition, from the Materialize… dialog ----------------------------------


@pytest.mark.parametrize(("asset", "key"), [("sections", SECTIONS_ALONE), ("images", IMAGES_ALONE)])
@pytest.mark.timeout(SERVER_BUDGET + DECODE_BUDGET + RUN_BUDGET + 60, method="signal")
def test_one_asset_of_one_partition_from_the_materialize_dialog(server, documents, page, asset, key):
    server.wait_partitions(asset, [key], DECODE_BUDGET)  # decoded once by the sensor: upstream is stored
    page.goto(f"/assets/{asset}")
    dialog = open_materialize_dialog(page, "Materialize…")
    expect(dialog.get_by_text(f"Launch runs to materialize {asset}", exact=True)).to_be_visible()
    pick_partitions(page, dialog, [key])
    dialog.get_by_role("button", name=re.compile(r"^Launch (1 )?run$")).click()
    short_id = follow_toast(page, r"Launched run ([0-9a-f]{8})")
    expect(page).to_have_url(re.compile(rf"/runs/{short_id}"))
    expect(page.get_by_text(f"partition: {key}", exact=True)).to_be_visible()

    status = run_page_status(page, RUN_BUDGET)
    run_id = full_run_id(page)
    assert status == "Success", f"run {run_id} of {asset} for {key} ended {status}:\n{run_failure(server, run_id)}"
    run = server.graphql(RUN_QUERY, {"runId": run_id})["runOrError"]
    assert [a["path"] for a in run["assetSelection"]] == [[asset]], run["assetSelection"]


# -- (c) a backfill over a range of partitions, from the whole graph ------------------------------


@pytest.mark.timeout(SERVER_BUDGET + DECODE_BUDGET + BACKFILL_BUDGET + 60, method="signal")
def test_a_backfill_over_a_range_from_the_ui(server, documents, page):
    server.wait_partitions("provenance_triples", BACKFILL_RANGE, DECODE_BUDGET)
    page.goto("/asset-groups/universal_decoder")
    dialog = open_materialize_dialog(page, "Materialize all…")
    expect(dialog.get_by_text(f"Launch runs to materialize {len(ASSETS)} assets", exact=True)).to_be_visible()
    pick_partitions(page, dialog, BACKFILL_RANGE)
    dialog.get_by_role("button", name="Launch backfill").click()
    backfill_id = follow_toast(page, r"Created backfill (\w+)")
    expect(page).to_have_url(re.compile(rf"/runs/b/{backfill_id}"))
    url = page.url.removeprefix(server.url)

    state = reload_until(
        page, lambda: page.goto(url), lambda: backfill_state(page), BACKFILL_BUDGET, f"backfill {backfill_id} ended"
    )
    backfill = server.graphql(BACKFILL_RUNS_QUERY, {"backfillId": backfill_id})["partitionBackfillOrError"]
    assert state == "Succeeded", f"backfill {backfill_id} ended {state}: {json.dumps(backfill)}\n" + "\n".join(
        run_failure(server, r["runId"]) for r in backfill.get("runs", [])
    )
    for key in BACKFILL_RANGE:  # the partition selection, as the page lists it
        expect(page.get_by_text(key, exact=True).first).to_be_visible()
    # Every asset: all its targeted partitions succeeded, none failed ("100% completed", counts).
    text = page.locator("body").inner_text()
    for asset in ASSETS:
        found = re.search(rf"(?m)^{asset}\n(?:{asset}\n)?(\d+)% completed\n(\d+)\n(\d+)\n(\d+)\n(\d+)$", text)
        assert found, f"no row for {asset} on the backfill page:\n{text}"
        percent, targeted, in_progress, succeeded, failed = map(int, found.groups())
        assert (percent, targeted, in_progress, succeeded, failed) == (100, 3, 0, 3, 0), (asset, found.group(0))

    # Every partition of the range was materialized by the backfill's runs, for every asset.
    runs = {r["runId"] for r in backfill["runs"]}
    assert runs and all(r["status"] == "SUCCESS" for r in backfill["runs"]), backfill["runs"]
    for asset in ASSETS:
        events = server.graphql(
            MATERIALIZATIONS_QUERY,
            {"path": [asset], "partitions": BACKFILL_RANGE},
        )["assetNodeOrError"]["assetMaterializations"]
        by_backfill = {e["partition"] for e in events if e["runId"] in runs}
        assert by_backfill == set(BACKFILL_RANGE), f"{asset}: materialized by the backfill: {sorted(by_backfill)}"
    # And the UI says so, partition by partition, on the last asset of the chain.
    for key in BACKFILL_RANGE:
        open_partition(page, "provenance_triples", key)
        assert partition_state(page) == "materialized", key
        assert latest_materialization_run(page) in {r[:8] for r in runs}, key


# -- (d) a PDF partition's metadata: its sections as a table, and its URI -------------------------


@pytest.mark.timeout(SERVER_BUDGET + DECODE_BUDGET + 60, method="signal")
def test_a_pdf_partition_shows_its_sections_and_uri(server, documents, page):
    server.wait_partitions("sections", [PDF], DECODE_BUDGET)
    open_partition(page, "sections", PDF)
    assert partition_state(page) == "materialized"
    expect(page.get_by_text("mime_type", exact=True)).to_be_visible()  # the metadata is on the page
    labels = metadata_labels(page)

    sections = metadata_entry(page, "sections")
    assert sections.count() == 1, f"no metadata entry 'sections' on {page.url}; entries: {labels}"
    table = sections.get_by_role("table")
    assert table.count() == 1, f"metadata entry 'sections' is not a table: {sections.inner_text()!r}; entries: {labels}"
    assert table.get_by_role("columnheader").all_inner_texts() == SECTION_COLUMNS
    rows = [row.get_by_role("cell").all_inner_texts() for row in table.locator("tbody tr").all()]
    # report.pdf has two pages: 78 characters, a blank line, 45 characters.
    assert [row[1:6] for row in rows] == [["Page 1", "page", "1", "0", "78"], ["Page 2", "page", "2", "80", "45"]], rows
    assert all(row[6].strip() for row in rows), rows  # the first characters of each page
    assert all(
        re.fullmatch(r"urn:page:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", row[0]) for row in rows
    ), rows

    uri = metadata_entry(page, "dagster/uri")
    assert uri.count() == 1, f"no metadata entry 'dagster/uri' on {page.url}; entries: {labels}"
    value = uri.get_by_role("cell").nth(1).inner_text().strip()
    assert re.fullmatch(r"[a-z][a-z0-9+.-]*://\S+", value), f"dagster/uri is not a URI: {value!r}"


# -- (e) a bad document's partition shows its cause in one line ----------------------------------


@pytest.mark.timeout(SERVER_BUDGET + DECODE_BUDGET + RUN_BUDGET + 60, method="signal")
def test_a_bad_document_shows_its_cause_in_one_line(server, documents, page):
    assert documents[BAD] == BAD  # `ud librarian add bad.pdf --id bad.pdf`: garbage behind a PDF header
    server.wait_partitions("document", [BAD], DECODE_BUDGET, status="failedPartitions")
    state = reload_until(
        page,
        lambda: open_partition(page, "document", BAD),
        lambda: partition_state(page),
        RUN_BUDGET,
        f"the run over {BAD} ended",
    )  # an automatic retry may be running
    assert state == "failed", f"{BAD} shows {state}"
    banner = page.get_by_text(re.compile(r"failed, and did not materialize this asset")).first
    expect(banner).to_have_text(re.compile(r"^Run [0-9a-f]{8} failed, and did not materialize this asset\.?$"))
    page.get_by_role("button", name="View logs").click()
    logs = page.get_by_role("dialog").filter(has=page.get_by_placeholder("Filter…"))
    expect(logs).to_be_visible()
    logs.get_by_placeholder("Filter…").fill(BAD)
    # One line names the document, its kind and the parser's reason (the step's ERROR message).
    cause = re.compile(r"^document bad\.pdf: application/pdf could not be parsed: \w+: \S.*$")
    line = logs.get_by_text(cause)
    expect(line.first).to_be_visible()
    # The document's own failure is final: the run queue does not retry it (only crashed runs are).
    runs = server.graphql(RUNS_QUERY)["runsOrError"]["results"]
    failed = [r for r in runs if r["status"] == "FAILURE"]
    assert failed, "no failed run"
    retries = [r for r in runs if any(t["key"] == "dagster/parent_run_id" for t in r["tags"])]
    assert retries == [], f"a document failure was retried: {retries}"
