"""Real Metaflow runs of TrainForecastModelFlow on tables made by the real Dagster assets."""

import base64
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import AssetKey, AssetMaterialization, build_asset_check_context, instance_for_test
from pyiceberg.expressions import EqualTo

from flows.forecasting.tables import ACTUALS, FORECAST, WEATHER, read_forecasts, write_forecasts
from flows.forecasting.tables import ZONES as ZONE_LOOKUP
from flows.launch import TRAIN_FLOW_FILE, FlowEventKind, FlowFailed, run_training
from flows.run_settings import LOOKBACK_DAYS
from forecast_assets.assets import forecast_checks
from forecast_assets.assets.training import FORECAST_START, FORECAST_TABLE, HORIZON_HOURS, METAFLOW_RUN_ID, ZONES
from forecast_assets.definitions import resources_for
from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.names import MODEL_PROMOTIONS
from taxi_core.settings import PROJECT_ROOT, load_settings
from tests.page_metadata import page_problems
from tests.sample_months import WEATHER_VERSION_CANDIDATES

pytestmark = pytest.mark.integration

HORIZON = 24
# A Metaflow card draws an image at most 500 px high and 100% wide (card CSS: img {max-width: 100%;
# max-height: 500px}); Dagster's Markdown dialog is 1,120 px wide. Each chart is drawn for both.
CARD_IMAGE_MAX_HEIGHT = 500
CHART_WIDTH = 1000


def _lineage(run, step):
    return run[step].task.data.lineage_io


def _registry_as_load_found_it(run) -> list[tuple[str, str]]:
    """The registry's read, as the table's own history says ``load`` must have made it: the newest snapshot
    committed before the step began, if any (the first training in a state folder finds none)."""
    catalog = open_catalog(CatalogConfig.from_settings(load_settings()))
    if not catalog.table_exists(MODEL_PROMOTIONS):
        return []
    began = run["load"].task.created_at.timestamp() * 1000
    before = [s for s in catalog.load_table(MODEL_PROMOTIONS).snapshots() if s.timestamp_ms < began]
    return [(MODEL_PROMOTIONS, str(max(before, key=lambda s: s.timestamp_ms).snapshot_id))] if before else []


def test_a_by_hand_run_succeeds_and_is_a_model_version(by_hand_run):
    data = by_hand_run.data
    assert by_hand_run.successful
    assert data.model_version == by_hand_run.pathspec
    assert set(data.metrics.candidate) == {"seasonal_naive", "glm", "gbm", "profile", "blend"}
    assert data.champion in set(data.metrics.candidate)
    assert data.training_window["end"] == str(data.settings.as_of)
    assert data.features and data.model_parameters["name"] == data.champion
    assert data.model_parameters["weather"] == "none"
    for picture in (data.plot_path, data.backtest_plot_path):
        assert Path(picture).read_bytes().startswith(b"\x89PNG")


def test_forecasts_cover_every_zone_and_every_hour_of_the_horizon(by_hand_run):
    data = by_hand_run.data
    rows = read_forecasts(open_catalog(CatalogConfig.from_settings(load_settings())), by_hand_run.id)
    assert len(rows) == len(data.zone_ids) * HORIZON
    assert set(rows.pulocationid) == set(data.zone_ids)
    hours = sorted(rows.pickup_hour.unique())
    assert hours == list(pd.date_range(data.settings.as_of, periods=HORIZON, freq="h"))
    assert (rows.model_version == by_hand_run.pathspec).all() and (rows.forecasted_total_rides >= 0).all()
    assert not rows.duplicated(["pickup_hour", "pulocationid"]).any()


def test_the_learned_models_beat_seasonal_naive(by_hand_run):
    metrics = by_hand_run.data.metrics.set_index("candidate")
    floor = by_hand_run.data.noise_floor
    assert floor is not None, "the sample source's truth files are where the flow looks for them"
    for learned in ("glm", "gbm", "profile", "blend"):
        assert 0 < floor["mae"] < metrics.loc[learned, "mae"] < metrics.loc["seasonal_naive", "mae"]


def test_each_held_out_week_s_champion_was_the_best_on_the_weeks_before_it(by_hand_run):
    data = by_hand_run.data
    scored = data.backtest.assign(error=(data.backtest.predicted - data.backtest.total_rides).abs())
    weeks = sorted(scored.origin.unique())
    assert len(weeks) == data.settings.evaluation_weeks + data.settings.selection_weeks
    for row in data.held_out.to_dict("records"):
        week = pd.Timestamp(row["held-out week"])
        before = scored[scored.origin < week]
        # Recomputed from the branches' backtest artifacts: the lowest MAE on the weeks before, never the week,
        # unless its lead over naive there was within the days' noise (then the next, or naive itself); a
        # candidate 10% ahead of naive is never passed over.
        mae = before.groupby("candidate").error.mean()
        passed_over = mae[(mae < mae[row["champion"]]) & (mae.index != "seasonal_naive")]
        assert (passed_over / mae["seasonal_naive"] > 0.9).all(), (row, mae.to_dict())
        assert row["chosen on"] == ", ".join(f"{w:%m-%d}" for w in weeks if w < week)
        held = (
            scored[scored.origin == week]
            .pivot_table(index=["pickup_hour", "pulocationid"], columns="candidate", values="error")
            .dropna()
        )
        assert row["MAE / naive"] == pytest.approx(held[row["champion"]].mean() / held.seasonal_naive.mean(), abs=1e-3)
    # The backtest scores the population the version serves: every zone it serves.
    assert data.backtest_zone_ids == data.zone_ids
    assert set(data.backtest.pulocationid) == set(data.zone_ids)


def test_the_forecast_carries_nested_intervals_whose_held_out_coverage_is_what_lineage_records(by_hand_run):
    data = by_hand_run.data
    rows = read_forecasts(open_catalog(CatalogConfig.from_settings(load_settings())), by_hand_run.id)
    assert (rows.lower_95 >= 0).all() and (rows.lower_95 <= rows.lower_80).all()
    assert (rows.lower_80 <= rows.forecasted_total_rides).all() and (rows.forecasted_total_rides <= rows.upper_80).all()
    assert (rows.upper_80 <= rows.upper_95).all()
    # Every interval holds at least one whole count of rides; only a forecast of exactly zero may get no width.
    assert (np.ceil(rows.lower_95 - 1e-9) <= np.floor(rows.upper_95 + 1e-9)).all()
    assert (rows.forecasted_total_rides[rows.upper_95 <= rows.lower_95] == 0).all()
    assert (rows.upper_95 > rows.lower_95).mean() > 0.5
    held = data.held_out_forecasts
    inside_80 = ((held.total_rides >= held.lower_80) & (held.total_rides <= held.upper_80)).mean()
    inside_95 = ((held.total_rides >= held.lower_95) & (held.total_rides <= held.upper_95)).mean()
    (model,) = _lineage(by_hand_run, "predict")["writes"]
    assert model["metrics"]["held_out_coverage_80"] == pytest.approx(inside_80, abs=1e-4)
    assert model["metrics"]["held_out_coverage_95"] == pytest.approx(inside_95, abs=1e-4)
    assert 0.6 < inside_80 < inside_95 <= 1.0
    assert model["params"]["selection_weeks"] == ",".join(data.selection_weeks_used)
    assert model["params"]["held_out_weeks"] == ",".join(data.held_out["held-out week"])


def test_each_step_recorded_what_it_read_and_wrote(by_hand_run):
    catalog = open_catalog(CatalogConfig.from_settings(load_settings()))
    reads = _lineage(by_hand_run, "load")["reads"]
    assert [(r["name"], r["kind"]) for r in reads[:2]] == [(ACTUALS, "table"), (ZONE_LOOKUP, "table")]
    assert [(r["name"], r["version"]) for r in reads[2:]] == _registry_as_load_found_it(by_hand_run)
    assert reads[0]["version"] == str(by_hand_run.data.actuals_snapshot_id)
    # The zone lookup read is the one main held: the version the table's asset published.
    assert reads[1]["version"] == str(catalog.load_table(ZONE_LOOKUP).current_snapshot().snapshot_id)
    named = by_hand_run.data.forecast
    lookup = catalog.load_table(ZONE_LOOKUP).scan().to_pandas().set_index("location_id")
    assert list(named.zone) == [lookup.zone[zone] for zone in named.pulocationid]
    assert list(named.borough) == [lookup.borough[zone] for zone in named.pulocationid]
    (model,) = _lineage(by_hand_run, "predict")["writes"]
    assert (model["name"], model["kind"], model["version"]) == ("forecast_model", "model", by_hand_run.pathspec)
    champion = by_hand_run.data.metrics.set_index("candidate").loc[by_hand_run.data.champion]
    assert model["metrics"]["backtest_mae"] == round(float(champion.mae), 4)
    assert model["params"]["name"] == by_hand_run.data.champion
    written = _lineage(by_hand_run, "write")["writes"]
    assert [(w["name"], w["version"]) for w in written] == [
        (FORECAST, str(by_hand_run.data.forecast_snapshot_id)),
        (MODEL_PROMOTIONS, str(by_hand_run.data.promotion_snapshot_id)),
    ]
    assert int(written[0]["version"]) in {s.snapshot_id for s in catalog.load_table(FORECAST).snapshots()}
    decided = catalog.load_table(MODEL_PROMOTIONS).scan(snapshot_id=int(written[1]["version"])).to_pandas()
    assert decided.sort_values("decided_at", kind="stable").challenger.iloc[-1] == by_hand_run.pathspec
    assert _lineage(by_hand_run, "train")["reads"] == []
    graph = by_hand_run["start"].task.data.lineage_step_graph
    assert graph["load"] == ["train"] and graph["write"] == ["end"] and graph["end"] == []
    assert by_hand_run["start"].task.data.lineage_parent is None


def test_a_dagster_launch_records_its_parent_and_with_weather_reads_raw_weather(dagster_run):
    result, run = dagster_run
    assert run["start"].task.data.lineage_parent == {
        "run_id": result.run_id,
        "job_name": "train_forecast_model",
        "step_key": "run_training_flow",  # the launching step: the flow run's parent in lineage
    }
    registry = [name for name, _ in _registry_as_load_found_it(run)]
    assert [r["name"] for r in _lineage(run, "load")["reads"]] == [ACTUALS, ZONE_LOOKUP, WEATHER, *registry]
    assert "gbm_weather" in set(run.data.metrics.candidate)
    # The perfect-weather scenario is measured, and never the champion.
    assert run.data.scenarios == ("glm_perfect_weather",) and run.data.champion not in run.data.scenarios
    materialized = {e.asset_key for e in result.get_asset_materialization_events()}
    assert materialized == {AssetKey("forecast_model"), AssetKey(["nyc_taxi", "yellow_rides_hourly_forecast"])}


def test_a_new_run_adds_a_version_without_touching_the_first(by_hand_run, dagster_run):
    _, second = dagster_run
    catalog = open_catalog(CatalogConfig.from_settings(load_settings()))
    first_rows = read_forecasts(catalog, by_hand_run.id)
    second_rows = read_forecasts(catalog, second.id)
    assert len(first_rows) == len(second_rows) == len(by_hand_run.data.zone_ids) * HORIZON
    all_rows = catalog.load_table(FORECAST).scan().to_pandas()
    assert not all_rows.duplicated(["metaflow_run_id", "pickup_hour", "pulocationid"]).any()
    assert set(all_rows.model_version) >= {by_hand_run.pathspec, second.pathspec}


def test_rewriting_a_runs_forecasts_replaces_them(by_hand_run):
    catalog = open_catalog(CatalogConfig.from_settings(load_settings()))
    before = len(catalog.load_table(FORECAST).scan().to_arrow())
    write_forecasts(catalog, by_hand_run.data.forecast, by_hand_run.id)
    assert len(catalog.load_table(FORECAST).scan().to_arrow()) == before
    assert len(read_forecasts(catalog, by_hand_run.id)) == len(by_hand_run.data.forecast)


def test_missing_actuals_fail_naming_the_table_and_what_to_do(tmp_path):
    empty_state = {"TAXI_STATE_DIR": str(tmp_path), "METAFLOW_DATASTORE_SYSROOT_LOCAL": str(tmp_path / "metaflow")}
    with pytest.raises(FlowFailed, match=r"Table nyc_taxi.yellow_rides_hourly_actuals does not exist: materialize"):
        run_training(env=os.environ | empty_state, show_output=False)


def _window_before_2020() -> str:
    """The default training window of a run as of 2020-01-01, as its error names it."""
    start = pd.Timestamp("2020-01-01") - pd.Timedelta(days=LOOKBACK_DAYS)
    return f"{start:%Y-%m-%d %H:%M} and 2020-01-01"


def test_an_as_of_before_the_data_fails_naming_the_table(pipeline):
    with pytest.raises(
        FlowFailed, match=rf"nyc_taxi.yellow_rides_hourly_actuals has no rows between {_window_before_2020()}"
    ):
        run_training({"as_of": "2020-01-01"}, show_output=False)


def test_run_training_reports_progress_without_dagster_and_names_the_failed_step(pipeline):
    events = []
    failed_in_load = r"failed in step load:\n.*MissingInput: Table nyc_taxi.yellow_rides_hourly_actuals has no rows"
    with pytest.raises(FlowFailed, match=failed_in_load) as failed:
        run_training({"as_of": "2020-01-01"}, show_output=False, on_event=events.append)
    assert events[0].kind is FlowEventKind.RUN_STARTED and events[0].pathspec == failed.value.pathspec
    assert [(e.kind, e.step) for e in events if e.kind is not FlowEventKind.OUTPUT] == [
        (FlowEventKind.RUN_STARTED, None),
        (FlowEventKind.TASK_STARTED, "start"), (FlowEventKind.TASK_FINISHED, "start"),
        (FlowEventKind.TASK_STARTED, "load"), (FlowEventKind.TASK_FAILED, "load"),
    ]  # fmt: skip
    assert f"has no rows between {_window_before_2020()}" in events[-1].message
    assert any(e.kind is FlowEventKind.OUTPUT and e.message.startswith("Model version ") for e in events)
    assert failed.value.step == "load" and f"run {failed.value.pathspec} failed" in str(failed.value)


def _flow_log(result, instance) -> list:
    """The Dagster log lines the training step wrote, oldest first."""
    return [
        entry
        for entry in instance.all_logs(result.run_id)
        if entry.dagster_event is None and entry.step_key == "run_training_flow"
    ]


def test_dagster_logs_the_run_and_every_task_while_the_flow_runs(dagster_run, pipeline):
    result, run = dagster_run
    entries = _flow_log(result, pipeline.instance)
    messages = [entry.user_message for entry in entries]
    assert messages[0] == f"Metaflow run {run.id} started: {run.pathspec}"
    end_began = run["end"].task.created_at.timestamp()
    for task in (task for step in run for task in step):
        step = task.parent.id
        started = next(e for e in entries if e.user_message == f"{step} started ({task.pathspec})")
        ended = rf"{step} finished in [\d.]+ s \({task.pathspec}\)"
        finished = next(e for e in entries if re.fullmatch(ended, e.user_message))
        assert started.timestamp <= finished.timestamp
        if step in ("start", "load", "train", "evaluate"):
            # Logged while the flow ran (steps before the end began), not when Dagster read the finished run.
            assert finished.timestamp < end_began
    assert entries[0].timestamp < run["start"].task.finished_at.timestamp()
    # The weather candidates asked for train, the baseline too, and the serving version's candidate to compare with.
    asked = ["seasonal_naive", *WEATHER_VERSION_CANDIDATES.split(",")]
    assert run.data.settings.candidates == asked
    trained = [*asked, *run.data.compared_only]
    assert sum(m.startswith("train started") for m in messages) == len(trained)
    for candidate in trained:
        assert f"train: {candidate}: week 6/6 from " in "\n".join(messages)
    assert any(re.fullmatch(r"train: gbm_weather: week 3/6 from \S+ MAE [\d.]+ \([\d.]+ s\)", m) for m in messages)
    data = run.data
    weather = f"load: Weather: {len(data.weather):,} county-days of {WEATHER} at snapshot {data.weather_snapshot_id}"
    assert any(m.startswith(weather) for m in messages)
    assert messages[-1] == f"Metaflow run {run.pathspec}: champion {run.data.champion}"


def test_a_failed_flow_fails_the_dagster_step_naming_the_run_step_and_error(pipeline):
    job = pipeline.definitions().resolve_job_def("train_forecast_model")
    config = {"ops": {"run_training_flow": {"config": {"as_of": "2020-01-01"}}}}
    # An instance of its own: the shared one's run history stays as the bridge tests expect it.
    with instance_for_test() as instance:
        result = job.execute_in_process(instance=instance, run_config=config, raise_on_error=False)
        logs = _flow_log(result, instance)
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.user_failure_data
    metaflow_run = failure.metadata["metaflow_run"].value
    assert failure.metadata["failed_step"].value == "load"
    assert failure.description.startswith(f"TrainForecastModelFlow run {metaflow_run} failed in step load:\n")
    assert "MissingInput: Table nyc_taxi.yellow_rides_hourly_actuals has no rows between" in failure.description
    assert logs[0].user_message == f"Metaflow run {metaflow_run.split('/')[1]} started: {metaflow_run}"
    errors = [e.user_message for e in logs if e.level >= 40]
    assert len(errors) == 1 and errors[0].startswith(f"load failed ({metaflow_run}/load/")


def _png(value: str) -> bytes:
    """The PNG of a card image's source or of the first image in Markdown (which may go on after it)."""
    prefix = "data:image/png;base64,"
    return base64.b64decode(value[value.index(prefix) + len(prefix) :].split(")", 1)[0])


def _shown_whole(png: bytes) -> bool:
    """Drawn at its own size on a card (never shrunk to the card's 500 px height) and in Dagster's dialog."""
    assert png.startswith(b"\x89PNG")
    width, height = struct.unpack(">II", png[16:24])
    return width == CHART_WIDTH and height <= CARD_IMAGE_MAX_HEIGHT


def _materialized_by(result, key: AssetKey) -> dict:
    """The metadata this run recorded (later bridge passes report other versions as runless ones)."""
    events = [event for event in result.get_asset_materialization_events() if event.asset_key == key]
    assert len(events) == 1, [event.asset_key for event in result.get_asset_materialization_events()]
    return events[0].step_materialization_data.materialization.metadata


def test_materializations_show_the_plots_and_short_input_keys(dagster_run):
    result, run = dagster_run
    model = _materialized_by(result, AssetKey("forecast_model"))
    table = _materialized_by(result, AssetKey(["nyc_taxi", "yellow_rides_hourly_forecast"]))
    # Compared as booleans: a failing comparison of two images would make pytest diff megabytes of text.
    same_forecast = _png(table["plot"].value) == run.data.forecast_png == Path(table["plot_path"].value).read_bytes()
    assert same_forecast, "the forecast plot in the metadata is not the run's plot file"
    same_backtest = _png(model["backtest_plot"].value) == Path(model["backtest_plot_path"].value).read_bytes()
    assert same_backtest, "the backtest plot in the metadata is not the run's plot file"
    assert model["actuals_snapshot_id"].value == str(run.data.actuals_snapshot_id)
    assert model["weather_snapshot_id"].value == str(run.data.weather_snapshot_id)
    assert not [key for key in {**model, **table} if key.startswith("input/")]
    assert page_problems(model) == [] and page_problems(table) == []


def _card(task, card_id: str, folder: Path) -> list[dict]:
    """The components of a task's card, read back with ``python flows/train.py card get``, as a user reads it.

    (``metaflow.cards.get_cards`` looks under the task's ds-root/mf.cards; with METAFLOW_CARD_LOCALROOT set,
    Metaflow 2.19's card writer stores local cards under the datastore root itself, where the CLI finds them.)
    """
    html = folder / f"{task.pathspec.replace('/', '_')}_{card_id}.html"
    command = [sys.executable, str(TRAIN_FLOW_FILE), "card", "get", task.pathspec.split("/", 1)[1], str(html)]
    subprocess.run([*command, "--id", card_id], cwd=PROJECT_ROOT, check=True, capture_output=True)
    encoded = re.search(r'__MF_DATA__\["[^"]+"\] = "([^"]+)"', html.read_text()).group(1)
    found = []

    def walk(node):
        if isinstance(node, dict):
            if "type" in node:
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(base64.b64decode(encoded))["components"])
    return found


def _of_type(components, kind: str) -> list[dict]:
    return [c for c in components if c["type"] == kind]


def test_the_backtest_card_ranks_candidates_like_its_chart_and_shows_it_whole(by_hand_run, tmp_path):
    components = _card(by_hand_run["evaluate"].task, "backtest", tmp_path)
    held_out, by_level, table, zones = _of_type(components, "table")
    assert held_out["columns"] == list(by_hand_run.data.held_out.columns)
    levels_shown = {(row[0], row[1]): row for row in by_level["data"]}
    for row in by_hand_run.data.held_out_levels.to_dict("records"):
        shown = levels_shown[(row["level"], row["borough"])]
        assert shown[3] == row["hours"] and shown[7] == round(row["coverage_80"], 3)
    assert len(held_out["data"]) == by_hand_run.data.settings.evaluation_weeks
    assert table["columns"] == ["candidate", "mae", "rmse", "wape", "hours", "MAE / naive", "MAE / noise floor", "kind"]
    assert {row[0] for row in zones["data"]} == set(by_hand_run.data.backtest_zone_ids)
    maes = [row[1] for row in table["data"]]
    assert maes == sorted(maes) and table["data"][0][0] == by_hand_run.data.champion
    assert len(table["data"]) == len(by_hand_run.data.metrics)
    weeks_image, image = _of_type(components, "image")
    assert _png(weeks_image["src"]) == by_hand_run.data.held_out_png
    assert _png(image["src"]) == by_hand_run.data.backtest_png
    assert _shown_whole(by_hand_run.data.backtest_png) and _shown_whole(by_hand_run.data.held_out_png)


def test_the_forecast_card_shows_its_chart_whole(by_hand_run, tmp_path):
    [image] = _of_type(_card(by_hand_run["write"].task, "forecast", tmp_path), "image")
    assert _png(image["src"]) == by_hand_run.data.forecast_png
    assert _shown_whole(by_hand_run.data.forecast_png)


def test_the_load_card_and_log_say_what_was_read(by_hand_run, dagster_run, tmp_path):
    _, weather_run = dagster_run
    for run in (by_hand_run, weather_run):
        data, load = run.data, run["load"].task
        [table] = _of_type(_card(load, "inputs", tmp_path), "table")
        actuals, weather, zones = table["data"]
        assert actuals[:2] == [ACTUALS, str(data.actuals_snapshot_id)]
        lookup = f"{len(data.zone_lookup):,} zones"
        assert zones[:3] == [ZONE_LOOKUP, str(data.zone_lookup_snapshot_id), lookup]
        assert f"Zone names: {lookup} of {ZONE_LOOKUP} at snapshot {data.zone_lookup_snapshot_id}" in load.stdout
        assert actuals[3].startswith(f"{data.training_window['start'][:16]} to {data.training_window['end'][:16]}")
        assert f"Read {actuals[2]} of {ACTUALS} at snapshot {data.actuals_snapshot_id}" in load.stdout
        if data.weather_snapshot_id is None:
            assert weather[:2] == [WEATHER, "not read"]
            assert f"Weather: {WEATHER} not read (use_weather is false)." in load.stdout
        else:
            assert weather[:3] == [WEATHER, str(data.weather_snapshot_id), f"{len(data.weather):,} county-days"]
            assert f"of {WEATHER} at snapshot {data.weather_snapshot_id}" in load.stdout


def test_the_forecast_checks_pass_on_the_version_training_wrote(dagster_run):
    result, run = dagster_run
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    names = {check.check_key.name for check in forecast_checks.FORECAST_CHECKS}
    assert names <= set(evaluations) and all(evaluations[name].passed for name in names)
    coverage = evaluations["forecast_every_zone_has_every_horizon_hour"].metadata
    assert coverage["zones"].value == coverage["expected_zones"].value == len(run.data.zone_ids)
    assert coverage["metaflow_run_id"].value == run.id and coverage["zone_hours_missing"].value == 0
    assert evaluations["forecast_no_negative_rides"].metadata["rows"].value == len(run.data.forecast)
    # Each says which version of the table it checked (the lineage of a checks-only run names it).
    assert {evaluations[name].metadata["iceberg/snapshot_id"].value for name in names} == {
        str(run.data.forecast_snapshot_id)
    }
    assert all(page_problems(evaluations[name].metadata) == [] for name in names)


@pytest.fixture
def faulty_version(by_hand_run):
    """A made-up run's forecast rows with one fault of each kind, removed from the table afterwards."""
    fake_run_id = "checks-test-faulty"
    rows = by_hand_run.data.forecast.assign(metaflow_run_id=fake_run_id).reset_index(drop=True)
    rows.loc[0, "forecasted_total_rides"] = -3.0
    rows = pd.concat([rows.drop(index=1), rows.iloc[[2]]], ignore_index=True)  # one hour gone, one row twice
    catalog = open_catalog(CatalogConfig.from_settings(load_settings()))
    write_forecasts(catalog, rows, fake_run_id)
    metadata = {
        METAFLOW_RUN_ID: fake_run_id,
        FORECAST_START: str(by_hand_run.data.settings.as_of),
        HORIZON_HOURS: HORIZON,
        ZONES: len(by_hand_run.data.zone_ids),
    }
    yield metadata
    catalog.load_table(FORECAST).delete(EqualTo("metaflow_run_id", fake_run_id))


def test_the_forecast_checks_fail_on_a_faulty_version(faulty_version):
    with instance_for_test() as instance:
        instance.report_runless_asset_event(AssetMaterialization(FORECAST_TABLE, metadata=faulty_version))
        context = build_asset_check_context(
            instance=instance, resources={"catalog": resources_for(load_settings())["catalog"]}
        )
        results = {check.check_key.name: check(context) for check in forecast_checks.FORECAST_CHECKS}
    assert not any(result.passed for result in results.values())
    found = {name: {key: value.value for key, value in result.metadata.items()} for name, result in results.items()}
    coverage = found["forecast_every_zone_has_every_horizon_hour"]
    assert (coverage["zone_hours_missing"], coverage["zone_hours_outside_horizon"]) == (1, 0)
    assert coverage["metaflow_run_id"] == faulty_version[METAFLOW_RUN_ID]
    negative = found["forecast_no_negative_rides"]
    assert (negative["negative_forecasts"], negative["smallest_forecast"]) == (1, -3.0)
    assert found["forecast_no_duplicate_keys"] == {"duplicate_keys": 1, "rows_with_duplicate_keys": 2}


def test_the_forecast_checks_fail_with_a_reason_on_a_materialization_that_names_no_run():
    with instance_for_test() as instance:
        instance.report_runless_asset_event(AssetMaterialization(FORECAST_TABLE, metadata={"model_version": "old"}))
        context = build_asset_check_context(
            instance=instance, resources={"catalog": resources_for(load_settings())["catalog"]}
        )
        results = [check(context) for check in forecast_checks.FORECAST_CHECKS]
    assert all(not result.passed and "run the training job" in result.description for result in results)


class _ArtifactsOfAnOlderRun(dict):
    """``run.data`` of a run made before the flow kept its plots as PNG artifacts."""

    __getattr__ = dict.__getitem__


def test_runs_from_before_the_png_artifacts_still_get_metadata_with_the_plot_paths(tmp_path):
    from types import SimpleNamespace

    from forecast_assets.assets.training import forecast_table_metadata, model_metadata

    metrics = pd.DataFrame({"candidate": ["gbm"], "mae": [1.0], "rmse": [1.5], "wape": [0.1], "hours": [24]})
    settings = SimpleNamespace(use_weather=False, as_of=pd.Timestamp("2025-02-01"), horizon_hours=24)
    data = _ArtifactsOfAnOlderRun(
        metrics=metrics, champion="gbm", model_version="TrainForecastModelFlow/1", settings=settings,
        training_window={"start": "2024-12-21", "end": "2025-02-01"}, features=["hour"], actuals_snapshot_id=1,
        weather_snapshot_id=None, noise_floor=None, backtest_plot_path=str(tmp_path / "b.png"),
        forecast_snapshot_id=2, forecast=pd.DataFrame({"x": [1]}), zone_ids=[161], plot_path=str(tmp_path / "f.png"),
    )  # fmt: skip
    run = SimpleNamespace(data=data, pathspec="TrainForecastModelFlow/1", id="1")
    model, table = model_metadata(run), forecast_table_metadata(run)
    assert "backtest_plot" not in model and model["backtest_plot_path"].value == str(tmp_path / "b.png")
    assert "plot" not in table and table["plot_path"].value == str(tmp_path / "f.png")
