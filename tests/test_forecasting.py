"""The plain forecasting modules: features, backtests, metrics, settings (no Metaflow run)."""

import numpy as np
import pandas as pd
import pytest

from flows.forecasting import backtest, features
from flows.forecasting.models import make_candidate
from flows.run_settings import resolve_settings


def _actuals(days=35, zones=(161, 132), seed=0):
    rng = np.random.default_rng(seed)
    hours = pd.date_range("2025-01-01", periods=days * 24, freq="h")
    rows = []
    for zone in zones:
        rate = 10 + 8 * np.sin(2 * np.pi * hours.hour / 24) + (zone == 161) * 5
        rows.append(pd.DataFrame({"pickup_hour": hours, "pulocationid": zone, "total_rides": rng.poisson(rate)}))
    return pd.concat(rows, ignore_index=True)


def test_lags_shorter_than_the_horizon_are_never_used():
    assert features.lags_for(24) == [24, 48, 168, 336, 504]
    assert features.lags_for(49) == [168, 336, 504]


def test_lag_features_look_back_within_a_zone():
    actuals = _actuals(days=30)
    grid = features.complete_grid(actuals, [132, 161], actuals.pickup_hour.min(), actuals.pickup_hour.max())
    frame, names = features.build_features(grid, 24)
    zone = frame[frame.pulocationid == 161].set_index("pickup_hour")
    moment = pd.Timestamp("2025-01-20 09:00")
    assert zone.loc[moment, "lag_168"] == zone.loc[moment - pd.Timedelta(hours=168), "total_rides"]
    assert "prcp" not in names


def test_future_weather_takes_the_last_observed_day():
    actuals = _actuals(days=30, zones=(161,))
    weather = pd.DataFrame(
        {"county_fips": "36061", "date": pd.date_range("2025-01-01", "2025-01-30"), "prcp": 1.0, "tavg": 3.0}
    )
    weather.loc[weather.date == "2025-01-30", "prcp"] = 9.0
    grid = features.complete_grid(actuals, [161], actuals.pickup_hour.min(), pd.Timestamp("2025-02-01"))
    frame, names = features.build_features(grid, 24, weather)
    assert {"prcp", "tavg"} <= set(names)
    assert frame.loc[frame.pickup_hour == "2025-01-31 12:00", "prcp"].item() == 9.0


def test_backtest_origins_end_one_horizon_before_as_of():
    origins = backtest.backtest_origins(pd.Timestamp("2025-02-01"), 3, 24)
    assert origins == [pd.Timestamp("2025-01-29"), pd.Timestamp("2025-01-30"), pd.Timestamp("2025-01-31")]


def test_backtest_never_trains_on_the_hours_it_forecasts():
    actuals = _actuals()
    grid = features.complete_grid(actuals, [132, 161], actuals.pickup_hour.min(), pd.Timestamp("2025-02-05"))
    frame, names = features.build_features(grid, 24)
    seen = []

    class Spy:
        name = "spy"

        def fit(self, rows, feature_names):
            seen.append(rows.pickup_hour.max())
            return self

        def predict(self, rows, feature_names):
            return np.zeros(len(rows))

    origins = backtest.backtest_origins(pd.Timestamp("2025-02-05"), 2, 24)
    result = backtest.rolling_origin_backtest(frame, names, Spy, origins, 24)
    assert all(last < origin for last, origin in zip(seen, origins, strict=True))
    assert len(result) == 2 * 24 * 2


def test_metrics_are_computed_per_group():
    predictions = pd.DataFrame(
        {"candidate": ["a", "a", "b", "b"], "total_rides": [10, 0, 10, 0], "predicted": [12.0, 1.0, 10.0, 0.0]}
    )
    metrics = backtest.error_metrics(predictions, ["candidate"]).set_index("candidate")
    assert metrics.loc["a", "mae"] == pytest.approx(1.5)
    assert metrics.loc["a", "rmse"] == pytest.approx(np.sqrt((4 + 1) / 2))
    assert metrics.loc["a", "wape"] == pytest.approx(3 / 10)
    assert backtest.choose_champion(metrics.reset_index()) == "b"


def test_gradient_boosting_beats_seasonal_naive_on_a_noisy_daily_pattern():
    actuals = _actuals(days=42)
    grid = features.complete_grid(actuals, [132, 161], actuals.pickup_hour.min(), pd.Timestamp("2025-02-12"))
    frame, names = features.build_features(grid, 24)
    origins = backtest.backtest_origins(pd.Timestamp("2025-02-12"), 3, 24)
    runs = [
        backtest.rolling_origin_backtest(frame, names, lambda n=name: make_candidate(n), origins, 24)
        for name in ("seasonal_naive", "gbm")
    ]
    metrics = backtest.error_metrics(pd.concat(runs), ["candidate"]).set_index("candidate")
    assert metrics.loc["gbm", "mae"] < metrics.loc["seasonal_naive", "mae"]


def test_busiest_zones_only_counts_zones_still_present():
    actuals = _actuals(zones=(161, 132, 4))
    actuals = actuals[~((actuals.pulocationid == 161) & (actuals.pickup_hour >= "2025-02-04"))]
    assert backtest.busiest_zones(actuals, 2) == [4, 132]
    assert 161 not in backtest.busiest_zones(actuals, 3)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"as_of": "yesterday-ish"}, "--as_of 'yesterday-ish' is not a time"),
        ({"horizon_hours": 0}, "--horizon_hours 0 must be between 1 and 168"),
        ({"lookback_days": 10}, "--lookback_days 10 is too short"),
        ({"candidates": "gbm,prophet"}, "--candidates names unknown models prophet"),
        ({"candidates": "gbm_weather"}, "weather models need --use_weather true"),
    ],
)
def test_bad_parameters_are_named(changes, message):
    arguments = dict(as_of="2025-02-01", lookback_days=42, backtest_days=7, horizon_hours=24, zones=50,
                     use_weather=False, candidates="seasonal_naive,gbm,gbm_weather") | changes  # fmt: skip
    with pytest.raises(ValueError, match=message):
        resolve_settings(**arguments)


def test_weather_candidates_are_dropped_without_weather():
    settings = resolve_settings("2025-02-01", 42, 7, 24, 50, False, "seasonal_naive,gbm,gbm_weather")
    assert settings.candidates == ["seasonal_naive", "gbm"]
    assert resolve_settings("2025-02-01", 42, 7, 24, 50, True, "gbm_weather").candidates == ["gbm_weather"]
