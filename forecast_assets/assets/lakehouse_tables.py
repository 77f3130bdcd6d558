"""Iceberg table assets written by Spark: raw trips, raw weather, hourly actuals."""

from datetime import UTC, datetime

from dagster import AssetExecutionContext, AssetKey, DataVersion, Failure, MaterializeResult, asset
from pyspark.sql import DataFrame

from forecast_assets.assets.source_files import taxi_trip_files, trip_staging_name, weather_files, weather_staging_name
from forecast_assets.assets.table_metadata import ROW_COUNT, table_metadata
from forecast_assets.config import ActualsConfig
from forecast_assets.lakehouse.spark_progress import reporting_progress
from forecast_assets.lakehouse.tables import (
    HOURLY_ACTUALS,
    RAW_WEATHER,
    RAW_YELLOW,
    TableSpec,
    last_write,
    month_rows,
    replace_month,
)
from forecast_assets.months import MonthWindow, monthly_partitions
from forecast_assets.resources import SparkResource, StagingResource
from forecast_assets.settings import NAMESPACE
from forecast_assets.sources.noaa_format import ELEMENTS
from forecast_assets.sources.zones import load_zones
from forecast_assets.transforms.hourly_actuals import hourly_actuals
from forecast_assets.transforms.raw_weather import CSV_OPTIONS, CSV_SCHEMA, weather_long
from forecast_assets.transforms.raw_yellow import normalize_trips

LAKEHOUSE_GROUP = "lakehouse"
UNKNOWN_BOROUGHS = {"Unknown", "N/A"}


def _replace_month(
    context: AssetExecutionContext,
    spark: SparkResource,
    spec: TableSpec,
    rows: DataFrame,
    window: MonthWindow,
    source_file: str,
    source_fingerprint: str,
    snapshot_properties: dict[str, str] | None = None,
    **metadata,
) -> MaterializeResult:
    """Replace the month in ``spec``'s table and report the new snapshot as the asset's version."""
    properties = {
        "dagster.run-id": context.run.run_id,
        "dagster.partition": context.partition_key,
        "source.fingerprint": source_fingerprint,
        **(snapshot_properties or {}),
    }
    what = f"Writing {spec.identifier} {window.month} (Spark reads, transforms and replaces the month)"
    with reporting_progress(spark.session.sparkContext, context.log.info, what):
        write = replace_month(spark.session, spec, rows, window.start, window.end, properties)
    context.log.info(f"{spec.identifier} {window.month}: {write.rows_written} rows, snapshot {write.snapshot_id}")
    return MaterializeResult(
        metadata=table_metadata(
            spec,
            write,
            rows.schema,
            context.partition_key,
            source_file=source_file,
            source_fingerprint=source_fingerprint,
            **metadata,
        ),
        data_version=DataVersion(str(write.snapshot_id)),
    )


def _staged_or_fail(staging: StagingResource, name: str, upstream: str, partition_key: str):
    record = staging.store().record(name)
    if record is None:
        msg = f"{name} is not staged: materialize {upstream} for partition {partition_key} first."
        raise Failure(description=msg, allow_retries=False)
    return record


@asset(
    key=AssetKey([NAMESPACE, RAW_YELLOW.name]),
    deps=[taxi_trip_files],
    partitions_def=monthly_partitions,
    group_name=LAKEHOUSE_GROUP,
    kinds={"spark", "iceberg"},
)
def raw_yellow(context: AssetExecutionContext, spark: SparkResource, staging: StagingResource) -> MaterializeResult:
    """Every TLC yellow-taxi trip as published, one schema for all years, with its source file."""
    window = MonthWindow.from_partition_key(context.partition_key)
    name = trip_staging_name(window.month)
    record = _staged_or_fail(staging, name, "taxi_trip_files", context.partition_key)
    trips = spark.session.read.parquet(staging.store().spark_path(name))
    source_file = name.rsplit("/", 1)[-1]
    rows = normalize_trips(trips, window.month, source_file, record.fingerprint, datetime.now(UTC))
    return _replace_month(
        context, spark, RAW_YELLOW, rows, window, source_file, record.fingerprint, source_rows=record.rows or 0
    )


@asset(
    key=AssetKey([NAMESPACE, RAW_WEATHER.name]),
    deps=[weather_files],
    partitions_def=monthly_partitions,
    group_name=LAKEHOUSE_GROUP,
    kinds={"spark", "iceberg"},
)
def raw_weather(context: AssetExecutionContext, spark: SparkResource, staging: StagingResource) -> MaterializeResult:
    """Daily precipitation and temperature for the five NYC counties, one row per county, day and element."""
    window = MonthWindow.from_partition_key(context.partition_key)
    names = [weather_staging_name(element, window.month) for element in ELEMENTS]
    records = [_staged_or_fail(staging, name, "weather_files", context.partition_key) for name in names]
    paths = [staging.store().spark_path(name) for name in names]
    csv_rows = spark.session.read.schema(CSV_SCHEMA).options(**CSV_OPTIONS).csv(paths)
    source_files = ", ".join(name.rsplit("/", 1)[-1] for name in names)
    fingerprints = ", ".join(record.fingerprint for record in records)
    return _replace_month(context, spark, RAW_WEATHER, weather_long(csv_rows), window, source_files, fingerprints)


def eligible_zones() -> list[int]:
    return [zone.location_id for zone in load_zones() if zone.borough not in UNKNOWN_BOROUGHS]


@asset(
    key=AssetKey([NAMESPACE, HOURLY_ACTUALS.name]),
    deps=[raw_yellow],
    partitions_def=monthly_partitions,
    group_name=LAKEHOUSE_GROUP,
    kinds={"spark", "iceberg"},
)
def yellow_rides_hourly_actuals(
    context: AssetExecutionContext, config: ActualsConfig, spark: SparkResource
) -> MaterializeResult:
    """Rides per pickup hour for the month's busiest zones, with a row (zero if need be) for every hour."""
    window = MonthWindow.from_partition_key(context.partition_key)
    session = spark.session
    trips = month_rows(session, RAW_YELLOW, window.start, window.end)
    if trips.isEmpty():
        msg = (
            f"{RAW_YELLOW.identifier} has no rows for {window.month}: materialize "
            f"{NAMESPACE}/{RAW_YELLOW.name} for partition {context.partition_key} first."
        )
        raise Failure(description=msg, allow_retries=False)
    source_snapshot = last_write(session, RAW_YELLOW).snapshot_id
    sources = trips.select("source_file", "source_fingerprint").distinct().collect()
    source_files = ", ".join(sorted(row["source_file"] for row in sources))
    source_fingerprints = ", ".join(sorted(row["source_fingerprint"] for row in sources))
    rows = hourly_actuals(session, trips, window.start, window.end, eligible_zones(), config.top_zones)
    result = _replace_month(
        context,
        spark,
        HOURLY_ACTUALS,
        rows,
        window,
        source_files,
        source_fingerprints,
        snapshot_properties={f"input.{RAW_YELLOW.identifier}.snapshot-id": str(source_snapshot)},
        hours=window.hours,
        top_zones_requested=config.top_zones,
        raw_yellow_snapshot_id=source_snapshot,
    )
    zones = result.metadata[ROW_COUNT].value // window.hours
    return MaterializeResult(metadata={**result.metadata, "zones": zones}, data_version=result.data_version)
