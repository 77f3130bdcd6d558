"""The alarms on a scored day, and which forecast days the scoring sensor asks for."""

import pandas as pd
import pytest

from flows.forecasting import alarms
from forecast_assets.loop_automation import days_to_score


def _scores(day: str, city_bias=0.0, coverage=0.8, zone_mae=1.0, naive_mae=2.0) -> pd.DataFrame:
    rows = [
        {"day": pd.Timestamp(day), "series": "city", "level": "city", "hours": 24, "rides": 1000.0,
         "forecast_rides": 1000.0 * (1 + city_bias), "mae": 10.0, "naive_mae": 12.0, "coverage_80": 0.8,
         "coverage_95": 0.95},
    ]  # fmt: skip
    for zone in range(4):
        rows.append(
            {"day": pd.Timestamp(day), "series": f"city/Queens/{zone}", "level": "zone", "hours": 24,
             "rides": 250.0, "forecast_rides": 250.0, "mae": zone_mae, "naive_mae": naive_mae,
             "coverage_80": coverage, "coverage_95": 0.95}
        )  # fmt: skip
    return pd.DataFrame(rows)


def _outcomes(day_scores, recent=None) -> dict[str, alarms.Outcome]:
    recent = recent if recent is not None else day_scores.iloc[0:0]
    return {outcome.alarm.name: outcome for outcome in alarms.evaluate(day_scores, recent)}


def test_a_good_day_passes_every_alarm():
    assert all(outcome.passed for outcome in _outcomes(_scores("2025-02-10")).values())


@pytest.mark.parametrize(("bias", "passed"), [(0.3, False), (-0.12, False), (0.099, True), (-0.05, True)])
def test_the_city_s_bias_beyond_10_percent_warns_for_a_version_without_its_own_range(bias, passed):
    outcome = _outcomes(_scores("2025-02-10", city_bias=bias))["city_bias_in_range"]
    assert outcome.passed is passed and outcome.alarm.severity == alarms.WARN
    assert outcome.metadata["city_bias_pct"] == pytest.approx(100 * bias)


@pytest.mark.parametrize(("coverage", "passed"), [(0.5, False), (0.97, False), (0.6, True), (0.9, True)])
def test_coverage_outside_its_range_warns(coverage, passed):
    assert _outcomes(_scores("2025-02-10", coverage=coverage))["zone_coverage_80_in_range"].passed is passed


def test_losing_to_naive_over_the_week_is_an_error_though_the_day_itself_beats_it():
    bad_week = pd.concat(
        [_scores(f"2025-02-{day:02d}", zone_mae=3.0) for day in range(4, 10)], ignore_index=True
    )  # six days at 1.5x naive, then a good day
    outcome = _outcomes(_scores("2025-02-10", zone_mae=1.0), bad_week)["beats_naive_over_7_days"]
    assert not outcome.passed and outcome.alarm.severity == alarms.ERROR and outcome.alarm.blocking
    assert outcome.metadata["days"] == 7
    assert outcome.metadata["ratio_to_naive"] == pytest.approx((6 * 3.0 + 1.0) / (7 * 2.0), rel=1e-3)


def test_days_outside_the_rolling_week_do_not_count():
    long_ago = _scores("2025-01-20", zone_mae=30.0)
    outcome = _outcomes(_scores("2025-02-10"), long_ago)["beats_naive_over_7_days"]
    assert outcome.passed and outcome.metadata["days"] == 1


def test_a_published_month_s_forecast_days_are_scored_in_ranges_of_consecutive_days():
    forecasts = {"2025-02-01": 5, "2025-02-02": 6, "2025-02-03": 7, "2025-02-10": 8, "2025-03-01": 9}
    ranges = days_to_score({"2025-01-01": 1, "2025-02-01": 20}, forecasts, {})
    assert ranges == [("2025-02-01", "2025-02-03"), ("2025-02-10", "2025-02-10")]


def test_a_scored_day_is_scored_again_only_when_forecast_again_or_its_month_republished():
    forecasts = {"2025-02-05": 5, "2025-02-06": 6, "2025-03-05": 30}
    scored = {"2025-02-05": 21, "2025-02-06": 22}
    assert days_to_score({"2025-02-01": 20}, forecasts, scored) == []
    assert days_to_score({"2025-02-01": 20}, forecasts | {"2025-02-06": 25}, scored) == [("2025-02-06", "2025-02-06")]
    assert days_to_score({"2025-02-01": 40}, forecasts, scored) == [("2025-02-05", "2025-02-06")]


@pytest.mark.parametrize(("coverage", "passed"), [(0.70, False), (0.90, False), (0.76, True), (0.84, True)])
def test_coverage_outside_the_version_s_healthy_range_warns(coverage, passed):
    day = _scores("2025-02-10", coverage=coverage)
    outcome = alarms.evaluate(day, day.iloc[0:0], alarms.HealthyRanges(zone_coverage_80=(0.75, 0.85)))[1]
    assert outcome.alarm.name == "zone_coverage_80_in_range" and outcome.passed is passed
    assert (outcome.metadata["healthy_low_pct"], outcome.metadata["healthy_high_pct"]) == (75.0, 85.0)


@pytest.mark.parametrize(("bias", "passed"), [(0.25, False), (-0.2, False), (0.15, True), (-0.12, True)])
def test_the_city_s_bias_outside_the_version_s_healthy_range_warns(bias, passed):
    day = _scores("2025-02-10", city_bias=bias)
    outcome = alarms.evaluate(day, day.iloc[0:0], alarms.HealthyRanges(city_bias=(-0.18, 0.2)))[0]
    assert outcome.alarm.name == "city_bias_in_range" and outcome.passed is passed
    assert (outcome.metadata["healthy_low_pct"], outcome.metadata["healthy_high_pct"]) == (-18.0, 20.0)
