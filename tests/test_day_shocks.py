"""A total's intervals from its days' shared shocks and its hours' noise: they hold their level when a few weeks of
days are all the evidence, and they stay counts where a total is near empty."""

import numpy as np
import pandas as pd
import pytest

from flows.forecasting import day_shocks, intervals

DAYS = 14
SHOCK = 0.12  # a day's rides over its forecast: log-normal, as a rainy or a quiet day moves every hour of a busy total


def _days(rng: np.random.Generator, start: pd.Timestamp, days: int, rides: float, shock: float) -> pd.DataFrame:
    """``days`` of hourly forecasts of a total of about ``rides`` an hour, and actuals off by one shock per day on
    top of Poisson noise."""
    hours = pd.date_range(start, periods=24 * days, freq="h")
    forecast = rides * (1.2 + np.sin(np.arange(len(hours)) * 2 * np.pi / 24))
    factor = np.repeat(np.exp(rng.normal(0.0, shock, days)), 24)
    return pd.DataFrame(
        {"series": "city", "pickup_hour": hours, "forecast": forecast, "total_rides": rng.poisson(forecast * factor)}
    )


def _coverage_of_the_next_day(fit, rides: float, shock: float, trials: int = 300) -> float:
    """The share of the next day's hours inside the 80% interval fitted on the ``DAYS`` before it, over ``trials``
    independent histories."""
    rng = np.random.default_rng(7)
    start = pd.Timestamp("2025-02-01")
    inside = []
    for _ in range(trials):
        history = _days(rng, start, DAYS, rides, shock)
        tomorrow = _days(rng, start + pd.Timedelta(days=DAYS), 1, rides, shock)
        bounds = fit(history).bounds(tomorrow.forecast, tomorrow.series)
        inside.append(intervals.coverage(tomorrow.total_rides, bounds)[80])
    return float(np.mean(inside))


def _day_shocks(history: pd.DataFrame) -> day_shocks.TotalIntervals:
    return day_shocks.fit_totals(history, pd.Series(1.0, index=history.index))


def _hour_quantiles(history: pd.DataFrame) -> intervals.IntervalModel:
    return intervals.fit_intervals(history.forecast, history.total_rides, history.series)


def test_a_busy_total_s_80_percent_interval_holds_80_percent_when_two_weeks_of_days_are_the_evidence():
    covered = _coverage_of_the_next_day(_day_shocks, rides=5_000, shock=SHOCK)
    assert covered == pytest.approx(0.80, abs=0.03)
    # What the hours' own quantiles give the same histories: 336 hours that are 14 draws.
    assert _coverage_of_the_next_day(_hour_quantiles, rides=5_000, shock=SHOCK) < covered - 0.03


def test_a_near_empty_total_keeps_count_intervals_and_holds_at_least_its_level():
    covered = _coverage_of_the_next_day(_day_shocks, rides=0.3, shock=SHOCK, trials=100)
    assert 0.80 <= covered <= 0.95
    rng = np.random.default_rng(1)
    history = _days(rng, pd.Timestamp("2025-02-01"), DAYS, 0.3, SHOCK)
    bounds = _day_shocks(history).bounds(np.array([0.0, 0.3, 0.6]), pd.Series(["city"] * 3))
    assert (bounds.lower_80 == 0).all()
    assert (bounds.upper_95 >= 1).all()  # a ride is a count the wider interval holds, as it is in 1 hour in 4


def test_a_total_no_day_was_fitted_on_takes_the_pooled_days_and_holidays_take_the_next_level():
    rng = np.random.default_rng(3)
    history = pd.concat(
        [
            _days(rng, pd.Timestamp("2025-02-01"), DAYS, 500, SHOCK).assign(series=name)
            for name in ("city", "city/Bronx")
        ],
        ignore_index=True,
    )
    model = _day_shocks(history)
    assert set(model.by_series) == {"city", "city/Bronx", intervals.POOLED}
    forecast, unknown = np.array([400.0, 400.0]), pd.Series(["city/Elsewhere", "city/Elsewhere"])
    pooled = model.by_series[intervals.POOLED].bounds(forecast, 80)
    found = model.bounds(forecast, unknown)
    assert found.lower_80.to_numpy() == pytest.approx(pooled[:, 0]) and found.upper_80.to_numpy() == pytest.approx(
        pooled[:, 1]
    )
    ordinary = model.bounds(forecast, unknown, np.array([False, True]))
    assert ordinary.upper_80[1] == pytest.approx(model.bounds(forecast[:1], unknown[:1]).upper_95[0])
    assert (ordinary.upper_80 >= forecast).all() and (ordinary.lower_80 <= forecast).all()


def test_no_error_to_fit_on_is_said_as_such():
    empty = pd.DataFrame({"series": [], "pickup_hour": pd.to_datetime([]), "forecast": [], "total_rides": []})
    with pytest.raises(intervals.NoErrorsToCalibrateOn, match="totals"):
        day_shocks.fit_totals(empty, pd.Series([], dtype=float))


def test_the_day_to_day_spread_is_the_shock_s_with_the_count_noise_taken_out():
    rng = np.random.default_rng(11)
    # At 2 rides an hour (about 58 a day) a day's count noise alone puts more variance in its ratio than the shock.
    for rides in (5_000, 2):
        history = _days(rng, pd.Timestamp("2025-01-01"), 120, rides, SHOCK)
        spread = _day_shocks(history).by_series["city"].spread
        assert spread == pytest.approx(SHOCK, rel=0.2)
    assert _day_shocks(history).spread_summary() == f"city {100 * spread:.1f}"


def test_a_long_forecast_gets_the_bounds_each_of_its_rows_gets_alone():
    rng = np.random.default_rng(5)
    shock = _day_shocks(_days(rng, pd.Timestamp("2025-02-01"), DAYS, 500, SHOCK)).by_series["city"]
    forecasts = rng.uniform(100, 900, 1_201)  # more rows than are weighed at once
    together = shock.bounds(forecasts, 80)
    alone = np.vstack([shock.bounds(forecasts[index : index + 1], 80) for index in (0, 499, 500, 1_200)])
    assert together[[0, 499, 500, 1_200]] == pytest.approx(alone)
