"""Asset checks on the forecast table, on the rows of the model version last written: one property each."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetChecksDefinition, asset_check
from pyiceberg.catalog import Catalog

from flows.forecasting.checks import FORECAST_CHECKS as FLOW_CHECKS
from flows.forecasting.checks import CheckOutcome, ForecastCheck, ForecastVersion
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


def _asset_check(check: ForecastCheck) -> AssetChecksDefinition:
    """``check`` as a blocking Dagster asset check on the rows of the model version last written."""

    @asset_check(asset=FORECAST_TABLE, blocking=True, name=check.name, description=check.description)
    def evaluate(context: AssetCheckExecutionContext, catalog: IcebergCatalogResource) -> AssetCheckResult:
        checked = _latest_rows(context, catalog)
        return NOT_MATERIALIZED if checked is None else checked.result(check.judge(checked.rows, checked.version))

    return evaluate


FORECAST_CHECKS = [_asset_check(check) for check in FLOW_CHECKS]
