"""Recorded Dagster and Metaflow runs and the exact OpenLineage events and DataHub aspects they translate to."""
