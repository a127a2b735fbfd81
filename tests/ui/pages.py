"""The Dagster UI pages the browser tests and `make screenshots` use, as a person sees them.

Selectors go by roles and visible text. Where Dagster offers neither (the partition detail's
status, the backfill's status, the run-page header) the helper says so: these are the places a
Dagster upgrade may break.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from urllib.parse import quote

from playwright.sync_api import Locator, Page, expect

RELOAD_EVERY = 5  # seconds between reloads of a page that does not refresh by itself


def partition_url(asset: str, key: str) -> str:
    return f"/assets/{asset}?view=partitions&partition={quote(key)}"


def open_partition(page: Page, asset: str, key: str) -> None:
    """Open a partition's detail and wait for it: the failure banner comes with a later query than the
    rest of the page (Dagster's AssetPartitionDetailQuery), so wait for that answer, then a render."""
    with page.expect_response(lambda r: "AssetPartitionDetailQuery" in (r.request.post_data or ""), timeout=30_000):
        page.goto(partition_url(asset, key))
    expect(page.get_by_text("Latest materialization", exact=True)).to_be_visible()
    page.wait_for_timeout(500)


def reload_until(
    page: Page, load: Callable[[], None], seen: Callable[[], str | None], timeout: float, what: str
) -> str:
    """load() the page again and again until `seen()` returns a state (a string), at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        load()
        state = seen()
        if state:
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not seen after {timeout:.0f}s on {page.url}")
        time.sleep(RELOAD_EVERY)


def partition_state(page: Page) -> str | None:
    """What the open partition detail shows: 'materialized', 'failed', or None (missing, in progress)."""
    if page.get_by_text(re.compile(r"failed, and did not materialize this asset")).is_visible():
        return "failed"
    if page.get_by_text(re.compile(r"that targets this partition is")).is_visible():
        return None
    if page.get_by_text("Materialized", exact=True).is_visible():
        return "materialized"
    return None


def latest_materialization_run(page: Page) -> str:
    """The short id of the run shown under 'Run' beside 'Latest materialization'."""
    column = page.get_by_text("Run", exact=True).locator("xpath=..")
    link = column.get_by_role("link")
    expect(link).to_have_text(re.compile(r"^[0-9a-f]{8}$"))
    return link.inner_text()


def open_materialize_dialog(page: Page, button: str) -> Locator:
    page.get_by_role("button", name=button).click()
    dialog = page.get_by_role("dialog").filter(has_text="Launch runs to materialize")
    expect(dialog).to_be_visible()
    return dialog


def pick_partitions(page: Page, dialog: Locator, keys: list[str]) -> None:
    """In the dialog's partition selector: filter by each key, tick it, close the menu."""
    search = page.get_by_placeholder("Filter partitions")
    open_partition_menu(dialog, search)
    menu = search.locator("xpath=ancestor::*[@role='dialog'][1]")  # the popover, not the dialog
    for key in keys:
        search.fill(key)
        item = menu.get_by_role("menuitem").filter(has=page.get_by_text(key, exact=True))
        item.click()
        expect(item.get_by_role("checkbox")).to_be_checked()
    dialog.get_by_text(re.compile(r"^Launch runs to materialize")).click()  # closes the menu
    expect(menu).to_be_hidden()
    count = f"{len(keys)} partition" + ("s" if len(keys) > 1 else "")
    expect(dialog.get_by_text(count, exact=True)).to_be_visible()


def open_partition_menu(dialog: Locator, search: Locator, attempts: int = 3) -> None:
    """Click the selector until its menu shows. While the dialog is still loading the partitions'
    health it re-renders, and a click that lands then opens nothing (seen once in CI: no popover in
    the page after 30 s); a person simply clicks again."""
    opener = dialog.get_by_text("Select a partition or create one")
    for attempt in range(attempts):
        opener.click()
        try:
            expect(search).to_be_visible(timeout=10_000)
            return
        except AssertionError:
            if attempt == attempts - 1:
                raise


def follow_toast(page: Page, pattern: str) -> str:
    """The id in the toast ('Launched run 1a2b3c4d', 'Created backfill abcdefgh'); click its View."""
    toast = page.get_by_text(re.compile(pattern)).first
    expect(toast).to_be_visible(timeout=60_000)
    found = re.search(pattern, toast.inner_text())
    assert found, toast.inner_text()
    toast.locator("xpath=ancestor::*[.//a][1]").get_by_role("link", name="View", exact=True).click()
    return found.group(1)


def run_page_status(page: Page, timeout: float) -> str:
    """The status the run page shows once the run has ended (the page updates by itself)."""
    status = page.get_by_text(re.compile(r"^(Success|Failure|Canceled)$")).first
    expect(status).to_be_visible(timeout=timeout * 1000)
    return status.inner_text()


def full_run_id(page: Page) -> str:
    found = re.search(r"/runs/([0-9a-f-]{36})", page.url)
    assert found, f"not a run page: {page.url}"
    return found.group(1)


def backfill_state(page: Page) -> str | None:
    """The backfill page's status once it has ended, None while it runs."""
    value = page.get_by_text("Status", exact=True).locator("xpath=following-sibling::*[1]")
    expect(value).to_be_visible()
    text = value.inner_text().strip()
    return None if text in ("", "In progress", "Requested", "Canceling", "Failing") else text


def metadata_entry(page: Page, label: str) -> Locator:
    """The row of the partition's metadata whose key is `label`."""
    return page.get_by_role("row").filter(has=page.get_by_role("cell", name=label, exact=True))


def metadata_labels(page: Page) -> list[str]:
    table = page.get_by_text("Metadata", exact=True).locator("xpath=following-sibling::*[1]/descendant::table[1]")
    return table.locator(":scope > tbody > tr > td:first-child").all_inner_texts()
