"""The forecasting loop through a month (:mod:`tests.loop_scenario`), checked against the state it left: each day
forecast on the schedule's code path by the serving version, every day scored once its month was published with
figures recomputed here from the Iceberg tables, the alarms, champion and challenger, and the lineage of a day."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from tests.loop_scenario import BIAS, BIASED_DAY, LOOP_MONTH

DAILY_FORECAST, ACCURACY = "nyc_taxi.yellow_rides_daily_forecast", "nyc_taxi.forecast_accuracy"
ACTUALS, PROMOTIONS = "nyc_taxi.yellow_rides_hourly_actuals", "nyc_taxi.model_promotions"
pytestmark = pytest.mark.integration
DAYS = [f"{day:%Y-%m-%d}" for day in pd.date_range(f"{LOOP_MONTH}-01", periods=28, freq="D")]


@pytest.fixture(scope="module")
def loop(end_to_end) -> dict:
    return end_to_end.outcome("forecast-loop")


@pytest.fixture(scope="module")
def record(loop) -> dict:
    return loop["record"]


@pytest.fixture(scope="module")
def tables(loop):
    """The scenario's catalog, opened here with pyiceberg alone (not the project's code)."""
    state = Path(loop["state"])
    catalog = SqlCatalog(
        "lakehouse", uri=f"sqlite:///{state / 'catalog.sqlite'}", warehouse=f"file://{state / 'warehouse'}"
    )
    return catalog


def _at(tables, identifier: str, snapshot_id: int) -> pd.DataFrame:
    return tables.load_table(identifier).scan(snapshot_id=snapshot_id).to_pandas()


def test_every_day_of_the_month_was_forecast_by_its_own_schedule_tick(record):
    ticks = record["forecast_ticks"]
    assert [tick["partition_key"] for tick in ticks] == DAYS
    assert all(tick["success"] for tick in ticks), [t for t in ticks if not t["success"]]
    # Each tick, at the day's start, asked for that day: the schedule's own choice, not the test's.
    assert all(tick["tick"][:10] == tick["partition_key"] for tick in ticks)


def test_each_day_s_forecast_names_the_serving_version_and_the_actuals_before_the_month(record, tables):
    serving = [t for t in record["trainings"] if t["promoted"]][-1]["model_version"]
    before = record["actuals_snapshot_before_loop_month"]
    history = tables.load_table(DAILY_FORECAST).history()
    by_day = {}
    for entry in history:  # the table as each tick left it: the day's rows then
        rows = _at(tables, DAILY_FORECAST, entry.snapshot_id)
        for day, day_rows in rows.groupby(rows.forecast_day.astype(str)):
            by_day.setdefault(day, day_rows)
    assert sorted(by_day) == DAYS
    for day, rows in by_day.items():
        assert set(rows.model_version) == {serving}, day
        assert set(rows.actuals_snapshot_id) == {before}, day
        assert set(pd.to_datetime(rows.data_end)) == {pd.Timestamp(f"{LOOP_MONTH}-01")}, day
        hours = rows.groupby("series").pickup_hour.nunique()
        assert (hours == 24).all(), day
        zones, city = rows[rows.level == "zone"], rows[rows.level == "city"]
        totals = zones.groupby("pickup_hour").forecast.sum()
        assert np.allclose(city.set_index("pickup_hour").forecast.reindex(totals.index), totals, rtol=1e-6), day


def _naive_hour(hour: pd.Timestamp, data_end: pd.Timestamp) -> pd.Timestamp:
    back = 1
    while hour - pd.Timedelta(weeks=back) >= data_end:
        back += 1
    return hour - pd.Timedelta(weeks=back)


def _recomputed(forecast: pd.DataFrame, actuals: pd.DataFrame, published_to: pd.Timestamp) -> pd.DataFrame:
    """Every series' figures of one day, from the forecast rows and the zones' actuals, computed here."""
    zones = forecast[forecast.level == "zone"]
    borough_of = dict(zip(zones.pulocationid.astype(int), zones.borough, strict=True))
    mine = actuals[actuals.pulocationid.isin(borough_of)].assign(
        borough=lambda frame: frame.pulocationid.map(borough_of)
    )
    observed = {}
    for row in mine.itertuples():
        for series in ("city", f"city/{row.borough}", f"city/{row.borough}/{row.pulocationid}"):
            key = (series, row.pickup_hour)
            observed[key] = observed.get(key, 0.0) + row.total_rides
    data_end = pd.Timestamp(forecast.data_end.iloc[0])

    def rides(series: str, hour: pd.Timestamp) -> float:
        # The table holds a zone's hours only in a month it had a ride: a served zone it lacks had none.
        return observed.get((series, hour), 0.0) if hour <= published_to else np.nan

    figures = []
    for series, rows in forecast.groupby("series"):
        hours = [pd.Timestamp(hour) for hour in rows.pickup_hour]
        actual = np.array([rides(series, hour) for hour in hours])
        naive = np.array([rides(series, _naive_hour(hour, data_end)) for hour in hours])
        predicted = rows.forecast.to_numpy()
        figures.append(
            {
                "series": series,
                "mae": np.mean(np.abs(predicted - actual)),
                "bias": (predicted.sum() - actual.sum()) / max(actual.sum(), 1.0),
                "naive_mae": np.mean(np.abs(naive - actual)),
                "coverage_80": np.mean((actual >= rows.lower_80.to_numpy()) & (actual <= rows.upper_80.to_numpy())),
                "coverage_95": np.mean((actual >= rows.lower_95.to_numpy()) & (actual <= rows.upper_95.to_numpy())),
            }
        )
    return pd.DataFrame(figures).set_index("series")


def test_every_day_is_scored_with_figures_recomputed_from_the_iceberg_tables(tables):
    scores = tables.load_table(ACCURACY).scan().to_pandas()
    assert sorted(scores.day.astype(str).unique()) == DAYS
    actuals_at: dict[int, pd.DataFrame] = {}
    for day, day_scores in scores.groupby(scores.day.astype(str)):
        forecast_snapshot = int(day_scores.forecast_snapshot_id.iloc[0])
        actuals_snapshot = int(day_scores.actuals_snapshot_id.iloc[0])
        forecast = _at(tables, DAILY_FORECAST, forecast_snapshot)
        forecast = forecast[forecast.forecast_day.astype(str) == day]
        actuals = actuals_at.get(actuals_snapshot)
        if actuals is None:
            actuals = actuals_at[actuals_snapshot] = _at(tables, ACTUALS, actuals_snapshot)
        # The hours this day's figures can reach: naive's weeks back from the data's end, and the day.
        data_end = pd.Timestamp(forecast.data_end.iloc[0])
        reach = (actuals.pickup_hour >= data_end - pd.Timedelta(weeks=1)) & (
            actuals.pickup_hour < pd.Timestamp(day) + pd.Timedelta(days=1)
        )
        want = _recomputed(forecast, actuals[reach], published_to=actuals.pickup_hour.max())
        said = day_scores.set_index("series")[want.columns]
        assert sorted(said.index) == sorted(want.index), day
        pd.testing.assert_frame_equal(said.loc[want.index], want, check_dtype=False, rtol=1e-9, obj=day)


def test_the_month_was_scored_after_its_actuals_were_published_against_them(record, tables):
    scores = tables.load_table(ACCURACY).scan().to_pandas()
    assert set(scores.actuals_snapshot_id) == {record["actuals_snapshot_after_loop_month"]}
    months = [run for run in record["scoring"] if run["label"] == "month published"]
    assert months and all(run["success"] for run in months)


def test_a_forecast_at_twice_the_rides_fails_the_bias_alarm_by_its_version_s_range_and_a_good_day_passes(record):
    biased = record["biased"]["checks"]["city_bias_in_range"]
    low, high = record["biased"]["version_bias_band"]
    assert low < 0 < high
    said = biased["metadata"]
    assert (said["healthy_low_pct"], said["healthy_high_pct"]) == (round(100 * low, 2), round(100 * high, 2))
    assert biased["passed"] is False and said["city_bias_pct"] > 100 * high
    assert biased["severity"] == "WARN"
    # Forecast again (the schedule's rows) and scored again by the sensor: the alarm is quiet.
    assert record["checks"][BIASED_DAY]["city_bias_in_range"]["passed"] is True
    rescored = [run for run in record["scoring"] if run["label"] == "forecast again"]
    assert rescored and rescored[0]["tags"]["dagster/asset_partition_range_start"] == BIASED_DAY
    assert all(set(checks) == {"city_bias_in_range", "zone_coverage_80_in_range", "beats_naive_over_7_days"}
               for checks in record["checks"].values())  # fmt: skip


def test_a_month_with_no_fault_warns_on_at_most_two_days_per_alarm(record):
    """Every day of the loop month as last scored (the biased day forecast again): each alarm's range is the
    version's own day-to-day spread, so a healthy month warns on a day or two, not on every shock."""
    days = record["checks"]
    assert len(days) == pd.Period(LOOP_MONTH).days_in_month
    for alarm in ("city_bias_in_range", "zone_coverage_80_in_range", "beats_naive_over_7_days"):
        warned = sorted(day for day, checks in days.items() if not checks[alarm]["passed"])
        assert len(warned) <= 2, (alarm, warned)


def test_the_biased_forecast_is_the_version_its_score_names(record, tables):
    scores = tables.load_table(ACCURACY)
    snapshots = {entry.snapshot_id for entry in scores.history()}
    found = []
    for snapshot_id in snapshots:
        rows = _at(tables, ACCURACY, snapshot_id)
        rows = rows[(rows.day.astype(str) == BIASED_DAY) & (rows.series == "city")]
        found += rows.forecast_snapshot_id.tolist()
    assert record["biased"]["forecast_snapshot_id"] in found
    table = tables.load_table(DAILY_FORECAST)
    biased_id = record["biased"]["forecast_snapshot_id"]

    def city(snapshot_id: int) -> float:
        rows = _at(tables, DAILY_FORECAST, snapshot_id)
        return rows[(rows.forecast_day.astype(str) == BIASED_DAY) & (rows.level == "city")].forecast.sum()

    # The rows it replaced: the newest version before it that holds the day (an overwrite deletes, then appends).
    before = table.snapshot_by_id(biased_id).parent_snapshot_id
    while city(before) == 0:
        before = table.snapshot_by_id(before).parent_snapshot_id
    assert city(biased_id) == pytest.approx(BIAS * city(before))


def test_a_worse_version_is_not_promoted_and_a_better_one_is_with_the_reason(record, tables):
    first, better, worse = record["trainings"]
    assert first["promoted"] and "first version" in first["promotion"]
    assert better["promoted"] and better["serving"] == better["model_version"]
    assert not worse["promoted"] and worse["serving"] == better["model_version"]
    decisions = tables.load_table(PROMOTIONS).scan().to_pandas().sort_values("decided_at")
    # The last decision is the hand promotion the backfill test made after the trainings.
    assert decisions.challenger.iloc[-1] == record["backfill_after_promotion"]["promoted"]
    decisions = decisions.iloc[:-1]
    assert decisions.challenger.tolist() == [t["model_version"] for t in record["trainings"]]
    assert decisions.promoted.tolist() == [True, True, False]
    assert decisions.reason.tolist() == [t["promotion"] for t in record["trainings"]]
    assert decisions.ratio.iloc[1] < 1 < decisions.ratio.iloc[2]


def test_datahub_names_the_serving_version_and_each_decision_s_reason(loop, record):
    from bridge.sinks.lite import open_lite

    lite = open_lite(Path(loop["state"]) / "datahub" / "lite.sqlite")
    try:
        properties = {}
        for urn in lite.list_ids():
            if urn.startswith("urn:li:mlModel:"):
                aspects = lite.get(urn, aspects=["mlModelProperties", "versionProperties"]) or {}
                properties[urn] = aspects
    finally:
        lite.close()
    for training in record["trainings"]:
        run_id = training["model_version"].split("/")[1]
        (aspects,) = [a for urn, a in properties.items() if urn.endswith(f"_{run_id},PROD)")]
        custom = aspects["mlModelProperties"]["customProperties"]
        assert training["promotion"] in json.dumps(custom), custom
        aliases = [a["versionTag"] for a in aspects["versionProperties"].get("aliases", [])]
        assert ("serving" in aliases) == (training["model_version"] == record["trainings"][1]["model_version"])


def _events(loop) -> list[dict]:
    lines = (Path(loop["state"]) / "lineage" / "openlineage_events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _named(datasets: list[dict]) -> dict[str, str | None]:
    def label(dataset: dict) -> str:
        symlinks = dataset.get("facets", {}).get("symlinks", {}).get("identifiers", [])
        return symlinks[0]["name"] if symlinks else dataset["name"]

    return {label(d): d.get("facets", {}).get("version", {}).get("datasetVersion") for d in datasets}


def test_the_lineage_of_a_scored_day_leads_to_its_forecast_version_model_version_and_actuals(loop, record, tables):
    day = "2025-02-20"
    scores = tables.load_table(ACCURACY).scan().to_pandas()
    row = scores[(scores.day.astype(str) == day) & (scores.series == "city")].iloc[0]
    forecast = _at(tables, DAILY_FORECAST, int(row.forecast_snapshot_id))
    forecast = forecast[forecast.forecast_day.astype(str) == day]
    events = [e for e in _events(loop) if e["eventType"] == "COMPLETE"]
    scored = [
        e for e in events
        if _named(e.get("inputs", [])).get(DAILY_FORECAST) == str(row.forecast_snapshot_id)
        and ACCURACY in _named(e.get("outputs", []))
    ]  # fmt: skip
    assert scored, "no event scores the forecast version the accuracy row names"
    assert _named(scored[-1]["inputs"])[ACTUALS] == str(row.actuals_snapshot_id)
    made = [
        e for e in events
        if _named(e.get("outputs", [])).get(DAILY_FORECAST) == str(row.forecast_snapshot_id)
    ]  # fmt: skip
    assert made, "no event wrote the forecast version scored"
    inputs = _named(made[-1]["inputs"])
    assert inputs[ACTUALS] == str(int(forecast.actuals_snapshot_id.iloc[0]))
    (model,) = [name for name in inputs if name.endswith("forecast_model")]
    assert inputs[model] == forecast.model_version.iloc[0]


def test_taxi_lineage_model_shows_each_version_s_live_accuracy_and_diff_its_change(record, tables):
    scores = tables.load_table(ACCURACY).scan().to_pandas()
    zones = scores[scores.level == "zone"]
    serving = record["trainings"][1]["model_version"]
    live = {version["version"]: version["live"] for version in record["model_json"]}
    mine = zones[zones.model_version == serving]
    assert live[serving]["days_scored"] == len(DAYS)
    weighted = (mine.mae * mine.hours).sum() / mine.hours.sum()
    assert live[serving]["zone_mae"] == pytest.approx(weighted, abs=1e-4)
    assert live[serving]["zone_mae_vs_naive"] == pytest.approx(
        (mine.mae * mine.hours).sum() / (mine.naive_mae * mine.hours).sum(), abs=1e-4
    )
    never_served = record["trainings"][2]["model_version"]
    assert live[never_served] == {}
    said = " ".join(record["diff"].split())  # as one line: wherever the terminal width wrapped it
    assert "live accuracy:" in said and "not scored yet" in said


def test_a_day_backfilled_after_a_later_version_s_promotion_is_its_on_time_forecast(record, tables):
    """A version trained on the whole month, promoted: the month's day forecast again is the forecast it had on time,
    by the version that served it then, and the run's log says why."""
    backfill = record["backfill_after_promotion"]
    assert backfill["run"]["success"] and backfill["serving_now"] == backfill["promoted"]
    assert backfill["backfill_snapshot_id"] != backfill["on_time_snapshot_id"]  # the day was written again

    def day_rows(snapshot_id: int) -> pd.DataFrame:
        rows = _at(tables, DAILY_FORECAST, snapshot_id)
        rows = rows[rows.forecast_day.astype(str) == backfill["day"]]
        return rows.sort_values(["series", "pickup_hour"]).reset_index(drop=True)

    on_time, again = day_rows(backfill["on_time_snapshot_id"]), day_rows(backfill["backfill_snapshot_id"])
    assert len(again) == len(on_time) > 0
    assert set(again.model_version) == set(on_time.model_version) != {backfill["promoted"]}
    columns = ["series", "pickup_hour", "forecast", "lower_80", "upper_80", "lower_95", "upper_95", "data_end"]
    pd.testing.assert_frame_equal(again[columns], on_time[columns])
    (said,) = backfill["log"]
    assert f"forecast by {on_time.model_version.iloc[0]}" in said and "the version serving at each day's start" in said
