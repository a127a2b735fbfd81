"""The asset checks of the decoding step, evaluated from each document's Outcome."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import dagster as dg

from ud_assets.processing.model import Outcome

CHECK_SPECS = [
    dg.AssetCheckSpec("offsets_exact", asset="sections",
                      description="Every element sits at its offset in its section, every section at its offset in the document text."),
    dg.AssetCheckSpec("no_stale_children", asset="sections",
                      description="No page, section or image of an earlier generation is left in the librarian."),
    dg.AssetCheckSpec("children_present", asset="images",
                      description="Every page, section and image of the generation is in the librarian."),
    dg.AssetCheckSpec("chunk_offsets_exact", asset="chunks",
                      description="Every chunk's text sits exactly at its offset in its section."),
    dg.AssetCheckSpec("triple_count_consistent", asset="provenance_triples",
                      description="The triple store holds exactly the triples built for the document's entities."),
]

# (asset, check) -> (did the check apply to this outcome, did it pass)
_RULES: dict[tuple[str, str], Callable[[Outcome], tuple[bool, bool]]] = {
    ("sections", "offsets_exact"): lambda o: (o.sections is not None, o.sections is not None and o.sections.offsets_exact),
    ("sections", "no_stale_children"): lambda o: (o.sections is not None or o.provenance is not None,
                                                  not o.stale_children),
    ("images", "children_present"): lambda o: (o.sections is not None or o.images is not None, not o.missing_children),
    ("chunks", "chunk_offsets_exact"): lambda o: (o.chunks is not None, o.chunks is not None and o.chunks.offsets_exact),
    ("provenance_triples", "triple_count_consistent"): lambda o: (
        o.provenance is not None,
        o.provenance is not None and o.provenance.triples_stored == o.provenance.triples_expected),
}


def check_results(selected: set[tuple[str, str]], outcomes: list[Outcome]) -> Iterator[dg.AssetCheckResult]:
    """One result per selected check over the documents it applied to in this run."""
    for (asset, check), rule in _RULES.items():
        if (asset, check) not in selected:
            continue
        verdicts = [(o.document_id, rule(o)) for o in outcomes]
        checked = [doc for doc, (applies, _) in verdicts if applies]
        bad = [doc for doc, (applies, passed) in verdicts if applies and not passed]
        yield dg.AssetCheckResult(
            asset_key=asset,
            check_name=check,
            passed=not bad,
            metadata={"documents_checked": len(checked), "failing_documents": dg.MetadataValue.json(bad[:100])},
        )
