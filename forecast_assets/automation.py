"""Jobs and the sensor that brings in each new month as soon as TLC and NOAA publish it."""

from dagster import (
    AssetKey,
    AssetSelection,
    DefaultSensorStatus,
    PartitionsDefinition,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    define_asset_job,
    sensor,
)

from forecast_assets.resources import SourceResource
from forecast_assets.sources.download import source_version
from forecast_assets.sources.noaa_format import ELEMENTS
from taxi_core.months import MonthWindow
from taxi_core.names import TRIP_FILES

monthly_ingestion_job = define_asset_job(
    "monthly_ingestion",
    selection=AssetSelection.groups("sources", "lakehouse"),
    description="Download a month's TLC and NOAA files and rebuild its raw and hourly-actuals partitions.",
)

training_job = define_asset_job(
    "train_forecast_model",
    selection=AssetSelection.groups("training"),
    description="Run the Metaflow training flow and record the new model version and its forecasts.",
)

# Months past the newest ingested one that each tick looks for; older gaps are a backfill's job.
MONTHS_TO_WATCH = 24
NEWEST_WHEN_EMPTY = 2


def months_to_look_for(all_keys: list[str], ingested: set[str]) -> list[str]:
    """Partition keys after the newest ingested one (the newest few when nothing is ingested)."""
    if not ingested:
        return all_keys[-NEWEST_WHEN_EMPTY:]
    newest = max(ingested)
    return [key for key in all_keys if key > newest][:MONTHS_TO_WATCH]


def new_source_months_sensor(months: PartitionsDefinition) -> SensorDefinition:
    @sensor(
        job=monthly_ingestion_job,
        minimum_interval_seconds=3600,
        default_status=DefaultSensorStatus.RUNNING,
        description="Starts monthly_ingestion for a month once both its TLC and NOAA files are published.",
    )
    def new_source_months(context: SensorEvaluationContext, source: SourceResource):
        ingested = context.instance.get_materialized_partitions(AssetKey(TRIP_FILES))
        candidates = months_to_look_for(months.get_partition_keys(), ingested)
        requested = 0
        for key in candidates:
            month = MonthWindow.from_partition_key(key).month
            versions = [source_version(source.trip_url(month))]
            versions += [source_version(source.weather_url(element, month)) for element in ELEMENTS]
            if None in versions:
                continue
            requested += 1
            yield RunRequest(partition_key=key, run_key=f"{key}:{'|'.join(versions)}")
        if not requested:
            yield SkipReason(f"No new month published among {', '.join(candidates) or 'none'}")

    return new_source_months
