"""The librarian as a Dagster resource.

    from ud_assets.defs.resources import LibrarianResource

    @dg.asset
    def decoded(librarian: LibrarianResource):
        lib = librarian.get()                     # resources.model.Librarian
        meta = lib.get_metadata(doc_id)

    defs = dg.Definitions(assets=[decoded], resources={"librarian": LibrarianResource()})

Config fields are non-secret (workspace, backend, home, bucket, collection); empty = take it from
the environment (resources.settings). Passwords and keys come only from the environment. The
librarian is opened once per process (and per settings) and closed at exit; do not close it.
"""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from resources.model import Librarian, StoreSettings
from resources.settings import load_settings, shared_librarian


class LibrarianResource(dg.ConfigurableResource):
    """Document bytes + metadata + provenance triples (embedded SQLite/files, or S3 + Cassandra)."""

    workspace: str = Field(default="", description="Workspace (TrustGraph user); empty = UD_WORKSPACE or 'default'.")
    backend: str = Field(
        default="auto", description="auto | embedded | cassandra; auto = cassandra when CASSANDRA_HOST is set."
    )
    home: str = Field(default="", description="Embedded backend's folder; empty = UD_HOME or '.ud'.")
    bucket: str = Field(default="", description="S3 bucket of the cassandra backend; empty = UD_BUCKET or 'library'.")
    collection: str = Field(default="", description="Triple-store collection; empty = UD_COLLECTION or 'default'.")

    def store_settings(self) -> StoreSettings:
        return load_settings(
            backend=self.backend or None,
            workspace=self.workspace or None,
            home=self.home or None,
            bucket=self.bucket or None,
            collection=self.collection or None,
        )

    def get(self) -> Librarian:
        """The process's librarian for this configuration (opened on first use)."""
        return shared_librarian(self.store_settings())

    @property
    def librarian(self) -> Librarian:
        return self.get()
