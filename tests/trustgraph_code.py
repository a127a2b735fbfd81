"""TrustGraph's own code (PyPI sources of trustgraph-base and trustgraph-flow, unpacked by
`make trustgraph-code` into .trustgraph/<version>/): its librarian (trustgraph.tables.library) and
its triple store (trustgraph.direct.cassandra_kg), to read and write exactly as TrustGraph does."""

from __future__ import annotations

import sys
from pathlib import Path

VERSION = "2.11.1"
ROOT = Path(__file__).resolve().parent.parent / ".trustgraph" / VERSION


def use() -> Path:
    """Put TrustGraph's sources on sys.path (failing, never skipping, when they are missing)."""
    if not (ROOT / ".complete").is_file():
        raise RuntimeError(f"TrustGraph {VERSION}'s code is missing from {ROOT}: run make trustgraph-code")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return ROOT
