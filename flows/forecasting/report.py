"""What a training run tells its reader in cards and logs, as plain rows and sentences (no Metaflow)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from flows.forecasting.backtest import BASELINE, ranked
from taxi_core.names import ACTUALS, ZONES
from taxi_core.names import RAW_WEATHER as WEATHER

METRIC_COLUMNS = ["candidate", "mae", "rmse", "wape", "hours"]
RATIO_COLUMNS = ["MAE / naive", "MAE / noise floor", "kind"]
# A table's cell in a card: a name or a figure ("" where there is none).
Cell = str | float
ZONE_HEADERS = [
    "zone",
    "name",
    "borough",
    "champion MAE",
    "naive MAE",
    "noise floor MAE",
    "champion / naive",
    "champion / floor",
    "80% coverage",
    "95% coverage",
]


def metrics_table(
    metrics: pd.DataFrame, floor: Mapping[str, float] | None = None, scenarios: tuple[str, ...] = ()
) -> tuple[list[str], list[list[Cell]]]:
    """Headers and rows of the metrics, best MAE first, each against seasonal naive and the noise floor."""
    ordered = ranked(metrics)[METRIC_COLUMNS]
    naive = _mae_of(metrics, BASELINE)
    rows: list[list[Cell]] = [
        [row["candidate"], round(float(row["mae"]), 3), round(float(row["rmse"]), 3), round(float(row["wape"]), 3),
         int(row["hours"]), _ratio(row["mae"], naive), _ratio(row["mae"], floor["mae"] if floor else None),
         "scenario (not a forecast)" if row["candidate"] in scenarios else "forecast"]
        for row in ordered.to_dict("records")
    ]  # fmt: skip
    return METRIC_COLUMNS + RATIO_COLUMNS, rows


LEVEL_HEADERS = ["level", "borough", "series", "hours", "rides / hour", "MAE", "MAE / naive", "80% coverage",
                 "95% coverage"]  # fmt: skip


def levels_table(by_level: pd.DataFrame) -> tuple[list[str], list[list[Cell]]]:
    """Headers and rows of the held-out figures per level and borough (``levels.by_level``), as a card shows them."""
    rows: list[list[Cell]] = [
        [row["level"], row["borough"], int(row["series"]), int(row["hours"]), round(float(row["rides_per_hour"]), 3),
         round(float(row["mae"]), 3), _round(row["ratio_to_naive"]), round(float(row["coverage_80"]), 3),
         round(float(row["coverage_95"]), 3)]
        for row in by_level.to_dict("records")
    ]  # fmt: skip
    return LEVEL_HEADERS, rows


def zone_table(by_zone: pd.DataFrame, floor_by_zone: pd.DataFrame | None, zones: pd.DataFrame) -> list[list[Cell]]:
    """Per zone over the held-out weeks, worst against naive first, named from the zone lookup: the chosen
    champions against seasonal naive and the noise floor, and the share of actuals inside each interval."""
    names = zones.set_index("location_id")
    floors = floor_by_zone.set_index("pulocationid").mae if floor_by_zone is not None else None
    rows: list[list[Cell]] = []
    for row in by_zone.sort_values("ratio", ascending=False).to_dict("records"):
        zone = int(row["pulocationid"])
        floor = floors.get(zone) if floors is not None else None
        rows.append([zone, names.zone.get(zone, ""), names.borough.get(zone, ""), round(float(row["mae"]), 2),
                     _round(row["naive_mae"]), _round(floor), _ratio(row["mae"], row["naive_mae"]),
                     _ratio(row["mae"], floor), round(float(row["coverage_80"]), 3),
                     round(float(row["coverage_95"]), 3)])  # fmt: skip
    return rows


def _mae_of(metrics: pd.DataFrame, candidate: str) -> float | None:
    found = metrics.loc[metrics.candidate == candidate, "mae"]
    return float(found.iloc[0]) if len(found) else None


def _round(value: float | None) -> float | str:
    return "" if value is None or pd.isna(value) else round(float(value), 2)


def _ratio(value: float, reference: float | None) -> float | str:
    return "" if reference is None or pd.isna(reference) or not reference else round(float(value) / reference, 2)


@dataclass(frozen=True)
class TableRead:
    """One table the load step read: at which snapshot, how many rows, over which window."""

    identifier: str
    snapshot_id: int | None
    rows: int | None
    window: str
    unit: str = "rows"

    def row(self) -> list[str]:
        if self.snapshot_id is None:
            return [self.identifier, "not read", "", self.window]
        return [self.identifier, str(self.snapshot_id), f"{self.rows:,} {self.unit}", self.window]

    def sentence(self) -> str:
        if self.snapshot_id is None:
            return f"{self.identifier} not read ({self.window})"
        return f"{self.rows:,} {self.unit} of {self.identifier} at snapshot {self.snapshot_id} ({self.window})"


INPUT_HEADERS = ["table", "snapshot id", "read", "window"]


def zones_read(zones: int, snapshot_id: int) -> TableRead:
    """The zone lookup, read whole: it names the forecast's zones."""
    return TableRead(ZONES, snapshot_id, zones, "the whole lookup", "zones")


def hour_window(start: pd.Timestamp, end: pd.Timestamp) -> str:
    return f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} New York time, end excluded"


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
