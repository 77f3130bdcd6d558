"""A served model's forecast of each day from the actuals published at its start, a month at a time."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from flows.forecasting import backtest
from flows.forecasting.candidates import candidate_names, is_scenario, make_candidate
from flows.forecasting.daily import forecast_days
from flows.forecasting.publication import Inputs, PublicationRule
from flows.forecasting.threads import numeric_threads

ZONES = [132, 161, 48]
MONTHLY = PublicationRule(actuals_month_delay=0)


@pytest.fixture(autouse=True)
def one_thread():
    with numeric_threads(1):
        yield


def _actuals(start="2024-11-01", end="2025-02-01", seed=0) -> pd.DataFrame:
    """A daily and weekly rhythm per zone, Poisson noise."""
    rng = np.random.default_rng(seed)
    hours = pd.date_range(start, end, freq="h", inclusive="left")
    frames = []
    for number, zone in enumerate(ZONES):
        weekly = 1 + 0.3 * (hours.day_of_week < 5)
        rate = (12 + 6 * number) * weekly * (1 + 0.6 * np.clip(np.sin(2 * np.pi * (hours.hour - 6) / 24), 0, None))
        frames.append(pd.DataFrame({"pickup_hour": hours, "pulocationid": zone, "total_rides": rng.poisson(rate)}))
    return pd.concat(frames, ignore_index=True)


def _inputs(actuals, rule=MONTHLY) -> Inputs:
    return Inputs(actuals, None, ZONES, 24, actuals.pickup_hour.min(), rule)


def _fitted(name, inputs, as_of):
    return backtest.fit_at(replace(inputs, rule=PublicationRule()), as_of, lambda: make_candidate(name))


def test_a_month_s_actuals_are_published_when_it_ends():
    rule = MONTHLY
    assert rule.actuals_through(pd.Timestamp("2025-01-20 00:00")) == pd.Timestamp("2025-01-01")
    assert rule.actuals_through(pd.Timestamp("2025-01-01 00:00")) == pd.Timestamp("2025-01-01")
    assert PublicationRule(actuals_month_delay=1).actuals_through(pd.Timestamp("2025-01-20")) == pd.Timestamp(
        "2024-12-01"
    )
    assert PublicationRule().actuals_through(pd.Timestamp("2025-01-20 07:00")) == pd.Timestamp("2025-01-20 07:00")


@pytest.mark.parametrize(
    "name", [name for name in candidate_names() if not is_scenario(name) and "weather" not in name]
)
def test_no_actual_of_the_target_s_month_moves_its_forecast(name):
    actuals = _actuals()
    as_of = pd.Timestamp("2025-01-01")
    model, names = _fitted(name, _inputs(actuals), as_of)
    days = [pd.Timestamp("2025-01-01"), pd.Timestamp("2025-01-09"), pd.Timestamp("2025-01-31")]
    first = forecast_days(model, _inputs(actuals), days, names)
    changed = actuals.copy()
    january = changed.pickup_hour >= as_of
    changed.loc[january, "total_rides"] = changed.loc[january, "total_rides"] * 5 + 100
    again = forecast_days(model, _inputs(changed), days, names)
    pd.testing.assert_frame_equal(first, again)
    assert set(first.forecast_origin) == set(days) and (first.data_end == as_of).all()
    assert len(first) == len(days) * 24 * len(ZONES) and first.predicted.notna().all()
    assert (first.predicted >= 0).all()


def test_the_first_day_after_the_data_is_the_model_s_own_day_ahead_forecast():
    actuals = _actuals()
    as_of = pd.Timestamp("2025-01-01")
    model, names = _fitted("gbm", _inputs(actuals), as_of)
    daily = forecast_days(model, _inputs(actuals), [as_of], names)
    direct = backtest.forecast_day(model, _inputs(actuals, PublicationRule()), as_of, names)
    np.testing.assert_allclose(daily.predicted.to_numpy(), direct.predicted.to_numpy())


def test_a_day_a_month_past_the_data_still_follows_the_zones_rhythm():
    actuals = _actuals()
    as_of = pd.Timestamp("2025-01-01")
    model, names = _fitted("blend", _inputs(actuals), as_of)
    day = pd.Timestamp("2025-01-29")  # a Wednesday, 28 days past the data
    forecast = forecast_days(model, _inputs(actuals), [day], names)
    truth = forecast.merge(actuals, on=["pickup_hour", "pulocationid"])
    naive = actuals.assign(pickup_hour=actuals.pickup_hour + pd.Timedelta(days=35))  # five weeks back: published
    naive = truth[["pickup_hour", "pulocationid"]].merge(naive, on=["pickup_hour", "pulocationid"])
    mae = (truth.predicted - truth.total_rides).abs().mean()
    naive_mae = (naive.total_rides.to_numpy() - truth.total_rides.to_numpy()).__abs__().mean()
    assert mae < naive_mae


def test_days_published_with_different_data_each_start_from_their_own():
    actuals = _actuals()
    model, names = _fitted("profile", _inputs(actuals), pd.Timestamp("2024-12-01"))
    days = [pd.Timestamp("2024-12-31"), pd.Timestamp("2025-01-02")]
    forecast = forecast_days(model, _inputs(actuals), days, names)
    ends = forecast.groupby("forecast_origin").data_end.first()
    assert ends.to_dict() == {days[0]: pd.Timestamp("2024-12-01"), days[1]: pd.Timestamp("2025-01-01")}
