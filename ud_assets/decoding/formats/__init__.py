"""The format families, and the one list of them (FAMILIES).

Each family is one module of this package declaring a `FORMAT` (base.Format): its MIME types,
its logic version, the partitioner modules and documents its warm-up uses, its page labels, its
strategy and its split. Format-free code (decoder, partitioning, isolation, warmup, the generation
records, the upgrade schedule) asks this registry, never a MIME type. Adding a format family is one new module and one line in FAMILIES.

Logic versions. A generation records `decoder_version(mime)`: "<shared>.<family>-<version>", e.g.
"2.pdf-1": SHARED_LOGIC_VERSION (model.py, the format-free logic: assembly, grouping, ids,
provenance) and the family's own `logic_version`. Generations recorded before families had
versions say "<shared>" alone: they read as every family at version 1. The fingerprint
(ids.fingerprint) mixes in the family's version only from 2 on, so fingerprints made before
per-format versions keep their value. `versions_label()` (the assets' code version, the upgrade
runs' keys) is "<shared>" followed by ".<family>-<version>" for each family above version 1.

To change what one family's decode produces: bump that module's `logic_version` ("1" -> "2"); the
upgrade schedule then re-decodes that family's documents and no others. A change to format-free
logic bumps SHARED_LOGIC_VERSION and re-decodes every document.
"""

from __future__ import annotations

from collections.abc import Collection

from .. import detect
from .. import limits as limits_module
from ..limits import Limits
from ..model import SHARED_LOGIC_VERSION
from . import delimited, email, epub, image, legacy_office, markup, office, pdf, text
from .base import Format

FAMILIES: tuple[Format, ...] = (
    pdf.FORMAT,
    office.FORMAT,
    legacy_office.FORMAT,
    email.FORMAT,
    epub.FORMAT,
    delimited.FORMAT,
    markup.FORMAT,
    text.FORMAT,
    image.FORMAT,
)
# Kinds no family claims (audio, video, unknown): refused or failed by the parser, versioned together.


def _check_other(data: bytes, mime: str, limits: Limits) -> None:
    if detect.is_text_kind(mime):  # text of a kind no family names
        limits_module.check_text(data, mime)


OTHER = Format(name="other", logic_version="1", mime_types=frozenset(), check=_check_other)
BASELINE = "1"  # every family's first logic version, implied by generations recorded without one

__all__ = [
    "FAMILIES",
    "OTHER",
    "Format",
    "check_input",
    "decoder_version",
    "family_of",
    "is_current",
    "page_label",
    "versions_label",
    "warm_documents",
    "warm_imports",
    "warm_modules",
]
# unstructured's text partitioners, which every format uses: a process decoding anything imports them.
BASE_IMPORTS = ("md", "html", "text")


def family_of(mime: str) -> Format:
    """The family decoding this kind (OTHER when none does)."""
    return next((family for family in FAMILIES if family.decodes(mime)), OTHER)


def check_input(data: bytes, mime: str, limits: Limits) -> None:
    """Raise DecodeError when the document is empty, too big, mislabeled, encrypted or a bomb: its
    size (limits.check_size), then its format family's checks."""
    limits_module.check_size(data, limits)
    check = family_of(mime).check
    if check is not None:
        check(data, mime, limits)


def warm_imports(mime: str) -> tuple[str, ...] | None:
    """unstructured's partitioner modules this kind needs; None when not known (warm them all)."""
    return family_of(mime).warm_imports.get(mime)


def warm_modules(kinds: str | Collection[str] | None = None) -> tuple[str, ...]:
    """unstructured's partitioner modules a process imports to decode documents of `kinds` (one
    kind or several): the base ones and their families'; every family's when `kinds` is None or
    one of them is not known. A process that decodes one document imports only these (pandas alone
    costs a second); a batch warms those of its documents' kinds."""
    wanted = (kinds,) if isinstance(kinds, str) else kinds
    needed: tuple[str, ...] | None = None
    if wanted is not None:
        per_kind = [warm_imports(kind) if kind else None for kind in wanted]
        if all(modules is not None for modules in per_kind):
            needed = tuple(module for modules in per_kind if modules is not None for module in modules)
    if needed is None:
        needed = tuple(
            module
            for family in FAMILIES
            for module in (*(m for modules in family.warm_imports.values() for m in modules), *family.warm_all)
        )
    return tuple(dict.fromkeys(BASE_IMPORTS + needed))


def warm_documents(imported: Collection[str]) -> list[tuple[str, bytes]]:
    """(kind, document) of each family's warm document whose partitioner modules (the base ones
    when it names none) are among those just `imported`: parsing it exercises them once."""
    return [
        (kind, document)
        for family in FAMILIES
        for kind, document in family.warm_documents.items()
        if any(module in imported for module in (family.warm_imports.get(kind) or BASE_IMPORTS))
    ]


def page_label(mime: str) -> str | None:
    """The noun of this kind's pages ("Page", "Slide", "Sheet"); None when it is not page-based."""
    return family_of(mime).page_labels.get(mime)


def decoder_version(mime: str) -> str:
    """What a generation of this kind records as its decoder version: "<shared>.<family>-<version>"."""
    family = family_of(mime)
    return f"{SHARED_LOGIC_VERSION}.{family.name}-{family.logic_version}"


def family_version(mime: str) -> str | None:
    """The family's version as the fingerprint mixes it in: None at the baseline (see the docstring)."""
    family = family_of(mime)
    return None if family.logic_version == BASELINE else f"{family.name}-{family.logic_version}"


def versions_label() -> str:
    """Every version at once: "<shared>" and ".<family>-<version>" for each family above version 1."""
    bumped = [f".{f.name}-{f.logic_version}" for f in (*FAMILIES, OTHER) if f.logic_version != BASELINE]
    return SHARED_LOGIC_VERSION + "".join(bumped)


def _parse(version: str) -> tuple[str, dict[str, str], str | None]:
    """(shared, {family: version}, the one family named first) of a recorded version or a label."""
    shared, *parts = version.split(".")
    families = dict(part.rsplit("-", 1) for part in parts if "-" in part)
    return shared, families, next(iter(families), None)


def is_current(recorded: str, label: str | None = None) -> bool:
    """Whether a generation recorded with `recorded` (decoder_version, or a bare "<shared>" from
    before per-format versions) is what the versions of `label` (versions_label()) decode today."""
    shared, target = _parse(label if label is not None else versions_label())[:2]
    recorded_shared, families, family = _parse(recorded)
    if recorded_shared != shared:
        return False
    if family is None:  # recorded before per-format versions: every family at the baseline
        return not target
    return families[family] == target.get(family, BASELINE)
