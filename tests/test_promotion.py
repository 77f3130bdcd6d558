"""Champion and challenger: a version serves only if it beats the serving one beyond the noise of the same days."""

import numpy as np
import pandas as pd
import pytest

from flows.forecasting.candidates import candidate_names, needs_weather
from flows.forecasting.promotion import decide, incomparable, plan_comparison


def _held_out(error_sd, days=28, seed=0, truth_seed=9) -> pd.DataFrame:
    """Forecasts of 20 zones for every hour of ``days`` days, off by a normal error of ``error_sd`` rides."""
    truth_rng, rng = np.random.default_rng(truth_seed), np.random.default_rng(seed)
    hours = pd.date_range("2025-01-04", periods=24 * days, freq="h")
    frame = pd.MultiIndex.from_product([hours, range(20)], names=["pickup_hour", "pulocationid"]).to_frame(index=False)
    truth = truth_rng.poisson(60, len(frame)).astype(float)
    return frame.assign(total_rides=truth, predicted=truth + rng.normal(0, error_sd, len(frame)))


def test_the_first_version_serves():
    decision = decide("Flow/1", _held_out(5), None, None)
    assert decision.promoted and decision.now_serving == "Flow/1"
    assert "first version" in decision.reason


def test_a_clearly_better_challenger_is_promoted_with_its_figures():
    decision = decide("Flow/2", _held_out(4, seed=1), "Flow/1", _held_out(8, seed=2))
    assert decision.promoted and decision.now_serving == "Flow/2"
    assert decision.ratio < 0.6 and decision.ratio_range[1] < 1.0 and decision.days == 28
    assert decision.reason.startswith("Flow/2 promoted:") and "Flow/1's MAE on the same 28 days" in decision.reason
    metadata = decision.as_metadata()
    assert metadata["promoted"] is True and metadata["ratio_high"] < 1.0 and metadata["serving"] == "Flow/1"


def test_a_worse_challenger_is_not_promoted_and_the_serving_version_keeps_serving():
    decision = decide("Flow/2", _held_out(9, seed=1), "Flow/1", _held_out(6, seed=2))
    assert not decision.promoted and decision.now_serving == "Flow/1"
    assert decision.reason.startswith("Flow/1 keeps serving: Flow/2 at") and decision.ratio > 1


def test_a_challenger_ahead_only_by_luck_is_not_promoted():
    # The same skill, two draws of the error: one is a little ahead on these days, by chance.
    ahead, behind = _held_out(6, seed=3, days=7), _held_out(6, seed=4, days=7)
    decision = decide("Flow/2", ahead, "Flow/1", behind)
    if decision.ratio >= 1:
        decision = decide("Flow/2", behind, "Flow/1", ahead)
    assert decision.ratio < 1 and not decision.promoted and decision.ratio_range[1] >= 1.0


def test_versions_with_no_hour_in_common_keep_the_serving_one():
    later = _held_out(4).assign(pickup_hour=lambda frame: frame.pickup_hour + pd.Timedelta(days=60))
    decision = decide("Flow/2", later, "Flow/1", _held_out(8))
    assert not decision.promoted and "no hour in common" in decision.reason


@pytest.mark.parametrize("serving", [None, *candidate_names()])
@pytest.mark.parametrize("use_weather", [False, True])
def test_the_serving_candidate_is_backtested_beside_a_run_only_on_data_the_run_reads(serving, use_weather):
    own = ["seasonal_naive", "glm", *(["glm_weather"] if use_weather else [])]
    plan = plan_comparison(own, serving, use_weather)
    every = [*plan.candidates]
    # Whatever serves, a run backtests only what its data allows: weather models only when it reads the weather.
    assert use_weather or not needs_weather(every)
    if serving is None or serving in own:
        assert plan == type(plan)(own, [])
    elif needs_weather([serving]) and not use_weather:
        assert plan.candidates == own and plan.compared_only == [] and "--use_weather true" in plan.incomparable
        assert serving in plan.incomparable
    else:
        assert plan.candidates == [*own, serving] and plan.compared_only == [serving] and plan.incomparable is None


def test_a_version_that_could_not_be_compared_does_not_serve_and_says_why():
    why = plan_comparison(["seasonal_naive"], "glm_weather", use_weather=False).incomparable
    decision = incomparable("Flow/3", "Flow/2", why)
    assert not decision.promoted and decision.now_serving == "Flow/2"
    assert decision.reason == f"Flow/2 keeps serving: {why}"
