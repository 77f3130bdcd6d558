"""Run the monthly ingestion job on the real Dagster instance, outside the daemon."""

from __future__ import annotations

from dagster import AssetKey, DagsterInstance, ExecuteInProcessResult

from forecast_assets.assets.table_metadata import ROW_COUNT, SNAPSHOT_ID
from forecast_assets.automation import monthly_ingestion_job
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


def print_summary(results: list[ExecuteInProcessResult], environment: dict[str, str], seconds: float) -> None:
    for result in results:
        print(
            f"\nRun {result.run_id} ({result.dagster_run.tags.get('dagster/partition')}): "
            f"{'succeeded' if result.success else 'FAILED'}"
        )
        for event in result.get_asset_materialization_events():
            mat = event.event_specific_data.materialization
            if mat.asset_key in TABLE_KEYS:
                print(
                    f"  {mat.asset_key.to_user_string():40s} rows={mat.metadata[ROW_COUNT].value:>9}"
                    f"  snapshot={mat.metadata[SNAPSHOT_ID].value}"
                )
        for evaluation in result.get_asset_check_evaluations():
            if not evaluation.passed:
                print(f"  check {evaluation.check_name} FAILED: {dict(evaluation.metadata)}")
    print(f"\nDone in {seconds:.0f} s. State folder: {environment['TAXI_STATE_DIR']}")
    print("Look at it in Dagster:  uv run dagster dev   (then open http://127.0.0.1:3000)")
