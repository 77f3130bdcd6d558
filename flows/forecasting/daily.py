"""A served model's forecast of each day, made at the day's start from the actuals published before it.

TLC publishes trips a month at a time, so on the 20th of a month the newest actuals may end on the 1st:
the days between the data's end and the target day are unknown. The served models forecast a day from
the day before (their lags are a day or more), so the gap is forecast first, day by day, and those
forecasts stand in for the unknown actuals (recursive multi-step forecasting). Each target day's
forecast therefore depends only on what was published at its start, whenever it is computed: a backfill
a month later gives the forecast the day would have had.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import pandas as pd

from flows.forecasting.backtest import DAY_HOURS, forecast_day
from flows.forecasting.models import Forecaster
from flows.forecasting.publication import Inputs

DAY = pd.Timedelta(days=1)


def forecast_days(
    model: Forecaster,
    inputs: Inputs,
    days: Sequence[pd.Timestamp],
    names: list[str],
    known: pd.DataFrame | None = None,
    on_day: Callable[[pd.Timestamp], None] = lambda day: None,
) -> pd.DataFrame:
    """Each of ``days`` forecast by ``model`` from ``inputs`` as published at the day's start (under
    ``inputs.rule``), with ``forecast_origin`` (the day) and ``data_end`` (where the actuals it read end).

    One pass forward from the data's end serves every day published with the same data: the path from the
    data's end to a day is the same whichever later day it leads to. ``known`` holds days of that path already
    forecast by this model from the same data (``pickup_hour, pulocationid, predicted, data_end``): they stand in
    as they were, not forecast again, so tomorrow's forecast costs one day, not the whole path. ``on_day`` hears
    each day of the path as its forecast begins (a long path's progress).
    """
    rows = []
    for data_end, targets in _by_data_end(inputs, days):
        # A partly published day is forecast whole: the chain starts at the last whole day published.
        first_day = day = data_end.floor("D")
        chain = _chain(inputs.published_at(max(targets)), first_day)
        earlier = _known_path(known, first_day, len(inputs.zones))
        while day <= max(targets):
            on_day(day)
            if day in earlier and day not in targets:
                kept = chain.actuals.dtypes
                forecast = earlier[day].astype({"pickup_hour": kept.pickup_hour, "pulocationid": kept.pulocationid})
            else:
                forecast = forecast_day(model, chain, day, names).drop(columns=["total_rides"])
            if day in targets:
                rows.append(forecast.assign(data_end=first_day))
            chain = _with_stand_ins(chain, forecast)
            day += DAY
    return pd.concat(rows, ignore_index=True)


def _known_path(known: pd.DataFrame | None, data_end: pd.Timestamp, zones: int) -> dict[pd.Timestamp, pd.DataFrame]:
    """The days of ``known`` forecast from ``data_end`` for every zone and hour, by day."""
    if known is None or known.empty:
        return {}
    mine = known[pd.to_datetime(known.data_end) == data_end]
    hours = pd.to_datetime(mine.pickup_hour)
    return {
        day: rows[["pickup_hour", "pulocationid", "predicted"]].reset_index(drop=True)
        for day, rows in mine.groupby(hours.dt.normalize())
        if len(rows) == zones * DAY_HOURS
    }


def _by_data_end(inputs: Inputs, days: Sequence[pd.Timestamp]) -> list[tuple[pd.Timestamp, list[pd.Timestamp]]]:
    """The days grouped by where the actuals published at their start end."""
    groups: dict[pd.Timestamp, list[pd.Timestamp]] = {}
    for day in sorted(pd.Timestamp(day) for day in days):
        groups.setdefault(inputs.rule.actuals_through(day), []).append(day)
    return list(groups.items())


def _chain(known: Inputs, first_day: pd.Timestamp) -> Inputs:
    """The published inputs cut at ``first_day``, from which every later hour is forecast, not read."""
    actuals = known.actuals[known.actuals.pickup_hour < first_day]
    rule = replace(known.rule, actuals_month_delay=None)
    return Inputs(actuals, known.weather, known.zones, DAY_HOURS, known.start, rule)


def _with_stand_ins(chain: Inputs, forecast: pd.DataFrame) -> Inputs:
    """``chain`` with a day's forecasts standing in for its unpublished actuals."""
    stand_ins = forecast[["pickup_hour", "pulocationid"]].assign(total_rides=forecast.predicted.clip(lower=0.0))
    actuals = pd.concat([chain.actuals, stand_ins], ignore_index=True)
    return Inputs(actuals, chain.weather, chain.zones, DAY_HOURS, chain.start, chain.rule)
