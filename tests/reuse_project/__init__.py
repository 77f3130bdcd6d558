"""A second, tiny Dagster + Metaflow project that uses the bridge only through its public API."""
