"""Normalise a TLC trip file into its raw table's columns, whatever year it is from, for any trip layout."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from forecast_assets.sources.tlc_format import TripLayout

LINEAGE_COLUMNS = {
    "source_month": "string",
    "source_file": "string",
    "source_fingerprint": "string",
    "ingested_at": "timestamp",  # an instant: Iceberg's timestamptz
}
LINEAGE_COLUMN_DESCRIPTIONS = {
    "source_month": "The month (YYYY-MM) of the TLC file the row came from; the table's partition",
    "source_file": "The TLC file the row was read from",
    "source_fingerprint": "sha256 of that file as staged: the file version the lineage names",
    "ingested_at": "When the month was written to the table (UTC)",
}


def with_timestamps(trips: DataFrame, layout: TripLayout) -> DataFrame:
    """A trip file's columns as published; nanosecond timestamps become wall-clock timestamps (TIMESTAMP_NTZ).

    The session reads TIMESTAMP(NANOS) as epoch nanoseconds (``spark.sql.legacy.parquet.nanosAsLong``);
    like every TLC timestamp they are wall-clock values: the epoch count read in the UTC session is that value.
    """
    types = dict(trips.dtypes)
    columns = []
    for name in trips.columns:
        if name.lower() in layout.timestamp_columns and types[name] == "bigint":
            micros = F.timestamp_micros(F.floor(F.col(f"`{name}`") / 1000))
            columns.append(micros.cast("timestamp_ntz").alias(name))
        else:
            columns.append(F.col(f"`{name}`"))
    return trips.select(*columns)


def normalize_trips(
    trips: DataFrame,
    layout: TripLayout,
    source_month: str,
    source_file: str,
    source_fingerprint: str,
    ingested_at: datetime,
) -> DataFrame:
    """Lower-case the columns, cast each to one type for all years, add the source columns."""
    by_lower_name = {name.lower(): name for name in trips.columns}
    columns: list[Column] = []
    for name, spark_type in layout.columns.items():
        if name in by_lower_name:
            columns.append(F.col(f"`{by_lower_name[name]}`").cast(spark_type).alias(name))
        else:
            columns.append(F.lit(None).cast(spark_type).alias(name))
    columns += [
        F.lit(source_month).alias("source_month"),
        F.lit(source_file).alias("source_file"),
        F.lit(source_fingerprint).alias("source_fingerprint"),
        F.lit(ingested_at).cast("timestamp").alias("ingested_at"),
    ]
    return trips.select(*columns)
