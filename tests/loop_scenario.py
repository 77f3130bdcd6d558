"""Run the forecasting loop through a month and record what really happened.

    ./run python -m tests.loop_scenario OUT.json STATE_DIR

In a state folder of its own: the zone lookup and two sample months ingested; a first training on seasonal naive
alone (the first version serves), a second on every candidate (promoted only if it beats it); every day of the
third month forecast on the schedule's code path (each tick's run request run as the daemon would run it); the
third month ingested; the scoring sensor's requests run; one day's forecast overwritten +30% and scored (its
alarm must fire), then forecast and scored again; a third training on seasonal naive alone (not promoted when
worse); one lineage pass; then the third version promoted by hand and a day of the month forecast again (the
backfill after a later promotion). OUT.json holds the runs, their outcomes and timings; the tests read the truth
from the state folder's Iceberg tables and Metaflow runs, the lineage's claims from its events and DataHub Lite.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.truth.scenario import in_state_folder

MONTHS = ["2024-12", "2025-01"]
LOOP_MONTH = "2025-02"
TRIPS = 20_000
BIASED_DAY = "2025-02-12"
# A forecast gone wrong: twice the rides, beyond any healthy day's spread at the scenario's 20,000 trips a month.
BIAS = 2.0
BACKFILLED_DAY = "2025-02-20"
NAIVE_ONLY = "seasonal_naive"
LEARNED = "seasonal_naive,profile,gbm,blend"
# Each tick as the daemon evaluates the schedule: at its cron time on the day (UTC, as the partitions are keyed).
TICK = timedelta(hours=5, minutes=30)


def main(out: Path, state: Path) -> None:
    settings = in_state_folder(state, [*MONTHS, LOOP_MONTH], TRIPS)
    record = play(settings)
    out.write_text(json.dumps(record, indent=1, sort_keys=True, default=str))


def play(settings) -> dict:
    import pandas as pd
    from dagster import AssetCheckKey, DagsterInstance, build_schedule_context, build_sensor_context

    from flows.forecasting import loop_tables
    from forecast_assets.assets.forecast_loop import ACCURACY_KEY, DAILY_FORECAST_KEY
    from forecast_assets.definitions import build_definitions
    from forecast_assets.lineage_cli import main as lineage_command
    from taxi_core.catalog import CatalogConfig, open_catalog
    from taxi_core.names import ACTUALS
    from taxi_demo import pipeline_run

    record: dict = {"trainings": [], "forecast_ticks": [], "scoring": [], "timings": {}}
    catalog = open_catalog(CatalogConfig.from_settings(settings))
    # One code location (a code server) for every launch, as `dagster dev` keeps one: each launch starts only its run.
    with DagsterInstance.get() as instance, pipeline_run.code_location(instance) as workspace:
        definitions = build_definitions(settings)

        def run(job: str, **options):
            result = definitions.resolve_job_def(job).execute_in_process(
                instance=instance, raise_on_error=False, **options
            )
            return {"run_id": result.run_id, "success": result.success, "job": job, **options}

        def launched(job: str, month: str | None = None) -> bool:
            """A Spark job's run in a process of its own, as the daemon and the UI start it (one JVM per run)."""
            tags = {"dagster/partition": f"{month}-01"} if month else None
            return pipeline_run.run_to_end(instance, workspace, job, tags=tags).success

        assert launched("reference_data")
        for month in MONTHS:
            assert launched("monthly_ingestion", month), month

        def train(candidates: str) -> dict:
            config = {"ops": {"run_training_flow": {"config": {"candidates": candidates}}}}
            trained = run("train_forecast_model", run_config=config)
            event = instance.get_latest_materialization_event(_key("forecast_model"))
            metadata = event.asset_materialization.metadata
            done = {"candidates": candidates, "success": trained["success"], "run_id": trained["run_id"]}
            done |= {key: metadata[key].value for key in ("model_version", "serving", "promoted", "promotion")}
            record["trainings"].append(done)
            return done

        train(NAIVE_ONLY)
        train(LEARNED)
        record["actuals_snapshot_before_loop_month"] = catalog.load_table(ACTUALS).current_snapshot().snapshot_id

        schedule = definitions.resolve_schedule_def("daily_forecast_schedule")
        days = pd.date_range(f"{LOOP_MONTH}-01", periods=pd.Period(LOOP_MONTH).days_in_month, freq="D")
        for day in days:
            tick = datetime(day.year, day.month, day.day, tzinfo=UTC) + TICK
            requests = schedule.evaluate_tick(
                build_schedule_context(instance=instance, scheduled_execution_time=tick)
            ).run_requests
            for request in requests:
                began = time.perf_counter()
                done = run("daily_forecast", partition_key=request.partition_key, tags=dict(request.tags))
                done |= {"tick": tick.isoformat(), "seconds": round(time.perf_counter() - began, 2)}
                record["forecast_ticks"].append(done)

        assert launched("monthly_ingestion", LOOP_MONTH)
        record["actuals_snapshot_after_loop_month"] = catalog.load_table(ACTUALS).current_snapshot().snapshot_id
        sensor = definitions.resolve_sensor_def("score_published_forecasts")
        cursor = None

        def score(label: str) -> None:
            nonlocal cursor
            context = build_sensor_context(instance=instance, cursor=cursor, definitions=definitions)
            result = sensor.evaluate_tick(context)
            cursor = result.cursor
            for request in result.run_requests:
                began = time.perf_counter()
                done = run("score_forecasts", tags=dict(request.tags))
                done |= {"label": label, "seconds": round(time.perf_counter() - began, 2)}
                record["scoring"].append(done)

        score("month published")
        biased, version = _overwrite_biased(catalog, loop_tables, pd.Timestamp(BIASED_DAY))
        record["biased"] = {"day": BIASED_DAY, "forecast_snapshot_id": biased, "model_version": version}
        record["biased"]["version_bias_band"] = _bias_band(version)
        record["biased"]["run"] = run("score_forecasts", partition_key=BIASED_DAY)
        record["biased"]["checks"] = _checks(instance, AssetCheckKey, ACCURACY_KEY, BIASED_DAY)
        record["forecast_again"] = run("daily_forecast", partition_key=BIASED_DAY)
        score("forecast again")
        record["checks"] = {
            day: _checks(instance, AssetCheckKey, ACCURACY_KEY, day) for day in (f"{d:%Y-%m-%d}" for d in days)
        }
        record["daily_forecast_materializations"] = _materializations(instance, DAILY_FORECAST_KEY)
        record["accuracy_materializations"] = _materializations(instance, ACCURACY_KEY)
        train(NAIVE_ONLY)
        lineage_command([])
        record["model_json"] = json.loads(_printed(lineage_command, ["model", "--json"]))
        versions = [training["model_version"] for training in record["trainings"]]
        record["diff"] = _printed(lineage_command, ["diff", versions[1], versions[2]])
        record["backfill_after_promotion"] = _backfill_after_promotion(catalog, instance, record["trainings"][-1], run)
    return record


def _backfill_after_promotion(catalog, instance, newest: dict, run) -> dict:
    """The newest version (trained on the loop month, not promoted) promoted by hand; then a day of the loop month
    forecast again: the on-time rows' snapshot, the backfill's, its run and the run's own words on the version."""
    from flows.forecasting import registry
    from flows.forecasting.promotion import Decision
    from taxi_core.names import DAILY_FORECAST, MODEL_NAME

    decisions = registry.decisions(catalog, MODEL_NAME)
    trained_through = decisions[decisions.challenger == newest["model_version"]].trained_through.iloc[-1]
    reason = f"{newest['model_version']} promoted by hand, to backfill a day it was not trained before"
    registry.record_decision(
        catalog, MODEL_NAME, Decision(newest["model_version"], newest["serving"], True, reason), NAIVE_ONLY,
        trained_through,
    )  # fmt: skip
    on_time = catalog.load_table(DAILY_FORECAST).current_snapshot().snapshot_id
    done = run("daily_forecast", partition_key=BACKFILLED_DAY)
    messages = [
        entry.user_message for entry in instance.all_logs(done["run_id"]) if "forecast by" in (entry.user_message or "")
    ]
    return {
        "day": BACKFILLED_DAY, "promoted": newest["model_version"], "trained_through": str(trained_through),
        "serving_now": registry.serving_version(catalog, MODEL_NAME).version, "on_time_snapshot_id": on_time,
        "backfill_snapshot_id": catalog.load_table(DAILY_FORECAST).current_snapshot().snapshot_id, "run": done,
        "log": messages,
    }  # fmt: skip


def _printed(command, arguments: list[str]) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        command(arguments)
    return printed.getvalue()


def _key(name: str):
    from dagster import AssetKey

    return AssetKey(name.split("/"))


def _overwrite_biased(catalog, loop_tables, day) -> tuple[int, str]:
    """The day's forecast as written, every figure times BIAS: a forecast gone wrong, as a new table version; and
    the version that forecast it."""
    rows, _ = loop_tables.read_daily_forecast(catalog, day.date())
    scaled = ["forecast", "lower_80", "upper_80", "lower_95", "upper_95", "model_forecast"]
    rows[scaled] = rows[scaled] * BIAS
    version = str(rows.model_version.iloc[0])
    return loop_tables.write_daily_forecasts(catalog, rows, version, int(rows.actuals_snapshot_id.iloc[0])), version


def _bias_band(version: str) -> list[float]:
    """The healthy range of the city's bias the version kept from its held-out days, as Metaflow stored it."""
    from metaflow import Run, namespace

    namespace(None)
    return list(Run(version).data.served.bias_band)


def _checks(instance, check_key, asset_key, day: str) -> dict:
    """Each alarm's latest evaluation on ``day``: passed or not, its severity and figures."""
    from flows.forecasting.alarms import ALARMS

    found = {}
    for alarm in ALARMS:
        history = instance.event_log_storage.get_asset_check_execution_history(
            check_key(asset_key, alarm.name), limit=500
        )
        for execution in history:
            evaluation = execution.event.dagster_event.event_specific_data if execution.event else None
            if evaluation is None or getattr(evaluation, "partition", None) != day:
                continue
            found[alarm.name] = {
                "passed": evaluation.passed,
                "severity": evaluation.severity.value,
                "metadata": {key: value.value for key, value in evaluation.metadata.items()},
                "run_id": execution.run_id,
            }
            break
    return found


def _materializations(instance, key) -> list[dict]:
    records = instance.fetch_materializations(key, limit=1000).records
    return [
        {
            "partition": record.partition_key,
            "run_id": record.run_id,
            "metadata": {
                name: value.value if not hasattr(value, "columns") else None
                for name, value in record.asset_materialization.metadata.items()
                if name not in ("boroughs", "dagster/column_schema")
            },
        }
        for record in records
    ]


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
