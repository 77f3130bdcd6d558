"""Lineage sinks: where queued events go. Each kind is a plugin built from configuration (:mod:`.registry`)."""
