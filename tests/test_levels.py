"""What a version serves, evaluated as served: every zone, each borough's total and the city, reconciled, each level's
intervals calibrated on its own reconciled errors, near-empty zones count-aware."""

import numpy as np
import pandas as pd
import pytest

from flows.forecasting import backtest, levels
from flows.forecasting.candidates import make_candidate
from flows.forecasting.features import in_holiday_period
from flows.forecasting.intervals import count_aware_groups, inside
from flows.forecasting.publication import Inputs, PublicationRule
from flows.forecasting.threads import numeric_threads

# Busy Manhattan zones, a Queens pair, and Bronx and Staten Island zones that see a ride every few hours or days.
RATES = {161: 30.0, 236: 18.0, 132: 6.0, 138: 2.0, 3: 0.4, 18: 0.15, 5: 0.03, 6: 0.02}
BOROUGHS = {161: "Manhattan", 236: "Manhattan", 132: "Queens", 138: "Queens", 3: "Bronx", 18: "Bronx",
            5: "Staten Island", 6: "Staten Island"}  # fmt: skip
AS_OF = pd.Timestamp("2025-01-27")
WEEKS = backtest.backtest_weeks(AS_OF, 6)


def _actuals(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    hours = pd.date_range("2024-10-21", AS_OF, freq="h", inclusive="left")
    shape = (1 + 0.4 * (hours.day_of_week < 5)) * (0.3 + np.sin(np.pi * hours.hour / 24) ** 2)
    day_shock = np.exp(rng.normal(0, 0.08, len(hours) // 24 + 1))[(hours - hours[0]).days]
    frames = [
        pd.DataFrame({"pickup_hour": hours, "pulocationid": zone, "total_rides": rng.poisson(rate * shape * day_shock)})
        for zone, rate in RATES.items()
    ]
    return pd.concat(frames, ignore_index=True)


def _series_backtest(inputs: Inputs, name: str, weeks: list[pd.Timestamp] | None = None) -> levels.SeriesBacktest:
    """``name`` backtested on every zone and total, as a train branch backtests it."""
    return levels.backtest_served(inputs, BOROUGHS, lambda: make_candidate(name), weeks or WEEKS)


@pytest.fixture(scope="module")
def held_out() -> pd.DataFrame:
    actuals = _actuals()
    inputs = Inputs(
        actuals, None, list(RATES), 24, actuals.pickup_hour.min(), PublicationRule(actuals_month_delay=None)
    )
    with numeric_threads(1):
        model, naive = _series_backtest(inputs, "glm"), _series_backtest(inputs, "seasonal_naive")
    reconciled = levels.reconciled(model)
    return levels.evaluate(lambda _: reconciled, {week: "glm" for week in WEEKS[2:]}, naive.forecasts)


def test_every_row_at_every_level_holds_its_forecast_inside_both_intervals(held_out):
    assert set(held_out.level) == {"zone", "borough", "city"}
    assert (held_out.lower_95 >= 0).all()
    assert (held_out.lower_95 <= held_out.lower_80 + 1e-9).all()
    assert (held_out.lower_80 <= held_out.forecast + 1e-9).all()
    assert (held_out.forecast <= held_out.upper_80 + 1e-9).all()
    assert (held_out.upper_80 <= held_out.upper_95 + 1e-9).all()


def test_each_total_s_80_percent_interval_holds_about_80_percent_of_its_hours(held_out):
    totals = held_out[held_out.level != "zone"]
    for series, rows in totals.groupby("series"):
        if rows.total_rides.mean() < 3:  # a total of near-empty zones is a near-empty count itself
            continue
        assert 0.70 <= inside(rows, 80).mean() <= 0.90, series


def test_the_busy_zones_intervals_hold_about_80_percent(held_out):
    busy = held_out[held_out.series.str.endswith(("/161", "/236", "/132"))]
    assert 0.72 <= inside(busy, 80).mean() <= 0.88


def test_a_near_empty_zone_s_interval_is_narrower_than_a_ride(held_out):
    ordinary = ~in_holiday_period(held_out.pickup_hour)  # a holiday-period day takes the next level's width
    tiny = held_out[(held_out.level == "zone") & (held_out.forecast < 0.1) & ordinary]
    assert len(tiny) > 500
    assert (tiny.upper_80 < 1).all()
    # No interval of a count can hold fewer hours than those with no ride, and these hold no more.
    assert inside(tiny, 80).mean() == pytest.approx((tiny.total_rides == 0).mean())


def test_the_per_level_table_is_the_rows_own_figures(held_out):
    table = levels.by_level(held_out).set_index(["level", "borough"])
    assert {
        ("zone", "all"),
        ("zone", "Bronx"),
        ("borough", "Staten Island"),
        ("borough", "all"),
        ("city", "all"),
    } <= set(table.index)
    queens = held_out[(held_out.level == "borough") & (held_out.borough == "Queens")]
    row = table.loc[("borough", "Queens")]
    assert row.hours == len(queens)
    assert row.coverage_80 == pytest.approx(inside(queens, 80).mean())
    assert row.mae == pytest.approx((queens.forecast - queens.total_rides).abs().mean())
    assert row.ratio_to_naive == pytest.approx(row.mae / (queens.naive - queens.total_rides).abs().mean())
    zones = held_out[held_out.level == "zone"]
    assert table.loc[("zone", "all")].coverage_95 == pytest.approx(inside(zones, 95).mean())


def test_small_forecasts_are_grouped_by_size_whatever_their_borough():
    groups = count_aware_groups(pd.Series(["Bronx", "Manhattan", "Bronx", "Queens"]), [0.05, 0.05, 0.5, 7.0])
    assert groups.tolist() == ["under 0.1 rides", "under 0.1 rides", "0.3-0.7 rides", "Queens"]


def test_the_coverage_alarm_s_range_holds_healthy_days_and_not_a_biased_one(held_out):
    low, high = levels.coverage_band(held_out)
    zones = held_out[held_out.level == "zone"]
    daily = inside(zones, 80).groupby(zones.pickup_hour.dt.normalize()).mean()
    assert len(daily) == 28
    assert ((daily < low) | (daily > high)).sum() <= 2
    # Intervals a third as wide as calibrated: a broken calibration the alarm must see every day.
    narrow = zones.assign(lower_80=zones.forecast - (zones.forecast - zones.lower_80) / 3,
                          upper_80=zones.forecast + (zones.upper_80 - zones.forecast) / 3)  # fmt: skip
    narrow_daily = inside(narrow, 80).groupby(narrow.pickup_hour.dt.normalize()).mean()
    assert (narrow_daily < low).sum() >= 26


def test_the_bias_alarm_s_range_holds_healthy_days_and_not_a_forecast_twice_or_half_the_rides(held_out):
    """The fixture's days swing by 8% (its shocks) and more (its counts): the range is that spread, not 10%."""
    low, high = levels.bias_band(held_out)
    city = held_out[held_out.level == "city"]
    days = city.groupby(city.pickup_hour.dt.normalize())[["forecast", "total_rides"]].sum()
    bias = days.forecast / days.total_rides - 1
    assert len(bias) == 28 and low < 0 < high
    assert ((bias < low) | (bias > high)).sum() <= 2
    ordinary = days[~in_holiday_period(days.index.to_series()).to_numpy()]
    assert ((2.0 * ordinary.forecast / ordinary.total_rides - 1) > high).all()
    assert ((0.5 * ordinary.forecast / ordinary.total_rides - 1) < low).all()


def test_a_zone_without_a_month_of_actuals_had_no_ride_in_it_and_every_candidate_forecasts_it():
    """The actuals hold a month's zones with a ride that month: a zone with none in January has no rows in it, and
    its January hours count as 0 rides, as the daily scoring counts them. Seasonal naive, which reads last week's
    hour, forecasts it too (it was NaN, and its reconciliation failed), and the totals stay coherent."""
    actuals = _actuals()
    missing = (actuals.pulocationid == 18) & (actuals.pickup_hour >= "2025-01-01")
    actuals = actuals[~missing]
    week = pd.Timestamp("2025-01-06")
    inputs = Inputs(
        actuals, None, list(RATES), 24, actuals.pickup_hour.min(), PublicationRule(actuals_month_delay=None)
    )
    for candidate in ("glm", "seasonal_naive"):
        with numeric_threads(1):
            served = levels.backtest_served(inputs, BOROUGHS, lambda name=candidate: make_candidate(name), [week])
        found = levels.reconciled(served)
        zone = found[found.series == "city/Bronx/18"]
        assert len(zone) == 7 * 24 and (zone.total_rides == 0).all() and zone.forecast.notna().all(), candidate
        bronx = found[found.series == "city/Bronx"].set_index("pickup_hour")
        zones = found[found.series.str.startswith("city/Bronx/")].groupby("pickup_hour")
        np.testing.assert_allclose(bronx.forecast.sort_index(), zones.forecast.sum().reindex(bronx.index).sort_index(),
                                   atol=1e-6)  # fmt: skip
        assert (bronx.total_rides == zones.total_rides.sum().reindex(bronx.index)).all(), candidate
