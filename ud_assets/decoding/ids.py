"""Deterministic identifiers.

Upstream TrustGraph used uuid4 for pages, sections and images, so a redelivered message stored
duplicates. Here every id is a uuid5 over the document id, the generation fingerprint, the
entity kind and its ordinal: the same input always gives the same ids, a changed input (bytes,
unstructured version, decoder options or decoder logic) gives new ones.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from urllib.parse import quote

from resources.model import document_iri as librarian_document_iri

from . import formats
from .model import SHARED_LOGIC_VERSION, DecoderConfig

# uuid5 namespace of this project (itself a uuid5 of its name in the URL namespace).
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://trustgraph.ai/ns/universal-decoder")
TRUSTGRAPH_BASE = "https://trustgraph.ai"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprint(content_sha256: str, unstructured_version: str, config: DecoderConfig, mime: str) -> str:
    """What a generation of children is a function of: the bytes, the library, the options, our
    logic: the shared version and that of the format family decoding `mime`. A family's version
    is mixed in only above its first (formats.family_version), so the fingerprints made before
    families had versions keep their value, and a family's bump changes its documents' only."""
    fields: dict[str, object] = {
        "sha256": content_sha256,
        "unstructured": unstructured_version,
        "decoder": SHARED_LOGIC_VERSION,
        "config": config.as_dict(),
    }
    family = formats.family_version(mime)
    if family is not None:
        fields["format"] = family
    payload = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def entity_uuid(document_id: str, generation: str, kind: str, ordinal: int) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"{document_id}\x1f{generation}\x1f{kind}\x1f{ordinal}")


def entity_id(document_id: str, generation: str, kind: str, ordinal: int) -> str:
    """urn:page:{uuid}, urn:section:{uuid}, urn:image:{uuid}, urn:chunk:{uuid}."""
    return f"urn:{kind}:{entity_uuid(document_id, generation, kind, ordinal)}"


def activity_iri(document_id: str, generation: str, kind: str, ordinal: int) -> str:
    return f"{TRUSTGRAPH_BASE}/activity/{entity_uuid(document_id, generation, 'activity:' + kind, ordinal)}"


def agent_iri(component: str) -> str:
    return f"{TRUSTGRAPH_BASE}/agent/{quote(component, safe='')}"


def document_iri(document_id: str) -> str:
    """TrustGraph's document ids are IRIs already; other ids are placed under its doc namespace."""
    return librarian_document_iri(document_id)
