"""Which librarian ids can be partition keys (no Dagster import: the CLI checks ids at upload)."""

import re

# Dagster refuses partition keys with these characters (and very long keys are unusable in the UI).
_INVALID_KEY = re.compile(r"[\x00-\x1f\\,\[\]{}*]")
MAX_KEY_LENGTH = 512


def partition_key_problem(document_id: str) -> str | None:
    """Why a librarian id cannot be a partition key, or None when it can."""
    if not document_id or document_id.strip() != document_id:
        return "must be non-empty without leading or trailing spaces"
    if len(document_id) > MAX_KEY_LENGTH:
        return f"is longer than {MAX_KEY_LENGTH} characters"
    found = _INVALID_KEY.search(document_id)
    if found:
        return f"contains {found.group()!r}, which Dagster partition keys cannot hold"
    return None
