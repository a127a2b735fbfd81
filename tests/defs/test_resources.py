"""LibrarianResource inside a real Dagster materialization."""

from __future__ import annotations

import dagster as dg

from resources.settings import open_librarian
from ud_assets.defs.resources import LibrarianResource


@dg.asset
def stored_note(librarian: LibrarianResource) -> dict:
    lib = librarian.get()
    assert lib is librarian.librarian  # opened once per process and settings
    meta = lib.add_document("note", "text/plain", b"from dagster", title="Note")
    lib.add_child_document("note", "urn:page:note-1", "text/plain", b"page", "page")
    return {"id": meta.id, "size": meta.size, "workspace": lib.workspace}


def test_resource_in_materialization(tmp_path, monkeypatch):
    monkeypatch.delenv("CASSANDRA_HOST", raising=False)
    home = str(tmp_path / "ud")
    resource = LibrarianResource(workspace="dg", home=home)
    result = dg.materialize([stored_note], resources={"librarian": resource})
    assert result.success
    assert result.output_for_node("stored_note") == {"id": "note", "size": 12, "workspace": "dg"}
    settings = resource.store_settings()
    assert (settings.backend, settings.home, settings.workspace) == ("embedded", home, "dg")
    with open_librarian(settings) as lib:  # what the asset wrote is there for any other process
        assert lib.get_content("note") == b"from dagster"
        assert [d.id for d in lib.list_children("note")] == ["urn:page:note-1"]


def test_resource_fields_are_not_secret():
    fields = set(LibrarianResource.model_fields)
    assert fields == {"workspace", "backend", "home", "bucket", "collection"}


def test_empty_fields_fall_back_to_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("CASSANDRA_HOST", raising=False)
    monkeypatch.setenv("UD_HOME", str(tmp_path / "envhome"))
    monkeypatch.setenv("UD_WORKSPACE", "from-env")
    s = LibrarianResource().store_settings()
    assert (s.home, s.workspace, s.backend) == (str(tmp_path / "envhome"), "from-env", "embedded")
