"""Spark DataFrame -> DataFrame transforms; no Dagster, no I/O beyond what they are handed."""
