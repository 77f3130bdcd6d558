"""Asset checks on the Iceberg tables: one property each, with the numbers as metadata."""

import warnings

from dagster import AssetCheckResult, AssetCheckSeverity, PreviewWarning, asset_check
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from forecast_assets.assets.lakehouse_tables import raw_weather, raw_yellow, yellow_rides_hourly_actuals
from forecast_assets.assets.source_files import trip_staging_name, weather_staging_name
from forecast_assets.lakehouse.tables import HOURLY_ACTUALS, RAW_WEATHER, RAW_YELLOW, TableSpec, month_rows
from forecast_assets.months import MonthWindow, monthly_partitions
from forecast_assets.resources import IcebergCatalogResource, SparkResource, StagingResource
from forecast_assets.sources.noaa_format import ELEMENTS, NYC_COUNTY_FIPS, VALUE_RANGES

# Partitioned asset checks are a Dagster preview feature; we rely on it knowingly, once per module load.
warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=PreviewWarning)

# Real TLC files carry a few trips whose clock is off; tolerate them up to this share of the month.
OUTLIER_TOLERANCE = 0.001
RAW_YELLOW_KEYS = ["tpep_pickup_datetime", "pulocationid"]
# TLC publishes no trip id; a repeated record of all of these is a duplicated trip.
TRIP_RECORD = ["vendorid", "tpep_pickup_datetime", "tpep_dropoff_datetime", "pulocationid", "dolocationid",
               "trip_distance", "total_amount"]  # fmt: skip
WEATHER_KEYS = ["county_fips", "date", "element"]
ACTUALS_KEYS = ["pickup_hour", "pulocationid"]


def _partition(spark: SparkResource, spec: TableSpec, partition_key: str) -> tuple[DataFrame, MonthWindow]:
    window = MonthWindow.from_partition_key(partition_key)
    return month_rows(spark.session, spec, window.start, window.end), window


def _iceberg_row_count(catalog: IcebergCatalogResource, spec: TableSpec, window: MonthWindow) -> int:
    """Rows in the month's partition, counted by pyiceberg from table metadata, without Spark."""
    table = catalog.load().load_table(spec.identifier)
    return table.scan(row_filter=spec.iceberg_filter(window.start, window.end)).count()


def null_key_check(asset, spec: TableSpec, keys: list[str], prefix: str):
    @asset_check(
        asset=asset,
        name=f"{prefix}_no_null_keys",
        partitions_def=monthly_partitions,
        blocking=True,
        description=f"Every row has a {' and a '.join(keys)}.",
    )
    def _check(context, spark: SparkResource) -> AssetCheckResult:
        rows, _ = _partition(spark, spec, context.partition_key)
        return _null_key_result(rows, keys)

    return _check


def duplicate_key_check(asset, spec: TableSpec, keys: list[str], prefix: str):
    @asset_check(
        asset=asset,
        name=f"{prefix}_no_duplicate_keys",
        partitions_def=monthly_partitions,
        blocking=True,
        description=f"At most one row per {', '.join(keys)}.",
    )
    def _check(context, spark: SparkResource) -> AssetCheckResult:
        rows, _ = _partition(spark, spec, context.partition_key)
        return _duplicate_key_result(rows, keys)

    return _check


def _null_key_result(rows: DataFrame, keys: list[str]) -> AssetCheckResult:
    counts = rows.select([F.sum(F.col(k).isNull().cast("int")).alias(k) for k in keys]).first()
    nulls = {k: int(counts[k] or 0) for k in keys}
    return AssetCheckResult(passed=sum(nulls.values()) == 0, metadata={f"null_{k}": v for k, v in nulls.items()})


def _duplicate_key_result(rows: DataFrame, keys: list[str]) -> AssetCheckResult:
    duplicates = rows.groupBy(*keys).count().filter("count > 1")
    found = duplicates.agg(F.count(F.lit(1)).alias("keys"), F.sum("count").alias("rows")).first()
    return AssetCheckResult(
        passed=found["keys"] == 0,
        metadata={"duplicate_keys": int(found["keys"]), "rows_with_duplicate_keys": int(found["rows"] or 0)},
    )


@asset_check(asset=raw_yellow, partitions_def=monthly_partitions, blocking=True)
def raw_yellow_row_count_matches_source(
    context, catalog: IcebergCatalogResource, staging: StagingResource
) -> AssetCheckResult:
    """The month's partition holds exactly as many rows as the staged TLC file."""
    window = MonthWindow.from_partition_key(context.partition_key)
    record = staging.store().record(trip_staging_name(window.month))
    source_rows = record.rows if record else -1
    table_rows = _iceberg_row_count(catalog, RAW_YELLOW, window)
    return AssetCheckResult(
        passed=table_rows == source_rows, metadata={"table_rows": table_rows, "source_rows": source_rows}
    )


@asset_check(asset=raw_yellow, partitions_def=monthly_partitions)
def raw_yellow_no_duplicate_trips(context, spark: SparkResource) -> AssetCheckResult:
    """No trip record appears twice (TLC files have a few true duplicates, so this warns)."""
    rows, _ = _partition(spark, RAW_YELLOW, context.partition_key)
    result = _duplicate_key_result(rows, TRIP_RECORD)
    return AssetCheckResult(passed=result.passed, severity=AssetCheckSeverity.WARN, metadata=result.metadata)


@asset_check(asset=raw_yellow, partitions_def=monthly_partitions)
def raw_yellow_pickups_inside_month(context, spark: SparkResource) -> AssetCheckResult:
    """Pickups fall inside the file's month; a few clock errors are tolerated and counted."""
    rows, window = _partition(spark, RAW_YELLOW, context.partition_key)
    pickup = F.col("tpep_pickup_datetime")
    outside = (pickup < F.lit(window.start)) | (pickup >= F.lit(window.end))
    counts = rows.agg(F.count(F.lit(1)).alias("rows"), F.sum(outside.cast("int")).alias("outside")).first()
    total, outliers = int(counts["rows"]), int(counts["outside"] or 0)
    share = outliers / total if total else 0.0
    return AssetCheckResult(
        passed=share <= OUTLIER_TOLERANCE,
        severity=AssetCheckSeverity.WARN,
        metadata={"pickups_outside_month": outliers, "share": share, "tolerated_share": OUTLIER_TOLERANCE},
    )


@asset_check(asset=raw_weather, partitions_def=monthly_partitions, blocking=True)
def raw_weather_row_count_matches_source(
    context, catalog: IcebergCatalogResource, staging: StagingResource
) -> AssetCheckResult:
    """One row per NYC county, day and element in the source files."""
    window = MonthWindow.from_partition_key(context.partition_key)
    staged = [staging.store().record(weather_staging_name(element, window.month)) for element in ELEMENTS]
    expected = len(NYC_COUNTY_FIPS) * window.days * sum(record is not None for record in staged)
    table_rows = _iceberg_row_count(catalog, RAW_WEATHER, window)
    return AssetCheckResult(
        passed=table_rows == expected, metadata={"table_rows": table_rows, "expected_rows": expected}
    )


@asset_check(asset=raw_weather, partitions_def=monthly_partitions)
def raw_weather_values_in_physical_range(context, spark: SparkResource) -> AssetCheckResult:
    """Precipitation and temperatures are physically possible; missing values are counted."""
    rows, _ = _partition(spark, RAW_WEATHER, context.partition_key)
    out_of_range = F.lit(False)
    for element, (low, high) in VALUE_RANGES.items():
        out_of_range = out_of_range | ((F.col("element") == element) & ~F.col("value").between(low, high))
    counts = rows.agg(
        F.sum(out_of_range.cast("int")).alias("out_of_range"),
        F.sum(F.col("value").isNull().cast("int")).alias("missing"),
    ).first()
    bad = int(counts["out_of_range"] or 0)
    return AssetCheckResult(
        passed=bad == 0,
        metadata={
            "values_out_of_range": bad,
            "missing_values": int(counts["missing"] or 0),
            "ranges": str(VALUE_RANGES),
        },
    )


@asset_check(asset=yellow_rides_hourly_actuals, partitions_def=monthly_partitions, blocking=True)
def actuals_every_zone_has_every_hour(context, spark: SparkResource) -> AssetCheckResult:
    """Each zone has one row for every hour of the month, and no hour outside it."""
    rows, window = _partition(spark, HOURLY_ACTUALS, context.partition_key)
    per_zone = rows.groupBy("pulocationid").agg(F.countDistinct("pickup_hour").alias("hours"))
    summary = per_zone.agg(
        F.count(F.lit(1)).alias("zones"),
        F.sum((F.col("hours") != window.hours).cast("int")).alias("incomplete"),
        F.min("hours").alias("fewest"),
    ).first()
    zones, incomplete = int(summary["zones"]), int(summary["incomplete"] or 0)
    return AssetCheckResult(
        passed=zones > 0 and incomplete == 0,
        metadata={
            "zones": zones,
            "zones_missing_hours": incomplete,
            "hours_in_month": window.hours,
            "fewest_hours_for_a_zone": int(summary["fewest"] or 0),
        },
    )


ALL_CHECKS = [
    raw_yellow_row_count_matches_source,
    null_key_check(raw_yellow, RAW_YELLOW, RAW_YELLOW_KEYS, "raw_yellow"),
    raw_yellow_no_duplicate_trips,
    raw_yellow_pickups_inside_month,
    raw_weather_row_count_matches_source,
    null_key_check(raw_weather, RAW_WEATHER, WEATHER_KEYS, "raw_weather"),
    duplicate_key_check(raw_weather, RAW_WEATHER, WEATHER_KEYS, "raw_weather"),
    raw_weather_values_in_physical_range,
    null_key_check(yellow_rides_hourly_actuals, HOURLY_ACTUALS, ACTUALS_KEYS, "actuals"),
    duplicate_key_check(yellow_rides_hourly_actuals, HOURLY_ACTUALS, ACTUALS_KEYS, "actuals"),
    actuals_every_zone_has_every_hour,
]
