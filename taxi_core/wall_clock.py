"""New York wall-clock times: how the tables type them, and what to do with a table typed the old way.

TLC records pickups and drop-offs as New York wall-clock times without a zone, so every column holding one
is an Iceberg ``timestamp`` (without zone): Spark's ``TIMESTAMP_NTZ``, Arrow's ``timestamp('us')``. Older
versions stored them as ``timestamptz``, the wall-clock value labelled UTC.
"""

from __future__ import annotations

from taxi_core.errors import PipelineError

# What a wall-clock column's doc adds: daylight saving as the source records it, not "fixed".
DAYLIGHT_SAVING_NOTE = (
    "no zone: the spring-forward day has no 02:00 hour and the fall-back day's 01:00 hour holds two real hours"
)
# The one command that migrates every table typed the old way, keeping its values and history.
MIGRATE_COMMAND = "./run taxi migrate-times"
# The snapshot summary property of a migration: the snapshot ``main`` pointed at before it.
REPLACED_SNAPSHOT_PROPERTY = "wall-clock-migration.replaced-snapshot-id"


def wall_clock_doc(what: str) -> str:
    """A wall-clock column's doc: ``what`` it holds, then how it is typed."""
    return f"{what}, New York wall-clock time ({DAYLIGHT_SAVING_NOTE})"


class ZonedWallClock(RuntimeError, PipelineError):
    """A table stores New York wall-clock times in a ``timestamptz`` column, as versions before this one wrote it."""

    def __init__(self, table: str, columns: list[str]) -> None:
        super().__init__(
            f"Table {table} stores {', '.join(columns)} as timestamptz (a UTC instant), as an older version wrote "
            f"it; they hold New York wall-clock times, now typed timestamp without zone. Migrate it, keeping its "
            f"values and history, with `{MIGRATE_COMMAND}`."
        )
        self.table = table
        self.columns = columns
