"""How a published day's forecast did, once that day's actuals are published: per zone, borough and the city.

Each series of the hierarchy is scored on the day's 24 hours: its MAE, its bias (forecast minus actual,
summed, as a share of the actual rides), the share of hours inside each interval, and its MAE against
seasonal naive's. Naive knows what the forecast knew: the same hour of the same weekday in the newest
week published at the day's start (with a month's actuals published at once, a day late in the month
is compared with a naive several weeks old, as the forecast was made from data that old).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from flows.forecasting.hierarchy import HOUR, SERIES, VALUE, series_frame

WEEK = pd.Timedelta(days=7)
# What a score row says of the forecast it scored, from the forecast's own rows.
DESCRIBED = ["level", "borough", "pulocationid", "model_version", "data_end"]
SCORE_COLUMNS = [
    "day", SERIES, "hours", "rides", "forecast_rides", "mae", "bias", "naive_mae", "ratio_to_naive",
    "coverage_80", "coverage_95",
]  # fmt: skip


def published_naive(hours: pd.Series, data_end: pd.Timestamp) -> pd.Series:
    """For each of ``hours``, the newest hour of the same weekday and time before ``data_end``: naive's source."""
    weeks_back = ((hours - data_end + pd.Timedelta(hours=1)) / WEEK).transform(np.ceil).clip(lower=1)
    return hours - weeks_back * WEEK


def score_day(forecasts: pd.DataFrame, actuals: pd.DataFrame) -> pd.DataFrame:
    """One row per series: how ``forecasts`` of one day did against ``actuals``.

    ``forecasts``: ``unique_id, ds, forecast, lower_80, upper_80, lower_95, upper_95, data_end``;
    ``actuals``: ``unique_id, ds, y`` for the day and for the weeks naive reaches back to.
    """
    day = forecasts[HOUR].min().normalize()
    naive_hour = published_naive(forecasts[HOUR], forecasts.data_end.iloc[0])
    observed = actuals.set_index([SERIES, HOUR])[VALUE]
    rows = forecasts.assign(
        y=observed.reindex(pd.MultiIndex.from_arrays([forecasts[SERIES], forecasts[HOUR]])).to_numpy(),
        naive=observed.reindex(pd.MultiIndex.from_arrays([forecasts[SERIES], naive_hour])).to_numpy(),
    )
    rows = rows.assign(
        error=(rows.forecast - rows.y).abs(),
        naive_error=(rows.naive - rows.y).abs(),
        signed=rows.forecast - rows.y,
        inside_80=(rows.y >= rows.lower_80) & (rows.y <= rows.upper_80),
        inside_95=(rows.y >= rows.lower_95) & (rows.y <= rows.upper_95),
    )
    grouped = rows.dropna(subset=["y"]).groupby(SERIES)
    scores = pd.DataFrame(
        {
            "hours": grouped.size(),
            "rides": grouped.y.sum(),
            "forecast_rides": grouped.forecast.sum(),
            "mae": grouped.error.mean(),
            "bias": grouped.signed.sum() / grouped.y.sum().clip(lower=1.0),
            "naive_mae": grouped.naive_error.mean(),
            "coverage_80": grouped.inside_80.mean(),
            "coverage_95": grouped.inside_95.mean(),
        }
    )
    scores["ratio_to_naive"] = scores.mae / scores.naive_mae.where(scores.naive_mae > 0)
    return scores.reset_index().assign(day=day)[SCORE_COLUMNS]


def score_forecast(forecast: pd.DataFrame, actuals: pd.DataFrame) -> pd.DataFrame:
    """One day's forecast (the daily forecast table's rows) scored per series against the zones' actuals
    (``pickup_hour, pulocationid, total_rides``, from the newest week before its ``data_end`` to the day's end).

    A total is scored against the rides of the zones it sums: the zones the version serves.
    """
    zones = forecast[forecast.level == "zone"]
    boroughs = dict(zip(zones.pulocationid.astype(int), zones.borough, strict=True))
    observed, _ = series_frame(_zero_filled(actuals, list(boroughs)), boroughs)
    scores = score_day(forecast.rename(columns={"series": SERIES, "pickup_hour": HOUR}), observed)
    described = forecast.drop_duplicates("series").set_index("series")[DESCRIBED]
    return scores.join(described, on=SERIES).rename(columns={SERIES: "series"})


def _zero_filled(actuals: pd.DataFrame, zones: list[int]) -> pd.DataFrame:
    """Every zone's rides in every hour the actuals span: the table holds a zone's hours only in a month it had a
    ride, so a served zone it lacks had none. An hour past the actuals stays unknown (not scored)."""
    hours = pd.date_range(actuals.pickup_hour.min(), actuals.pickup_hour.max(), freq="h")
    grid = pd.MultiIndex.from_product([zones, hours], names=["pulocationid", "pickup_hour"])
    rides = actuals.set_index(["pulocationid", "pickup_hour"]).total_rides
    return rides.reindex(grid, fill_value=0).reset_index()


def pooled(scores: pd.DataFrame, level: str = "zone") -> dict[str, float]:
    """A level's figures over all its series (and days) in ``scores``: hour-weighted MAE, the ratio of summed
    errors to naive's, bias and coverage."""
    rows = scores[scores.level == level]
    hours = rows.hours.sum()
    if hours == 0:
        return {}
    naive_error = (rows.naive_mae * rows.hours).sum()
    return {
        "mae": float((rows.mae * rows.hours).sum() / hours),
        "ratio_to_naive": float((rows.mae * rows.hours).sum() / naive_error) if naive_error > 0 else float("nan"),
        "bias": float((rows.forecast_rides.sum() - rows.rides.sum()) / max(rows.rides.sum(), 1.0)),
        "coverage_80": float((rows.coverage_80 * rows.hours).sum() / hours),
        "coverage_95": float((rows.coverage_95 * rows.hours).sum() / hours),
    }


def by_version(scores: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Each model version's live figures over every day of its forecasts scored: days, the zones' hour-weighted
    MAE and its ratio to naive's, the city's bias, the zones' 80% coverage."""
    found = {}
    for version, rows in scores.groupby("model_version"):
        zones, city = pooled(rows), pooled(rows, "city")
        found[str(version)] = {
            "days_scored": float(rows.day.nunique()),
            "zone_mae": round(zones["mae"], 4),
            "zone_mae_vs_naive": round(zones["ratio_to_naive"], 4),
            "city_bias_pct": round(100 * city["bias"], 2),
            "zone_coverage_80_pct": round(100 * zones["coverage_80"], 1),
        }
    return found
