"""The Iceberg tables: their columns and partitioning, and how to read one month of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import DataFrame, SparkSession

from forecast_assets.lakehouse.commits import catalog_statement, committed_sql
from forecast_assets.sources.tlc_format import RAW_COLUMN_TYPES
from forecast_assets.transforms.raw_yellow import LINEAGE_COLUMNS
from taxi_core.names import NAMESPACE

TABLE_PROPERTIES = {
    "format-version": "2",
    "write.parquet.compression-codec": "zstd",
    # Iceberg's retries of a data commit another writer beat (4 by default, with waits from
    # 0.1 s): several runs publishing to one table at once can use up 4.
    "commit.retry.num-retries": "10",
}


@dataclass(frozen=True)
class TableSpec:
    name: str
    columns: dict[str, str]
    partitioned_by: str
    month_column: str
    # "text": the column holds ``YYYY-MM``; "time": a date or timestamp inside the month.
    month_column_kind: str = "time"

    @property
    def identifier(self) -> str:
        return f"{NAMESPACE}.{self.name}"

    def month_condition(self, month_start: datetime, month_end: datetime) -> str:
        """The SQL filter selecting one month's rows, aligned with the table's partitions."""
        if self.month_column_kind == "text":
            return f"{self.month_column} = '{month_start:%Y-%m}'"
        cast = "DATE" if self.columns[self.month_column] == "date" else "TIMESTAMP"
        return (
            f"{self.month_column} >= {cast} '{month_start:%Y-%m-%d}' "
            f"AND {self.month_column} < {cast} '{month_end:%Y-%m-%d}'"
        )

    def iceberg_filter(self, month_start: datetime, month_end: datetime) -> str:
        """The same month as a pyiceberg row filter (Spark's timestamps are UTC-adjusted in Iceberg)."""
        if self.month_column_kind == "text":
            return self.month_condition(month_start, month_end)
        fmt = "%Y-%m-%d" if self.columns[self.month_column] == "date" else "%Y-%m-%dT%H:%M:%S+00:00"
        return f"{self.month_column} >= '{month_start:{fmt}}' AND {self.month_column} < '{month_end:{fmt}}'"

    def ddl(self) -> str:
        columns = ", ".join(f"{name} {spark_type}" for name, spark_type in self.columns.items())
        properties = ", ".join(f"'{k}'='{v}'" for k, v in TABLE_PROPERTIES.items())
        return (
            f"CREATE TABLE IF NOT EXISTS {self.identifier} ({columns}) USING iceberg "
            f"PARTITIONED BY ({self.partitioned_by}) TBLPROPERTIES ({properties})"
        )


RAW_YELLOW = TableSpec(
    name="raw_yellow",
    columns=RAW_COLUMN_TYPES | LINEAGE_COLUMNS,
    partitioned_by="source_month",
    month_column="source_month",
    month_column_kind="text",
)
RAW_WEATHER = TableSpec(
    name="raw_weather",
    columns={"county_fips": "string", "date": "date", "element": "string", "value": "double"},
    partitioned_by="months(date)",
    month_column="date",
)
HOURLY_ACTUALS = TableSpec(
    name="yellow_rides_hourly_actuals",
    columns={"pickup_hour": "timestamp", "pulocationid": "int", "total_rides": "bigint"},
    partitioned_by="months(pickup_hour)",
    month_column="pickup_hour",
)


def ensure_table(spark: SparkSession, spec: TableSpec) -> None:
    """Create the table if need be, with an empty first snapshot on ``main``.

    Every staging branch is cut from ``main``. On a table without one, a branch would start from an
    empty snapshot of its own that no other branch shares, and of two first months staged at once
    only one could then be published.
    """
    catalog_statement(spark, f"CREATE NAMESPACE IF NOT EXISTS {NAMESPACE}")
    catalog_statement(spark, spec.ddl())
    main = spark.sql(f"SELECT 1 FROM {spec.identifier}.refs WHERE name = 'main'")
    if not main.take(1):
        create_main = f"ALTER TABLE {spec.identifier} CREATE BRANCH IF NOT EXISTS main"
        committed_sql(spark, spec.identifier, "while creating main", create_main)


def month_rows(spark: SparkSession, spec: TableSpec, month_start: datetime, month_end: datetime) -> DataFrame:
    """The month as published on ``main``."""
    return spark.table(spec.identifier).where(spec.month_condition(month_start, month_end))
