"""The Iceberg tables: their columns and partitioning, and how to read one month of them (or all of one)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession

from forecast_assets.lakehouse.commits import catalog_statement, committed_sql
from forecast_assets.lakehouse.table_reading import TableReading, column_docs
from forecast_assets.lakehouse.table_state import TableState, table_state
from forecast_assets.lakehouse.wall_clock import WALL_CLOCK_TYPE, replace_with_wall_clock, zoned_columns
from taxi_core.months import MonthWindow
from taxi_core.names import NAMESPACE
from taxi_core.wall_clock import wall_clock_doc

TABLE_PROPERTIES = {
    "format-version": "2",
    "write.parquet.compression-codec": "zstd",
    # Iceberg's retries of a data commit another writer beat (4 by default, with waits from
    # 0.1 s): several runs publishing to one table at once can use up 4.
    "commit.retry.num-retries": "10",
}


@dataclass(frozen=True)
class TableSpec:
    """An Iceberg table of the namespace: by month (``month_column``) or written whole (no month column)."""

    name: str
    columns: dict[str, str]
    partitioned_by: str | None = None
    month_column: str | None = None
    # "text": the column holds ``YYYY-MM``; "time": a date or timestamp inside the month.
    month_column_kind: str = "time"
    # What each column holds: the Iceberg columns' comments, Dagster's column schema, the lineage's schema facet.
    descriptions: dict[str, str] = field(default_factory=dict)

    @property
    def identifier(self) -> str:
        return f"{NAMESPACE}.{self.name}"

    def rows_condition(self, window: MonthWindow | None) -> str:
        """The SQL filter selecting one month's rows, aligned with the table's partitions; every row without one."""
        if window is None or self.month_column is None:
            return "TRUE"
        if self.month_column_kind == "text":
            return f"{self.month_column} = '{window.month}'"
        cast = {"date": "DATE", WALL_CLOCK_TYPE: "TIMESTAMP_NTZ"}.get(self.columns[self.month_column], "TIMESTAMP")
        return (
            f"{self.month_column} >= {cast} '{window.start:%Y-%m-%d}' "
            f"AND {self.month_column} < {cast} '{window.end:%Y-%m-%d}'"
        )

    @property
    def wall_clock_columns(self) -> list[str]:
        """The columns holding New York wall-clock times (TIMESTAMP_NTZ)."""
        return [name for name, spark_type in self.columns.items() if spark_type == WALL_CLOCK_TYPE]

    def ddl(self) -> str:
        columns = ", ".join(f"{name} {spark_type}{self._comment(name)}" for name, spark_type in self.columns.items())
        properties = ", ".join(f"'{k}'='{v}'" for k, v in TABLE_PROPERTIES.items())
        partitioning = f"PARTITIONED BY ({self.partitioned_by}) " if self.partitioned_by else ""
        return (
            f"CREATE TABLE IF NOT EXISTS {self.identifier} ({columns}) USING iceberg "
            f"{partitioning}TBLPROPERTIES ({properties})"
        )

    def _comment(self, column: str) -> str:
        about = self.descriptions.get(column)
        return "" if about is None else f" COMMENT {_sql_string(about)}"


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


HOURLY_ACTUALS = TableSpec(
    name="yellow_rides_hourly_actuals",
    columns={"pickup_hour": WALL_CLOCK_TYPE, "pulocationid": "int", "total_rides": "bigint"},
    partitioned_by="months(pickup_hour)",
    month_column="pickup_hour",
    descriptions={
        "pickup_hour": wall_clock_doc("The hour the trips began (the meter engaged)"),
        "pulocationid": "The TLC taxi zone the trips began in (nyc_taxi.taxi_zones.location_id)",
        "total_rides": "Yellow-taxi trips that began in the zone in the hour: the count the model forecasts",
    },
)


def ensure_table(spark: SparkSession, spec: TableSpec) -> TableState:
    """The table's state, loaded once; the table is created first if need be, with an empty first snapshot on ``main``.

    Every staging branch is cut from ``main``. On a table without one, a branch would start from an
    empty snapshot of its own that no other branch shares, and of two first months staged at once
    only one could then be published. A table an older version typed with timestamptz wall-clock columns is
    migrated first (see :mod:`forecast_assets.lakehouse.wall_clock`).
    """
    state = table_state(spark, spec.identifier)
    if state is not None and migrate_wall_clock(spark, spec, state):
        state = table_state(spark, spec.identifier)  # the table was replaced: loaded anew
    if state is not None and state.ref("main") is not None:  # the usual case, answered by one load
        _describe_columns(spark, spec, column_docs(state))
        return state
    catalog_statement(spark, f"CREATE NAMESPACE IF NOT EXISTS {NAMESPACE}")
    catalog_statement(spark, spec.ddl())
    created = table_state(spark, spec.identifier)
    if created is None or created.ref("main") is None:
        create_main = f"ALTER TABLE {spec.identifier} CREATE BRANCH IF NOT EXISTS main"
        committed_sql(spark, spec.identifier, "while creating main", create_main)
        created = table_state(spark, spec.identifier)
    if created is None:  # an invariant: the catalog just created the table
        raise RuntimeError(f"{spec.identifier} was created but the catalog does not find it")
    return created


def migrate_wall_clock(spark: SparkSession, spec: TableSpec, state: TableState) -> bool:
    """Retype the table's wall-clock columns an older version stored as timestamptz, keeping values and history;
    False when there was nothing to migrate."""
    zoned = zoned_columns(state, spec.wall_clock_columns)
    if not zoned:
        return False
    replace_with_wall_clock(spark, spec.identifier, zoned, spec.partitioned_by, TABLE_PROPERTIES)
    return True


def needs_upkeep(state: TableReading, spec: TableSpec) -> bool:
    """Whether :func:`ensure_table` would change the existing table: wall-clock columns to migrate, comments to set."""
    return bool(_undescribed(spec, column_docs(state)) or zoned_columns(state, spec.wall_clock_columns))


def _undescribed(spec: TableSpec, docs: dict[str, str | None]) -> dict[str, str]:
    return {column: about for column, about in spec.descriptions.items() if column in docs and docs[column] != about}


def _describe_columns(spark: SparkSession, spec: TableSpec, docs: dict[str, str | None]) -> None:
    """A table an older version created gains its columns' comments (once: then they match)."""
    for column, about in _undescribed(spec, docs).items():
        statement = f"ALTER TABLE {spec.identifier} ALTER COLUMN {column} COMMENT {_sql_string(about)}"
        committed_sql(spark, spec.identifier, f"while describing column {column}", statement)


def month_rows(spark: SparkSession, spec: TableSpec, window: MonthWindow | None) -> DataFrame:
    """The month as published on ``main`` (the whole table for ``None``)."""
    return spark.table(spec.identifier).where(spec.rows_condition(window))
