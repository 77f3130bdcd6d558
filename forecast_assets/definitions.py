"""The Dagster code location: assets, checks, jobs, sensors and resources, built from the project's settings."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TypedDict

from dagster import (
    AssetSpec,
    Definitions,
    MetadataValue,
    MonthlyPartitionsDefinition,
    definitions,
    in_process_executor,
    map_asset_specs,
)

from forecast_assets.assets.forecast_checks import FORECAST_CHECKS
from forecast_assets.assets.forecast_loop import (
    accuracy_checks,
    daily_forecast_asset,
    daily_forecast_checks,
    daily_partitions,
    forecast_accuracy_asset,
)
from forecast_assets.assets.lakehouse_tables import actuals_asset, source_table_asset
from forecast_assets.assets.source_files import source_file_asset
from forecast_assets.assets.training import run_training_flow
from forecast_assets.automation import ingestion_jobs, source_sensors, training_job
from forecast_assets.dagster_previews import previews_relied_on
from forecast_assets.lakehouse.spark_session import SparkOptions
from forecast_assets.loop_automation import (
    accuracy_job,
    daily_forecast_job,
    daily_forecast_schedule,
    score_forecasts_sensor,
)
from forecast_assets.resources import IcebergCatalogResource, SourceResource, SparkResource, StagingResource
from forecast_assets.source_specs.registry import registered_sources
from taxi_core.catalog import CatalogConfig
from taxi_core.months import MonthWindow
from taxi_core.settings import Settings, SettingsError, load_settings
from taxi_core.tool_env import apply_tool_environment


def monthly_partitions(settings: Settings) -> MonthlyPartitionsDefinition:
    """From the first month to the last one the source has (``TAXI_LAST_MONTH``), or to now when it is unset.

    A set that ends where the data ends is what Dagster's launch dialog shows whole: it opens on the last
    90 days only when some partitions fall inside them.
    """
    if not settings.last_month:
        return MonthlyPartitionsDefinition(start_date=settings.first_month)
    end = MonthWindow.from_partition_key(settings.last_month).end
    return MonthlyPartitionsDefinition(start_date=settings.first_month, end_date=f"{end:%Y-%m-%d}")


class Resources(TypedDict):
    catalog: IcebergCatalogResource
    spark: SparkResource
    staging: StagingResource
    source: SourceResource


def resources_for(settings: Settings) -> Resources:
    """Every resource, configured from the settings; the README lists the variables."""
    catalog = CatalogConfig.from_settings(settings)
    return {
        "catalog": IcebergCatalogResource.of(catalog),
        "spark": SparkResource.of(catalog, SparkOptions.from_settings(settings), settings.state_dir),
        "staging": StagingResource.of(settings),
        "source": SourceResource.of(settings),
    }


def build_definitions(settings: Settings, resources: Mapping[str, object] | None = None) -> Definitions:
    with previews_relied_on():
        return _definitions(settings, resources)


def _definitions(settings: Settings, resources: Mapping[str, object] | None) -> Definitions:
    # Metaflow and DataHub read their configuration when first imported: the bridge is imported once
    # the tool environment is in place (see defs()).
    from bridge.run.sensor import lineage_sensor
    from forecast_assets.lineage import asset_lineage, lineage_markdown, taxi_bridge

    def with_lineage(spec: AssetSpec) -> AssetSpec:
        lineage = asset_lineage(settings, spec.key.path)
        drawn = lineage.picture.read_bytes() if lineage.picture.is_file() else None
        return spec.merge_attributes(metadata={"lineage": MetadataValue.md(lineage_markdown(lineage, drawn))})

    months, days = monthly_partitions(settings), daily_partitions(settings)
    sources = registered_sources()
    assets = [
        *(source_file_asset(source, months) for source in sources),
        *(source_table_asset(source, months) for source in sources),
        actuals_asset(months),
        run_training_flow,
        daily_forecast_asset(days),
        forecast_accuracy_asset(days),
    ]
    # Spark steps share one SparkSession (a JVM start costs ~10 s) when the run stays in one process.
    return Definitions(
        assets=map_asset_specs(with_lineage, assets),
        asset_checks=[*FORECAST_CHECKS, *daily_forecast_checks(days), *accuracy_checks(days)],
        jobs=[*ingestion_jobs(sources), training_job, daily_forecast_job, accuracy_job],
        schedules=[daily_forecast_schedule()],
        sensors=[
            *source_sensors(sources, months, assets),
            score_forecasts_sensor(days),
            lineage_sensor(taxi_bridge(settings)),
        ],
        resources=resources if resources is not None else resources_for(settings),
        executor=in_process_executor,
    )


@definitions
def defs() -> Definitions:
    """What ``workspace.yaml`` loads: the definitions for the settings of the loading process."""
    try:
        settings = load_settings()
    except SettingsError:
        # A setting is wrong, not the code: the loader's stack (some 50 lines in `dagster job execute`, in the
        # UI's code location error) would bury the one line that names the setting and the fix.
        sys.tracebacklimit = 0
        raise
    apply_tool_environment(settings)
    return build_definitions(settings)
