"""Prediction intervals calibrated on backtest errors: the share of actuals inside is measured, not assumed.

Counts spread more as they grow, and faster than Poisson when a shared shock (rain) moves a whole
day, so each error is scaled by ``sqrt(mu + dispersion * mu**2)`` (the negative-binomial variance).
An interval is the forecast plus the scaled errors' empirical quantiles on weeks before the ones it
is used on: split-conformal intervals, which hold their coverage as long as the weeks resemble each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

LEVELS = (80, 95)


def bound_columns(level: int) -> tuple[str, str]:
    return f"lower_{level}", f"upper_{level}"


INTERVAL_COLUMNS = [column for level in LEVELS for column in bound_columns(level)]


@dataclass(frozen=True)
class IntervalModel:
    """How far actuals fell from the forecasts, scaled: the quantiles each interval adds to a forecast."""

    dispersion: float
    quantiles: dict[int, tuple[float, float]]
    errors: int

    def bounds(self, predicted) -> pd.DataFrame:
        """``lower_80, upper_80, lower_95, upper_95`` around each forecast, never below zero."""
        mu = np.clip(np.asarray(predicted, dtype=float), 0.0, None)
        scale = _scale(mu, self.dispersion)
        columns = {}
        for level, (low, high) in self.quantiles.items():
            lower, upper = bound_columns(level)
            columns[lower] = np.clip(mu + min(low, 0.0) * scale, 0.0, None)
            columns[upper] = mu + max(high, 0.0) * scale
        return pd.DataFrame(columns)

    def as_metadata(self) -> dict[str, float]:
        scaled = {
            f"scaled_error_{level}_{end}": round(value, 4)
            for level, pair in self.quantiles.items()
            for end, value in zip(("low", "high"), pair, strict=True)
        }
        return {"dispersion": round(self.dispersion, 5), "calibration_errors": self.errors, **scaled}


def _scale(mu: np.ndarray, dispersion: float) -> np.ndarray:
    # A forecast of zero rides still has a spread of about one ride.
    return np.sqrt(np.maximum(mu, 1.0) + dispersion * mu**2)


def fit_intervals(predicted, actual) -> IntervalModel:
    """Intervals from backtest forecasts and their actuals (one candidate's, on the calibration weeks)."""
    mu = np.clip(np.asarray(predicted, dtype=float), 0.0, None)
    y = np.asarray(actual, dtype=float)
    if len(mu) == 0:
        raise ValueError("no backtest forecasts to calibrate the intervals on")
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
    return IntervalModel(dispersion, quantiles, len(mu))


def coverage(actual, bounds: pd.DataFrame) -> dict[int, float]:
    """The share of actuals inside each interval."""
    y = np.asarray(actual, dtype=float)
    shares = {}
    for level in LEVELS:
        lower, upper = bound_columns(level)
        inside = (y >= bounds[lower].to_numpy()) & (y <= bounds[upper].to_numpy())
        shares[level] = float(inside.mean()) if len(y) else float("nan")
    return shares
