"""Held-out model selection, calibrated intervals, the interval check and the thread limits (no Metaflow run)."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from flows.forecasting import checks, intervals, selection
from flows.forecasting.backtest import BASELINE, backtest_weeks, fit_at, rolling_origin_backtest
from flows.forecasting.candidates import make_candidate
from flows.forecasting.publication import Inputs

AS_OF = pd.Timestamp("2025-02-01")


def _backtest(errors_by_week: dict[str, list[float]], seed=0, spread=False) -> pd.DataFrame:
    """Forecasts of 10 zones for every hour of each week, each candidate off by its week's error (in rides), or
    with ``spread`` by a normal error of that size."""
    rng = np.random.default_rng(seed)
    weeks = backtest_weeks(AS_OF, len(next(iter(errors_by_week.values()))))
    rows = []
    for index, week in enumerate(weeks):
        hours = pd.date_range(week, periods=168, freq="h")
        cells = pd.MultiIndex.from_product([hours, range(10)], names=["pickup_hour", "pulocationid"]).to_frame(
            index=False
        )
        truth = rng.poisson(50, len(cells)).astype(float)
        for candidate, errors in errors_by_week.items():
            if spread:
                predicted = truth + rng.normal(0, errors[index], len(cells))
            else:
                predicted = truth + rng.choice([-1.0, 1.0], len(cells)) * errors[index]
            rows.append(
                cells.assign(
                    origin=week,
                    forecast_origin=cells.pickup_hour.dt.normalize(),
                    candidate=candidate,
                    total_rides=truth,
                    predicted=predicted,
                )
            )
    return pd.concat(rows, ignore_index=True)


def test_each_held_out_week_is_scored_on_a_champion_chosen_only_on_the_weeks_before_it():
    # "early" is best in the first three weeks, "late" from then on; the held-out week never votes, so
    # "late" becomes champion only once the weeks before give it the lower error (week 6: 3.8 against 4.2).
    frame = _backtest({BASELINE: [10, 10, 10, 10, 10, 10], "early": [1, 1, 1, 9, 9, 9], "late": [5, 5, 5, 2, 2, 2]})
    chosen = selection.select(frame, selection_weeks=2)
    assert [week.champion for week in chosen.held_out] == ["early", "early", "early", "late"]
    weeks = backtest_weeks(AS_OF, 6)
    assert [week.week for week in chosen.held_out] == weeks[2:]
    assert [week.chosen_on for week in chosen.held_out] == [tuple(weeks[:index]) for index in range(2, 6)]
    # Each held-out score is the chosen champion's error on that week, against naive's.
    assert [round(week.ratio, 6) for week in chosen.held_out] == [0.1, 0.9, 0.9, 0.2]
    assert chosen.champion == "late" and chosen.chosen_on == tuple(weeks)
    summary = chosen.summary()
    assert summary["held_out_mae_vs_naive_median"] == pytest.approx(0.55)
    assert summary["held_out_mae_vs_naive_worst"] == pytest.approx(0.9)


def test_the_bootstrap_range_holds_the_week_s_ratio():
    frame = _backtest({BASELINE: [10, 10, 10], "model": [4, 6, 8]})
    for week in selection.select(frame, selection_weeks=1).held_out:
        low, high = week.ratio_range
        assert low <= week.ratio <= high


def test_a_backtest_without_the_baseline_or_with_too_few_weeks_is_refused():
    with pytest.raises(ValueError, match="no seasonal_naive forecasts"):
        selection.select(_backtest({"glm": [1, 1, 1]}), selection_weeks=1)
    with pytest.raises(ValueError, match="leave none to hold out"):
        selection.select(_backtest({BASELINE: [1, 1]}), selection_weeks=2)


def test_intervals_calibrated_on_earlier_weeks_hold_their_share_of_later_actuals():
    rng = np.random.default_rng(7)
    # Negative-binomial counts: Poisson noise plus a shared shock, as rain gives a whole day.
    mu = rng.uniform(2, 400, 40_000)
    actual = rng.poisson(mu * rng.gamma(25, 1 / 25, len(mu)))
    model = intervals.fit_intervals(mu[:20_000], actual[:20_000])
    assert model.pooled.dispersion == pytest.approx(1 / 25, rel=0.2)
    shares = intervals.coverage(actual[20_000:], model.bounds(mu[20_000:]))
    assert shares[80] == pytest.approx(0.80, abs=0.015)
    assert shares[95] == pytest.approx(0.95, abs=0.01)
    bounds = model.bounds(mu[20_000:])
    assert (bounds.lower_95 >= 0).all() and (bounds.lower_95 <= bounds.lower_80).all()
    assert (bounds.lower_80 <= mu[20_000:]).all() and (mu[20_000:] <= bounds.upper_80).all()
    assert (bounds.upper_80 <= bounds.upper_95).all()


def test_intervals_hold_in_each_group_of_zones_when_the_groups_spread_differently():
    rng = np.random.default_rng(11)
    # Steady airports beside avenues a shared shock moves: one pooled width suits neither.
    mu = rng.uniform(20, 300, 60_000)
    group = np.where(np.arange(len(mu)) % 2 == 0, "Queens", "Manhattan")
    shock = np.where(group == "Manhattan", rng.gamma(8, 1 / 8, len(mu)), 1.0)
    actual = rng.poisson(mu * shock)
    calibrate, check = slice(0, 30_000), slice(30_000, None)
    pooled = intervals.fit_intervals(mu[calibrate], actual[calibrate])
    grouped = intervals.fit_intervals(mu[calibrate], actual[calibrate], group[calibrate])
    for name in ("Queens", "Manhattan"):
        rows = np.flatnonzero(group[check] == name)
        later_mu, later_actual = mu[check][rows], actual[check][rows]
        held = intervals.coverage(later_actual, grouped.bounds(later_mu, group[check][rows]))
        assert held[80] == pytest.approx(0.80, abs=0.02) and held[95] == pytest.approx(0.95, abs=0.015)
        assert abs(intervals.coverage(later_actual, pooled.bounds(later_mu))[80] - 0.80) > 0.05
    assert grouped.as_metadata()["interval_groups"] == "Manhattan, Queens"


def test_a_champion_must_beat_naive_beyond_the_noise_of_the_weeks_it_is_chosen_on():
    lucky = _backtest({BASELINE: [10, 10, 10], "lucky": [9.9, 9.9, 9.9]}, seed=5, spread=True)
    by = dict(iter(lucky.groupby("candidate")))
    assert selection._ratio(selection._paired_with_naive(by["lucky"], by[BASELINE])) < 1  # ahead, by luck
    chosen = selection.select(lucky, selection_weeks=2)
    assert chosen.champion == BASELINE and chosen.held_out[0].champion == BASELINE
    assert chosen.final.reason.startswith("no candidate beat naive beyond the noise of 3 weeks: lucky 0.9")
    clear = _backtest({BASELINE: [10, 10, 10], "clear": [6, 6, 6], "scenario": [1, 1, 1]})
    chosen = selection.select(clear, selection_weeks=2, scenarios=["scenario"])
    assert chosen.champion == "clear" and chosen.final.reason.startswith("clear: 0.6")


def _version_rows() -> pd.DataFrame:
    return pd.DataFrame(
        {"forecasted_total_rides": [10.0, 20.0], "lower_80": [6.0, 15.0], "upper_80": [14.0, 25.0],
         "lower_95": [4.0, 12.0], "upper_95": [17.0, 29.0]}
    )  # fmt: skip


def test_the_interval_check_passes_nested_bounds_and_names_what_is_wrong():
    assert checks.sane_intervals(_version_rows()).passed
    crossed = _version_rows().assign(upper_80=[9.0, 25.0])  # below its forecast
    outcome = checks.sane_intervals(crossed)
    assert not outcome.passed and outcome.metadata["rows_out_of_order"] == 1
    negative = _version_rows().assign(lower_95=[-1.0, 12.0])
    assert checks.sane_intervals(negative).metadata["negative_lower_bounds"] == 1
    older = _version_rows().drop(columns=["lower_95", "upper_95"])  # a version written before the intervals
    outcome = checks.sane_intervals(older)
    assert not outcome.passed and outcome.metadata["missing_columns"] == "lower_95, upper_95"


def _rainy_city(days=63, seed=3):
    """Two zones whose demand rises 25% on rainy days, which fall at random."""
    rng = np.random.default_rng(seed)
    dates = pd.date_range("2024-12-01", periods=days, freq="D")
    rain = np.where(rng.random(days) < 0.3, rng.gamma(2.0, 5.0, days), 0.0)
    hours = pd.date_range(dates[0], periods=days * 24, freq="h")
    lift = 1 + 0.25 * (np.repeat(rain, 24) > 0)
    rows = [
        pd.DataFrame({"pickup_hour": hours, "pulocationid": zone,
                      "total_rides": rng.poisson(base * (1 + 0.5 * np.sin(2 * np.pi * hours.hour / 24)) * lift)})
        for zone, base in ((161, 80.0), (132, 30.0))
    ]  # fmt: skip
    # Zone 161 is in Manhattan (county 36061), zone 132 (JFK) in Queens (36081): the same rain falls on both.
    counties = ("36061", "36081")
    weather = pd.concat([pd.DataFrame({"county_fips": c, "date": dates, "prcp": rain, "tavg": 3.0}) for c in counties])
    return pd.concat(rows, ignore_index=True), weather


def test_the_expected_weather_glm_learns_the_rain_s_lift_and_forecasts_its_average():
    actuals, weather = _rainy_city()
    end = pd.Timestamp("2025-02-02")
    inputs = Inputs(actuals, weather, [132, 161], 24, actuals.pickup_hour.min())
    model, _ = fit_at(inputs, end - pd.Timedelta(days=7), lambda: make_candidate("glm_weather"))
    rainy_share = (weather.prcp > 0).mean()
    # The lift of an average day's rain: a quarter more rides on the rainy share of days.
    assert model.rain_lift == pytest.approx(1 + 0.25 * rainy_share, abs=0.04)
    week = backtest_weeks(end, 1)
    scored = rolling_origin_backtest(inputs, lambda: make_candidate("glm_weather"), week)
    naive = rolling_origin_backtest(inputs, lambda: make_candidate(BASELINE), week)
    assert (scored.predicted - scored.total_rides).abs().mean() < (naive.predicted - naive.total_rides).abs().mean()


THREADS_PROBE = """
import json, sys
from flows.forecasting.threads import numeric_threads, pool_sizes
with numeric_threads(int(sys.argv[1])):
    from sklearn.utils._openmp_helpers import _openmp_effective_n_threads
    print(json.dumps({"pools": pool_sizes(), "openmp_for_boosting": _openmp_effective_n_threads()}))
"""


def test_the_thread_limit_reaches_openmp_and_blas_in_a_fresh_process():
    # A fresh interpreter: scikit-learn is not loaded yet, as in a Metaflow task, which is where a limit
    # entered before the import used to miss OpenMP.
    probe = subprocess.run(
        [sys.executable, "-c", THREADS_PROBE, "1"], capture_output=True, text=True, check=True, timeout=120
    )
    found = json.loads(probe.stdout.strip().splitlines()[-1])
    assert found["openmp_for_boosting"] == 1
    assert found["pools"] and set(found["pools"].values()) == {1}


WITHOUT_SCIKIT_LEARN_PROBE = """
import json, sys
import numpy as np, pandas as pd
from flows.forecasting import levels
from flows.forecasting.backtest import backtest_weeks
from flows.forecasting.candidates import WITHOUT_SCIKIT_LEARN, make_candidate
from flows.forecasting.publication import Inputs
from flows.forecasting.threads import numeric_threads
hours = pd.date_range("2025-01-01", periods=35 * 24, freq="h")
actuals = pd.concat([pd.DataFrame({"pickup_hour": hours, "pulocationid": zone, "total_rides": 5.0 + zone % 7})
                     for zone in (4, 13, 132)], ignore_index=True)
inputs = Inputs(actuals, None, [4, 13, 132], 24, hours[0])
boroughs = {4: "Manhattan", 13: "Manhattan", 132: "Queens"}
for name in sorted(WITHOUT_SCIKIT_LEARN):
    with numeric_threads(1, scikit_learn=False):
        levels.backtest_served(inputs, boroughs, lambda: make_candidate(name), backtest_weeks(hours[-1], 1))
print(json.dumps(sorted(module for module in sys.modules if module.split(".")[0] == "sklearn")))
"""


def test_the_candidates_said_to_need_no_scikit_learn_backtest_every_level_without_loading_it():
    """Their Metaflow tasks skip its import (seconds each): were one of them to load it after all, its thread limit
    would miss OpenMP's pool."""
    probe = subprocess.run(
        [sys.executable, "-c", WITHOUT_SCIKIT_LEARN_PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(probe.stdout.strip().splitlines()[-1]) == []
