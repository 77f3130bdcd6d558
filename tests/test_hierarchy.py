"""Zones, boroughs and the city as one hierarchy; reconciled forecasts whose totals add up."""

import numpy as np
import pandas as pd
import pytest

from flows.forecasting import hierarchy

BOROUGHS = {1: "EWR", 4: "Manhattan", 13: "Manhattan", 7: "Queens", 132: "Queens", 61: "Brooklyn"}


def _actuals(days=14, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    hours = pd.date_range("2024-03-04", periods=24 * days, freq="h")
    frame = pd.MultiIndex.from_product([hours, list(BOROUGHS)], names=["pickup_hour", "pulocationid"])
    frame = frame.to_frame(index=False)
    rates = {zone: rate for zone, rate in zip(BOROUGHS, rng.uniform(2, 80, len(BOROUGHS)), strict=True)}
    return frame.assign(total_rides=rng.poisson(frame.pulocationid.map(rates)))


def test_each_borough_and_the_city_is_the_sum_of_its_zones_every_hour():
    actuals = _actuals()
    frame, tree = hierarchy.series_frame(actuals, BOROUGHS)
    assert len(tree.series) == 1 + len(set(BOROUGHS.values())) + len(BOROUGHS)
    by_hour = actuals.groupby("pickup_hour").total_rides.sum()
    city = frame[frame.unique_id == hierarchy.CITY].set_index("ds").y
    assert city.equals(by_hour.astype(float).rename_axis("ds").rename("y"))
    queens = frame[frame.unique_id == hierarchy.series_name("Queens")].set_index("ds").y
    zones = actuals[actuals.pulocationid.isin([7, 132])].groupby("pickup_hour").total_rides.sum()
    assert np.array_equal(queens.to_numpy(), zones.to_numpy())
    assert {hierarchy.zone_of(series) for series in tree.levels["zone"]} == set(BOROUGHS)
    assert {tree.level_of(series) for series in tree.series} == set(hierarchy.LEVELS)


def test_a_zone_missing_from_the_lookup_is_named_with_the_fix():
    with pytest.raises(hierarchy.ZoneWithoutBorough, match=r"zones \[264\].*job reference_data"):
        hierarchy.series_frame(_actuals().assign(pulocationid=264), BOROUGHS)


def test_the_totals_alone_are_the_hierarchy_s_totals_even_where_zones_had_no_row():
    """The training's totals, summed without building every zone's series, are the series frame's own totals, hour
    by hour, with a borough's zones absent for a day (no ride) and an unknown zone refused alike."""
    actuals = _actuals()
    actuals = actuals[~(actuals.pulocationid.isin([7, 132]) & (actuals.pickup_hour < "2024-03-05"))]
    frame, tree = hierarchy.series_frame(actuals, BOROUGHS)
    expected = frame[frame.unique_id.map(tree.level_of) != "zone"]
    key = [hierarchy.SERIES, hierarchy.HOUR]
    found = hierarchy.totals(actuals, BOROUGHS).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(found, expected.sort_values(key).reset_index(drop=True), check_dtype=False)
    with pytest.raises(hierarchy.ZoneWithoutBorough, match=r"zones \[264\]"):
        hierarchy.totals(actuals.assign(pulocationid=264), BOROUGHS)


def test_reconciled_forecasts_add_up_and_trust_the_series_forecast_best():
    actuals = _actuals(days=21, seed=1)
    frame, tree = hierarchy.series_frame(actuals, BOROUGHS)
    rng = np.random.default_rng(2)
    last_day = frame.ds >= frame.ds.max().normalize()
    # The city is forecast within 1%, each zone within 30%: the zones should move to the city's total.
    spread = np.where(frame.unique_id == hierarchy.CITY, 0.01, 0.3)
    forecast = frame.y * rng.normal(1, spread)
    backtest = frame[~last_day].assign(forecast=forecast[~last_day])
    tomorrow = frame[last_day].assign(forecast=forecast[last_day])
    reconciled = hierarchy.reconcile(tomorrow.drop(columns="y"), backtest, tree)
    hours = reconciled.pivot(index="ds", columns="unique_id", values="forecast")
    zones = [series for series in hours if tree.level_of(series) == "zone"]
    assert np.allclose(hours[hierarchy.CITY], hours[zones].sum(axis=1), rtol=1e-6)
    for borough in tree.levels["borough"]:
        members = [series for series in zones if series.startswith(borough + "/")]
        assert np.allclose(hours[borough], hours[members].sum(axis=1), rtol=1e-6)
    assert (hours >= 0).all().all()
    truth = tomorrow.pivot(index="ds", columns="unique_id", values="y")
    base = tomorrow.pivot(index="ds", columns="unique_id", values="forecast")
    error = (hours[zones] - truth[zones]).abs().to_numpy().mean()
    base_error = (base[zones] - truth[zones]).abs().to_numpy().mean()
    assert error < base_error  # the well-forecast total corrected the zones
    city_error = (hours[hierarchy.CITY] - truth[hierarchy.CITY]).abs().mean()
    summed_error = (base[zones].sum(axis=1) - truth[hierarchy.CITY]).abs().mean()
    assert city_error < summed_error  # and is not the zones' sum after the fact
