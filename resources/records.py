"""Per-document records the decoder keeps beside the librarian's own tables.

- Generation: what produced a document's current children (the fingerprint, unstructured's
  version, the decoder options), so a schedule can find documents to re-process after an upgrade.
- Failure: the ledger of documents that could not be decoded, and why.
- Publication: the collections a document's triples were copied into, and the processing requests
  that asked for each (ud_assets/processing/publication.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Generation:
    document_id: str
    fingerprint: str
    sha256: str  # of the source bytes this generation was decoded from
    unstructured_version: str
    decoder_version: str
    config_json: str  # the decoder options, canonical JSON (sorted keys)
    elements_object_id: str  # uuid of the elements JSON in the object store
    time: datetime
    summary_json: str = "{}"  # counts of the generation: sections, images, triples...


@dataclass(frozen=True)
class Failure:
    document_id: str
    time: datetime
    sha256: str
    unstructured_version: str
    decoder_version: str
    error: str  # short, names the cause
    transient: bool  # a server was unavailable: worth retrying; otherwise not until the input changes
    attempts: int = 1
    fingerprint: str = ""  # the generation that failed (bytes, versions, options): retried when it changes


@dataclass(frozen=True)
class Publication:
    document_id: str
    requests_json: str  # {processing request id: collection}, canonical JSON (sorted keys)
    time: datetime
