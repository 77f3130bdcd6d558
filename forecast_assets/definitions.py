"""The Dagster code location: assets, checks, jobs, sensors and resources."""

from __future__ import annotations

from dagster import Definitions, in_process_executor

from forecast_assets.assets.forecast_checks import FORECAST_CHECKS
from forecast_assets.assets.lakehouse_tables import raw_weather, raw_yellow, yellow_rides_hourly_actuals
from forecast_assets.assets.source_files import taxi_trip_files, weather_files
from forecast_assets.assets.training import run_training_flow
from forecast_assets.automation import monthly_ingestion_job, new_source_months, training_job
from forecast_assets.lakehouse.catalog import CatalogConfig
from forecast_assets.lineage_sensor import openlineage_bridge
from forecast_assets.resources import IcebergCatalogResource, SourceResource, SparkResource, StagingResource
from forecast_assets.settings import NOAA_BASE_URL, TLC_BASE_URL, env, state_dir

ASSETS = [taxi_trip_files, weather_files, raw_yellow, raw_weather, yellow_rides_hourly_actuals, run_training_flow]


def resources_from_env() -> dict:
    """Every resource, configured from the environment; the README lists the variables."""
    catalog_config = CatalogConfig.from_env()
    catalog = IcebergCatalogResource(
        kind=catalog_config.kind,
        warehouse=catalog_config.warehouse,
        sqlite_path=catalog_config.sqlite_path,
        aws_region=catalog_config.aws_region,
    )
    return {
        "catalog": catalog,
        "spark": SparkResource(
            catalog=catalog,
            master=env("TAXI_SPARK_MASTER", "local[*]"),
            driver_memory=env("TAXI_SPARK_DRIVER_MEMORY", "4g"),
            jars=env("TAXI_SPARK_JARS", ""),
        ),
        "staging": StagingResource(
            location=env("TAXI_STAGING", str(state_dir() / "staging")),
            s3_region=env("AWS_REGION", ""),
            s3_endpoint_url=env("TAXI_S3_ENDPOINT_URL", ""),
        ),
        "source": SourceResource(
            trip_base_url=env("TAXI_TRIP_BASE_URL", TLC_BASE_URL),
            weather_base_url=env("TAXI_WEATHER_BASE_URL", NOAA_BASE_URL),
        ),
    }


def build_definitions(resources: dict | None = None) -> Definitions:
    # Spark steps share one SparkSession (a JVM start costs ~10 s) when the run stays in one process.
    return Definitions(
        assets=ASSETS,
        asset_checks=FORECAST_CHECKS,
        jobs=[monthly_ingestion_job, training_job],
        sensors=[new_source_months, openlineage_bridge],
        resources=resources if resources is not None else resources_from_env(),
        executor=in_process_executor,
    )


defs = build_definitions()
