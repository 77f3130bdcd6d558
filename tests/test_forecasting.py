"""The plain forecasting modules: features, backtests, metrics, settings, reports, the flow's log (no Metaflow run)."""

import re

import numpy as np
import pandas as pd
import pytest

from flows.forecasting import backtest, features, report
from flows.forecasting.candidates import candidate_names, is_scenario, make_candidate
from flows.forecasting.publication import Inputs, PublicationRule
from flows.forecasting.tables import ACTUALS, WEATHER
from flows.forecasting.threads import numeric_threads
from flows.launch import FlowEvent, FlowEventKind, FlowLog
from flows.run_settings import resolve_settings

DAY = pd.Timedelta(hours=24)


@pytest.fixture(autouse=True)
def one_thread():
    """Models on a few hundred rows: OpenMP's threads would only spin against the other tests' processes."""
    with numeric_threads(1):
        yield


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
    assert not set(features.WEATHER_FEATURES) & set(names)


def test_a_zone_absent_from_a_published_hour_had_no_ride_and_an_unpublished_hour_is_unknown():
    actuals = _actuals(days=30, zones=(132, 161))
    absent = (actuals.pulocationid == 132) & (actuals.pickup_hour >= "2025-01-20")
    end = actuals.pickup_hour.max() + pd.Timedelta(hours=1) + pd.Timedelta(days=2)
    grid = features.complete_grid(actuals[~absent], [132, 161], actuals.pickup_hour.min(), end)
    later = grid[grid.pickup_hour >= "2025-01-20"].set_index(["pulocationid", "pickup_hour"]).total_rides
    published = later.index.get_level_values("pickup_hour") <= actuals.pickup_hour.max()
    assert (later[published].loc[132] == 0).all()
    assert later[published].loc[161].equals(actuals[actuals.pulocationid == 161].set_index("pickup_hour").total_rides
                                            .loc["2025-01-20":].astype(later.dtype))  # fmt: skip
    assert later[~published].isna().all() and (~published).sum() == 2 * 2 * 24


def _weather(days: pd.DatetimeIndex, prcp=1.0) -> pd.DataFrame:
    return pd.DataFrame({"county_fips": "36061", "date": days, "prcp": prcp, "tavg": 3.0})


def test_known_weather_is_the_newest_day_published_at_the_origin():
    actuals = _actuals(days=30, zones=(161,))
    weather = _weather(pd.date_range("2025-01-01", "2025-01-30"))
    weather.loc[weather.date == "2025-01-29", "prcp"] = 9.0
    weather.loc[weather.date == "2025-01-30", "prcp"] = 5.0
    grid = features.complete_grid(actuals, [161], actuals.pickup_hour.min(), pd.Timestamp("2025-02-01"))
    frame, names = features.build_features(grid, 24, weather, weather_lag=1)
    assert set(features.WEATHER_FEATURES) | set(features.PERFECT_WEATHER_FEATURES) <= set(names)
    at = frame.set_index("pickup_hour")
    # From the origin 2025-01-30 00:00 the newest published day is the 29th; the 30th is the target's own day.
    assert at.loc["2025-01-30 12:00", "prcp_known"] == 9.0
    assert at.loc["2025-01-30 12:00", "prcp_same_day"] == 5.0
    # Past the table, the newest observed day stands in, never a later one.
    assert at.loc["2025-01-31 12:00", "prcp_known"] == 5.0


@pytest.mark.parametrize(
    ("origin_hour", "horizon", "delay", "lag"), [(0, 24, 0, 1), (5, 24, 0, 2), (0, 48, 0, 2), (0, 24, 3, 4)]
)
def test_the_weather_lag_reaches_back_before_every_target_of_an_origin(origin_hour, horizon, delay, lag):
    assert features.weather_lag_days(origin_hour, horizon, delay) == lag


def _inputs(actuals, weather=None, zones=(132, 161)):
    return Inputs(actuals, weather, list(zones), 24, actuals.pickup_hour.min())


def _unpublished_changed(actuals, weather, origin):
    """Every value the publication rule says is unknown at ``origin`` changed wildly; nothing else touched."""
    rule = PublicationRule()
    actuals, weather = actuals.copy(), weather.copy()
    later = actuals.pickup_hour >= origin
    actuals.loc[later, "total_rides"] = actuals.loc[later, "total_rides"] * 7 + 300
    unpublished = weather.date > rule.weather_through(origin)
    weather.loc[unpublished, ["prcp", "tavg"]] = weather.loc[unpublished, ["prcp", "tavg"]] * 10 + 50
    return actuals, weather


@pytest.mark.parametrize("name", [name for name in candidate_names() if not is_scenario(name)])
def test_nothing_unpublished_at_a_forecast_s_origin_moves_it(name):
    """Every value unpublished at a day's origin (later actuals, and weather inside NOAA's delay) is changed: the
    backtest's forecasts of that day and every day before it stay the same, as does the forecast made at the end."""
    actuals = _actuals(days=42)
    end = pd.Timestamp("2025-02-12")
    days = pd.date_range("2025-01-01", end - DAY)
    weather = _weather(days, prcp=np.random.default_rng(1).gamma(0.9, 9.0, len(days)))
    week = end - pd.Timedelta(days=7)
    original = backtest.rolling_origin_backtest(_inputs(actuals, weather), lambda: make_candidate(name), [week])
    assert len(original.forecast_origin.unique()) == 7
    for origin in pd.date_range(week, periods=7, freq="D"):
        moved = backtest.rolling_origin_backtest(
            _inputs(*_unpublished_changed(actuals, weather, origin)), lambda: make_candidate(name), [week]
        )
        known = original.forecast_origin <= origin
        assert known.sum() == 24 * 2 * ((origin - week).days + 1)
        pd.testing.assert_series_equal(original[known].predicted, moved[known].predicted)
    forecasts = []
    for inputs in (_inputs(actuals, weather), _inputs(*_unpublished_changed(actuals, weather, end))):
        model, names = backtest.fit_at(inputs, end, lambda: make_candidate(name))
        rows, _ = inputs.forecast_frame(end)
        forecasts.append(pd.Series(model.predict(rows, names)))
    pd.testing.assert_series_equal(*forecasts)


@pytest.mark.parametrize("hindsight", [False, True])
@pytest.mark.parametrize("rule", [PublicationRule(), PublicationRule(weather_delay_days=0), PublicationRule(3, 1)])
@pytest.mark.parametrize("horizon", [24, 48])
def test_a_week_s_days_featured_at_once_are_each_day_s_own_frame(hindsight, rule, horizon):
    """A backtest's week is featured in one build: each day's rows are exactly those its own origin gives, its
    weather published or not (a gap in NOAA's days included), under either publication rule."""
    actuals = _actuals(days=42)
    days = pd.date_range("2025-01-01", "2025-02-11")
    weather = _weather(days, prcp=np.random.default_rng(2).gamma(0.9, 9.0, len(days)))
    weather = weather[weather.date != "2025-02-01"]  # a day NOAA never published: the day before stands in
    inputs = Inputs(actuals, weather, [132, 161], horizon, actuals.pickup_hour.min(), rule)
    origins = list(pd.date_range("2025-02-02", periods=7, freq="D"))
    together = inputs.forecast_frames(origins, hours=24, hindsight=hindsight)
    for origin, (rows, names) in zip(origins, together, strict=True):
        alone, alone_names = inputs.forecast_frame(origin, hours=24, hindsight=hindsight)
        assert names == alone_names
        pd.testing.assert_frame_equal(rows, alone, check_exact=True)


def test_the_hindsight_scenario_is_told_the_target_day_s_weather_and_nothing_else_is():
    actuals = _actuals(days=42)
    end = pd.Timestamp("2025-02-12")
    days = pd.date_range("2025-01-01", end - DAY)
    weather = _weather(days, prcp=np.random.default_rng(1).gamma(0.9, 9.0, len(days)))
    origin = end - DAY
    scenario = [
        backtest.rolling_origin_backtest(_inputs(*pair), lambda: make_candidate("glm_perfect_weather"), [origin], DAY)
        for pair in ((actuals, weather), _unpublished_changed(actuals, weather, origin))
    ]
    assert not np.allclose(scenario[0].predicted, scenario[1].predicted)


@pytest.mark.parametrize(("origin", "newest"), [("2025-01-10 00:00", "2025-01-06"), ("2025-01-10 05:00", "2025-01-06")])
def test_a_day_s_weather_is_published_three_days_after_it_ends(origin, newest):
    assert PublicationRule().weather_through(pd.Timestamp(origin)) == pd.Timestamp(newest)


@pytest.mark.parametrize(("origin_hour", "horizon"), [(0, 24), (5, 24), (23, 24), (0, 48), (12, 72), (0, 1)])
def test_the_known_weather_of_every_target_hour_is_published_at_its_origin(origin_hour, horizon):
    rule = PublicationRule()
    origin = pd.Timestamp("2025-01-20") + pd.Timedelta(hours=origin_hour)
    lag = features.weather_lag_days(origin_hour, horizon, rule.weather_delay_days)
    for target in pd.date_range(origin, periods=horizon, freq="h"):
        assert target.normalize() - pd.Timedelta(days=lag) <= rule.weather_through(origin)


def test_backtest_weeks_end_at_as_of():
    weeks = backtest.backtest_weeks(pd.Timestamp("2025-02-01"), 3)
    assert weeks == [pd.Timestamp("2025-01-11"), pd.Timestamp("2025-01-18"), pd.Timestamp("2025-01-25")]


def test_backtest_never_trains_on_the_hours_it_forecasts():
    actuals = _actuals()
    seen, asked = [], []

    class Spy:
        name = "spy"
        weather = None

        def fit(self, rows, feature_names):
            seen.append(rows.pickup_hour.max())
            return self

        def predict(self, rows, feature_names):
            asked.append("total_rides" in rows)
            return np.zeros(len(rows))

    origins = backtest.backtest_weeks(pd.Timestamp("2025-02-05"), 2)
    result = backtest.rolling_origin_backtest(_inputs(actuals), Spy, origins)
    assert all(last < origin for last, origin in zip(seen, origins, strict=True))
    assert asked == [False] * 14  # a forecast a day, never shown its target
    assert len(result) == 2 * 168 * 2  # two zones, two weeks of hours


def test_metrics_are_computed_per_group():
    predictions = pd.DataFrame(
        {"candidate": ["a", "a", "b", "b"], "total_rides": [10, 0, 10, 0], "predicted": [12.0, 1.0, 10.0, 0.0]}
    )
    metrics = backtest.error_metrics(predictions, ["candidate"]).set_index("candidate")
    assert metrics.loc["a", "mae"] == pytest.approx(1.5)
    assert metrics.loc["a", "rmse"] == pytest.approx(np.sqrt((4 + 1) / 2))
    assert metrics.loc["a", "wape"] == pytest.approx(3 / 10)


@pytest.mark.parametrize("name", ["gbm", "glm"])
def test_learned_models_beat_seasonal_naive_on_a_noisy_daily_pattern(name):
    actuals = _actuals(days=42)
    origins = backtest.backtest_weeks(pd.Timestamp("2025-02-12"), 2)
    runs = [
        backtest.rolling_origin_backtest(_inputs(actuals), lambda n=candidate: make_candidate(n), origins)
        for candidate in ("seasonal_naive", name)
    ]
    metrics = backtest.error_metrics(pd.concat(runs), ["candidate"]).set_index("candidate")
    assert metrics.loc[name, "mae"] < metrics.loc["seasonal_naive", "mae"]


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
        ({"evaluation_weeks": 0}, "--evaluation_weeks 0 and --selection_weeks 2 must be at least 1"),
        ({"candidates": "gbm,prophet"}, "--candidates names unknown models prophet"),
        ({"candidates": "gbm_weather"}, "weather models need --use_weather true"),
    ],
)
def test_bad_parameters_are_named(changes, message):
    arguments = dict(as_of="2025-02-01", lookback_days=63, evaluation_weeks=4, selection_weeks=2, horizon_hours=24,
                     zones=50, use_weather=False, candidates="seasonal_naive,gbm,gbm_weather") | changes  # fmt: skip
    with pytest.raises(ValueError, match=message):
        resolve_settings(**arguments)


def test_weather_candidates_are_dropped_without_weather_and_the_baseline_is_always_trained():
    settings = resolve_settings("2025-02-01", 63, 4, 2, 24, 50, False, "seasonal_naive,gbm,gbm_weather")
    assert settings.candidates == ["seasonal_naive", "gbm"]
    chosen = resolve_settings("2025-02-01", 63, 4, 2, 24, 50, True, "gbm_weather").candidates
    assert chosen == ["seasonal_naive", "gbm_weather"]


def test_the_backtest_reports_each_origin_as_it_is_done():
    actuals = _actuals()
    origins = backtest.backtest_weeks(pd.Timestamp("2025-02-05"), 3)
    reported = []
    result = backtest.rolling_origin_backtest(
        _inputs(actuals), lambda: make_candidate("seasonal_naive"), origins, on_origin=reported.append
    )
    assert [(r.number, r.total, r.origin) for r in reported] == [(n, 3, o) for n, o in enumerate(origins, start=1)]
    per_origin = result.assign(error=(result.predicted - result.total_rides).abs()).groupby("origin").error.mean()
    assert [r.mae for r in reported] == pytest.approx(per_origin.loc[origins].tolist())
    assert all(r.seconds >= 0 for r in reported)
    assert re.fullmatch(r"seasonal_naive: week 2/3 from 2025-01-22T00 MAE \d+\.\d\d \(\d+\.\d s\)", str(reported[1]))


def test_the_metrics_table_is_ranked_by_mae_against_naive_and_the_noise_floor():
    metrics = pd.DataFrame(
        {"candidate": ["seasonal_naive", "glm", "glm_perfect_weather"], "mae": [4.0, 2.0, 1.0],
         "rmse": [4.0, 2.0, 3.0], "wape": [0.3, 0.1, 0.2], "hours": [48, 48, 48]}
    )  # fmt: skip
    headers, rows = report.metrics_table(metrics, {"mae": 0.8}, ("glm_perfect_weather",))
    assert headers == ["candidate", "mae", "rmse", "wape", "hours", "MAE / naive", "MAE / noise floor", "kind"]
    assert [row[0] for row in rows] == ["glm_perfect_weather", "glm", "seasonal_naive"]
    assert rows[1] == ["glm", 2.0, 2.0, 0.1, 48, 0.5, 2.5, "forecast"]
    assert rows[0][-1] == "scenario (not a forecast)"


def test_the_zone_table_puts_the_zone_worst_against_naive_first():
    by_zone = pd.DataFrame(
        {"pulocationid": [1, 2], "mae": [1.0, 3.0], "naive_mae": [2.0, 4.0], "coverage_80": [0.8, 0.7],
         "coverage_95": [0.95, 0.9]}
    ).assign(ratio=lambda table: table.mae / table.naive_mae)  # fmt: skip
    floor = pd.DataFrame({"pulocationid": [1, 2], "mae": [0.5, 2.0]})
    zones = pd.DataFrame({"location_id": [1], "zone": ["Newark Airport"], "borough": ["EWR"]})
    assert report.zone_table(by_zone, floor, zones) == [
        [2, "", "", 3.0, 4.0, 2.0, 0.75, 1.5, 0.7, 0.9],  # a zone the lookup lacks keeps its number, unnamed
        [1, "Newark Airport", "EWR", 1.0, 2.0, 0.5, 0.5, 2.0, 0.8, 0.95],
    ]


def test_the_inputs_read_say_whether_weather_was_read():
    start, end = pd.Timestamp("2025-01-01"), pd.Timestamp("2025-02-01")
    actuals, weather = report.inputs_read(start, end, 1200, 11, None, None)
    assert actuals.row() == [
        ACTUALS,
        "11",
        "1,200 rows",
        "2025-01-01 00:00 to 2025-02-01 00:00 New York time, end excluded",
    ]
    assert weather.row()[:2] == [WEATHER, "not read"] and "use_weather is false" in weather.sentence()
    daily = pd.DataFrame({"county_fips": ["36061"] * 31, "date": pd.date_range(start, periods=31)})
    _, weather = report.inputs_read(start, end, 1200, 11, daily, 22)
    assert weather.sentence() == f"31 county-days of {WEATHER} at snapshot 22 (2025-01-01 to 2025-02-01, end excluded)"


# What Metaflow's runtime wrote for a run whose load step failed (timestamps, pids and traceback shortened).
FAILED_RUN_OUTPUT = """\
2025-03-01 10:00:00.100 Workflow starting (run-id 17):
2025-03-01 10:00:00.200 [17/start/1 (pid 40)] Task is starting.
2025-03-01 10:00:01.000 [17/start/1 (pid 40)] Model version TrainForecastModelFlow/17: as of 2020-01-01
2025-03-01 10:00:02.700 [17/start/1 (pid 40)] Task finished successfully.
2025-03-01 10:00:02.800 [17/load/2 (pid 41)] Task is starting.
2025-03-01 10:00:04.000 [17/load/2 (pid 41)] <flow TrainForecastModelFlow step load> failed:
2025-03-01 10:00:04.000 [17/load/2 (pid 41)] Internal error
2025-03-01 10:00:04.000 [17/load/2 (pid 41)] Traceback (most recent call last):
2025-03-01 10:00:04.000 [17/load/2 (pid 41)] File "/work/main/flows/forecasting/tables.py", line 79, in _read_window
2025-03-01 10:00:04.000 [17/load/2 (pid 41)] raise MissingInput(msg)
2025-03-01 10:00:04.000 [17/load/2 (pid 41)] flows.forecasting.tables.MissingInput: Table t has no rows between a and b
2025-03-01 10:00:04.000 [17/load/2 (pid 41)]
2025-03-01 10:00:04.100 [17/load/2 (pid 41)] Task failed.
2025-03-01 10:00:04.100 Workflow failed.
"""


def test_the_flow_log_reads_task_starts_ends_output_and_the_failed_steps_error():
    log = FlowLog("TrainForecastModelFlow")
    events = [e for e in map(log.read, FAILED_RUN_OUTPUT.splitlines()) if e is not None]
    kinds = FlowEventKind
    assert [(e.kind, e.step) for e in events] == [
        (kinds.TASK_STARTED, "start"), (kinds.OUTPUT, "start"), (kinds.TASK_FINISHED, "start"),
        (kinds.TASK_STARTED, "load"), (kinds.TASK_FAILED, "load"),
    ]  # fmt: skip
    assert events[0].pathspec == "TrainForecastModelFlow/17/start/1"
    assert str(events[1]) == "start: Model version TrainForecastModelFlow/17: as of 2020-01-01"
    assert events[2].seconds == pytest.approx(2.5) and str(events[2]).startswith("start finished in 2.5 s")
    failed = "flows.forecasting.tables.MissingInput: Table t has no rows between a and b"
    assert events[4].message == failed
    assert str(events[4]) == f"load failed (TrainForecastModelFlow/17/load/2): {failed}"
    report_lines = log.failure_report(stderr="").splitlines()
    assert report_lines[0] == failed and "raise MissingInput(msg)" in report_lines


def test_a_run_started_event_names_the_run():
    event = FlowEvent(FlowEventKind.RUN_STARTED, "TrainForecastModelFlow/17")
    assert str(event) == "Metaflow run 17 started: TrainForecastModelFlow/17" and event.step is None


@pytest.mark.parametrize("name", ["profile", "gbm", "blend"])
def test_level_following_candidates_follow_a_zone_whose_demand_doubled(name):
    """Three zones with a daily pattern; one doubles for the last two weeks: its forecast doubles, the others' stay."""
    rng = np.random.default_rng(5)
    hours = pd.date_range("2025-01-01", periods=49 * 24, freq="h")
    rows = []
    for zone, base in ((161, 40.0), (132, 25.0), (48, 30.0)):
        rate = base * (1 + 0.6 * np.sin(2 * np.pi * hours.hour / 24))
        if zone == 161:
            rate = np.where(hours >= hours[-1] - pd.Timedelta(days=14), 2 * rate, rate)
        rows.append(pd.DataFrame({"pickup_hour": hours, "pulocationid": zone, "total_rides": rng.poisson(rate)}))
    actuals = pd.concat(rows, ignore_index=True)
    inputs = Inputs(actuals, None, [48, 132, 161], 24, actuals.pickup_hour.min())
    origin = hours[-1] + pd.Timedelta(hours=1)
    model, names = backtest.fit_at(inputs, origin, lambda: make_candidate(name))
    rows_ahead, _ = inputs.forecast_frame(origin)
    daily = rows_ahead.assign(forecast=model.predict(rows_ahead, names)).groupby("pulocationid").forecast.sum()
    assert daily[161] == pytest.approx(2 * 40 * 24, rel=0.15)  # not the 40 a day it had for five weeks
    assert daily[132] == pytest.approx(25 * 24, rel=0.12) and daily[48] == pytest.approx(30 * 24, rel=0.12)


def test_the_minor_holidays_are_flagged_apart_from_the_city_holidays_and_keep_their_weekday():
    hours = pd.date_range("2024-10-01", "2025-02-28 23:00", freq="h")
    grid = pd.DataFrame({"pickup_hour": hours, "pulocationid": 161, "total_rides": 1.0})
    frame, names = features.build_features(grid, 24)
    days = frame.groupby(frame.pickup_hour.dt.normalize()).first()
    minor = days.index[days.is_minor_holiday == 1].strftime("%m-%d").tolist()
    city = days.index[days.is_city_holiday == 1].strftime("%m-%d").tolist()
    # Columbus Day, Election Day (the Tuesday after the first Monday), Veterans Day, MLK Day, Presidents' Day.
    assert minor == ["10-14", "11-05", "11-11", "01-20", "02-17"]
    assert city == ["11-28", "12-25", "01-01"]
    assert (days.is_holiday == days.is_minor_holiday + days.is_city_holiday).all()
    assert days.loc["2025-02-17", "day_type"] == 0 and days.loc["2024-11-28", "day_type"] == features.SUNDAY
    assert {"is_city_holiday", "is_minor_holiday"} <= set(names)


@pytest.mark.parametrize("start", ["2024-10-01", "2025-01-15"])
@pytest.mark.parametrize("name", ["glm", "gbm", "profile", "blend"])
def test_every_calendar_candidate_learns_the_minor_holidays_dip_from_the_ones_it_saw(name, start):
    """Demand a fifth lower on each minor holiday: trained on Columbus, Election, Veterans and MLK Days, or on MLK Day
    alone in the window's first week (no week before it to compare with), each calendar candidate forecasts
    Presidents' Day a fifth below an ordinary Monday, not as one."""
    rng = np.random.default_rng(7)
    hours = pd.date_range(start, "2025-02-17 23:00", freq="h")
    frame, _ = features.build_features(pd.DataFrame({"pickup_hour": hours, "pulocationid": 161, "total_rides": 0}), 24)
    shape = (1 + 0.6 * np.sin(2 * np.pi * hours.hour / 24)) * np.where(hours.day_of_week >= 5, 0.6, 1.0)
    holiday = np.where(frame.is_minor_holiday == 1, 0.8, np.where(frame.is_city_holiday == 1, 0.6, 1.0))
    rows = [
        pd.DataFrame({"pickup_hour": hours, "pulocationid": zone, "total_rides": rng.poisson(base * shape * holiday)})
        for zone, base in ((161, 60.0), (132, 40.0))
    ]
    actuals = pd.concat(rows, ignore_index=True)
    inputs = Inputs(actuals, None, [132, 161], 24, actuals.pickup_hour.min())
    forecasts = {}
    for day in ("2025-02-10", "2025-02-17"):  # an ordinary Monday, then Presidents' Day
        origin = pd.Timestamp(day)
        model, names = backtest.fit_at(inputs, origin, lambda: make_candidate(name))
        ahead, _ = inputs.forecast_frame(origin)
        forecasts[day] = model.predict(ahead, names).sum()
    expected_monday = (60.0 + 40.0) * 24
    assert forecasts["2025-02-10"] == pytest.approx(expected_monday, rel=0.08)
    assert forecasts["2025-02-17"] == pytest.approx(0.8 * expected_monday, rel=0.08)
