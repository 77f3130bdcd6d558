"""This project's lineage bridge: its naming policy, its flow, its DataHub target, and its sensor."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dagster import AssetKey, SensorDefinition

from bridge.config import DataHubTarget, LineageBridge
from bridge.naming import GlueTables, IcebergTables, Naming
from bridge.sensor import lineage_sensor as bridge_sensor
from forecast_assets.assets.source_files import TRIP_PREFIX, WEATHER_PREFIX
from forecast_assets.assets.training import FORECAST_MODEL, FORECAST_TABLE, training_run_metadata
from taxi_core.catalog import CatalogConfig
from taxi_core.names import FLOW_NAME, LOCATION_NAME, MODEL_NAME, NAMESPACE, TRIP_FILES, WEATHER_FILES
from taxi_core.settings import PROJECT_ROOT, Settings

WORKSPACE_FILE = PROJECT_ROOT / "workspace.yaml"
TITLE = "NYC taxi demand: lineage across Dagster and Metaflow"


def naming(settings: Settings) -> Naming:
    """Tables by their Iceberg location and identifier; staged files by folder; the model in Metaflow's datastore."""
    catalog = CatalogConfig.from_settings(settings)
    if catalog.kind == "glue":
        tables = GlueTables(region=settings.aws_region, account=settings.aws_account_id)
    else:
        tables = IcebergTables(warehouse=catalog.warehouse, catalog_uri=f"iceberg+sqlite://{catalog.sqlite_path}")
    staging = settings.staging_location.rstrip("/")
    return Naming(
        tables=tables,
        table_namespaces=(NAMESPACE,),
        locations={
            TRIP_FILES: f"{staging}/{TRIP_PREFIX}",
            WEATHER_FILES: f"{staging}/{WEATHER_PREFIX}",
            MODEL_NAME: f"{settings.metaflow_root.rstrip('/')}/{FLOW_NAME}/{MODEL_NAME}",
        },
        job_namespace=settings.lineage_namespace,
    )


def datahub_target(settings: Settings) -> DataHubTarget:
    token = settings.datahub_gms_token.get_secret_value() if settings.datahub_gms_token else None
    return DataHubTarget(
        kind=settings.datahub,
        lite_path=settings.state_dir / "datahub" / "lite.sqlite",
        gms_url=settings.datahub_gms_url,
        gms_token=token,
        file=Path(settings.datahub_file) if settings.datahub_file else settings.state_dir / "datahub" / "metadata.json",
    )


def _report_metadata(pathspec: str) -> Mapping[AssetKey, Mapping[str, object]]:
    model, table = training_run_metadata(pathspec)
    return {FORECAST_MODEL: model, FORECAST_TABLE: table}


def taxi_bridge(settings: Settings) -> LineageBridge:
    return LineageBridge(
        naming=naming(settings),
        lineage_dir=settings.path("lineage"),
        flows=(FLOW_NAME,),
        code_location=LOCATION_NAME,
        workspace_file=WORKSPACE_FILE,
        datahub=datahub_target(settings),
        report_metadata=_report_metadata,
    )


def lineage_sensor(settings: Settings) -> SensorDefinition:
    return bridge_sensor(taxi_bridge(settings))
