"""Prediction intervals calibrated on backtest errors, per group of zones: the share inside is measured, not assumed.

Counts spread more as they grow, and faster than Poisson when a shared shock (rain) moves a whole
day, so each error is scaled by ``sqrt(mu + dispersion * mu**2)`` (the negative-binomial variance).
An interval is the forecast plus the scaled errors' empirical quantiles on weeks before the ones it
is used on: split-conformal intervals, which hold their coverage as long as the weeks resemble each
other. They are calibrated per group of zones (Mondrian conformal, by borough): airports and
Manhattan's avenues do not miss in the same way, and one pooled quantile would cover the one too
much and the other too little. A group with too few errors to calibrate on takes the pooled figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from taxi_core.errors import PipelineError

LEVELS = (80, 95)
POOLED = "all zones"
# Below this many errors a group's 2.5% tail rests on a handful of hours: it takes the pooled figures.
LEAST_GROUP_ERRORS = 2_000


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
    errors: int


@dataclass(frozen=True)
class IntervalModel:
    """How far actuals fell from the forecasts, scaled, per group of zones (and pooled, for any other group)."""

    by_group: dict[str, Calibration]

    @property
    def pooled(self) -> Calibration:
        return self.by_group[POOLED]

    def bounds(self, predicted, groups=None) -> pd.DataFrame:
        """``lower_80, upper_80, lower_95, upper_95`` around each forecast, never below zero."""
        mu = np.clip(np.asarray(predicted, dtype=float), 0.0, None)
        labels = _labels(groups, len(mu))
        columns = {column: np.zeros(len(mu)) for column in INTERVAL_COLUMNS}
        for group in np.unique(labels):
            rows = labels == group
            calibration = self.by_group.get(group, self.pooled)
            scale = _scale(mu[rows], calibration.dispersion)
            for level, (low, high) in calibration.quantiles.items():
                lower, upper = bound_columns(level)
                columns[lower][rows] = np.clip(mu[rows] + min(low, 0.0) * scale, 0.0, None)
                columns[upper][rows] = mu[rows] + max(high, 0.0) * scale
        return pd.DataFrame(columns)

    def as_metadata(self) -> dict[str, float | int | str]:
        pooled = self.pooled
        scaled = {
            f"scaled_error_{level}_{end}": round(value, 4)
            for level, pair in pooled.quantiles.items()
            for end, value in zip(("low", "high"), pair, strict=True)
        }
        groups = sorted(group for group in self.by_group if group != POOLED)
        return {
            "dispersion": round(pooled.dispersion, 5),
            "calibration_errors": pooled.errors,
            **scaled,
            "interval_groups": ", ".join(groups) or POOLED,
        }


def _labels(groups, length: int) -> np.ndarray:
    if groups is None:
        return np.full(length, POOLED, dtype=object)
    return np.asarray(pd.Series(groups).fillna(POOLED).astype(str), dtype=object)


def _scale(mu: np.ndarray, dispersion: float) -> np.ndarray:
    # A forecast of zero rides still has a spread of about one ride.
    return np.sqrt(np.maximum(mu, 1.0) + dispersion * mu**2)


def _calibrate(mu: np.ndarray, y: np.ndarray) -> Calibration:
    # Method of moments: E[(y - mu)^2] = mu + dispersion * mu^2.
    dispersion = max(float(((y - mu) ** 2 - mu).sum() / max((mu**2).sum(), 1e-9)), 0.0)
    scaled = (y - mu) / _scale(mu, dispersion)
    quantiles = {
        level: (
            float(np.quantile(scaled, (1 - level / 100) / 2)),
            float(np.quantile(scaled, 1 - (1 - level / 100) / 2)),
        )
        for level in LEVELS
    }
    return Calibration(dispersion, quantiles, len(mu))


def fit_intervals(predicted, actual, groups=None) -> IntervalModel:
    """Intervals from backtest forecasts and their actuals (one candidate's, on the calibration weeks), per group."""
    mu = np.clip(np.asarray(predicted, dtype=float), 0.0, None)
    y = np.asarray(actual, dtype=float)
    if len(mu) == 0:
        raise NoErrorsToCalibrateOn("no backtest forecasts to calibrate the intervals on")
    labels = _labels(groups, len(mu))
    by_group = {POOLED: _calibrate(mu, y)}
    for group in np.unique(labels):
        rows = labels == group
        if group != POOLED and rows.sum() >= LEAST_GROUP_ERRORS:
            by_group[str(group)] = _calibrate(mu[rows], y[rows])
    return IntervalModel(by_group)


def coverage(actual, bounds: pd.DataFrame) -> dict[int, float]:
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
