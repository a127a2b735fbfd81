"""The one partitions definition of the project: one partition per librarian source document."""

import dagster as dg

from ud_assets.keys import partition_key_problem  # noqa: F401 - re-exported for the sensor

documents_partitions = dg.DynamicPartitionsDefinition(name="documents")
