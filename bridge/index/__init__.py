"""A queryable index of delivered lineage, and the views the command line draws from it."""
