"""Real Metaflow runs of TrainForecastModelFlow on tables made by the real Dagster assets."""

import os
from pathlib import Path

import pandas as pd
import pytest
from dagster import AssetKey

from flows.forecasting.tables import ACTUALS, FORECAST, WEATHER, read_forecasts, write_forecasts
from flows.launch import FlowFailed, run_training
from forecast_assets.lakehouse.catalog import open_catalog

pytestmark = pytest.mark.integration

HORIZON = 24


def _lineage(run, step):
    return run[step].task.data.lineage_io


def test_a_by_hand_run_succeeds_and_is_a_model_version(by_hand_run):
    data = by_hand_run.data
    assert by_hand_run.successful
    assert data.model_version == by_hand_run.pathspec
    assert set(data.metrics.candidate) == {"seasonal_naive", "gbm"}
    assert data.champion in {"seasonal_naive", "gbm"}
    assert data.training_window["end"] == str(data.settings.as_of)
    assert data.features and data.model_parameters["name"] == data.champion
    for picture in (data.plot_path, data.backtest_plot_path):
        assert Path(picture).read_bytes().startswith(b"\x89PNG")


def test_forecasts_cover_every_zone_and_every_hour_of_the_horizon(by_hand_run):
    data = by_hand_run.data
    rows = read_forecasts(open_catalog(), by_hand_run.id)
    assert len(rows) == len(data.zone_ids) * HORIZON
    assert set(rows.pulocationid) == set(data.zone_ids)
    hours = sorted(rows.pickup_hour.dt.tz_localize(None).unique())
    assert hours == list(pd.date_range(data.settings.as_of, periods=HORIZON, freq="h"))
    assert (rows.model_version == by_hand_run.pathspec).all() and (rows.forecasted_total_rides >= 0).all()
    assert not rows.duplicated(["pickup_hour", "pulocationid"]).any()


def test_the_learned_model_beats_seasonal_naive(by_hand_run):
    metrics = by_hand_run.data.metrics.set_index("candidate")
    assert metrics.loc["gbm", "mae"] < metrics.loc["seasonal_naive", "mae"]
    floor = by_hand_run.data.noise_floor
    if floor is not None:  # the sample's truth files are not in the test state folder by design
        assert floor["mae"] < metrics.loc["gbm", "mae"]


def test_each_step_recorded_what_it_read_and_wrote(by_hand_run):
    catalog = open_catalog()
    reads = _lineage(by_hand_run, "load")["reads"]
    assert [(r["name"], r["kind"]) for r in reads] == [(ACTUALS, "table")]
    assert reads[0]["version"] == str(by_hand_run.data.actuals_snapshot_id)
    assert _lineage(by_hand_run, "predict")["writes"][0] == {
        "name": "forecast_model", "kind": "model", "version": by_hand_run.pathspec, "rows": None
    }  # fmt: skip
    written = _lineage(by_hand_run, "write")["writes"]
    assert [(w["name"], w["version"]) for w in written] == [(FORECAST, str(by_hand_run.data.forecast_snapshot_id))]
    assert int(written[0]["version"]) in {s.snapshot_id for s in catalog.load_table(FORECAST).snapshots()}
    assert _lineage(by_hand_run, "train")["reads"] == []
    graph = by_hand_run["start"].task.data.lineage_step_graph
    assert graph["load"] == ["train"] and graph["write"] == ["end"] and graph["end"] == []
    assert by_hand_run["start"].task.data.lineage_parent is None


def test_a_dagster_launch_records_its_parent_and_with_weather_reads_raw_weather(dagster_run):
    result, run = dagster_run
    assert run["start"].task.data.lineage_parent == {"run_id": result.run_id, "job_name": "train_forecast_model"}
    assert [r["name"] for r in _lineage(run, "load")["reads"]] == [ACTUALS, WEATHER]
    assert "gbm_weather" in set(run.data.metrics.candidate)
    materialized = {e.asset_key for e in result.get_asset_materialization_events()}
    assert materialized == {AssetKey("forecast_model"), AssetKey(["nyc_taxi", "yellow_rides_hourly_forecast"])}


def test_a_new_run_adds_a_version_without_touching_the_first(by_hand_run, dagster_run):
    _, second = dagster_run
    catalog = open_catalog()
    first_rows = read_forecasts(catalog, by_hand_run.id)
    second_rows = read_forecasts(catalog, second.id)
    assert len(first_rows) == len(second_rows) == len(by_hand_run.data.zone_ids) * HORIZON
    all_rows = catalog.load_table(FORECAST).scan().to_pandas()
    assert not all_rows.duplicated(["metaflow_run_id", "pickup_hour", "pulocationid"]).any()
    assert set(all_rows.model_version) >= {by_hand_run.pathspec, second.pathspec}


def test_rewriting_a_runs_forecasts_replaces_them(by_hand_run):
    catalog = open_catalog()
    before = len(catalog.load_table(FORECAST).scan().to_arrow())
    write_forecasts(catalog, by_hand_run.data.forecast, by_hand_run.id)
    assert len(catalog.load_table(FORECAST).scan().to_arrow()) == before
    assert len(read_forecasts(catalog, by_hand_run.id)) == len(by_hand_run.data.forecast)


def test_missing_actuals_fail_naming_the_table_and_what_to_do(tmp_path):
    empty_state = {"TAXI_STATE_DIR": str(tmp_path), "METAFLOW_DATASTORE_SYSROOT_LOCAL": str(tmp_path / "metaflow")}
    with pytest.raises(FlowFailed, match=r"Table nyc_taxi.yellow_rides_hourly_actuals does not exist: materialize"):
        run_training(env=os.environ | empty_state, show_output=False)


def test_an_as_of_before_the_data_fails_naming_the_table(pipeline):
    with pytest.raises(
        FlowFailed, match=r"nyc_taxi.yellow_rides_hourly_actuals has no rows between 2019-11-20 00:00 and 2020-01-01"
    ):
        run_training({"as_of": "2020-01-01"}, show_output=False)
