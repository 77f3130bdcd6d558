"""What a flow step records for the bridge, without running a flow."""

import json

from bridge.sources.metaflow_recorder import (
    DAGSTER_JOB_ENV,
    DAGSTER_RUN_ID_ENV,
    DAGSTER_STEP_ENV,
    dagster_parent,
    record_model,
    record_read,
    record_write,
    recording,
)


def test_a_step_records_each_dataset_it_touched_once():
    with recording() as step:
        record_read("nyc_taxi.yellow_rides_hourly_actuals", 42, rows=100)
        record_read("nyc_taxi.yellow_rides_hourly_actuals", 42, rows=100)
        record_write("nyc_taxi.yellow_rides_hourly_forecast", "7", schema=[("pickup_hour", "timestamptz", "The hour")])
        record_model("forecast_model", "Flow/1", metrics={"backtest_mae": 1}, params={"name": "gbm", "depth": 3})
    artifact = step.to_artifact()
    assert [use["version"] for use in artifact["reads"]] == ["42"]
    assert artifact["writes"][0] == {"name": "nyc_taxi.yellow_rides_hourly_forecast", "kind": "table", "version": "7",
                                     "rows": None, "metrics": None, "params": None, "columns_from": None,
                                     "partitions": None, "promotion": None,
                                     "schema": [("pickup_hour", "timestamptz", "The hour")]}  # fmt: skip
    model = artifact["writes"][1]
    assert model["kind"] == "model" and model["metrics"] == {"backtest_mae": 1.0}
    assert model["params"] == {"name": "gbm", "depth": "3"}


def test_a_write_records_its_column_lineage_as_plain_json():
    from bridge.translate.column_lineage import ColumnOrigin, InputColumn, Transformation, lineage_from_json

    lineage = {"forecast": (ColumnOrigin(InputColumn("db.actuals", "rides"), (Transformation("DIRECT", "IDENTITY"),)),)}
    with recording() as step:
        record_write("db.forecast", "7", columns_from=lineage)
    recorded = step.to_artifact()["writes"][0]["columns_from"]
    assert json.loads(json.dumps(recorded)) == recorded and lineage_from_json(recorded) == lineage


def test_outside_a_step_nothing_is_recorded():
    record_read("nyc_taxi.raw_weather", 1)
    with recording() as step:
        pass
    assert step.to_artifact() == {"reads": [], "writes": []}


def test_the_dagster_parent_comes_from_the_launchers_environment(monkeypatch):
    monkeypatch.delenv(DAGSTER_RUN_ID_ENV, raising=False)
    assert dagster_parent() is None
    monkeypatch.setenv(DAGSTER_RUN_ID_ENV, "run-1")
    monkeypatch.setenv(DAGSTER_JOB_ENV, "train_forecast_model")
    monkeypatch.setenv(DAGSTER_STEP_ENV, "run_training_flow")
    assert dagster_parent() == {"run_id": "run-1", "job_name": "train_forecast_model", "step_key": "run_training_flow"}
