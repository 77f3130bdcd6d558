"""One month through the ingestion job beside the floor under it, from the same run.

    ./run python benchmarks/month_ingestion.py [--trips 3000000] [--repeat 3] [--merge]

Writes a sample month and serves it from 127.0.0.1, starts Spark (timed on its own: a run pays it once,
every step shares the session; in the benchmark's own state folder, without a class archive), then
runs the job: a first run, an unchanged re-run (nothing written, no audit run again) and ``--repeat``
forced rewrites (every table written, audited and published again). Then DuckDB does the same work on
the same staged files (``month_floor``), with its default of ordered writes and with parallel ones,
and pyarrow counts the actuals alone; the published actuals are compared with DuckDB's cell by cell.
Last, in the same Spark session, write-audit-publish against a straight write to ``main`` (``--merge``
adds a row-level MERGE).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

TABLE_STEPS = {
    "raw_yellow": "nyc_taxi__raw_yellow",
    "raw_weather": "nyc_taxi__raw_weather",
    "hourly_actuals": "nyc_taxi__yellow_rides_hourly_actuals",
}
FILE_STEPS = ("taxi_trip_files", "weather_files")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trips", type=int, default=3_000_000, help="trips per month in the sample source")
    parser.add_argument("--month", default="2025-01", help="month to ingest, YYYY-MM")
    parser.add_argument("--repeat", type=int, default=3, help="forced rewrites, floor runs and WAP writes timed")
    parser.add_argument("--merge", action="store_true", help="also time a row-level MERGE baseline")
    args = parser.parse_args()
    if os.environ.get("TAXI_STATE_DIR"):
        return measure(args)
    with tempfile.TemporaryDirectory(prefix="taxi-bench-") as state:  # a month's tables are a few GB: not left behind
        os.environ["TAXI_STATE_DIR"] = state
        # A class archive recorded in a folder about to be removed is never used, and the recording JVM is
        # slower for its whole run (and cannot write the archive once the folder is gone): Spark starts without.
        os.environ.setdefault("TAXI_SPARK_CLASS_ARCHIVE", "false")
        return measure(args)


def measure(args: argparse.Namespace) -> int:
    from dagster import instance_for_test

    from forecast_assets.definitions import build_definitions, resources_for
    from forecast_assets.resources import SourceResource
    from taxi_core.settings import load_settings
    from taxi_core.tool_env import apply_tool_environment
    from taxi_demo.sample_source import SampleSource, source_folders
    from tests.loopback import serve_folder

    settings = load_settings()
    apply_tool_environment(settings)
    started = time.perf_counter()
    source = SampleSource(settings.path("sample_source"), trips_per_month=args.trips)
    source.write_month(args.month)
    written = time.perf_counter() - started
    print(f"sample month {args.month}: {args.trips:,} trips requested, written in {written:.1f} s")

    resources = resources_for(settings)
    started = time.perf_counter()
    spark = resources["spark"].session
    spark_start = time.perf_counter() - started
    archive = "" if settings.spark_class_archive else "; no class archive"
    print(f"Spark start: {spark_start:.1f} s (once per run: the run's steps share the session{archive})")
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    rewrite = {"ops": {step: {"config": {"rewrite_unchanged": True}} for step in TABLE_STEPS.values()}}
    partition = f"{args.month}-01"
    with serve_folder(source.root) as base_url, instance_for_test() as instance:
        urls = {name: f"{base_url}/{folder}" for name, folder in source_folders().items()}
        resources["source"] = SourceResource(base_urls=urls, download_dir=resources["source"].download_dir)
        job = build_definitions(settings, resources).resolve_job_def("monthly_ingestion")

        def run(label: str, config: dict) -> dict[str, float]:
            began = time.perf_counter()
            result = job.execute_in_process(partition_key=partition, instance=instance, run_config=config)
            wall = time.perf_counter() - began
            steps = step_seconds(instance, result.run_id)
            print(f"\n{label}: {wall:.1f} s wall")
            for name, seconds in steps.items():
                print(f"  {name:45s} {seconds:7.2f} s")
            return {"wall": wall, **steps}

        first = run("first run", quiet)
        unchanged = run("unchanged re-run (no write, no audit run again)", quiet)
        rewrites = [run(f"forced rewrite {n + 1}/{args.repeat}", quiet | rewrite) for n in range(args.repeat)]
    floor(settings, args.month, args.repeat, spark_start, first, unchanged, rewrites)
    rows = compare_wap_with_straight_write(spark, args.month, args.repeat)
    if args.merge:
        compare_with_merge(spark, rows, args.month)
    spark.stop()  # its JVM ends here, not after the state folder it writes to is removed
    return 0


def floor(settings, month: str, repeat: int, spark_start: float, first: dict, unchanged: dict, rewrites: list):
    """DuckDB and pyarrow on the same staged files, and each of our figures beside theirs."""
    from month_floor import duckdb_month, published_actuals, pyarrow_actuals, same_actuals, staged_files

    files = staged_files(settings, month)
    out = Path(tempfile.mkdtemp(prefix="floor-", dir=settings.path("tmp")))
    runs = {
        label: [duckdb_month(month, files, out / f"{label}-{n}", ordered=ordered) for n in range(repeat)]
        for label, ordered in (("ordered", True), ("parallel", False))
    }
    difference = same_actuals(published_actuals(settings, month), runs["parallel"][0].actuals)
    arrow = statistics.median(pyarrow_actuals(runs["parallel"][0].raw_trips, month)[0] for _ in range(repeat))

    def median(step: str, label: str) -> float:
        return statistics.median(run.seconds[step] for run in runs[label])

    def ours(step: str) -> float:
        return statistics.median(rewrite[TABLE_STEPS[step]] for rewrite in rewrites)

    files_seconds = sum(first[step] for step in FILE_STEPS)
    month_ours = files_seconds + sum(ours(step) for step in TABLE_STEPS)
    print(f"\nthe published actuals against DuckDB's: {difference or 'identical, row for row and cell for cell'}")
    print(f"\n{'median of ' + str(repeat):36s}{'ours':>9s}{'DuckDB':>9s}{'ratio':>8s}{'DuckDB':>9s}{'ratio':>8s}")
    print(f"{'':36s}{'':>9s}{'ordered':>9s}{'':>8s}{'parallel':>9s}")
    lines = [("whole month (files + 3 tables)", month_ours, "total")]
    lines += [("  + Spark's start", month_ours + spark_start, "total")]
    lines += [(f"  {step}", ours(step), step) for step in TABLE_STEPS]
    for label, mine, step in lines:
        ordered, parallel = median(step, "ordered"), median(step, "parallel")
        print(f"{label:36s}{mine:8.2f}s{ordered:8.2f}s{mine / ordered:7.1f}x{parallel:8.2f}s{mine / parallel:7.1f}x")
    print(f"{'  hourly_actuals against pyarrow':36s}{ours('hourly_actuals'):8.2f}s{arrow:8.2f}s"
          f"{ours('hourly_actuals') / arrow:7.1f}x")  # fmt: skip
    print("\nunchanged re-run, per asset (target: 5 s):")
    for step, name in TABLE_STEPS.items():
        print(f"  {step:34s}{unchanged[name]:8.2f}s")


def step_seconds(instance, run_id: str) -> dict[str, float]:
    stats = sorted(instance.get_run_step_stats(run_id), key=lambda s: s.start_time)
    return {s.step_key: (s.end_time or 0) - (s.start_time or 0) for s in stats}


def _timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def compare_wap_with_straight_write(spark, month: str, repeat: int):
    from forecast_assets.audit_run import audit_month
    from forecast_assets.audits import MonthFacts
    from forecast_assets.lakehouse.publication import Publication
    from forecast_assets.source_specs.yellow_trips import RAW_YELLOW
    from forecast_assets.source_specs.yellow_trips import SOURCE as YELLOW_TRIPS
    from taxi_core.months import MonthWindow

    window = MonthWindow.from_partition_key(f"{month}-01")
    rows = spark.table(RAW_YELLOW.identifier).where(f"source_month = '{month}'")
    rows = rows.localCheckpoint()  # read once, so every write starts from the same in-memory rows
    count = rows.count()

    def straight():  # written as the staged month is, by the tasks that read it
        rows.writeTo(RAW_YELLOW.identifier).option("distribution-mode", "none").overwritePartitions()

    def write_audit_publish():
        publication = Publication.open(spark, RAW_YELLOW, window, f"{month}-01")
        publication.publish(publication.stage(rows, "benchmark", {}), lambda snapshot_id: {})

    def audits():
        facts = MonthFacts(window, expected_rows=count)
        audit_month(spark.table(RAW_YELLOW.identifier).where(f"source_month = '{month}'"), YELLOW_TRIPS.audits, facts)

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
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
