"""The one partitions definition of the project: one partition per librarian source document."""

import dagster as dg

documents_partitions = dg.DynamicPartitionsDefinition(name="documents")
