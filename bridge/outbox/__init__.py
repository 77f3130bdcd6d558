"""The queue of events, each sink's place in it, the lease that keeps one pass at a time, and delivery's health."""
