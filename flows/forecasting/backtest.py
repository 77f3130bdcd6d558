"""Rolling-origin backtests, error metrics, and the choice of a champion."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import pandas as pd

from flows.forecasting.features import training_rows

WEEK = pd.Timedelta(days=7)
# The baseline every candidate is measured against; it is always trained.
BASELINE = "seasonal_naive"


@dataclass(frozen=True)
class OriginScore:
    """One refit of the backtest done: which of how many, its MAE, and how long fitting and forecasting took."""

    candidate: str
    number: int
    total: int
    origin: pd.Timestamp
    mae: float
    seconds: float

    def __str__(self) -> str:
        return (
            f"{self.candidate}: week {self.number}/{self.total} from {self.origin:%Y-%m-%dT%H} "
            f"MAE {self.mae:.2f} ({self.seconds:.1f} s)"
        )


def backtest_weeks(as_of: pd.Timestamp, weeks: int) -> list[pd.Timestamp]:
    """The start of each of the ``weeks`` weeks before ``as_of``, oldest first; the last week ends at ``as_of``."""
    return [as_of - WEEK * back for back in range(weeks, 0, -1)]


def rolling_origin_backtest(
    frame: pd.DataFrame,
    features: list[str],
    make_model,
    origins: list[pd.Timestamp],
    span: pd.Timedelta = WEEK,
    on_origin: Callable[[OriginScore], None] | None = None,
) -> pd.DataFrame:
    """Refit on everything before each origin and score the ``span`` after it; report each refit done.

    Every feature of a row is known one horizon before the row (the lags are no shorter than the
    horizon), so a model refitted weekly scores each hour as the daily forecast made one horizon
    earlier would, with a model up to a week old: what a weekly retrain would have delivered.
    """
    results = []
    for number, origin in enumerate(origins, start=1):
        began = time.perf_counter()
        history = training_rows(frame[frame.pickup_hour < origin], features)
        window = frame[(frame.pickup_hour >= origin) & (frame.pickup_hour < origin + span)]
        window = window.dropna(subset=["total_rides"])
        model = make_model().fit(history, features)
        scored = window[["pickup_hour", "pulocationid", "total_rides"]].assign(
            origin=origin, candidate=model.name, predicted=model.predict(window, features)
        )
        results.append(scored)
        if on_origin is not None:
            mae = float((scored.predicted - scored.total_rides).abs().mean())
            on_origin(OriginScore(model.name, number, len(origins), origin, mae, time.perf_counter() - began))
    return pd.concat(results, ignore_index=True)


def error_metrics(predictions: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """MAE, RMSE and WAPE of ``predicted`` against ``total_rides`` per group."""
    errors = predictions.assign(
        abs_error=(predictions.predicted - predictions.total_rides).abs(),
        sq_error=(predictions.predicted - predictions.total_rides) ** 2,
    )
    grouped = errors.groupby(by)
    table = pd.DataFrame(
        {
            "mae": grouped.abs_error.mean(),
            "rmse": np.sqrt(grouped.sq_error.mean()),
            "wape": grouped.abs_error.sum() / grouped.total_rides.sum().clip(lower=1e-9),
            "hours": grouped.size(),
        }
    )
    return table.reset_index()


def ranked(metrics: pd.DataFrame) -> pd.DataFrame:
    """Candidates from the lowest MAE up, ties in name order: the order of every table and chart."""
    return metrics.sort_values(["mae", "candidate"]).reset_index(drop=True)


def choose_champion(metrics: pd.DataFrame, scenarios: Collection[str] = ()) -> str:
    """The candidate with the lowest MAE, scenarios left out (they know what the origin does not); ties by name."""
    eligible = metrics[~metrics.candidate.isin(list(scenarios))]
    if eligible.empty:
        raise ValueError("every candidate is a scenario: add one that forecasts from what the origin knows")
    return ranked(eligible).iloc[0]["candidate"]


def busiest_zones(actuals: pd.DataFrame, count: int) -> list[int]:
    """The forecast's zones: the ``count`` busiest among zones with actuals for every hour of ``actuals``.

    The caller passes only what is known at the origin, so the choice never sees the hours it is
    scored on. A zone that enters or leaves the actuals inside the window would appear or vanish
    mid-training, so only zones present throughout are forecast.
    """
    hours = actuals.pickup_hour.nunique()
    per_zone = actuals.groupby("pulocationid").agg(hours=("pickup_hour", "nunique"), rides=("total_rides", "sum"))
    steady = per_zone[per_zone.hours == hours].rides
    return sorted(steady.sort_values(ascending=False, kind="stable").head(count).index.tolist())
