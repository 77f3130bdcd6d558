"""What a training run tells its reader in cards and logs, as plain rows and sentences (no Metaflow)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from flows.forecasting.backtest import ranked
from flows.forecasting.tables import ACTUALS, WEATHER

METRIC_COLUMNS = ["candidate", "mae", "rmse", "wape", "hours"]


def metrics_table(metrics: pd.DataFrame) -> tuple[list[str], list[list]]:
    """Headers and rows of the metrics, best MAE first, rounded for reading; no index column."""
    ordered = ranked(metrics)[METRIC_COLUMNS]
    rows = [
        [row.candidate, round(float(row.mae), 3), round(float(row.rmse), 3), round(float(row.wape), 3), int(row.hours)]
        for row in ordered.itertuples(index=False)
    ]
    return METRIC_COLUMNS, rows


@dataclass(frozen=True)
class TableRead:
    """One table the load step read: at which snapshot, how many rows, over which window."""

    identifier: str
    snapshot_id: int | None
    rows: int | None
    window: str
    unit: str = "rows"

    def row(self) -> list:
        if self.snapshot_id is None:
            return [self.identifier, "not read", "", self.window]
        return [self.identifier, str(self.snapshot_id), f"{self.rows:,} {self.unit}", self.window]

    def sentence(self) -> str:
        if self.snapshot_id is None:
            return f"{self.identifier} not read ({self.window})"
        return f"{self.rows:,} {self.unit} of {self.identifier} at snapshot {self.snapshot_id} ({self.window})"


INPUT_HEADERS = ["table", "snapshot id", "read", "window"]


def hour_window(start: pd.Timestamp, end: pd.Timestamp) -> str:
    return f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC, end excluded"


def day_window(start: pd.Timestamp, end: pd.Timestamp) -> str:
    return f"{start:%Y-%m-%d} to {end:%Y-%m-%d}, end excluded"


def inputs_read(
    start: pd.Timestamp,
    end: pd.Timestamp,
    actuals_rows: int,
    actuals_snapshot_id: int,
    weather: pd.DataFrame | None,
    weather_snapshot_id: int | None,
) -> tuple[TableRead, TableRead]:
    """What the load step read from the actuals and the weather table (``weather`` is None when not read)."""
    actuals = TableRead(ACTUALS, actuals_snapshot_id, actuals_rows, hour_window(start, end))
    if weather is None:
        return actuals, TableRead(WEATHER, None, None, "use_weather is false")
    return actuals, TableRead(WEATHER, weather_snapshot_id, len(weather), day_window(start, end), "county-days")
