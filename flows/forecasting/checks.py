"""The forecast table's checks, one property each, on the rows one model version wrote: pure pandas.

The flow evaluates them on the rows it wrote (a run from the shell reports them to Dagster as asset
check evaluations); Dagster's asset checks evaluate the same functions on the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from taxi_core import figures

FORECAST_KEYS = ["pickup_hour", "pulocationid"]
EVERY_ZONE_EVERY_HOUR = "forecast_every_zone_has_every_horizon_hour"
NO_NEGATIVE_RIDES = "forecast_no_negative_rides"
NO_DUPLICATE_KEYS = "forecast_no_duplicate_keys"
INTERVALS_HOLD_THE_FORECAST = "forecast_intervals_hold_the_forecast"
DAILY_INTERVALS_HOLD = "daily_forecast_intervals_hold_the_forecast"
# Narrowest first: each interval lies inside the next, the forecast inside the narrowest.
NESTED_BOUNDS = ["lower_95", "lower_80", "forecasted_total_rides", "upper_80", "upper_95"]


@dataclass(frozen=True)
class ForecastVersion:
    """What the rows of one model version (a Metaflow run's) must cover; ``start`` is New York wall-clock time."""

    metaflow_run_id: str
    start: pd.Timestamp
    horizon_hours: int
    zones: int

    def hours(self) -> pd.DatetimeIndex:
        return pd.date_range(self.start, periods=self.horizon_hours, freq="h")


# A check's figures, as Dagster's check results and the flow's artifact carry them.
CheckMetadata = dict[str, str | int | float]


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    metadata: CheckMetadata = field(default_factory=dict)

    def to_dict(self) -> dict[str, str | bool | CheckMetadata]:
        return {"name": self.name, "passed": self.passed, "metadata": self.metadata}


def horizon_coverage(rows: pd.DataFrame, version: ForecastVersion) -> CheckOutcome:
    """The version's rows hold every forecast zone for every hour of the horizon, and no other hour."""
    cells = rows[FORECAST_KEYS].drop_duplicates()
    hours = pd.to_datetime(cells.pickup_hour)
    # Rows an older version wrote hold the wall-clock hour labelled UTC: that label dropped, it is the hour again.
    hours = hours if hours.dt.tz is None else hours.dt.tz_convert("UTC").dt.tz_localize(None)
    inside = cells[hours.isin(version.hours()).to_numpy()]
    zones = int(cells.pulocationid.nunique())
    missing_zones = max(version.zones - zones, 0)
    missing = missing_zones * version.horizon_hours + zones * version.horizon_hours - len(inside)
    outside = len(cells) - len(inside)
    return CheckOutcome(
        EVERY_ZONE_EVERY_HOUR,
        passed=zones == version.zones and missing == 0 and outside == 0,
        metadata={
            "zones": zones,
            "expected_zones": version.zones,
            "horizon_hours": version.horizon_hours,
            "zone_hours_missing": int(missing),
            "zone_hours_outside_horizon": int(outside),
            "metaflow_run_id": version.metaflow_run_id,
        },
    )


def non_negative_forecasts(rows: pd.DataFrame) -> CheckOutcome:
    """Every forecast of the version is a number of rides, zero or more."""
    rides = rows.forecasted_total_rides
    negative, missing = int((rides < 0).sum()), int(rides.isna().sum())
    return CheckOutcome(
        NO_NEGATIVE_RIDES,
        passed=negative == 0 and missing == 0 and len(rows) > 0,
        metadata={
            "rows": len(rows),
            "negative_forecasts": negative,
            "missing_forecasts": missing,
            "smallest_forecast": figures.rides(rides.min()) if rides.notna().any() else 0.0,
        },
    )


def unique_forecast_keys(rows: pd.DataFrame) -> CheckOutcome:
    """At most one row of the version per pickup_hour and pulocationid."""
    repeated = rows[rows.duplicated(FORECAST_KEYS, keep=False)]
    keys = len(repeated[FORECAST_KEYS].drop_duplicates())
    return CheckOutcome(
        NO_DUPLICATE_KEYS,
        passed=keys == 0,
        metadata={"duplicate_keys": keys, "rows_with_duplicate_keys": len(repeated)},
    )


def sane_intervals(rows: pd.DataFrame) -> CheckOutcome:
    """Every row's bounds are there, none below zero, the 80% interval inside the 95% one and holding the forecast."""
    present = [column for column in NESTED_BOUNDS if column in rows]
    missing_columns = sorted(set(NESTED_BOUNDS) - set(present))
    bounds = rows.reindex(columns=NESTED_BOUNDS)
    missing = int(bounds.isna().any(axis=1).sum())
    ordered = pd.Series(True, index=rows.index)
    for narrower, wider in zip(NESTED_BOUNDS, NESTED_BOUNDS[1:], strict=False):
        ordered &= bounds[narrower] <= bounds[wider]
    out_of_order = int((~ordered & bounds.notna().all(axis=1)).sum())
    negative = int((bounds["lower_95"] < 0).sum())
    width = (bounds.upper_80 - bounds.lower_80).median() if len(rows) else 0.0
    return CheckOutcome(
        INTERVALS_HOLD_THE_FORECAST,
        passed=not missing_columns and missing == 0 and out_of_order == 0 and negative == 0 and len(rows) > 0,
        metadata={
            "rows": len(rows),
            "missing_columns": ", ".join(missing_columns),
            "rows_missing_a_bound": missing,
            "rows_out_of_order": out_of_order,
            "negative_lower_bounds": negative,
            "median_80_width": figures.rides(width) if pd.notna(width) else 0.0,
        },
    )


def daily_intervals_hold(rows: pd.DataFrame) -> CheckOutcome:
    """A day's forecast rows (the daily table's), at every level: each row's bounds there, none below zero, the
    forecast inside its 80% interval and that inside the 95% one; the failing rows counted per level."""
    found = sane_intervals(rows.rename(columns={"forecast": "forecasted_total_rides"}))
    bounds = rows.rename(columns={"forecast": "forecasted_total_rides"}).reindex(columns=NESTED_BOUNDS)
    ordered = pd.Series(True, index=rows.index)
    for narrower, wider in zip(NESTED_BOUNDS, NESTED_BOUNDS[1:], strict=False):
        ordered &= bounds[narrower] <= bounds[wider] + 1e-9
    bad = ~ordered | bounds.isna().any(axis=1) | (bounds.lower_95 < 0)
    per_level = {f"failing_rows_{level}": int(bad[rows.level == level].sum()) for level in ("zone", "borough", "city")}
    passed = len(rows) > 0 and not bad.any()
    failure = ""
    if not passed:
        worst = rows[bad].iloc[0]
        failure = (
            f"{int(bad.sum())} of {len(rows)} rows break lower_95 <= lower_80 <= forecast <= upper_80 <= upper_95 "
            f"(first: {worst['series']} at {worst['pickup_hour']}: forecast {worst['forecast']:.3f}, 80% "
            f"[{worst['lower_80']:.3f}, {worst['upper_80']:.3f}], "
            f"95% [{worst['lower_95']:.3f}, {worst['upper_95']:.3f}])"
        )
    metadata = {**found.metadata, **per_level, "failure": failure}
    return CheckOutcome(DAILY_INTERVALS_HOLD, passed=passed, metadata=metadata)


@dataclass(frozen=True)
class ForecastCheck:
    """One check of the forecast table: its name, what it holds the rows to, and the pure judge of one version's
    rows. The flow's ``write`` step runs the judges; Dagster's asset checks are built from the same list."""

    name: str
    description: str
    judge: Callable[[pd.DataFrame, ForecastVersion], CheckOutcome]


FORECAST_CHECKS = (
    ForecastCheck(
        EVERY_ZONE_EVERY_HOUR,
        "The version's rows hold every forecast zone for every hour of the horizon, and no other hour.",
        horizon_coverage,
    ),
    ForecastCheck(
        NO_NEGATIVE_RIDES,
        "Every forecast of the version is a number of rides, zero or more.",
        lambda rows, version: non_negative_forecasts(rows),
    ),
    ForecastCheck(
        NO_DUPLICATE_KEYS,
        "At most one row of the version per pickup_hour and pulocationid.",
        lambda rows, version: unique_forecast_keys(rows),
    ),
    ForecastCheck(
        INTERVALS_HOLD_THE_FORECAST,
        "Every row's bounds are there, none below zero, the 80% interval inside the 95% one and holding the forecast.",
        lambda rows, version: sane_intervals(rows),
    ),
)


def forecast_checks(rows: pd.DataFrame, version: ForecastVersion) -> list[CheckOutcome]:
    """Every check of the forecast table, on one version's rows."""
    return [check.judge(rows, version) for check in FORECAST_CHECKS]
