"""Rolling-origin backtests, error metrics, and the choice of a champion."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from flows.forecasting.models import Forecaster, sees_hindsight
from flows.forecasting.publication import Inputs

WEEK = pd.Timedelta(days=7)
DAY_HOURS = 24
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
    inputs: Inputs,
    make_model: Callable[[], Forecaster],
    origins: list[pd.Timestamp],
    span: pd.Timedelta = WEEK,
    on_origin: Callable[[OriginScore], None] | None = None,
    on_fit: Callable[[pd.Timestamp, Forecaster, list[str], pd.DataFrame], None] | None = None,
) -> pd.DataFrame:
    """Refit at each origin on what was published then, and forecast the ``span`` after it day by day.

    Each day of the span is forecast from its own start with the features published then, by the
    model fitted at the span's origin: what a weekly retrain serving daily forecasts would have
    delivered. Every hour is scored against its actuals; ``origin`` names the refit, ``forecast_origin``
    the day's forecast. Each refit done is reported; ``on_fit`` is handed each refit's model and the rows it was
    fitted on.
    """
    results = []
    for number, origin in enumerate(origins, start=1):
        began = time.perf_counter()
        model, names, history = fitted_at(inputs, origin, make_model)
        if on_fit is not None:
            on_fit(origin, model, names, history)
        days = forecast_days_from_origins(model, inputs, _days(origin, span), names)
        scored = pd.concat(days, ignore_index=True).assign(origin=origin, candidate=model.name)
        scored = scored.dropna(subset=["total_rides"]).reset_index(drop=True)
        results.append(scored)
        if on_origin is not None:
            mae = float((scored.predicted - scored.total_rides).abs().mean())
            on_origin(OriginScore(model.name, number, len(origins), origin, mae, time.perf_counter() - began))
    return pd.concat(results, ignore_index=True)


def fit_at(inputs: Inputs, origin: pd.Timestamp, make_model: Callable[[], Forecaster]) -> tuple[Forecaster, list[str]]:
    """A new model fitted on every hour before ``origin``, as published at ``origin``; and the feature names."""
    model, names, _ = fitted_at(inputs, origin, make_model)
    return model, names


def fitted_at(
    inputs: Inputs, origin: pd.Timestamp, make_model: Callable[[], Forecaster]
) -> tuple[Forecaster, list[str], pd.DataFrame]:
    """:func:`fit_at`, with the rows the model learned from (what its fit errors are measured on)."""
    history, names = inputs.training_frame(origin)
    return make_model().fit(history, names), names, history


def forecast_day(model: Forecaster, inputs: Inputs, origin: pd.Timestamp, names: list[str]) -> pd.DataFrame:
    """A fitted model's forecast of the day from ``origin``, from what was published then, with its actuals."""
    (day,) = forecast_days_from_origins(model, inputs, [origin], names)
    return day


def forecast_days_from_origins(
    model: Forecaster, inputs: Inputs, origins: list[pd.Timestamp], names: list[str]
) -> list[pd.DataFrame]:
    """:func:`forecast_day` of each of ``origins``, their features built at once (:meth:`Inputs.forecast_frames`)
    and each day predicted on its own rows."""
    frames = inputs.forecast_frames(origins, hours=DAY_HOURS, hindsight=sees_hindsight(model))
    days = []
    for origin, (rows, _) in zip(origins, frames, strict=True):
        forecast = rows[["pickup_hour", "pulocationid"]].assign(
            forecast_origin=origin, predicted=model.predict(rows, names)
        )
        days.append(forecast.assign(total_rides=inputs.targets(forecast).to_numpy()))
    return days


def _days(origin: pd.Timestamp, span: pd.Timedelta) -> list[pd.Timestamp]:
    return list(pd.date_range(origin, origin + span, freq="D", inclusive="left"))


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


def busiest_zones(actuals: pd.DataFrame, count: int | None) -> list[int]:
    """The forecast's zones: the ``count`` busiest (all of them when None) among zones with actuals for every hour
    of ``actuals``.

    The caller passes only what is known at the origin, so the choice never sees the hours it is
    scored on. A zone that enters or leaves the actuals inside the window would appear or vanish
    mid-training, so only zones present throughout are forecast.
    """
    hours = actuals.pickup_hour.nunique()
    per_zone = actuals.groupby("pulocationid").agg(hours=("pickup_hour", "nunique"), rides=("total_rides", "sum"))
    steady = per_zone[per_zone.hours == hours].rides.sort_values(ascending=False, kind="stable")
    return sorted((steady if count is None else steady.head(count)).index.tolist())
