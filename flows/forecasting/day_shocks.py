"""Intervals for the borough and city totals: a day's shared shock and its hours' own noise, each read from the
reconciled errors of the days before the day they are used on.

A busy total's hours miss together: at full scale the city's and Manhattan's scaled errors correlate 0.98-1.0
within a day (a rainy day is wet in every hour), so a few weeks of backtest are a few dozen draws, not hundreds of
hours, and their empirical 10th and 90th percentiles fall inside the true ones (the 80% intervals of the busiest
totals covered 71-74% of a held-out month). So a total's error is read in two parts:

- **the day's shock**: the log of a day's rides over its forecast. Its mean and spread over the days before (less
  the part a day's count noise alone puts there) give a Student-t predictive with the days' effective number as
  its degrees of freedom, which widens exactly as the evidence thins;
- **the hour's noise** around the day-adjusted forecast, scaled by the count (its variance per expected ride), with
  its empirical shape kept: a near-empty total's counts stay counts.

A row's interval is the quantiles of the two combined. A holiday-period hour takes the next level's width, as the
zones' do (:data:`~flows.forecasting.intervals.WIDER`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

# The Student-t quantile function alone: scipy.stats costs every Metaflow task a second of imports.
from scipy.special import stdtrit

from flows.forecasting.intervals import (
    INTERVAL_COLUMNS,
    LEVELS,
    POOLED,
    WIDER,
    NoErrorsToCalibrateOn,
    bound_columns,
    nested,
    weighted_quantiles,
)

# Where the two parts' distributions are read: enough points that the combined quantiles move by well under a ride.
SHOCK_SHARES = (np.arange(60) + 0.5) / 60
NOISE_SHARES = tuple(float(share) for share in (np.arange(100) + 0.5) / 100)
# Half a ride on both sides of a day's ratio: a day with no ride and no forecast is no shock, not an undefined one.
HALF_RIDE = 0.5
ROWS_AT_ONCE = 500


@dataclass(frozen=True)
class DayShock:
    """One total's spread: its days' shocks (log rides over forecast) and its hours' noise around them."""

    mean: float
    spread: float  # the shocks' standard deviation, the days' count noise taken out
    days: float  # effective: the recency weights' (sum w)^2 / sum w^2, one weight per day
    noise: float  # an hour's variance per expected ride around its day-adjusted forecast
    noise_quantiles: tuple[float, ...]  # the hours' scaled errors at NOISE_SHARES

    def bounds(self, predicted: np.ndarray, level: int) -> np.ndarray:
        """``(lower, upper)`` per forecast: the ``level``% central interval of the day's shock and the hour's noise."""
        freedom = max(self.days - 1.0, 1.0)
        shocks = self.mean + self.spread * np.sqrt(1 + 1 / self.days) * stdtrit(freedom, SHOCK_SHARES)
        outside = (1 - level / 100) / 2
        found = np.zeros((len(predicted), 2))
        # A few hundred rows at a time: each row weighs 6,000 outcomes (48 kB), a year of hours 420 MB at once.
        for start in range(0, len(predicted), ROWS_AT_ONCE):
            expected = np.multiply.outer(predicted[start : start + ROWS_AT_ONCE], np.exp(shocks))
            spread = np.sqrt(self.noise * np.maximum(expected, 1.0))
            outcomes = expected[:, :, None] + spread[:, :, None] * np.asarray(self.noise_quantiles)[None, None, :]
            rows = outcomes.reshape(len(expected), -1)
            found[start : start + ROWS_AT_ONCE] = np.quantile(rows, [outside, 1 - outside], axis=1).T
        return found


@dataclass(frozen=True)
class TotalIntervals:
    """Each total's :class:`DayShock` (and one pooled over all of them, for a total none was fitted on)."""

    by_series: dict[str, DayShock]

    @property
    def by_group(self) -> dict[str, DayShock]:
        return self.by_series

    def spread_summary(self) -> str:
        """Each total's day-to-day spread, as a percentage of its forecast (``city 7.1, city/Bronx 9.8``)."""
        named = sorted(name for name in self.by_series if name != POOLED)
        return ", ".join(f"{name} {100 * self.by_series[name].spread:.1f}" for name in named)

    def bounds(
        self, predicted: npt.ArrayLike, groups: pd.Series | None = None, holiday_period: npt.ArrayLike | None = None
    ) -> pd.DataFrame:
        """``lower_80, upper_80, lower_95, upper_95`` around each forecast of the totals named in ``groups``; rows
        flagged in ``holiday_period`` take the next level's width."""
        mu = np.clip(np.asarray(predicted, dtype=float), 0.0, None)
        names = np.full(len(mu), POOLED, dtype=object) if groups is None else pd.Series(groups).astype(str).to_numpy()
        wider = np.zeros(len(mu), dtype=bool) if holiday_period is None else np.asarray(holiday_period, dtype=bool)
        columns = {column: np.zeros(len(mu)) for column in INTERVAL_COLUMNS}
        for name in np.unique(names):
            shock = self.by_series.get(str(name), self.by_series[POOLED])
            for widened in (False, True):
                rows = (names == name) & (wider == widened)
                if not rows.any():
                    continue
                for level in LEVELS:
                    lower, upper = bound_columns(level)
                    found = shock.bounds(mu[rows], WIDER[level] if widened else level)
                    columns[lower][rows], columns[upper][rows] = found[:, 0], found[:, 1]
        return nested(pd.DataFrame(columns), mu)


def fit_day_shock(
    hours: pd.Series, predicted: npt.ArrayLike, actual: npt.ArrayLike, weights: npt.ArrayLike, series: npt.ArrayLike
) -> DayShock:
    """One :class:`DayShock` from hourly forecasts and actuals (``series`` tells apart the totals' days when
    several are pooled), each hour ``weights``-weighted."""
    frame = pd.DataFrame(
        {
            "day": pd.Series(hours).dt.normalize().to_numpy(),
            "series": np.asarray(series),
            "mu": np.clip(np.asarray(predicted, dtype=float), 0.0, None),
            "y": np.asarray(actual, dtype=float),
            "w": np.asarray(weights, dtype=float),
        }
    )
    frame["floor"] = np.maximum(frame.mu, 1.0)  # an hour's count variance per unit of noise, as the scale reads it
    per_day = frame.groupby(["series", "day"]).agg(
        mu=("mu", "sum"), y=("y", "sum"), w=("w", "mean"), floor=("floor", "sum")
    )
    shocks = pd.Series(np.log((per_day.y + HALF_RIDE) / (per_day.mu + HALF_RIDE)), index=per_day.index)
    adjusted = frame.mu * np.exp(shocks.reindex(pd.MultiIndex.from_frame(frame[["series", "day"]])).to_numpy())
    errors = frame.y - adjusted
    adjusted_floor = np.maximum(adjusted, 1.0)
    noise = max(float(np.average(errors**2, weights=frame.w) / np.average(adjusted_floor, weights=frame.w)), 1e-6)
    day_weights = per_day.w.to_numpy()
    days = float(day_weights.sum() ** 2 / (day_weights**2).sum())
    mean = float(np.average(shocks, weights=day_weights))
    variance = float(np.average((shocks - mean) ** 2, weights=day_weights)) * days / max(days - 1.0, 1.0)
    # What a day's count noise alone adds to its log ratio: the variance of its sum over the sum squared.
    count_noise = float(np.average(noise * per_day.floor / (per_day.mu + HALF_RIDE) ** 2, weights=day_weights))
    scaled = (errors / np.sqrt(noise * adjusted_floor)).to_numpy()
    quantiles = weighted_quantiles(scaled, frame.w.to_numpy(), list(NOISE_SHARES))
    return DayShock(mean, float(np.sqrt(max(variance - count_noise, 0.0))), days, noise, tuple(quantiles))


def fit_totals(rows: pd.DataFrame, weights: pd.Series) -> TotalIntervals:
    """Each total's :class:`DayShock` from its reconciled errors (``rows``: ``series, pickup_hour, forecast,
    total_rides``), and a pooled one; ``weights`` aligned to ``rows``' index."""
    if rows.empty:
        raise NoErrorsToCalibrateOn("no reconciled total with an actual to calibrate the totals' intervals on")
    names = rows.series.astype(str)
    by_series = {
        str(name): fit_day_shock(
            part.pickup_hour, part.forecast, part.total_rides, weights[part.index], names[part.index]
        )
        for name, part in rows.groupby(names)
    }
    by_series[POOLED] = fit_day_shock(rows.pickup_hour, rows.forecast, rows.total_rides, weights[rows.index], names)
    return TotalIntervals(by_series)
