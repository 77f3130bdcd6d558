"""What the cluster profile costs a user: its start-up, and months through the ingestion job on each Spark.

    uv run python benchmarks/cluster_overhead.py --trips 3000000 [--months 3]

Same run, same month files: the ingestion job (stage the files, write-audit-publish the tables; ``--months`` N
as one run of the range, a single-run backfill) on
the embedded default (``local[2]``, the SQLite catalog) as the baseline, then on the profile's two-worker
standalone cluster with its Postgres catalog (the run's application taking both workers' cores). Each
run starts from an empty catalog in its own process, so each pays for its Spark application's start.
Then the profile's own start (PostgreSQL's first ``initdb`` included), restart and stop.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from backfill import months_from

MONTH_FILE_VARIABLES = ("TAXI_TRIP_BASE_URL", "TAXI_WEATHER_BASE_URL")
OWN_PREFIXES = ("TAXI_", "METAFLOW_", "DAGSTER_", "OPENLINEAGE", "MPLCONFIGDIR")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trips", type=int, default=3_000_000, help="trips in the month (full scale: 3,000,000)")
    parser.add_argument("--month", default="2025-01", help="the (first) month to ingest, YYYY-MM")
    parser.add_argument("--months", type=int, default=1, help="consecutive months from --month, as one run")
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    args = parser.parse_args()
    months = months_from(args.month, args.months)
    if args.variant:
        print(json.dumps(ingest_months(months)))
        return 0

    from taxi_core.settings import load_settings
    from taxi_demo.local_cluster import profile
    from taxi_demo.sample_source import SampleSource

    root = Path(tempfile.mkdtemp(prefix="taxi-bench-cluster-"))
    root.chmod(0o755)  # PostgreSQL runs as its own account when this runs as root
    clean = {key: value for key, value in os.environ.items() if not key.startswith(OWN_PREFIXES)}
    started = time.perf_counter()
    source = SampleSource(root / "sample_source", trips_per_month=args.trips)
    source.write_months(months)
    took = time.perf_counter() - started
    print(f"sample months {', '.join(months)}: {args.trips:,} trips each, written in {took:.1f} s")
    files = source.environment | {"TAXI_FIRST_MONTH": months[0], "TAXI_LAST_MONTH": months[-1]}

    results = {}
    local_env = clean | files | {"TAXI_STATE_DIR": str(root / "embedded"), "TAXI_SPARK_MASTER": "local[2]"}
    results["embedded: local[2], SQLite catalog"] = run_variant(args, local_env)

    settings = load_settings(environ=clean | {"TAXI_STATE_DIR": str(root / "profile")})
    timings = {}
    started = time.perf_counter()
    cluster = profile.start(settings)
    timings["profile start, first (initdb, PostgreSQL, master, 2 workers)"] = time.perf_counter() - started
    try:
        cluster_env = clean | files | cluster.environment | {"TAXI_SPARK_CORES_MAX": "2"}
        results["cluster: 2 workers x 1 core, Postgres catalog"] = run_variant(args, cluster_env)
    finally:
        started = time.perf_counter()
        cluster.stop()
        timings["profile stop"] = time.perf_counter() - started
    started = time.perf_counter()
    cluster = profile.start(settings)
    timings["profile start, again (data directory kept)"] = time.perf_counter() - started
    cluster.stop()

    what = (
        f"{len(months)} months ({months[0]} to {months[-1]}) as one run"
        if len(months) > 1
        else f"one month ({months[0]})"
    )
    print(f"\n{what}, {args.trips:,} trips a month, through the ingestion job, same run:")
    baseline = next(iter(results.values()))["wall"]
    for label, result in results.items():
        print(f"  {label:48s} {result['wall']:7.1f} s wall  ({result['wall'] / baseline:.2f}x the embedded)")
        for step, seconds in result["steps"]:
            print(f"      {step:60s} {seconds:7.1f} s")
        print(f"      rows {result['rows']}")
    print("\nthe profile's servers:")
    for label, seconds in timings.items():
        print(f"  {label:64s} {seconds:6.1f} s")
    shutil.rmtree(root, ignore_errors=True)
    return 0


def run_variant(args: argparse.Namespace, env: dict[str, str]) -> dict:
    env = env | {"USER": os.environ.get("USER") or "taxi"}
    command = [sys.executable, __file__, "--variant", "run", "--month", args.month, "--months", str(args.months)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the ingestion run failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ingest_months(months: list[str]) -> dict:
    """In a process of its own: the ingestion job on this environment's settings, one run of ``months``; wall
    time, steps, rows (the last month's)."""
    from dagster import instance_for_test
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    from forecast_assets.definitions import build_definitions
    from taxi_core.settings import load_settings
    from taxi_core.tool_env import apply_tool_environment

    settings = load_settings()
    apply_tool_environment(settings)
    job = build_definitions(settings).resolve_job_def("monthly_ingestion")
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with instance_for_test() as instance:
        started = time.perf_counter()
        tags = {ASSET_PARTITION_RANGE_START_TAG: f"{months[0]}-01", ASSET_PARTITION_RANGE_END_TAG: f"{months[-1]}-01"}
        result = job.execute_in_process(tags=tags, instance=instance, run_config=quiet)
        wall = time.perf_counter() - started
        stats = sorted(instance.get_run_step_stats(result.run_id), key=lambda stat: stat.start_time)
        steps = [(stat.step_key, (stat.end_time or 0) - (stat.start_time or 0)) for stat in stats]
    rows = {}
    for event in result.get_asset_materialization_events():
        materialization = event.event_specific_data.materialization
        if "dagster/row_count" in materialization.metadata:
            rows[materialization.asset_key.to_user_string()] = materialization.metadata["dagster/row_count"].value
    return {"wall": wall, "steps": steps, "rows": rows}


if __name__ == "__main__":
    sys.exit(main())
