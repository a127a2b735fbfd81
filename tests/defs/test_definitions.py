"""The Dagster project as a data engineer loads it: CLI validation, a cheap import, a graph snapshot, run config.

The asset-graph snapshot lives in tests/defs/snapshots/asset_graph.json; after an intended change
of the graph, rewrite it with the explicit command

    make snapshot        (python -m tests.defs.test_definitions)

and review the diff. The tests only ever compare with it; they never write it. The installed unstructured version is stored as a placeholder (the elements'
code version is checked against importlib.metadata separately), so only a change of the graph
itself, not a dependency bump, needs a new snapshot.
"""

import itertools
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import dagster as dg
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # the venv's bin/ (tests run with .venv/bin/pytest)
SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "asset_graph.json"
UNSTRUCTURED_PLACEHOLDER = "{unstructured_version}"
HEAVY_MODULES = ("unstructured", "torch", "spacy", "transformers", "onnxruntime", "unstructured_inference")
# Environment that changes what the definitions contain or where they would connect.
PROJECT_VARIABLES = (
    "UD_BATCH_SIZE",
    "UD_REPROCESS_CRON",
    "UD_VERIFY_CRON",
    "UD_BACKEND",
    "UD_HOME",
    "UD_WORKSPACE",
    "UD_COLLECTION",
    "UD_BUCKET",
    "CASSANDRA_HOST",
    "CASSANDRA_PORT",
)

SPEC_DEFAULTS = {
    "strategy": "auto",
    "languages": "eng",
    "section_strategy": "whole-document",
    "section_element_count": 20,
    "section_max_size": 4000,
    "section_within_pages": False,
}

# Run in a fresh interpreter: which modules loading the definitions pulls in, and the graph's shape.
SNAPSHOT_SCRIPT = r"""
import json, sys
from importlib.metadata import version

from ud_assets.definitions import defs

heavy = sorted(m for m in HEAVY if m in sys.modules or any(k.startswith(m + ".") for k in sys.modules))

repo = defs.get_repository_def()
graph = defs.resolve_asset_graph()
unstructured = version("unstructured")

def name(key):
    return key.to_user_string()

def partitions(pdef):
    return None if pdef is None else {"type": type(pdef).__name__, "name": getattr(pdef, "name", None)}

assets = {}
for key in sorted(graph.get_all_asset_keys(), key=name):
    node = graph.get(key)
    assets[name(key)] = {
        "deps": sorted(name(k) for k in node.parent_keys),
        "group": node.group_name,
        "partitions": partitions(node.partitions_def),
        "code_version": node.code_version,
        "checks": sorted(k.name for k in node.check_keys),
    }
raw_code_versions = {k: v["code_version"] for k, v in assets.items()}
for entry in assets.values():
    if entry["code_version"]:
        entry["code_version"] = entry["code_version"].replace(unstructured, PLACEHOLDER)

steps = {}
for ad in repo.assets_defs_by_key.values():
    if not ad.is_executable:
        continue
    steps[ad.op.name] = {
        "assets": sorted(name(k) for k in ad.keys),
        "checks": sorted(f"{name(c.asset_key)}:{c.name}" for c in ad.check_keys),
        "blocking_checks": sorted(f"{name(s.asset_key)}:{s.name}" for s in ad.check_specs if s.blocking),
        "can_subset": ad.can_subset,
        "skippable": sorted(name(k) for k, spec in ad.specs_by_key.items() if spec.skippable),
        "pool": ad.op.pool,
        "backfill_policy": str(ad.backfill_policy),
        "required_resources": sorted(ad.required_resource_keys),
    }

jobs = {}
for job in repo.get_all_jobs():
    if job.name.startswith("__"):
        continue  # Dagster's implicit asset job
    jobs[job.name] = {
        "assets": sorted(name(k) for k in job.asset_layer.selected_asset_keys),
        "checks": sorted(f"{name(c.asset_key)}:{c.name}" for c in job.asset_layer.asset_graph.asset_check_keys),
        "executor": job.executor_def.name,
        "tags": dict(sorted(job.tags.items())),
        "partitions": partitions(job.partitions_def),
    }

sensors = {
    s.name: {"job": s.job_name, "minimum_interval_seconds": s.minimum_interval_seconds,
             "default_status": s.default_status.name, "required_resources": sorted(s.required_resource_keys)}
    for s in repo.sensor_defs
}
schedules = {
    s.name: {"job": s.job_name, "cron_schedule": s.cron_schedule, "execution_timezone": s.execution_timezone,
             "default_status": s.default_status.name, "required_resources": sorted(s.required_resource_keys)}
    for s in repo.schedule_defs
}
snapshot = {
    "assets": assets,
    "steps": steps,
    "jobs": jobs,
    "sensors": sensors,
    "schedules": schedules,
    "resources": sorted(repo.get_top_level_resources()),
}
print(json.dumps({"heavy_modules": heavy, "unstructured": unstructured,
                  "raw_code_versions": raw_code_versions, "snapshot": snapshot}))
"""


def project_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROJECT_VARIABLES}
    env.update(DO_NOT_TRACK="true", PYTHONPATH=str(ROOT), **extra)
    return env


def quiet_dagster_home(tmp_path: Path) -> str:
    """An instance folder without telemetry, so the CLIs neither nag nor write into the checkout."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return str(home)


def run_cli(args: list[str], env: dict[str, str], timeout: int = 180) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def load_in_fresh_interpreter() -> dict:
    """The definitions loaded in a fresh interpreter (nothing of the test process leaks in)."""
    script = f"HEAVY = {HEAVY_MODULES!r}\nPLACEHOLDER = {UNSTRUCTURED_PLACEHOLDER!r}\n" + SNAPSHOT_SCRIPT
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=project_env(), capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def loaded():
    return load_in_fresh_interpreter()


# -- the CLIs a data engineer runs ----------------------------------------------------------------


def test_dagster_definitions_validate_accepts_the_workspace(tmp_path):
    env = project_env(DAGSTER_HOME=quiet_dagster_home(tmp_path))
    done = run_cli([str(BIN / "dagster"), "definitions", "validate", "-w", "workspace.yaml"], env)
    output = done.stdout + done.stderr
    assert "Validation successful for code location ud" in output, output
    assert "All code locations passed validation" in output, output


def test_dg_check_defs_accepts_the_project(tmp_path):
    # dg finds the project through [tool.dg] in pyproject.toml and runs the project's .venv.
    env = project_env(
        DAGSTER_HOME=quiet_dagster_home(tmp_path),
        VIRTUAL_ENV=str(BIN.parent),
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    done = run_cli([str(BIN / "dg"), "check", "defs"], env)
    output = done.stdout + done.stderr
    assert "All definitions loaded successfully" in output, output


# -- loading stays cheap --------------------------------------------------------------------------


def test_loading_the_definitions_imports_no_decoder_library(loaded):
    assert loaded["heavy_modules"] == []


# -- the asset graph ------------------------------------------------------------------------------


def test_the_asset_graph_matches_the_snapshot(loaded):
    current = loaded["snapshot"]
    assert SNAPSHOT.exists(), "no snapshot yet: run `make snapshot`"
    expected = json.loads(SNAPSHOT.read_text())
    for section in sorted(set(expected) | set(current)):
        assert current.get(section) == expected.get(section), (
            f"the {section!r} of the asset graph changed; if intended, run `make snapshot` "
            f"and review the diff of {SNAPSHOT.relative_to(ROOT)}"
        )


def test_the_snapshot_holds_the_decoding_chain():
    """The stored snapshot itself says what the project promises (so a careless rewrite shows)."""
    snapshot = json.loads(SNAPSHOT.read_text())
    assets = snapshot["assets"]
    chain = ["document", "elements", "sections", "images", "provenance_triples"]
    assert set(chain) <= set(assets)
    assert assets["document"]["deps"] == []
    for parent, child in itertools.pairwise(chain):
        assert parent in assets[child]["deps"], f"{child} must depend on {parent}"
    for key, entry in assets.items():
        assert entry["partitions"] == {"type": "DynamicPartitionsDefinition", "name": "documents"}, key
    assert UNSTRUCTURED_PLACEHOLDER in assets["elements"]["code_version"]
    assert "decode_documents" in snapshot["jobs"]
    assert set(snapshot["jobs"]["decode_documents"]["assets"]) >= set(chain)
    assert snapshot["sensors"]["librarian_uploads"]["job"] == "decode_documents"
    assert snapshot["schedules"]["reprocess_after_upgrade"]["job"] == "decode_documents"


def test_the_elements_code_version_names_the_installed_unstructured(loaded):
    installed = version("unstructured")
    assert loaded["unstructured"] == installed
    assert installed in loaded["raw_code_versions"]["elements"]
    # The other stages do not depend on unstructured's version.
    others = {k: v for k, v in loaded["raw_code_versions"].items() if k != "elements"}
    assert all(v and installed not in v for v in others.values()), others


# -- decoder options as run config ----------------------------------------------------------------


def decode_job(home: Path):
    from ud_assets.defs.assets import universal_decoder
    from ud_assets.defs.jobs import decode_documents
    from ud_assets.defs.resources import LibrarianResource

    defs = dg.Definitions(
        assets=[universal_decoder],
        jobs=[decode_documents],
        resources={"librarian": LibrarianResource(backend="embedded", home=str(home))},
    )
    return defs.resolve_job_def("decode_documents")


def options(values: dict) -> dict:
    return {"ops": {"universal_decoder": {"config": values}}}


def test_the_decoder_options_default_to_the_spec():
    from ud_assets.decoding.model import DecoderConfig
    from ud_assets.definitions import defs
    from ud_assets.defs.config import DecoderOptions

    # What the launchpad fills in when the run config is empty.
    resolved = dg.validate_run_config(defs.resolve_job_def("decode_documents"), {})
    config = resolved["ops"]["universal_decoder"]["config"]
    assert {k: config[k] for k in SPEC_DEFAULTS} == SPEC_DEFAULTS
    assert config["force"] is False
    assert (config["chunk_size"], config["chunk_overlap"]) == (2000, 100)  # TrustGraph's chunker defaults
    assert set(config) == set(SPEC_DEFAULTS) | {"force", "chunk_size", "chunk_overlap"}
    assert DecoderOptions().model_dump(include=set(SPEC_DEFAULTS)) == SPEC_DEFAULTS
    assert DecoderOptions().to_decoder_config() == DecoderConfig()


def test_the_launchpad_offers_exactly_the_decoders_choices():
    from typing import get_args

    from ud_assets.decoding.model import SECTION_STRATEGIES, STRATEGIES
    from ud_assets.defs.config import SectionStrategy, Strategy

    assert get_args(Strategy) == STRATEGIES
    assert get_args(SectionStrategy) == SECTION_STRATEGIES


@pytest.mark.parametrize(
    "bad",
    [
        {"strategy": "magic"},
        {"section_strategy": "paragraph"},
        {"section_within_pages": "sometimes"},
        {"unknown_option": 1},
    ],
)
def test_ill_typed_options_are_rejected_when_the_run_is_launched(tmp_path, bad):
    with pytest.raises(dg.DagsterInvalidConfigError) as raised:
        dg.validate_run_config(decode_job(tmp_path / "ud"), options(bad))
    assert "universal_decoder:config" in str(raised.value)


def attempt(tmp_path: Path, instance, values: dict):
    """Run the job on one partition of an empty embedded librarian; what happened, and whether the op body ran."""
    home = tmp_path / "ud"
    instance.add_dynamic_partitions("documents", ["notes.md"])
    job = decode_job(home)
    try:
        result = job.execute_in_process(
            instance=instance, tags={"dagster/partition": "notes.md"}, run_config=options(values), raise_on_error=False
        )
    except dg.DagsterInvalidConfigError as error:  # rejected before the run even starts
        return str(error), False
    assert not result.success  # the librarian is empty: nothing can succeed
    failure = result.get_step_failure_events()[0].step_failure_data.error
    user_logs = [e for e in instance.all_logs(result.run_id) if e.user_message.startswith("[1/1]")]
    # The op body opens the librarian and records the missing document in the failure ledger.
    body_ran = bool(user_logs) or home.exists()
    return failure.to_string(), body_ran


def test_a_valid_run_reaches_the_op_body(tmp_path, instance):
    """The probe of the next test works: with valid options the op body runs (and finds no document)."""
    message, body_ran = attempt(tmp_path, instance, {"section_element_count": 5, "section_strategy": "count"})
    assert body_ran
    assert "notes.md" in message


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"section_element_count": 0}, "section_element_count"),
        ({"section_max_size": -1}, "section_max_size"),
        ({"strategy": "magic"}, "strategy"),
        ({"languages": "eng;rm -rf"}, "languages"),
    ],
)
def test_invalid_options_are_rejected_before_the_op_runs(tmp_path, instance, bad, field):
    message, body_ran = attempt(tmp_path, instance, bad)
    assert not body_ran, message
    assert field in message
    assert not (tmp_path / "ud").exists()


if __name__ == "__main__":  # `make snapshot`: the one way the snapshot is written
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT.write_text(json.dumps(load_in_fresh_interpreter()["snapshot"], indent=2, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT.relative_to(ROOT)}; review the diff")
