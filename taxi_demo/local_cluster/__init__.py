"""A Spark standalone cluster and a PostgreSQL server on 127.0.0.1, for the `cluster` profile."""
