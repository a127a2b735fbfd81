"""processing.stages: the declaration list is what the runner and the Dagster layer read."""

import pytest

from ud_assets.defs.assets import ASSET_SPECS
from ud_assets.defs.checks import CHECK_SPECS
from ud_assets.processing.stages import BY_NAME, NAMES, STAGES, ancestors, execution_order


def names(selected: set[str]) -> list[str]:
    return [stage.name for stage in execution_order(selected)]


@pytest.mark.parametrize(
    ("selected", "order"),
    [
        (set(NAMES), ["document", "elements", "sections", "chunks", "images", "provenance_triples"]),
        ({"elements", "chunks"}, ["elements", "chunks"]),  # it follows what it follows, even unselected between
        ({"images", "chunks"}, ["chunks", "images"]),  # nothing it follows is selected: it starts first
        ({"provenance_triples", "sections"}, ["sections", "provenance_triples"]),
    ],
)
def test_a_stage_beside_the_others_starts_as_soon_as_what_it_follows_has_run(selected, order):
    assert names(selected) == order


def test_every_declared_stage_is_an_asset_and_every_declared_check_an_asset_check():
    assert [spec.key.to_user_string() for spec in ASSET_SPECS] == list(NAMES)
    assert {(spec.asset_key.to_user_string(), spec.name) for spec in CHECK_SPECS} == {
        (stage.name, check.name) for stage in STAGES for check in stage.checks
    }
    for spec in ASSET_SPECS:
        stage = BY_NAME[spec.key.to_user_string()]
        assert [dep.asset_key.to_user_string() for dep in spec.deps] == list(stage.after)
        assert spec.description == stage.description


def test_the_lineage_is_a_chain_from_the_document():
    assert ancestors("provenance_triples") == {"images", "sections", "elements", "document"}
    assert ancestors("chunks") == {"sections", "elements", "document"}
    for stage in STAGES:  # declared in an order every stage's lineage precedes
        assert all(NAMES.index(before) < NAMES.index(stage.name) for before in ancestors(stage.name))
