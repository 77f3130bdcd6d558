"""The bridge's command line: read commands over the index, operator commands over the outbox."""
