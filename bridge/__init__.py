"""The lineage bridge: Dagster's event log and Metaflow's runs as OpenLineage events."""
