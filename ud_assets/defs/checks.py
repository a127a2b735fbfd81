"""The asset checks of the decoding step: the declared checks of each stage (processing/stages.py).

Each check reads back what was stored for a document (processing runs it beside the document's
stages); here its verdicts over a run's documents become one AssetCheckResult, the failing
documents in a table, each with the entity that is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg

from ud_assets.defs.metadata import failing_documents_table
from ud_assets.processing.model import Outcome
from ud_assets.processing.stages import STAGES, check_key

CHECK_SPECS = [
    dg.AssetCheckSpec(check.name, asset=stage.name, description=check.description)
    for stage in STAGES
    for check in stage.checks
]


def wanted_checks(selected: set[dg.AssetCheckKey]) -> set[str]:
    """The selected checks as processing names them (stages.check_key)."""
    return {check_key(key.asset_key.to_user_string(), key.name) for key in selected}


def check_results(selected: set[str], outcomes: list[Outcome]) -> Iterator[dg.AssetCheckResult]:
    """One result per selected check over the documents it applied to in this run."""
    for stage in STAGES:
        for check in stage.checks:
            key = check_key(stage.name, check.name)
            if key not in selected:
                continue
            verdicts = [(o.document_id, o.checks[key]) for o in outcomes if key in o.checks]
            failing = [(doc, detail) for doc, detail in verdicts if detail]
            yield dg.AssetCheckResult(
                asset_key=stage.name,
                check_name=check.name,
                passed=not failing,
                metadata={
                    "documents_checked": len(verdicts),
                    "documents_failing": len(failing),
                    "failing_documents": failing_documents_table(failing),
                },
                description=("; ".join(f"{doc}: {detail}" for doc, detail in failing[:5]) or None),
            )
