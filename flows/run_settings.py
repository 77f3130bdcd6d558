"""The training run's settings, validated once with messages that name the parameter."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from flows.forecasting.features import CANDIDATE_LAGS
from flows.forecasting.models import CANDIDATES, needs_weather


@dataclass(frozen=True)
class RunSettings:
    as_of: pd.Timestamp
    lookback_days: int
    backtest_days: int
    horizon_hours: int
    zones: int
    use_weather: bool
    candidates: list[str]

    @property
    def window_start(self) -> pd.Timestamp:
        return self.as_of - pd.Timedelta(days=self.lookback_days)

    @property
    def forecast_end(self) -> pd.Timestamp:
        return self.as_of + pd.Timedelta(hours=self.horizon_hours)

    def describe(self) -> str:
        return (
            f"as of {self.as_of}, {self.lookback_days} days back, {self.backtest_days} backtest days, "
            f"{self.horizon_hours} h ahead, {self.zones} zones, candidates {', '.join(self.candidates)}"
        )


def resolve_settings(
    as_of: str,
    lookback_days: int,
    backtest_days: int,
    horizon_hours: int,
    zones: int,
    use_weather: bool,
    candidates: str,
) -> RunSettings:
    try:
        origin = pd.Timestamp(as_of).tz_localize(None).floor("h")
    except ValueError as err:
        msg = f"--as_of {as_of!r} is not a time; use YYYY-MM-DD or YYYY-MM-DDTHH"
        raise ValueError(msg) from err
    if not 1 <= horizon_hours <= 168:
        msg = f"--horizon_hours {horizon_hours} must be between 1 and 168"
        raise ValueError(msg)
    if zones < 1:
        raise ValueError(f"--zones {zones} must be at least 1")
    needed_days = (max(CANDIDATE_LAGS) + horizon_hours) // 24 + backtest_days + 7
    if lookback_days < needed_days:
        msg = (
            f"--lookback_days {lookback_days} is too short: lags of {max(CANDIDATE_LAGS)} h, {backtest_days} "
            f"backtest days and a week of training need at least {needed_days}"
        )
        raise ValueError(msg)
    # None named: every candidate this run can train.
    names = [name.strip() for name in candidates.split(",") if name.strip()] or list(CANDIDATES)
    unknown = [name for name in names if name not in CANDIDATES]
    if unknown:
        msg = f"--candidates names unknown models {', '.join(unknown)}; choose from {', '.join(CANDIDATES)}"
        raise ValueError(msg)
    if not use_weather:
        names = [name for name in names if not needs_weather([name])]
    if not names:
        raise ValueError("--candidates leaves no model to train (weather models need --use_weather true)")
    return RunSettings(origin, lookback_days, backtest_days, horizon_hours, zones, use_weather, names)
