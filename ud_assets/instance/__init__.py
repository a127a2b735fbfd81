"""The Dagster instance's own storage, as this project configures it (dagster.yaml)."""
