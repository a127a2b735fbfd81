"""resources/faults.py: a kill point fires at the event of the stage it names, and nothing is wrapped when off.

tests/test_crash.py kills servers and processes at these events; here the event itself is checked
on the embedded librarian, in this process, with the "pause" action (the run waits until the event
file is taken away, then goes on and must succeed)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import dagster as dg
import pytest

from resources import faults
from tests import docgen
from tests.defs.test_assets import run, upload
from ud_assets.defs.resources import LibrarianResource

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
# (stage, kill point, the storage calls that may be its event)
POINTS = [
    ("document", {"nth": 1, "reads": True}, {("documents", "get")}),
    ("elements", {"nth": 1}, {("objects", "put")}),
    ("sections", {"nth": 2}, {("objects", "put"), ("documents", "upsert_many")}),
    ("images", {"nth": 1}, {("objects", "put")}),
    ("provenance_triples", {"nth": 1}, {("triples", "insert"), ("triples", "delete_subjects")}),
    ("chunks", {"nth": 2}, {("objects", "put"), ("documents", "upsert_many"), ("triples", "insert")}),
]


def test_off_unless_ud_faults_is_set_nothing_is_wrapped(tmp_path, monkeypatch):
    monkeypatch.setattr(faults, "ENABLED", False)
    lib = LibrarianResource(backend="embedded", home=str(tmp_path / "ud")).get()
    assert not isinstance(lib.objects, faults._Watched)
    assert not isinstance(lib.documents, faults._Watched) and not isinstance(lib.triples, faults._Watched)


@pytest.mark.timeout(300)
def test_each_stage_s_kill_point_fires_once_at_its_own_event(tmp_path, monkeypatch):
    event_file = tmp_path / "fault"
    monkeypatch.setattr(faults, "ENABLED", True)
    monkeypatch.setenv("UD_FAULTS", str(event_file))
    data = docgen.docx_with_headings_table_picture()
    seen: list[dict] = []

    def release(stop: threading.Event) -> None:
        """The test's side: take the event, let the run go on."""
        while not stop.is_set():
            if event_file.exists():
                seen.append(json.loads(event_file.read_text()))
                event_file.unlink()
            time.sleep(0.01)

    for stage, point, calls in POINTS:
        resource = LibrarianResource(backend="embedded", home=str(tmp_path / stage))
        upload(resource.get(), {"handbook.docx": (data, DOCX)})
        seen.clear()
        stop = threading.Event()
        taker = threading.Thread(target=release, args=(stop,), daemon=True)
        taker.start()
        faults.arm({**point, "stage": stage, "action": "pause"})
        try:
            with dg.instance_for_test() as instance:
                result = run(resource, instance, ["handbook.docx"])
        finally:
            faults.arm(None)
            stop.set()
            taker.join()
        assert result.success, stage
        assert len(seen) == 1, f"{stage}: the kill point fired {len(seen)} times: {seen}"
        event = seen[0]
        assert event["stage"] == stage and (event["part_called"], event["method"]) in calls, event
    assert not Path(str(event_file) + ".tmp").exists()
