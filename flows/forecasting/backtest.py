"""Rolling-origin backtests, error metrics, and the choice of a champion."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import pandas as pd

from flows.forecasting.features import training_rows


@dataclass(frozen=True)
class OriginScore:
    """One backtest origin done: which of how many, its MAE, and how long fitting and forecasting took."""

    candidate: str
    number: int
    total: int
    origin: pd.Timestamp
    mae: float
    seconds: float

    def __str__(self) -> str:
        return (
            f"{self.candidate}: origin {self.number}/{self.total} {self.origin:%Y-%m-%dT%H} "
            f"MAE {self.mae:.2f} ({self.seconds:.1f} s)"
        )


def backtest_origins(as_of: pd.Timestamp, backtest_days: int, horizon_hours: int) -> list[pd.Timestamp]:
    """Forecast origins every 24 hours over the last ``backtest_days`` before ``as_of``."""
    last = as_of - pd.Timedelta(hours=horizon_hours)
    return [last - pd.Timedelta(days=day) for day in reversed(range(backtest_days))]


def rolling_origin_backtest(
    frame: pd.DataFrame,
    features: list[str],
    make_model,
    origins: list[pd.Timestamp],
    horizon_hours: int,
    on_origin: Callable[[OriginScore], None] | None = None,
) -> pd.DataFrame:
    """Train on everything before each origin, forecast the next ``horizon_hours``; report each origin done."""
    results = []
    for number, origin in enumerate(origins, start=1):
        began = time.perf_counter()
        history = training_rows(frame[frame.pickup_hour < origin], features)
        window = frame[(frame.pickup_hour >= origin) & (frame.pickup_hour < origin + pd.Timedelta(hours=horizon_hours))]
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
    """The forecast's zones: the ``count`` busiest among zones with actuals for every hour of the window.

    The actuals keep each month's own busiest zones; a zone that enters or leaves that set inside the
    window would appear or vanish mid-training, so only zones present throughout are forecast.
    """
    hours = actuals.pickup_hour.nunique()
    per_zone = actuals.groupby("pulocationid").agg(hours=("pickup_hour", "nunique"), rides=("total_rides", "sum"))
    steady = per_zone[per_zone.hours == hours].rides
    return sorted(steady.sort_values(ascending=False, kind="stable").head(count).index.tolist())
