"""Which errors set a forecast day's intervals: those before the day, ordinary days only, recent ones first."""

import numpy as np
import pandas as pd
import pytest

from flows.forecasting import intervals, selection
from flows.forecasting.backtest import BASELINE
from flows.forecasting.features import in_holiday_period

ZONES = 20


def _errors(days: pd.DatetimeIndex, spread_of, seed=0, group="Manhattan") -> pd.DataFrame:
    """A forecast of every hour of ``days`` for ``ZONES`` zones, each off by a relative shock of standard deviation
    ``spread_of(day)`` on top of Poisson noise."""
    rng = np.random.default_rng(seed)
    frames = []
    for day in days:
        hours = pd.date_range(day, periods=24, freq="h")
        cells = pd.MultiIndex.from_product([hours, range(ZONES)], names=["pickup_hour", "pulocationid"])
        frame = cells.to_frame(index=False)
        predicted = rng.uniform(20, 200, len(frame))
        shock = np.exp(rng.normal(0, spread_of(day), len(frame)))
        frame = frame.assign(predicted=predicted, total_rides=rng.poisson(predicted * shock).astype(float))
        frames.append(frame.assign(forecast_origin=day, group=group))
    return pd.concat(frames, ignore_index=True)


def _coverage(model: intervals.IntervalModel, rows: pd.DataFrame, holiday=None) -> float:
    return intervals.coverage(rows.total_rides, model.bounds(rows.predicted, rows.group, holiday))[80]


def test_the_holiday_periods_are_the_city_holidays_the_days_beside_them_and_christmas_eve_to_new_year():
    days = pd.Series(pd.to_datetime([
        "2024-07-03", "2024-07-04", "2024-07-05", "2024-07-06",  # Independence Day, a Thursday
        "2024-11-26", "2024-11-27", "2024-11-28", "2024-11-29", "2024-11-30",  # Thanksgiving, the 28th
        "2024-12-23", "2024-12-24", "2024-12-31", "2025-01-01", "2025-01-02", "2025-01-03",
        "2024-09-02", "2024-10-14", "2024-11-11",  # Labor Day; Columbus and Veterans Day keep offices open
    ]) + pd.Timedelta(hours=13))  # fmt: skip
    expected = [
        True, True, True, False,
        False, True, True, True, False,
        False, True, True, True, True, False,
        True, False, False,
    ]  # fmt: skip
    assert in_holiday_period(days).tolist() == expected
    assert in_holiday_period(pd.Series([], dtype="datetime64[ns]")).empty


def test_a_day_s_intervals_use_only_the_errors_before_it():
    days = pd.date_range("2024-10-01", periods=28, freq="D")
    errors = _errors(days, lambda day: 0.1)
    day = days[20]
    before = intervals.intervals_at(errors, day)
    changed = errors.copy()
    later = changed.pickup_hour >= day
    changed.loc[later, "total_rides"] = changed.loc[later, "total_rides"] * 3  # the day itself and after
    assert intervals.intervals_at(changed, day) == before
    with pytest.raises(intervals.NoErrorsToCalibrateOn, match="before 2024-10-01"):
        intervals.intervals_at(errors, days[0])


def test_a_holiday_s_misses_do_not_widen_the_ordinary_days_after_it():
    # Thanksgiving's days are missed by 50% (no window teaches them); the weeks around them by 10%.
    days = pd.date_range("2024-11-04", periods=35, freq="D")
    errors = _errors(days, lambda day: 0.5 if in_holiday_period(pd.Series([day])).iloc[0] else 0.1, seed=1)
    after = pd.Timestamp("2024-12-02")
    model = intervals.intervals_at(errors, after)
    ordinary_later = errors[errors.pickup_hour >= after]
    assert _coverage(model, ordinary_later) == pytest.approx(0.80, abs=0.03)
    # Had the holiday's errors counted, the days after it would be covered more than 83% of the time.
    known = errors[errors.pickup_hour < after]
    counted = intervals.fit_intervals(known.predicted, known.total_rides, known.group)
    assert _coverage(counted, ordinary_later) > 0.83


def test_a_holiday_period_day_takes_the_next_level_s_width():
    days = pd.date_range("2024-11-01", periods=30, freq="D")
    errors = _errors(days, lambda day: 0.1, seed=2)
    model = intervals.intervals_at(errors, days[-1])
    rows = errors[errors.forecast_origin == days[-1]]
    ordinary = model.bounds(rows.predicted, rows.group)
    holiday = model.bounds(rows.predicted, rows.group, np.ones(len(rows), dtype=bool))
    assert (holiday.upper_80 >= ordinary.upper_80).all() and (holiday.lower_80 <= ordinary.lower_80).all()
    assert (holiday.upper_80 - holiday.lower_80).mean() > 1.3 * (ordinary.upper_80 - ordinary.lower_80).mean()
    assert (holiday.upper_95 - holiday.lower_95).mean() > (ordinary.upper_95 - ordinary.lower_95).mean()


def test_recent_errors_set_the_width_after_the_spread_changes():
    # Five stormy weeks, then three calm ones: tomorrow is calm, and the intervals should be sized for it.
    days = pd.date_range("2024-02-05", periods=57, freq="D")
    calm_from = days[35]
    errors = _errors(days, lambda day: 0.05 if day >= calm_from else 0.2, seed=3)
    tomorrow = days[56]
    rows = errors[errors.forecast_origin == tomorrow]
    assert _coverage(intervals.intervals_at(errors, tomorrow), rows) == pytest.approx(0.80, abs=0.05)
    known = errors[errors.pickup_hour < tomorrow]
    equal_weights = intervals.fit_intervals(known.predicted, known.total_rides, known.group)
    assert _coverage(equal_weights, rows) > 0.9


def test_a_small_group_keeps_its_own_80_percent_width_and_borrows_the_pool_s_95():
    # One steady airport zone beside a busy, shock-prone borough: too few errors for its own 2.5% tails.
    days = pd.date_range("2024-03-04", periods=14, freq="D")
    borough = _errors(days, lambda day: 0.25, seed=4)
    airport = _errors(days, lambda day: 0.0, seed=5, group="EWR")
    airport = airport[airport.pulocationid == 0]
    model = intervals.fit_intervals(
        *(pd.concat([borough, airport])[column] for column in ("predicted", "total_rides", "group"))
    )
    assert "EWR" in model.by_group
    assert model.by_group["EWR"].quantiles[95] == model.pooled.quantiles[95]
    assert model.by_group["EWR"].quantiles[80] != model.pooled.quantiles[80]
    later = _errors(pd.date_range("2024-03-18", periods=14, freq="D"), lambda day: 0.0, seed=6, group="EWR")
    assert _coverage(model, later) == pytest.approx(0.80, abs=0.04)


def test_held_out_days_are_calibrated_day_by_day_from_what_was_known_that_morning():
    days = pd.date_range("2024-10-07", periods=42, freq="D")
    base = _errors(days, lambda day: 0.1, seed=7)
    weeks = pd.date_range(days[0], periods=6, freq="7D")
    base = base.assign(origin=base.forecast_origin.dt.to_period("W-SUN").dt.start_time)
    assert set(base.origin) == set(weeks)
    naive = base.assign(candidate=BASELINE, predicted=base.total_rides.sample(frac=1, random_state=0).to_numpy())
    backtest = pd.concat([base.assign(candidate="model"), naive], ignore_index=True)
    chosen = selection.select(backtest, selection_weeks=2)
    last_week = chosen.forecasts[chosen.forecasts.origin == weeks[-1]]
    first_day = last_week[last_week.forecast_origin == weeks[-1]]
    # Changing the last day's actuals moves no earlier day's intervals.
    changed = backtest.copy()
    changed.loc[changed.forecast_origin == days[-1], "total_rides"] *= 4
    again = selection.select(changed, selection_weeks=2).forecasts
    again = again[again.forecast_origin == weeks[-1]]
    columns = intervals.INTERVAL_COLUMNS
    assert np.array_equal(first_day[columns].to_numpy(), again[columns].to_numpy())
