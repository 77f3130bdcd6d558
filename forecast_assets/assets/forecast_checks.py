"""Asset checks on the forecast table, on the rows of the model version last written: one property each."""

from dataclasses import dataclass

import pandas as pd
from dagster import AssetCheckExecutionContext, AssetCheckResult, asset_check
from pyiceberg.catalog import Catalog

from forecast_assets.assets.training import FORECAST_START, FORECAST_TABLE, HORIZON_HOURS, METAFLOW_RUN_ID, ZONES
from forecast_assets.resources import IcebergCatalogResource

FORECAST_KEYS = ["pickup_hour", "pulocationid"]


@dataclass(frozen=True)
class ForecastVersion:
    """The rows one materialization wrote (a Metaflow run's) and what they must cover."""

    metaflow_run_id: str
    start: pd.Timestamp
    horizon_hours: int
    zones: int

    @classmethod
    def from_metadata(cls, metadata: dict) -> "ForecastVersion":
        values = {key: value.value for key, value in metadata.items()}
        return cls(
            metaflow_run_id=str(values[METAFLOW_RUN_ID]),
            start=pd.Timestamp(values[FORECAST_START]).tz_localize("UTC"),
            horizon_hours=int(values[HORIZON_HOURS]),
            zones=int(values[ZONES]),
        )

    def hours(self) -> pd.DatetimeIndex:
        return pd.date_range(self.start, periods=self.horizon_hours, freq="h")


def forecast_rows(catalog: Catalog, version: ForecastVersion) -> pd.DataFrame:
    from flows.forecasting.tables import read_forecasts  # pyiceberg readers live with the flow that writes

    return read_forecasts(catalog, version.metaflow_run_id)


def horizon_coverage(rows: pd.DataFrame, version: ForecastVersion) -> AssetCheckResult:
    cells = rows[FORECAST_KEYS].drop_duplicates()
    inside = cells[cells.pickup_hour.isin(version.hours())]
    zones = int(cells.pulocationid.nunique())
    missing_zones = max(version.zones - zones, 0)
    missing = missing_zones * version.horizon_hours + zones * version.horizon_hours - len(inside)
    outside = len(cells) - len(inside)
    return AssetCheckResult(
        passed=zones == version.zones and missing == 0 and outside == 0,
        metadata={
            "zones": zones,
            "expected_zones": version.zones,
            "horizon_hours": version.horizon_hours,
            "zone_hours_missing": missing,
            "zone_hours_outside_horizon": outside,
            "metaflow_run_id": version.metaflow_run_id,
        },
    )


def non_negative_forecasts(rows: pd.DataFrame) -> AssetCheckResult:
    rides = rows.forecasted_total_rides
    negative, missing = int((rides < 0).sum()), int(rides.isna().sum())
    return AssetCheckResult(
        passed=negative == 0 and missing == 0 and len(rows) > 0,
        metadata={
            "rows": len(rows),
            "negative_forecasts": negative,
            "missing_forecasts": missing,
            "smallest_forecast": float(rides.min()) if rides.notna().any() else 0.0,
        },
    )


def unique_forecast_keys(rows: pd.DataFrame) -> AssetCheckResult:
    repeated = rows[rows.duplicated(FORECAST_KEYS, keep=False)]
    keys = len(repeated[FORECAST_KEYS].drop_duplicates())
    return AssetCheckResult(
        passed=keys == 0, metadata={"duplicate_keys": keys, "rows_with_duplicate_keys": len(repeated)}
    )


def _latest_rows(context: AssetCheckExecutionContext, catalog: IcebergCatalogResource):
    event = context.instance.get_latest_materialization_event(FORECAST_TABLE)
    if event is None or event.asset_materialization is None:
        return None, None
    try:
        version = ForecastVersion.from_metadata(event.asset_materialization.metadata)
    except KeyError:  # materialized before the table's metadata said what its rows must cover
        return None, None
    return forecast_rows(catalog.load(), version), version


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
    rows, version = _latest_rows(context, catalog)
    return NOT_MATERIALIZED if rows is None else horizon_coverage(rows, version)


@asset_check(asset=FORECAST_TABLE, blocking=True)
def forecast_no_negative_rides(
    context: AssetCheckExecutionContext, catalog: IcebergCatalogResource
) -> AssetCheckResult:
    """Every forecast of the version is a number of rides, zero or more."""
    rows, _ = _latest_rows(context, catalog)
    return NOT_MATERIALIZED if rows is None else non_negative_forecasts(rows)


@asset_check(asset=FORECAST_TABLE, blocking=True)
def forecast_no_duplicate_keys(
    context: AssetCheckExecutionContext, catalog: IcebergCatalogResource
) -> AssetCheckResult:
    """At most one row of the version per pickup_hour and pulocationid."""
    rows, _ = _latest_rows(context, catalog)
    return NOT_MATERIALIZED if rows is None else unique_forecast_keys(rows)


FORECAST_CHECKS = [forecast_every_zone_has_every_horizon_hour, forecast_no_negative_rides, forecast_no_duplicate_keys]
