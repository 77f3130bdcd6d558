"""The training run's settings, validated once with messages that name the parameter."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from flows.forecasting.backtest import BASELINE, WEEK
from flows.forecasting.candidates import candidate_names, needs_weather
from taxi_core.errors import PipelineError
from taxi_core.training_history import LEAST_TRAINING_DAYS, least_history_days

# The first backtest week is fitted on at least this much history.
LEAST_TRAINING = pd.Timedelta(days=LEAST_TRAINING_DAYS)
# Twelve weeks of actuals by default: the six backtest weeks' models are fitted on six to eleven weeks, so a zone's
# hour of the week is averaged over enough weeks to stop chasing one week's noise. Measured across seven periods
# of the sample (docs/benchmarks.md): the held-out median went from 0.762x naive at 63 days to 0.736x at 84.
LOOKBACK_DAYS = 84
# 0: the candidates are backtested, and the champion chosen, on every zone the version serves (chosen on the 50
# busiest, a version's intervals held 94% for the 258 zones it served and 0-64% for the small boroughs' totals).
# Every zone costs the backtest about 2.5x the 50 busiest (docs/benchmarks.md).
BACKTEST_ZONES = 0


class RunSettingInvalid(ValueError, PipelineError):
    """A run parameter the flow cannot work with; the message names the parameter and what it takes."""


@dataclass(frozen=True)
class RunSettings:
    as_of: pd.Timestamp
    lookback_days: int
    evaluation_weeks: int
    selection_weeks: int
    horizon_hours: int
    zones: int  # 0: every zone with rides in every hour
    use_weather: bool
    candidates: list[str]
    backtest_zones: int = BACKTEST_ZONES

    @property
    def window_start(self) -> pd.Timestamp:
        return self.as_of - pd.Timedelta(days=self.lookback_days)

    @property
    def forecast_end(self) -> pd.Timestamp:
        return self.as_of + pd.Timedelta(hours=self.horizon_hours)

    @property
    def backtest_weeks(self) -> int:
        return self.selection_weeks + self.evaluation_weeks

    @property
    def backtest_start(self) -> pd.Timestamp:
        """The first backtest week's start: the zones are chosen on what was known before it."""
        return self.as_of - WEEK * self.backtest_weeks

    def describe(self) -> str:
        return (
            f"as of {self.as_of}, {self.lookback_days} days back, {self.evaluation_weeks} held-out weeks each chosen "
            f"on the {self.selection_weeks} before, {self.horizon_hours} h ahead, {self._zones()}, backtested on the "
            f"{self.backtest_zones} busiest, candidates "
            f"{', '.join(self.candidates)}"
        )

    def _zones(self) -> str:
        return "every zone with rides" if self.zones == 0 else f"the {self.zones} busiest zones"


def resolve_settings(
    as_of: str,
    lookback_days: int,
    evaluation_weeks: int,
    selection_weeks: int,
    horizon_hours: int,
    zones: int,
    use_weather: bool,
    candidates: str,
    backtest_zones: int = BACKTEST_ZONES,
) -> RunSettings:
    parsed = pd.to_datetime(as_of, errors="coerce")  # NaT for what is not a time
    if not isinstance(parsed, pd.Timestamp):
        msg = f"--as_of {as_of!r} is not a time; use YYYY-MM-DD or YYYY-MM-DDTHH"
        raise RunSettingInvalid(msg)
    origin = parsed.tz_localize(None).floor("h")
    if not 1 <= horizon_hours <= 168:
        msg = f"--horizon_hours {horizon_hours} must be between 1 and 168"
        raise RunSettingInvalid(msg)
    if zones < 0 or backtest_zones < 0:
        msg = (
            f"--zones {zones} and --backtest_zones {backtest_zones} must each be 0 (every zone with rides, every zone "
            "served) or more"
        )
        raise RunSettingInvalid(msg)
    if evaluation_weeks < 1 or selection_weeks < 1:
        msg = f"--evaluation_weeks {evaluation_weeks} and --selection_weeks {selection_weeks} must be at least 1"
        raise RunSettingInvalid(msg)
    needed_days = least_history_days(evaluation_weeks, selection_weeks)
    if lookback_days < needed_days:
        msg = (
            f"--lookback_days {lookback_days} is too short: {selection_weeks} selection and {evaluation_weeks} "
            f"held-out weeks after {LEAST_TRAINING.days} days of training need at least {needed_days}"
        )
        raise RunSettingInvalid(msg)
    # None named: every candidate this run can train.
    names = [name.strip() for name in candidates.split(",") if name.strip()] or list(candidate_names())
    unknown = [name for name in names if name not in candidate_names()]
    if unknown:
        msg = f"--candidates names unknown models {', '.join(unknown)}; choose from {', '.join(candidate_names())}"
        raise RunSettingInvalid(msg)
    if not use_weather:
        names = [name for name in names if not needs_weather([name])]
    if not names:
        raise RunSettingInvalid("--candidates leaves no model to train (weather models need --use_weather true)")
    # Every champion is measured against the baseline, so the baseline is always trained.
    names = names if BASELINE in names else [BASELINE, *names]
    return RunSettings(
        origin,
        lookback_days,
        evaluation_weeks,
        selection_weeks,
        horizon_hours,
        zones,
        use_weather,
        names,
        backtest_zones,
    )
