"""Pure translators: Dagster and Metaflow records to OpenLineage events and DataHub metadata, and names."""
