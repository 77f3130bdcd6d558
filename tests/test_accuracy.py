"""A published day's forecast scored against its actuals, per zone, borough and city, naive knowing what it knew."""

import numpy as np
import pandas as pd
import pytest

from flows.forecasting import accuracy, hierarchy

BOROUGHS = {4: "Manhattan", 13: "Manhattan", 132: "Queens"}


def _series(start="2024-12-01", end="2025-02-01", seed=0):
    rng = np.random.default_rng(seed)
    hours = pd.date_range(start, end, freq="h", inclusive="left")
    zones = pd.MultiIndex.from_product([hours, list(BOROUGHS)], names=["pickup_hour", "pulocationid"]).to_frame(
        index=False
    )
    actuals = zones.assign(total_rides=rng.poisson(30, len(zones)))
    return hierarchy.series_frame(actuals, BOROUGHS)[0]


def _forecast(series, day, factor=1.0, data_end="2025-01-01"):
    rows = series[(series.ds >= day) & (series.ds < pd.Timestamp(day) + pd.Timedelta(days=1))]
    forecast = rows.y * factor
    return rows.drop(columns="y").assign(
        forecast=forecast, lower_80=forecast * 0.9, upper_80=forecast * 1.1, lower_95=forecast * 0.8,
        upper_95=forecast * 1.2, data_end=pd.Timestamp(data_end),
    )  # fmt: skip


def test_naive_reaches_back_to_the_newest_week_published_at_the_day_s_start():
    end = pd.Timestamp("2025-01-01")
    hours = pd.Series(pd.to_datetime(["2025-01-01 05:00", "2025-01-07 23:00", "2025-01-08 00:00", "2025-01-29 13:00"]))
    naive = accuracy.published_naive(hours, end)
    assert (naive < end).all() and ((hours - naive) % pd.Timedelta(days=7) == pd.Timedelta(0)).all()
    assert ((hours - naive) <= pd.Timedelta(days=7) + (hours - end)).all()  # the newest such week
    assert (
        naive.tolist()
        == pd.to_datetime(["2024-12-25 05:00", "2024-12-31 23:00", "2024-12-25 00:00", "2024-12-25 13:00"]).tolist()
    )


def test_a_perfect_forecast_scores_zero_and_a_30_percent_high_one_a_bias_of_0_3():
    series = _series()
    actuals = series
    perfect = accuracy.score_day(_forecast(series, "2025-01-20"), actuals)
    assert set(perfect.unique_id) == set(series.unique_id) and (perfect.hours == 24).all()
    assert (perfect.mae == 0).all() and (perfect.bias == 0).all() and (perfect.coverage_80 == 1).all()
    high = accuracy.score_day(_forecast(series, "2025-01-20", 1.3), actuals).set_index("unique_id")
    assert high.bias.to_numpy() == pytest.approx(0.3)
    day = series[(series.ds >= "2025-01-20") & (series.ds < "2025-01-21")]
    city = day[day.unique_id == hierarchy.CITY]
    assert high.loc[hierarchy.CITY, "mae"] == pytest.approx((city.y * 0.3).mean())
    # naive from 2024-12-30 (the newest Monday published on 2025-01-20, with January not yet published)
    source = series[(series.ds >= "2024-12-30") & (series.ds < "2024-12-31") & (series.unique_id == hierarchy.CITY)]
    naive_mae = np.abs(source.y.to_numpy() - city.y.to_numpy()).mean()
    assert high.loc[hierarchy.CITY, "naive_mae"] == pytest.approx(naive_mae)
    assert high.loc[hierarchy.CITY, "ratio_to_naive"] == pytest.approx(high.loc[hierarchy.CITY, "mae"] / naive_mae)
