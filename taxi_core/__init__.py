"""What the Dagster code location, the Metaflow flow and the lineage wiring share.

Settings, names, the catalog, months and zones.

Imports neither Dagster nor Metaflow.
"""
