"""Running the bridge: one pass, the watcher, the Dagster sensor, and reports back to Dagster."""
