"""The one partitions definition of the project: one partition per librarian source document."""

import dagster as dg

PARTITIONS_NAME = "documents"
documents_partitions = dg.DynamicPartitionsDefinition(name=PARTITIONS_NAME)
