"""Asset checks on the forecast table, on the rows of the model version last written: one property each."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from dagster import AssetCheckExecutionContext, AssetCheckResult, asset_check
from pyiceberg.catalog import Catalog

from flows.forecasting.checks import (
    CheckOutcome,
    ForecastVersion,
    horizon_coverage,
    non_negative_forecasts,
    sane_intervals,
    unique_forecast_keys,
)
from forecast_assets.assets.table_metadata import SNAPSHOT_ID, snapshot_text
from forecast_assets.assets.training import FORECAST_START, FORECAST_TABLE, HORIZON_HOURS, METAFLOW_RUN_ID, ZONES
from forecast_assets.resources import IcebergCatalogResource


def _from_metadata(metadata: Mapping[str, Any]) -> ForecastVersion:
    values = {key: value.value for key, value in metadata.items()}
    return ForecastVersion(
        metaflow_run_id=str(values[METAFLOW_RUN_ID]),
        start=pd.Timestamp(values[FORECAST_START]),  # New York wall-clock time, as the table's hours
        horizon_hours=int(values[HORIZON_HOURS]),
        zones=int(values[ZONES]),
    )


def forecast_rows(catalog: Catalog, version: ForecastVersion) -> pd.DataFrame:
    from flows.forecasting.tables import read_forecasts  # pyiceberg readers live with the flow that writes

    return read_forecasts(catalog, version.metaflow_run_id)


@dataclass(frozen=True)
class _Checked:
    """The rows of the model version last written, what they must cover, and the table version that holds them."""

    rows: pd.DataFrame
    version: ForecastVersion
    snapshot_id: int | None

    def result(self, outcome: CheckOutcome) -> AssetCheckResult:
        """The outcome, saying which version of the table it checked (for the lineage of the check's run)."""
        checked = {SNAPSHOT_ID: snapshot_text(self.snapshot_id)} if self.snapshot_id is not None else {}
        return AssetCheckResult(passed=outcome.passed, metadata={**outcome.metadata, **checked})


def _latest_rows(context: AssetCheckExecutionContext, catalog: IcebergCatalogResource) -> _Checked | None:
    event = context.instance.get_latest_materialization_event(FORECAST_TABLE)
    if event is None or event.asset_materialization is None:
        return None
    metadata = event.asset_materialization.metadata
    try:
        version = _from_metadata(metadata)
    except KeyError:  # materialized before the table's metadata said what its rows must cover
        return None
    snapshot = metadata.get(SNAPSHOT_ID)
    return _Checked(forecast_rows(catalog.load(), version), version, None if snapshot is None else int(snapshot.value))


NOT_MATERIALIZED = AssetCheckResult(
    passed=False,
    description=(
        "nyc_taxi/yellow_rides_hourly_forecast has no materialization that names its Metaflow run, start and "
        "horizon: run the training job."
    ),
)


@asset_check(asset=FORECAST_TABLE, blocking=True)
def forecast_every_zone_has_every_horizon_hour(
    context: AssetCheckExecutionContext, catalog: IcebergCatalogResource
) -> AssetCheckResult:
    """The version's rows hold every forecast zone for every hour of the horizon, and no other hour."""
    checked = _latest_rows(context, catalog)
    return NOT_MATERIALIZED if checked is None else checked.result(horizon_coverage(checked.rows, checked.version))


@asset_check(asset=FORECAST_TABLE, blocking=True)
def forecast_no_negative_rides(
    context: AssetCheckExecutionContext, catalog: IcebergCatalogResource
) -> AssetCheckResult:
    """Every forecast of the version is a number of rides, zero or more."""
    checked = _latest_rows(context, catalog)
    return NOT_MATERIALIZED if checked is None else checked.result(non_negative_forecasts(checked.rows))


@asset_check(asset=FORECAST_TABLE, blocking=True)
def forecast_no_duplicate_keys(
    context: AssetCheckExecutionContext, catalog: IcebergCatalogResource
) -> AssetCheckResult:
    """At most one row of the version per pickup_hour and pulocationid."""
    checked = _latest_rows(context, catalog)
    return NOT_MATERIALIZED if checked is None else checked.result(unique_forecast_keys(checked.rows))


@asset_check(asset=FORECAST_TABLE, blocking=True)
def forecast_intervals_hold_the_forecast(
    context: AssetCheckExecutionContext, catalog: IcebergCatalogResource
) -> AssetCheckResult:
    """Every row's bounds are there, none below zero, the 80% interval inside the 95% one and holding the forecast."""
    checked = _latest_rows(context, catalog)
    return NOT_MATERIALIZED if checked is None else checked.result(sane_intervals(checked.rows))


FORECAST_CHECKS = [
    forecast_every_zone_has_every_horizon_hour,
    forecast_no_negative_rides,
    forecast_no_duplicate_keys,
    forecast_intervals_hold_the_forecast,
]
