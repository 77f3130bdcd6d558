"""Iceberg table assets written by Spark: raw trips, raw weather, hourly actuals.

Each writes its month with write-audit-publish: readers of the published tables, the
downstream assets and the training flow included, never see a month that failed its checks.
"""

from datetime import UTC, datetime

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Failure,
    MetadataValue,
    PartitionsDefinition,
    multi_asset,
)

from bridge.translate.dagster import INPUT_VERSIONS
from forecast_assets.assets.checks import ACTUALS_AUDITS, RAW_WEATHER_AUDITS, RAW_YELLOW_AUDITS, Audit, MonthFacts
from forecast_assets.assets.publishing import CODE_VERSION_PROPERTY, MonthRows, MonthWrite, write_audit_publish
from forecast_assets.assets.source_files import trip_staging_name, weather_staging_name
from forecast_assets.config import ActualsConfig, TableWriteConfig
from forecast_assets.lakehouse.neighbours import neighbour_months
from forecast_assets.lakehouse.publication import published_month, published_snapshot
from forecast_assets.lakehouse.tables import HOURLY_ACTUALS, RAW_WEATHER, RAW_YELLOW, TableSpec, month_rows
from forecast_assets.resources import SparkResource, StagingResource
from forecast_assets.sources.noaa_format import ELEMENTS, NYC_COUNTY_FIPS
from forecast_assets.sources.stage import combined_fingerprint
from forecast_assets.transforms.hourly_actuals import hourly_actuals
from forecast_assets.transforms.raw_weather import CSV_OPTIONS, CSV_SCHEMA, weather_long
from forecast_assets.transforms.raw_yellow import normalize_trips, with_timestamps
from taxi_core.months import MonthWindow
from taxi_core.names import NAMESPACE, TRIP_FILES, WEATHER_FILES
from taxi_core.zones import load_zones

LAKEHOUSE_GROUP = "lakehouse"
UNKNOWN_BOROUGHS = {"Unknown", "N/A"}
# Bump when a transform changes what it writes: a month built by older code is then rewritten.
CODE_VERSIONS = {RAW_YELLOW.name: "2", RAW_WEATHER.name: "2", HOURLY_ACTUALS.name: "2"}


def _table_asset(spec: TableSpec, deps: list, audits: list[Audit], description: str, months: PartitionsDefinition):
    key = AssetKey([NAMESPACE, spec.name])
    return multi_asset(
        name=f"{NAMESPACE}__{spec.name}",
        specs=[
            AssetSpec(
                key,
                deps=deps,
                description=description,
                group_name=LAKEHOUSE_GROUP,
                kinds={"spark", "iceberg"},
                code_version=CODE_VERSIONS[spec.name],
            )
        ],
        check_specs=[audit.spec(key, months) for audit in audits],
        partitions_def=months,
        # Subsettable, so a user can execute the checks alone: they then audit the published month.
        can_subset=True,
    )


def _identity(spec: TableSpec, **inputs: str) -> dict[str, str]:
    return {**inputs, CODE_VERSION_PROPERTY: CODE_VERSIONS[spec.name]}


def _read(versions: dict[AssetKey, str | int | None]) -> dict:
    """What the month is built from, at the versions read, for the lineage bridge (per-run truth)."""
    read = {key.to_user_string(): str(version) for key, version in versions.items() if version is not None}
    return {INPUT_VERSIONS: MetadataValue.json(read)}


def _staged_or_fail(staging: StagingResource, name: str, upstream: str, partition_key: str):
    record = staging.store().record(name)
    if record is None:
        msg = f"{name} is not staged: materialize {upstream} for partition {partition_key} first."
        raise Failure(description=msg, allow_retries=False)
    return record


def raw_yellow(
    context: AssetExecutionContext, config: TableWriteConfig, spark: SparkResource, staging: StagingResource
):
    window = MonthWindow.from_partition_key(context.partition_key)
    name = trip_staging_name(window.month)
    record = _staged_or_fail(staging, name, "taxi_trip_files", context.partition_key)
    source_file = name.rsplit("/", 1)[-1]

    def build_rows():
        published_file = spark.session.read.parquet(staging.store().spark_path(name))
        trips = normalize_trips(
            with_timestamps(published_file), window.month, source_file, record.fingerprint, datetime.now(UTC)
        )
        return MonthRows(trips, {AssetKey(TRIP_FILES): published_file})

    month = MonthWrite(
        spec=RAW_YELLOW,
        audits=RAW_YELLOW_AUDITS,
        facts=MonthFacts(
            window,
            expected_rows=record.rows,
            neighbours=neighbour_months(spark.session, RAW_YELLOW, window, zone_column="pulocationid"),
        ),
        identity=_identity(RAW_YELLOW, **{"source.fingerprint": record.fingerprint}),
        build_rows=build_rows,
        metadata={
            "source_file": source_file,
            "source_fingerprint": record.fingerprint,
            "source_rows": record.rows or 0,
            **_read({AssetKey(TRIP_FILES): record.fingerprint}),
        },
    )
    yield from write_audit_publish(context, spark, month, config.rewrite_unchanged)


def raw_weather(
    context: AssetExecutionContext, config: TableWriteConfig, spark: SparkResource, staging: StagingResource
):
    window = MonthWindow.from_partition_key(context.partition_key)
    names = [weather_staging_name(element, window.month) for element in ELEMENTS]
    records = [_staged_or_fail(staging, name, "weather_files", context.partition_key) for name in names]
    fingerprints = ", ".join(record.fingerprint for record in records)

    def build_rows():
        paths = [staging.store().spark_path(name) for name in names]
        csv_rows = spark.session.read.schema(CSV_SCHEMA).options(**CSV_OPTIONS).csv(paths)
        return MonthRows(weather_long(csv_rows), {AssetKey(WEATHER_FILES): csv_rows})

    month = MonthWrite(
        spec=RAW_WEATHER,
        audits=RAW_WEATHER_AUDITS,
        facts=MonthFacts(window, expected_rows=len(NYC_COUNTY_FIPS) * window.days * len(records)),
        identity=_identity(RAW_WEATHER, **{"source.fingerprint": fingerprints}),
        build_rows=build_rows,
        metadata={
            "source_file": ", ".join(name.rsplit("/", 1)[-1] for name in names),
            "source_fingerprint": fingerprints,
            **_read({AssetKey(WEATHER_FILES): combined_fingerprint([record.fingerprint for record in records])}),
        },
    )
    yield from write_audit_publish(context, spark, month, config.rewrite_unchanged)


def eligible_zones() -> list[int]:
    return [zone.location_id for zone in load_zones() if zone.borough not in UNKNOWN_BOROUGHS]


def yellow_rides_hourly_actuals(context: AssetExecutionContext, config: ActualsConfig, spark: SparkResource):
    window = MonthWindow.from_partition_key(context.partition_key)
    session = spark.session
    trips_month = published_month(session, RAW_YELLOW, context.partition_key)
    if trips_month is None and context.selected_asset_keys:
        msg = (
            f"{RAW_YELLOW.identifier} has no published rows for {window.month}: materialize "
            f"{NAMESPACE}/{RAW_YELLOW.name} for partition {context.partition_key} first."
        )
        raise Failure(description=msg, allow_retries=False)
    trips_snapshot = published_snapshot(session, RAW_YELLOW)

    def build_rows():
        trips = month_rows(session, RAW_YELLOW, window.start, window.end)
        actuals = hourly_actuals(session, trips, window.start, window.end, eligible_zones(), config.top_zones)
        return MonthRows(actuals, {AssetKey([NAMESPACE, RAW_YELLOW.name]): trips})

    month = MonthWrite(
        spec=HOURLY_ACTUALS,
        audits=ACTUALS_AUDITS,
        facts=MonthFacts(window),
        identity=_identity(
            HOURLY_ACTUALS,
            **{
                # The raw month it counts, not raw_yellow's head: publishing another month is no change.
                f"input.{RAW_YELLOW.identifier}.month-snapshot-id": str(trips_month.snapshot_id if trips_month else ""),
                "actuals.top-zones": str(config.top_zones),
            },
        ),
        build_rows=build_rows,
        metadata={
            "hours": window.hours,
            "top_zones_requested": config.top_zones,
            "raw_yellow_snapshot_id": trips_snapshot,
            "source_fingerprint": (trips_month.properties.get("source.fingerprint", "") if trips_month else ""),
            # The raw month counted (the snapshot that last wrote it), not raw_yellow's head.
            **_read({AssetKey([NAMESPACE, RAW_YELLOW.name]): trips_month.snapshot_id if trips_month else None}),
        },
    )
    yield from write_audit_publish(context, spark, month, config.rewrite_unchanged)


def table_assets(months: PartitionsDefinition) -> list[AssetsDefinition]:
    """The Spark-written tables, partitioned by ``months``, each with its audits."""
    return [
        _table_asset(
            RAW_YELLOW,
            [AssetKey(TRIP_FILES)],
            RAW_YELLOW_AUDITS,
            "Every TLC yellow-taxi trip as published, one schema for all years, with its source file.",
            months,
        )(raw_yellow),
        _table_asset(
            RAW_WEATHER,
            [AssetKey(WEATHER_FILES)],
            RAW_WEATHER_AUDITS,
            "Daily precipitation and temperature for the five NYC counties, one row per county, day and element.",
            months,
        )(raw_weather),
        _table_asset(
            HOURLY_ACTUALS,
            [AssetKey([NAMESPACE, RAW_YELLOW.name])],
            ACTUALS_AUDITS,
            "Rides per pickup hour for the month's busiest zones, with a row (zero if need be) for every hour.",
            months,
        )(yellow_rides_hourly_actuals),
    ]
