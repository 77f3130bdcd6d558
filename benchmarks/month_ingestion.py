"""Time one month through the ingestion job, and compare partition replacement with a MERGE baseline.

    uv run python benchmarks/month_ingestion.py --trips 3000000

Prints the wall time of each asset step on a first run and on a re-run, then rewrites the month's
raw_yellow rows two ways in the same Spark session: our partition replacement, and the baseline a
row-level MERGE INTO keyed on a hash of every column.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trips", type=int, default=3_000_000, help="trips per month in the sample source")
    parser.add_argument("--month", default="2025-01", help="month to ingest, YYYY-MM")
    parser.add_argument("--skip-merge", action="store_true", help="skip the MERGE baseline")
    args = parser.parse_args()
    os.environ.setdefault("TAXI_STATE_DIR", tempfile.mkdtemp(prefix="taxi-bench-"))

    from dagster import instance_for_test

    from forecast_assets.definitions import build_definitions, resources_from_env
    from forecast_assets.resources import SourceResource
    from forecast_assets.settings import state_path
    from forecast_assets.sources.sample_source import SampleSource

    started = time.perf_counter()
    source = SampleSource(state_path("sample_source"), trips_per_month=args.trips)
    source.write_month(args.month)
    print(
        f"sample month {args.month}: {args.trips:,} trips requested, written in {time.perf_counter() - started:.1f} s"
    )

    resources = resources_from_env() | {
        "source": SourceResource(trip_base_url=source.trip_base_url, weather_base_url=source.weather_base_url)
    }
    job = build_definitions(resources).resolve_job_def("monthly_ingestion")
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with instance_for_test() as instance:
        for label in ("first run", "re-run"):
            started = time.perf_counter()
            result = job.execute_in_process(partition_key=f"{args.month}-01", instance=instance, run_config=quiet)
            total = time.perf_counter() - started
            print(f"\n{label}: {total:.1f} s wall")
            for name, seconds in step_seconds(instance, result.run_id):
                print(f"  {name:70s} {seconds:7.2f} s")
            for event in result.get_asset_materialization_events():
                mat = event.event_specific_data.materialization
                if "dagster/row_count" in mat.metadata:
                    print(f"  rows {mat.asset_key.to_user_string():45s} {mat.metadata['dagster/row_count'].value:>10,}")

    if not args.skip_merge:
        compare_with_merge(resources["spark"].session, args.month)
    return 0


def step_seconds(instance, run_id: str) -> list[tuple[str, float]]:
    stats = instance.get_run_step_stats(run_id)
    return [(s.step_key, (s.end_time or 0) - (s.start_time or 0)) for s in sorted(stats, key=lambda s: s.start_time)]


def compare_with_merge(spark, month: str) -> None:
    from forecast_assets.lakehouse.tables import RAW_YELLOW, replace_month
    from forecast_assets.months import MonthWindow

    window = MonthWindow.from_partition_key(f"{month}-01")
    rows = spark.table(RAW_YELLOW.identifier).where(f"source_month = '{month}'")
    rows = rows.localCheckpoint()  # read once, so both writes start from the same in-memory rows
    count = rows.count()

    started = time.perf_counter()
    replace_month(spark, RAW_YELLOW, rows, window.start, window.end)
    replace_seconds = time.perf_counter() - started

    columns = ", ".join(f"coalesce(cast({c} as string), '')" for c in RAW_YELLOW.columns if c != "ingested_at")
    rows.selectExpr("*", f"sha2(concat_ws('|', {columns}), 256) AS row_hash").createOrReplaceTempView("incoming")
    hashed = f"sha2(concat_ws('|', {columns.replace('coalesce(cast(', 'coalesce(cast(t.')}), 256)"
    started = time.perf_counter()
    spark.sql(
        f"MERGE INTO {RAW_YELLOW.identifier} t USING incoming s "
        f"ON t.source_month = '{month}' AND {hashed} = s.row_hash "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    merge_seconds = time.perf_counter() - started
    print(f"\nrewriting {count:,} raw_yellow rows of {month}:")
    print(f"  partition replacement (ours)      {replace_seconds:7.1f} s")
    print(f"  MERGE on a hash of every column   {merge_seconds:7.1f} s   ({merge_seconds / replace_seconds:.1f}x)")


if __name__ == "__main__":
    sys.exit(main())
