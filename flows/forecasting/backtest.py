"""Rolling-origin backtests, error metrics, and the choice of a champion."""

from __future__ import annotations

import numpy as np
import pandas as pd

from flows.forecasting.features import training_rows


def backtest_origins(as_of: pd.Timestamp, backtest_days: int, horizon_hours: int) -> list[pd.Timestamp]:
    """Forecast origins every 24 hours over the last ``backtest_days`` before ``as_of``."""
    last = as_of - pd.Timedelta(hours=horizon_hours)
    return [last - pd.Timedelta(days=day) for day in reversed(range(backtest_days))]


def rolling_origin_backtest(
    frame: pd.DataFrame, features: list[str], make_model, origins: list[pd.Timestamp], horizon_hours: int
) -> pd.DataFrame:
    """Train on everything before each origin, forecast the next ``horizon_hours``."""
    results = []
    for origin in origins:
        history = training_rows(frame[frame.pickup_hour < origin], features)
        window = frame[(frame.pickup_hour >= origin) & (frame.pickup_hour < origin + pd.Timedelta(hours=horizon_hours))]
        window = window.dropna(subset=["total_rides"])
        model = make_model().fit(history, features)
        results.append(
            window[["pickup_hour", "pulocationid", "total_rides"]].assign(
                origin=origin, candidate=model.name, predicted=model.predict(window, features)
            )
        )
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


def choose_champion(metrics: pd.DataFrame) -> str:
    """The candidate with the lowest MAE; ties go to the first in name order."""
    return metrics.sort_values(["mae", "candidate"]).iloc[0]["candidate"]


def busiest_zones(actuals: pd.DataFrame, count: int) -> list[int]:
    """The ``count`` zones with the most rides, among zones present on the last day of the data."""
    last_day = actuals.pickup_hour.max().normalize()
    present = actuals[actuals.pickup_hour >= last_day].pulocationid.unique()
    totals = actuals[actuals.pulocationid.isin(present)].groupby("pulocationid").total_rides.sum()
    return sorted(totals.sort_values(ascending=False, kind="stable").head(count).index.tolist())
