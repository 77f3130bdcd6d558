"""What the bridge reads: Dagster's event log and code location, Metaflow's runs and the lineage its steps record."""
