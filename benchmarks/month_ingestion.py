"""Time one month through the ingestion job, and what write-audit-publish costs over a straight write.

    uv run python benchmarks/month_ingestion.py --trips 3000000

Prints the wall time of each asset step on a first run and on an unchanged re-run (a no-op), then
rewrites the month's raw_yellow rows in the same Spark session, each way timed ``--repeat`` times:
the baseline writing straight to ``main``, and write-audit-publish (write to a branch, publish);
the audits, which both designs run, are timed on their own. ``--merge`` adds a row-level MERGE INTO
keyed on a hash of every column as a second baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trips", type=int, default=3_000_000, help="trips per month in the sample source")
    parser.add_argument("--month", default="2025-01", help="month to ingest, YYYY-MM")
    parser.add_argument("--repeat", type=int, default=3, help="times each write is timed")
    parser.add_argument("--merge", action="store_true", help="also time a row-level MERGE baseline")
    args = parser.parse_args()
    os.environ.setdefault("TAXI_STATE_DIR", tempfile.mkdtemp(prefix="taxi-bench-"))

    from dagster import instance_for_test

    from forecast_assets.definitions import build_definitions, resources_for
    from forecast_assets.resources import SourceResource
    from taxi_core.settings import load_settings
    from taxi_core.tool_env import apply_tool_environment
    from taxi_demo.sample_source import SampleSource

    settings = load_settings()
    apply_tool_environment(settings)
    started = time.perf_counter()
    source = SampleSource(settings.path("sample_source"), trips_per_month=args.trips)
    source.write_month(args.month)
    print(
        f"sample month {args.month}: {args.trips:,} trips requested, written in {time.perf_counter() - started:.1f} s"
    )

    resources = resources_for(settings)
    resources["source"] = SourceResource(base_urls=source.base_urls, download_dir=resources["source"].download_dir)
    job = build_definitions(settings, resources).resolve_job_def("monthly_ingestion")
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with instance_for_test() as instance:
        for label in ("first run", "unchanged re-run"):
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

    spark = resources["spark"].session
    rows = compare_wap_with_straight_write(spark, args.month, args.repeat)
    if args.merge:
        compare_with_merge(spark, rows, args.month)
    return 0


def step_seconds(instance, run_id: str) -> list[tuple[str, float]]:
    stats = instance.get_run_step_stats(run_id)
    return [(s.step_key, (s.end_time or 0) - (s.start_time or 0)) for s in sorted(stats, key=lambda s: s.start_time)]


def _timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def compare_wap_with_straight_write(spark, month: str, repeat: int):
    from forecast_assets.audits import RAW_YELLOW_AUDITS, MonthFacts
    from forecast_assets.lakehouse.publication import publish, stage_month, staging_branch
    from forecast_assets.source_specs.yellow_trips import RAW_YELLOW
    from taxi_core.months import MonthWindow

    window = MonthWindow.from_partition_key(f"{month}-01")
    rows = spark.table(RAW_YELLOW.identifier).where(f"source_month = '{month}'")
    rows = rows.localCheckpoint()  # read once, so every write starts from the same in-memory rows
    count = rows.count()

    def straight():
        rows.writeTo(RAW_YELLOW.identifier).overwritePartitions()

    def write_audit_publish():
        staged = stage_month(spark, RAW_YELLOW, rows, window, staging_branch(window, "benchmark"), {})
        publish(spark, staged)

    def audits():
        facts = MonthFacts(window, expected_rows=count)
        for audit in RAW_YELLOW_AUDITS:
            audit.evaluate(spark.table(RAW_YELLOW.identifier).where(f"source_month = '{month}'"), facts)

    timings = {"straight to main (baseline)": [], "write-audit-publish (ours)": [], "audits alone": []}
    for _ in range(repeat):
        timings["straight to main (baseline)"].append(_timed(straight))
        timings["write-audit-publish (ours)"].append(_timed(write_audit_publish))
        timings["audits alone"].append(_timed(audits))
    print(f"\nrewriting {count:,} raw_yellow rows of {month}, median of {repeat}:")
    medians = {label: statistics.median(seconds) for label, seconds in timings.items()}
    baseline = medians["straight to main (baseline)"]
    for label, median in medians.items():
        spread = ", ".join(f"{s:.1f}" for s in timings[label])
        print(f"  {label:32s} {median:7.2f} s   ({spread})")
    overhead = medians["write-audit-publish (ours)"] - baseline
    print(f"  write-audit-publish overhead     {overhead:+7.2f} s   ({overhead / baseline:+.0%} of the write)")
    return rows


def compare_with_merge(spark, rows, month: str) -> None:
    from forecast_assets.source_specs.yellow_trips import RAW_YELLOW

    columns = ", ".join(f"coalesce(cast({c} as string), '')" for c in RAW_YELLOW.columns if c != "ingested_at")
    rows.selectExpr("*", f"sha2(concat_ws('|', {columns}), 256) AS row_hash").createOrReplaceTempView("incoming")
    hashed = f"sha2(concat_ws('|', {columns.replace('coalesce(cast(', 'coalesce(cast(t.')}), 256)"
    merge_seconds = _timed(
        lambda: spark.sql(
            f"MERGE INTO {RAW_YELLOW.identifier} t USING incoming s "
            f"ON t.source_month = '{month}' AND {hashed} = s.row_hash "
            "WHEN NOT MATCHED THEN INSERT *"
        )
    )
    print(f"  MERGE on a hash of every column  {merge_seconds:7.2f} s")


if __name__ == "__main__":
    sys.exit(main())
