"""Metaflow flows and the plain modules they call."""
