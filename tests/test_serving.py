"""A version's served model: every zone, each borough and the city forecast per day, coherent, from what was
published at the day's start."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from flows.forecasting import backtest, levels, serving
from flows.forecasting.candidates import make_candidate
from flows.forecasting.publication import Inputs, PublicationRule
from flows.forecasting.threads import numeric_threads

BOROUGHS = {132: "Queens", 138: "Queens", 161: "Manhattan", 236: "Manhattan", 5: "Staten Island"}
AS_OF = pd.Timestamp("2025-01-01")


@pytest.fixture(autouse=True)
def one_thread():
    with numeric_threads(1):
        yield


def _actuals(start="2024-10-15", end="2025-02-01", seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    hours = pd.date_range(start, end, freq="h", inclusive="left")
    frames = []
    for number, zone in enumerate(BOROUGHS):
        rate = (1 + 8 * number) * (1 + 0.3 * (hours.day_of_week < 5)) * (1 + 0.5 * np.sin(np.pi * hours.hour / 24))
        frames.append(pd.DataFrame({"pickup_hour": hours, "pulocationid": zone, "total_rides": rng.poisson(rate)}))
    return pd.concat(frames, ignore_index=True)


def _served(actuals: pd.DataFrame, name: str = "gbm") -> serving.ServedModel:
    rule = PublicationRule(actuals_month_delay=None)
    inputs = Inputs(actuals[actuals.pickup_hour < AS_OF], None, list(BOROUGHS), 24, actuals.pickup_hour.min(), rule)
    fitted = backtest.fit_at(inputs, AS_OF, lambda: make_candidate(name))
    history = series_backtest(inputs, name, backtest.backtest_weeks(AS_OF, 2))
    calibrated = levels.calibrate(levels.reconciled(history), AS_OF)
    return serving.fit_served("Flow/1", name, lambda: make_candidate(name), inputs, AS_OF, BOROUGHS, fitted, calibrated)


def series_backtest(inputs: Inputs, name: str, weeks: list[pd.Timestamp]) -> levels.SeriesBacktest:
    """``name`` backtested on every zone and total, as a train branch backtests it."""
    return levels.backtest_served(inputs, BOROUGHS, lambda: make_candidate(name), weeks)


@pytest.fixture(scope="module")
def served() -> serving.ServedModel:
    with numeric_threads(1):
        return _served(_actuals())


def test_every_zone_borough_and_the_city_add_up_each_hour(served):
    actuals = _actuals()
    days = [pd.Timestamp("2025-01-03"), pd.Timestamp("2025-01-20")]
    rows = serving.forecast(served, actuals, None, days)

    assert set(rows.forecast_day) == set(days)
    assert rows.groupby("forecast_day").pickup_hour.nunique().eq(24).all()
    zones = rows[rows.level == "zone"]
    assert set(zones.pulocationid) == set(BOROUGHS)
    for (_day, hour), hour_rows in rows.groupby(["forecast_day", "pickup_hour"]):
        zone_sum = hour_rows[hour_rows.level == "zone"].forecast.sum()
        city = hour_rows[hour_rows.level == "city"].forecast.item()
        assert city == pytest.approx(zone_sum, rel=1e-6), hour
        for borough, borough_rows in hour_rows[hour_rows.level == "zone"].groupby("borough"):
            total = hour_rows[(hour_rows.level == "borough") & (hour_rows.borough == borough)].forecast.item()
            assert total == pytest.approx(borough_rows.forecast.sum(), rel=1e-6)
    assert (rows.lower_80 <= rows.forecast + 1e-9).all() and (rows.forecast <= rows.upper_80 + 1e-9).all()
    assert (rows.lower_95 <= rows.lower_80 + 1e-9).all() and (rows.upper_80 <= rows.upper_95 + 1e-9).all()
    # Both days start from the actuals published at the month's start: the data ends on the 1st.
    assert set(rows.data_end) == {pd.Timestamp("2025-01-01")}


def test_a_long_forecast_says_each_day_of_its_path_as_it_reaches_it(served):
    """The days from the data's end to the last one asked, for the zones and then the totals: what the daily
    forecast step reports every 10 s while a month of days is forecast."""
    heard: list[str] = []
    serving.forecast(served, _actuals(), None, [pd.Timestamp("2025-01-03"), pd.Timestamp("2025-01-05")],
                     on_day=heard.append)  # fmt: skip
    path = [f"{day:%Y-%m-%d}" for day in pd.date_range("2025-01-01", "2025-01-05")]
    assert heard == [f"zones, {day}" for day in path] + [f"totals, {day}" for day in path]


def test_nothing_published_after_a_day_s_start_moves_its_forecast(served):
    actuals = _actuals()
    day = pd.Timestamp("2025-01-12")
    later = actuals.pickup_hour >= pd.Timestamp("2025-01-01")
    changed = actuals.assign(total_rides=actuals.total_rides.where(~later, actuals.total_rides * 3 + 7))

    before = serving.forecast(served, actuals, None, [day]).reset_index(drop=True)
    after = serving.forecast(served, changed, None, [day]).reset_index(drop=True)

    pd.testing.assert_frame_equal(before, after)


def test_the_totals_are_forecast_from_their_own_history_not_summed(served):
    actuals = _actuals()
    rows = serving.forecast(served, actuals, None, [pd.Timestamp("2025-01-03")])
    city = rows[rows.level == "city"]
    zones = rows[rows.level == "zone"].groupby("pickup_hour").model_forecast.sum()
    # The city's own model forecast differs from the zones' sum; reconciliation moved both to one coherent set.
    assert not np.allclose(city.set_index("pickup_hour").model_forecast, zones.reindex(city.pickup_hour))


def test_a_borough_without_a_total_is_named():
    with pytest.raises(serving.UnknownBorough, match="Atlantis"):
        serving.total_id("city/Atlantis")


def test_what_a_day_reads_covers_its_features(served):
    days = [pd.Timestamp("2025-02-10"), pd.Timestamp("2025-02-27")]
    start, end = replace(served, weather_delay_days=3).reads_from(days)
    assert end == pd.Timestamp("2025-02-01")
    assert start <= pd.Timestamp("2025-02-01") - pd.Timedelta(days=14)


def test_a_day_forecast_from_the_days_before_it_as_written_is_the_day_forecast_afresh(served):
    """The schedule's way: tomorrow starts from today's written forecasts, not from the data's end again."""
    actuals = _actuals()
    earlier = [pd.Timestamp("2025-01-01") + pd.Timedelta(days=day) for day in range(9)]
    day = pd.Timestamp("2025-01-10")
    written = serving.forecast(served, actuals, None, earlier)

    afresh = serving.forecast(served, actuals, None, [day])
    from_written = serving.forecast(served, actuals, None, [day], known=written)

    pd.testing.assert_frame_equal(afresh, from_written)
