"""The asset checks of the decoding step, evaluated from each document's Outcome."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import dagster as dg

from ud_assets.defs.metadata import failing_documents_table
from ud_assets.processing.model import Outcome

CHECK_SPECS = [
    dg.AssetCheckSpec(
        "offsets_exact",
        asset="sections",
        description="Every element sits at its offset in its section, every section at its offset in the document text.",
    ),
    dg.AssetCheckSpec(
        "no_stale_children",
        asset="sections",
        description="No page, section or image of an earlier generation is left in the librarian.",
    ),
    dg.AssetCheckSpec(
        "children_present",
        asset="images",
        description="Every page, section and image of the generation is in the librarian.",
    ),
    dg.AssetCheckSpec(
        "chunk_offsets_exact",
        asset="chunks",
        description="Every chunk's text sits exactly at its offset in its section.",
    ),
    dg.AssetCheckSpec(
        "triple_count_consistent",
        asset="provenance_triples",
        description="The triple store holds exactly the triples built for the document's entities.",
    ),
]

# (asset, check) -> what is wrong with the outcome ("" when nothing), or None when it did not apply.
Verdict = Callable[[Outcome], str | None]


def _offsets(o: Outcome) -> str | None:
    if o.sections is None:
        return None
    return "" if o.sections.offsets_exact else "a section or element is not at its recorded offset"


def _stale(o: Outcome) -> str | None:
    if o.sections is None and o.provenance is None:
        return None
    return (
        f"{len(o.stale_children)} children of another generation: {', '.join(o.stale_children[:3])}"
        if o.stale_children
        else ""
    )


def _present(o: Outcome) -> str | None:
    if o.sections is None and o.images is None:
        return None
    return (
        f"{len(o.missing_children)} children missing: {', '.join(o.missing_children[:3])}" if o.missing_children else ""
    )


def _chunk_offsets(o: Outcome) -> str | None:
    if o.chunks is None:
        return None
    return "" if o.chunks.offsets_exact else "a chunk is not at its recorded offset in its section"


def _triples(o: Outcome) -> str | None:
    if o.provenance is None:
        return None
    p = o.provenance
    return (
        ""
        if p.triples_stored == p.triples_expected
        else f"{p.triples_stored} triples stored, {p.triples_expected} built"
    )


RULES: dict[tuple[str, str], Verdict] = {
    ("sections", "offsets_exact"): _offsets,
    ("sections", "no_stale_children"): _stale,
    ("images", "children_present"): _present,
    ("chunks", "chunk_offsets_exact"): _chunk_offsets,
    ("provenance_triples", "triple_count_consistent"): _triples,
}


def check_results(selected: set[tuple[str, str]], outcomes: list[Outcome]) -> Iterator[dg.AssetCheckResult]:
    """One result per selected check over the documents it applied to in this run; the failing
    documents are listed in a table, each with what was wrong."""
    for (asset, check), verdict in RULES.items():
        if (asset, check) not in selected:
            continue
        verdicts = [(o.document_id, verdict(o)) for o in outcomes]
        checked = [doc for doc, detail in verdicts if detail is not None]
        failing = [(doc, detail) for doc, detail in verdicts if detail]
        yield dg.AssetCheckResult(
            asset_key=asset,
            check_name=check,
            passed=not failing,
            metadata={
                "documents_checked": len(checked),
                "documents_failing": len(failing),
                "failing_documents": failing_documents_table(failing),
            },
            description=("; ".join(f"{doc}: {detail}" for doc, detail in failing[:5]) or None),
        )
