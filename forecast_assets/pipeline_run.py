"""Run the ingestion and training jobs on the real Dagster instance, outside the daemon."""

from __future__ import annotations

from pathlib import Path

from dagster import AssetKey, DagsterInstance, ExecuteInProcessResult

from forecast_assets.assets.table_metadata import ROW_COUNT, SNAPSHOT_ID
from forecast_assets.automation import monthly_ingestion_job, training_job
from forecast_assets.definitions import defs

QUIET = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
TABLE_KEYS = [AssetKey(["nyc_taxi", name]) for name in ("raw_yellow", "raw_weather", "yellow_rides_hourly_actuals")]


def ingest_months(partition_keys: list[str], instance: DagsterInstance | None = None) -> list[ExecuteInProcessResult]:
    instance = instance or DagsterInstance.get()
    job = defs.resolve_job_def(monthly_ingestion_job.name)
    return [
        job.execute_in_process(partition_key=key, instance=instance, raise_on_error=False, run_config=QUIET)
        for key in partition_keys
    ]


def train(instance: DagsterInstance | None = None, use_weather: bool = False) -> ExecuteInProcessResult:
    """Run the Metaflow training flow through Dagster, so the run and its outputs show in the UI."""
    instance = instance or DagsterInstance.get()
    run_config = QUIET | {"ops": {"run_training_flow": {"config": {"use_weather": use_weather}}}}
    job = defs.resolve_job_def(training_job.name)
    return job.execute_in_process(instance=instance, raise_on_error=False, run_config=run_config)


def print_summary(results: list[ExecuteInProcessResult], environment: dict[str, str], seconds: float) -> None:
    for result in results:
        label = result.dagster_run.tags.get("dagster/partition") or result.job_def.name
        print(f"\nRun {result.run_id} ({label}): {'succeeded' if result.success else 'FAILED'}")
        for event in result.get_asset_materialization_events():
            mat = event.event_specific_data.materialization
            metadata = {key: value.value for key, value in mat.metadata.items()}
            if SNAPSHOT_ID in metadata and ROW_COUNT in metadata:
                print(
                    f"  {mat.asset_key.to_user_string():40s} rows={metadata[ROW_COUNT]:>9}"
                    f"  snapshot={metadata[SNAPSHOT_ID]}"
                )
            elif "model_version" in metadata:
                print(
                    f"  {mat.asset_key.to_user_string():40s} {metadata['model_version']}: {metadata['champion']}"
                    f" (backtest MAE {metadata['backtest_mae']:.3f})"
                )
        for evaluation in result.get_asset_check_evaluations():
            if not evaluation.passed:
                print(f"  check {evaluation.check_name} FAILED: {dict(evaluation.metadata)}")
        for failure in result.get_step_failure_events():
            print(f"  step {failure.step_key} FAILED: {failure.step_failure_data.error.message.strip()[:2000]}")
    print(f"\nDone in {seconds:.0f} s. State folder: {environment['TAXI_STATE_DIR']}")
    print("Dagster UI:            uv run dagster dev   (then open http://127.0.0.1:3000)")
    print("Train again by hand:   uv run python flows/train.py run --use_weather true")
    plots = sorted((Path(environment["TAXI_STATE_DIR"]) / "plots").glob("forecast_*.png"))
    if plots:
        print(f"Forecast plot:         {plots[-1]}")
