"""A candidate from a package of its own, registered through the ``taxi_forecast.candidates`` entry-point group
as an installed distribution registers it: it is named by the run's settings, backtested, chosen on the weeks
before each held-out week, reported, and the column it reads itself (``pickup_hour``) reaches the model's and the
forecasts' column lineage, with no edit in the flow."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bridge.translate.column_lineage import DIRECT, IDENTITY, InputColumn, Transformation
from flows.forecasting import candidates, report, selection
from flows.forecasting.backtest import BASELINE, backtest_weeks, fit_at, rolling_origin_backtest
from flows.forecasting.column_lineage import forecast_lineage, model_lineage
from flows.forecasting.publication import Inputs
from flows.run_settings import resolve_settings
from taxi_core.names import ACTUALS
from tests.installed_entry_point import install_entry_point

END = pd.Timestamp("2025-03-01")
TREND = "tests.outside_package.trend_candidate:Trend"


@pytest.fixture
def trend(tmp_path, monkeypatch):
    """The candidate ``trend``, registered by a package of its own (an installed distribution's entry point)."""
    site = install_entry_point(tmp_path / "site", "outside-trend", candidates.ENTRY_POINT_GROUP, "trend", TREND)
    monkeypatch.syspath_prepend(str(site))
    candidates._installed.cache_clear()
    yield "trend"
    candidates._installed.cache_clear()


def _growing_city() -> Inputs:
    """Four busy zones whose demand grows 8% a week on a daily cycle: a trend beats the same hour a week earlier."""
    rng = np.random.default_rng(5)
    hours = pd.date_range(END - pd.Timedelta(days=84), END - pd.Timedelta(hours=1), freq="h")
    weeks = (hours - hours[0]).total_seconds().to_numpy() / (7 * 86400)
    rows = [
        pd.DataFrame({
            "pickup_hour": hours,
            "pulocationid": zone,
            "total_rides": rng.poisson(base * 1.08**weeks * (1.2 + np.sin(2 * np.pi * hours.hour / 24))),
        })
        for zone, base in ((161, 2000.0), (162, 1500.0), (236, 900.0), (132, 600.0))
    ]  # fmt: skip
    actuals = pd.concat(rows, ignore_index=True)
    return Inputs(actuals, None, [132, 161, 162, 236], 24, actuals.pickup_hour.min())


def test_an_installed_candidate_is_named_backtested_chosen_reported_and_in_the_lineage(trend):
    assert trend in candidates.candidate_names() and candidates.make_candidate(trend).name == trend
    settings = resolve_settings(str(END.date()), 84, 4, 2, 24, 0, False, trend)
    assert set(settings.candidates) == {BASELINE, trend}

    inputs, weeks = _growing_city(), backtest_weeks(END, 6)
    frame = pd.concat(
        [rolling_origin_backtest(inputs, lambda n=name: candidates.make_candidate(n), weeks).assign(candidate=name)
         for name in settings.candidates],
        ignore_index=True,
    )  # fmt: skip
    chosen = selection.select(frame, selection_weeks=2)
    assert {week.champion for week in chosen.held_out} == {trend}
    metrics = (
        frame.assign(error=(frame.predicted - frame.total_rides).abs())
        .groupby("candidate")
        .agg(mae=("error", "mean"), hours=("error", "size"))
        .reset_index()
    )
    metrics = metrics.assign(rmse=metrics.mae, wape=metrics.mae)
    _, rows = report.metrics_table(metrics)
    assert [row[0] for row in rows] == [trend, BASELINE]  # best MAE first

    model, features = fit_at(inputs, END, lambda: candidates.make_candidate(trend))
    used = model.used_features(features)  # what the flow records of the champion, and derives the lineage from
    assert "pickup_hour" in used
    identity = (Transformation(DIRECT, IDENTITY),)
    assert any(o.input == InputColumn(ACTUALS, "pickup_hour") and o.transformations == identity
               for o in model_lineage(used)["pickup_hour"])  # fmt: skip
    forecast = forecast_lineage(used)["forecasted_total_rides"]
    assert InputColumn(ACTUALS, "pickup_hour") in {origin.input for origin in forecast}


def test_an_installed_candidate_registered_under_another_name_is_refused(tmp_path, monkeypatch):
    site = install_entry_point(tmp_path / "site", "outside-misnamed", candidates.ENTRY_POINT_GROUP, "drift", TREND)
    monkeypatch.syspath_prepend(str(site))
    candidates._installed.cache_clear()
    try:
        with pytest.raises(candidates.CandidateMisnamed, match="'drift' .* makes a forecaster named 'trend'"):
            candidates.make_candidate("drift")
        with pytest.raises(candidates.UnknownCandidate, match="or install a package that registers it"):
            candidates.make_candidate("nothing")
    finally:
        candidates._installed.cache_clear()
