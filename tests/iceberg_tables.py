"""Read the published Iceberg tables with pyiceberg, independently of Spark."""

from __future__ import annotations

import pandas as pd
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.settings import load_settings

TABLES = ["nyc_taxi.raw_yellow", "nyc_taxi.raw_weather", "nyc_taxi.yellow_rides_hourly_actuals"]
MONTH_COLUMNS = {
    "nyc_taxi.raw_yellow": "tpep_pickup_datetime",
    "nyc_taxi.raw_weather": "date",
    "nyc_taxi.yellow_rides_hourly_actuals": "pickup_hour",
}


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
