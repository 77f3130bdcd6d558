"""Prediction intervals calibrated on backtest errors, per group of zones: the share inside is measured, not assumed.

Counts spread more as they grow, and faster than Poisson when a shared shock (rain) moves a whole
day, so each error is scaled by ``sqrt(mu + dispersion * mu**2)`` (the negative-binomial variance).
An interval is the forecast plus the scaled errors' empirical quantiles on hours before the day it
is used on: split-conformal intervals, which hold their coverage as long as the days resemble each
other. Three things keep that true beyond a calm stretch of weeks:

- **Per group of zones** (Mondrian conformal, by borough): airports and Manhattan's avenues do not
  miss in the same way. A group's quantile is its own only where it has enough errors beyond that
  quantile (``LEAST_TAIL_ERRORS``); otherwise the pooled one stands in.
- **Recent errors count more** (weights halving every ``RECENCY_HALF_LIFE``): after a snowy fortnight
  or a change of level, the errors that set the width are the ones most like tomorrow's.
- **Count-aware** (Mondrian by the forecast's size): below ``COUNT_AWARE_BELOW`` rides an hour, a
  zone's errors are those of a count near zero, not its borough's busy avenues', so rows are grouped by
  the forecast's size (:func:`count_aware_groups`): a zone that expects 0.05 rides gets the interval its
  like earned, ``[0, forecast]`` where nine hours in ten have no ride, not one a ride wide.
- **Holiday periods apart** (:func:`~flows.forecasting.features.in_holiday_period`): a holiday's miss
  is not an ordinary day's, so holiday-period days never set an ordinary day's width; a holiday-period
  day, whose like the errors hardly hold, takes the next level's width (its 80% interval is the 95%
  one's, its 95% the 99% one's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from flows.forecasting.features import in_holiday_period
from taxi_core.errors import PipelineError

LEVELS = (80, 95)
# The level each published level takes on a holiday-period day.
WIDER = {80: 95, 95: 99}
CALIBRATED_LEVELS = tuple(sorted({*LEVELS, *WIDER.values()}))
POOLED = "all zones"
# A group's quantile rests on at least this many (recency-weighted, effective) errors beyond it.
LEAST_TAIL_ERRORS = 20
RECENCY_HALF_LIFE = pd.Timedelta(days=7)
# Forecasts below this many rides an hour are grouped by their size, whatever their borough; the edges of the groups.
COUNT_AWARE_BELOW = 3.0
COUNT_EDGES = (0.1, 0.3, 0.7, 1.5, COUNT_AWARE_BELOW)


class NoErrorsToCalibrateOn(ValueError, PipelineError):
    """The backtest left no forecast with an actual to measure the intervals' width on."""


def bound_columns(level: int) -> tuple[str, str]:
    return f"lower_{level}", f"upper_{level}"


INTERVAL_COLUMNS = [column for level in LEVELS for column in bound_columns(level)]


@dataclass(frozen=True)
class Calibration:
    """One group's spread: the dispersion and the scaled errors' quantiles each interval adds to a forecast."""

    dispersion: float
    quantiles: dict[int, tuple[float, float]]
    errors: float  # effective: the recency weights' (sum w)^2 / sum w^2


@dataclass(frozen=True)
class IntervalModel:
    """How far actuals fell from the forecasts, scaled, per group of zones (and pooled, for any other group)."""

    by_group: dict[str, Calibration]

    @property
    def pooled(self) -> Calibration:
        return self.by_group[POOLED]

    def bounds(
        self, predicted: npt.ArrayLike, groups: pd.Series | None = None, holiday_period: npt.ArrayLike | None = None
    ) -> pd.DataFrame:
        """``lower_80, upper_80, lower_95, upper_95`` around each forecast, never below zero; rows flagged in
        ``holiday_period`` take the next level's width."""
        mu = np.clip(np.asarray(predicted, dtype=float), 0.0, None)
        labels = _labels(groups, len(mu))
        wider = np.zeros(len(mu), dtype=bool) if holiday_period is None else np.asarray(holiday_period, dtype=bool)
        columns = {column: np.zeros(len(mu)) for column in INTERVAL_COLUMNS}
        codes, groups_found = pd.factorize(labels, sort=True)
        for code, group in enumerate(groups_found):
            calibration = self.by_group.get(group, self.pooled)
            for widened in (False, True):
                rows = (codes == code) & (wider == widened)
                scale = _scale(mu[rows], calibration.dispersion)
                for level in LEVELS:
                    low, high = calibration.quantiles[WIDER[level] if widened else level]
                    lower, upper = bound_columns(level)
                    columns[lower][rows] = np.clip(mu[rows] + min(low, 0.0) * scale, 0.0, None)
                    columns[upper][rows] = mu[rows] + max(high, 0.0) * scale
        return nested(pd.DataFrame(columns), mu)

    def as_metadata(self) -> dict[str, float | int | str]:
        pooled = self.pooled
        scaled = {
            f"scaled_error_{level}_{end}": round(pooled.quantiles[level][index], 4)
            for level in LEVELS
            for index, end in enumerate(("low", "high"))
        }
        groups = sorted(group for group in self.by_group if group != POOLED)
        return {
            "dispersion": round(pooled.dispersion, 5),
            "calibration_errors": round(pooled.errors),
            **scaled,
            "interval_groups": ", ".join(groups) or POOLED,
            "interval_recency_half_life_days": RECENCY_HALF_LIFE.days,
            "holiday_period_width": ", ".join(f"{level}% as {wider}%" for level, wider in WIDER.items()),
        }


def count_aware_groups(groups: pd.Series, predicted: npt.ArrayLike) -> pd.Series:
    """Each row's calibration group: its own (``groups``, e.g. the borough) where the forecast is at least
    ``COUNT_AWARE_BELOW`` rides, else the band of its size (``under 0.1 rides``, ``0.1-0.3 rides``, ...)."""
    mu = np.clip(np.asarray(predicted, dtype=float), 0.0, None)
    band = np.searchsorted(np.asarray(COUNT_EDGES), mu, side="right")
    bands = zip(COUNT_EDGES[:-1], COUNT_EDGES[1:], strict=True)
    names = [f"under {COUNT_EDGES[0]:g} rides", *(f"{low:g}-{high:g} rides" for low, high in bands)]
    small = mu < COUNT_AWARE_BELOW
    labels = np.asarray(pd.Series(groups).fillna(POOLED).astype(str), dtype=object).copy()
    labels[small] = np.asarray(names, dtype=object)[band[small]]
    return pd.Series(labels, index=pd.Series(groups).index)


def nested(bounds: pd.DataFrame, predicted: npt.ArrayLike) -> pd.DataFrame:
    """``bounds`` made to hold what every interval promises: lower <= forecast <= upper, none below zero, each
    interval inside the wider one (a group's 95% may come from the pool while its 80% is its own), and at least one
    count of rides: around a forecast of 0.09, ``[0.04, 0.09]`` holds no possible count, so it starts at 0.

    Conformal quantiles over counts near zero would otherwise reach 80% by leaving zero out of the intervals of the
    larger small forecasts, intervals no ride count can fall in."""
    mu = np.clip(np.asarray(predicted, dtype=float), 0.0, None)
    out = bounds.copy()
    inner_lower, inner_upper = mu, mu
    for level in LEVELS:
        lower, upper = bound_columns(level)
        low = np.clip(np.minimum(out[lower].to_numpy(dtype=float), inner_lower), 0.0, None)
        high = np.maximum(out[upper].to_numpy(dtype=float), inner_upper)
        no_count = np.ceil(low - 1e-9) > np.floor(high + 1e-9)
        out[lower] = np.where(no_count, np.floor(low), low)
        out[upper] = high
        inner_lower, inner_upper = out[lower].to_numpy(), out[upper].to_numpy()
    return out


def _labels(groups: pd.Series | None, length: int) -> np.ndarray:
    if groups is None:
        return np.full(length, POOLED, dtype=object)
    return np.asarray(pd.Series(groups).fillna(POOLED).astype(str), dtype=object)


def _scale(mu: np.ndarray, dispersion: float) -> np.ndarray:
    # A forecast of zero rides still has a spread of about one ride.
    scale: np.ndarray = np.sqrt(np.maximum(mu, 1.0) + dispersion * mu**2)
    return scale


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, shares: list[float]) -> list[float]:
    """The weighted quantiles of ``values`` at each of ``shares``, sorting once."""
    order = np.argsort(values, kind="stable")
    values, weights = values[order], weights[order]
    position = (np.cumsum(weights) - 0.5 * weights) / weights.sum()
    return [float(value) for value in np.interp(shares, position, values)]


def _tails(level: int) -> tuple[float, float]:
    outside = (1 - level / 100) / 2
    return outside, 1 - outside


def _calibrate(mu: np.ndarray, y: np.ndarray, weights: np.ndarray) -> Calibration:
    # Method of moments: E[(y - mu)^2] = mu + dispersion * mu^2.
    spread = (weights * ((y - mu) ** 2 - mu)).sum() / max((weights * mu**2).sum(), 1e-9)
    dispersion = max(float(spread), 0.0)
    scaled = (y - mu) / _scale(mu, dispersion)
    shares = [share for level in CALIBRATED_LEVELS for share in _tails(level)]
    found = iter(weighted_quantiles(scaled, weights, shares))
    quantiles = {level: (next(found), next(found)) for level in CALIBRATED_LEVELS}
    effective = float(weights.sum() ** 2 / (weights**2).sum())
    return Calibration(dispersion, quantiles, effective)


def _with_pooled_tails(own: Calibration, pooled: Calibration) -> Calibration:
    """A group's quantiles where it has enough errors beyond them, the pool's elsewhere."""
    quantiles = {
        level: own.quantiles[level] if own.errors * _tails(level)[0] >= LEAST_TAIL_ERRORS else pooled.quantiles[level]
        for level in CALIBRATED_LEVELS
    }
    return Calibration(own.dispersion, quantiles, own.errors)


def fit_intervals(
    predicted: npt.ArrayLike,
    actual: npt.ArrayLike,
    groups: pd.Series | None = None,
    weights: npt.ArrayLike | None = None,
) -> IntervalModel:
    """Intervals from backtest forecasts and their actuals (one candidate's), per group, each error ``weights``-
    weighted (equal by default)."""
    mu = np.clip(np.asarray(predicted, dtype=float), 0.0, None)
    y = np.asarray(actual, dtype=float)
    if len(mu) == 0:
        raise NoErrorsToCalibrateOn("no backtest forecasts to calibrate the intervals on")
    w = np.ones(len(mu)) if weights is None else np.asarray(weights, dtype=float)
    labels = _labels(groups, len(mu))
    pooled = _calibrate(mu, y, w)
    by_group = {POOLED: pooled}
    codes, groups_found = pd.factorize(labels, sort=True)
    for code, group in enumerate(groups_found):
        rows = codes == code
        if group == POOLED:
            continue
        own = _calibrate(mu[rows], y[rows], w[rows])
        if own.errors * _tails(LEVELS[0])[0] >= LEAST_TAIL_ERRORS:
            by_group[str(group)] = _with_pooled_tails(own, pooled)
    return IntervalModel(by_group)


def intervals_at(errors: pd.DataFrame, day: pd.Timestamp) -> IntervalModel:
    """The intervals a forecast made at ``day`` uses: ``errors`` (``pickup_hour, predicted, total_rides, group``)
    of the hours before it, holiday periods left out, each weighted by how recent it is."""
    known = errors[errors.pickup_hour < day]
    if known.empty:
        raise NoErrorsToCalibrateOn(f"no backtest forecast with an actual before {day} to calibrate the intervals on")
    ordinary = known[~in_holiday_period(known.pickup_hour).to_numpy()]
    if ordinary.empty:  # a backtest inside one holiday period: its own days are all there is
        ordinary = known
    elapsed: pd.Series[pd.Timedelta] = day - ordinary.pickup_hour
    age = elapsed / RECENCY_HALF_LIFE
    return fit_intervals(ordinary.predicted, ordinary.total_rides, ordinary.group, 0.5 ** age.to_numpy(dtype=float))


def coverage(actual: npt.ArrayLike, bounds: pd.DataFrame) -> dict[int, float]:
    """The share of actuals inside each interval."""
    y = np.asarray(actual, dtype=float)
    shares = {}
    for level in LEVELS:
        lower, upper = bound_columns(level)
        inside = (y >= bounds[lower].to_numpy()) & (y <= bounds[upper].to_numpy())
        shares[level] = float(inside.mean()) if len(y) else float("nan")
    return shares


def inside(rows: pd.DataFrame, level: int) -> pd.Series:
    """Whether each row's actual lies in its ``level`` interval."""
    lower, upper = bound_columns(level)
    return (rows.total_rides >= rows[lower]) & (rows.total_rides <= rows[upper])
