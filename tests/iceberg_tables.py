"""Read the published Iceberg tables with pyiceberg, independently of Spark."""

from __future__ import annotations

import pandas as pd
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

from forecast_assets.source_specs.registry import registered_sources
from forecast_assets.source_specs.spec import SourceSpec
from forecast_assets.source_specs.tlc_trips import TripSource
from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.settings import load_settings

ACTUALS = "nyc_taxi.yellow_rides_hourly_actuals"
MONTHLY_SOURCES = [source for source in registered_sources() if source.monthly]
# The tables a month of the monthly ingestion writes: every monthly source's, and the actuals.
TABLES = [*(source.table.identifier for source in MONTHLY_SOURCES), ACTUALS]


def _time_column(source: SourceSpec) -> str:
    """The column whose times place a row in its month (a trip's pickup, a weather value's date)."""
    return source.layout.pickup if isinstance(source, TripSource) else str(source.table.month_column)


MONTH_COLUMNS = {source.table.identifier: _time_column(source) for source in MONTHLY_SOURCES} | {ACTUALS: "pickup_hour"}


def month_filter(column: str, month: str):
    start = pd.Timestamp(f"{month}-01")  # New York wall-clock time, as the tables hold it
    end = start + pd.offsets.MonthBegin(1)
    if column == "date":
        return And(GreaterThanOrEqual(column, start.date().isoformat()), LessThan(column, end.date().isoformat()))
    return And(GreaterThanOrEqual(column, start.isoformat()), LessThan(column, end.isoformat()))


def table(name: str):
    return open_catalog(CatalogConfig.from_settings(load_settings())).load_table(name)


def published_snapshots() -> dict[str, int]:
    """Each table's current ``main`` snapshot: what every reader sees."""
    return {name: table(name).current_snapshot().snapshot_id for name in TABLES}


def branches(name: str) -> dict[str, int]:
    return {ref: r.snapshot_id for ref, r in table(name).refs().items() if ref != "main"}
