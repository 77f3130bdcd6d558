"""New York wall-clock times in Spark: literals of them, and migrating a table that stored them as timestamptz.

Iceberg cannot change a column from ``timestamptz`` to ``timestamp`` in place, so a table an older version
wrote is replaced atomically by itself with those columns converted (``REPLACE TABLE ... AS SELECT``): one
commit, its earlier snapshots and branches kept. The old column held the wall-clock value labelled UTC; cast
to TIMESTAMP_NTZ in the session's zone, UTC, it is that wall-clock value again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from datetime import datetime

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from forecast_assets.lakehouse.commits import committed, committed_sql
from forecast_assets.lakehouse.table_reading import TableReading, column_types
from forecast_assets.lakehouse.table_state import table_state
from taxi_core.wall_clock import REPLACED_SNAPSHOT_PROPERTY

log = logging.getLogger(__name__)

WALL_CLOCK_TYPE = "timestamp_ntz"
_TRANSFORM = re.compile(r"(\w+)\((\w+)\)")


def wall_clock(moment: datetime) -> Column:
    """A TIMESTAMP_NTZ literal of a naive ``moment``: from its text, so neither the JVM's nor Python's zone moves it
    (py4j turns a naive datetime into an instant in Python's local zone)."""
    return F.lit(moment.isoformat(sep=" ")).cast(WALL_CLOCK_TYPE)


def zoned_columns(state: TableReading, wall_clock_columns: Iterable[str]) -> list[str]:
    """Those of ``wall_clock_columns`` the table stores as timestamptz (an older version's type)."""
    types = column_types(state)
    return [column for column in wall_clock_columns if types.get(column) == "timestamptz"]


def _partition_column(text: str) -> Column:
    """A ``PARTITIONED BY`` entry (``months(pickup_hour)``, ``source_month``) as DataFrameWriterV2 takes it."""
    found = _TRANSFORM.fullmatch(text.strip())
    return getattr(F, found.group(1))(F.col(found.group(2))) if found else F.col(text.strip())


def replace_with_wall_clock(
    spark: SparkSession,
    identifier: str,
    columns: list[str],
    partitioned_by: str | None,
    properties: Mapping[str, str],
) -> None:
    """Replace the table by its own rows with ``columns`` as TIMESTAMP_NTZ, in one commit that names the snapshot
    ``main`` pointed at (so a walk of ``main``'s history goes on past it). Column comments are not carried over:
    the caller describes the columns again."""

    def replace() -> None:
        state = table_state(spark, identifier)
        previous = None if state is None else state.ref("main")
        rows = spark.table(identifier)
        converted = [F.col(c).cast(WALL_CLOCK_TYPE).alias(c) if c in columns else F.col(c) for c in rows.columns]
        writer = rows.select(*converted).writeTo(identifier).using("iceberg")
        if partitioned_by:
            parts = [_partition_column(part) for part in partitioned_by.split(",")]
            writer = writer.partitionedBy(*parts)
        for key, value in properties.items():
            writer = writer.tableProperty(key, value)
        writer.option(f"snapshot-property.{REPLACED_SNAPSHOT_PROPERTY}", str(previous or "")).createOrReplace()

    log.warning("Migrating %s: %s from timestamptz to timestamp (New York wall-clock time)", identifier, columns)
    committed(identifier, "while migrating its wall-clock columns", replace)


def describe_columns(spark: SparkSession, identifier: str, docs: Mapping[str, str | None]) -> None:
    """Give the table's columns these comments (a replaced table lost them)."""
    for column, about in docs.items():
        if about is not None:
            text = "'" + about.replace("\\", "\\\\").replace("'", "\\'") + "'"
            statement = f"ALTER TABLE {identifier} ALTER COLUMN {column} COMMENT {text}"
            committed_sql(spark, identifier, f"while describing column {column}", statement)
