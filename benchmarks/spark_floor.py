"""The floor under a month on Spark: the least any Spark pipeline pays for it in a new process, beside DuckDB's.

    ./run python benchmarks/spark_floor.py --state STATE_DIR [--month 2025-01] [--repeat 3]

``STATE_DIR`` is a state folder where the month's files are staged (``month_ingestion.py`` leaves none behind:
run ``./run demo --months 2025-01 --scale 3000000`` into one, or point at a benchmark's state while it runs).
Each round starts, in new processes:

* **bare Spark**: a Python process that starts Spark with the project's settings (its Iceberg catalog, class path
  and driver flags, started from its class archive), reads each staged trip file and writes it unchanged into a
  new Iceberg table, writes the weather files' rows likewise, counts the yellow month's rides per hour and zone
  and writes those, in the job's order (the first write pays the cold JVM's warm-up): no Dagster, no
  normalising, no audits, no branches, no lineage. What is left is what Spark and Iceberg themselves cost.
* **DuckDB parallel**: ``month_floor.py``, the whole month's work (verify, normalise, audit, publish).

It prints each process's wall time, and the medians with min-max. No figure is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BARE_SPARK = """
import sys, time
from pathlib import Path
started = time.perf_counter()
from pyspark.sql import SparkSession, functions as F
from forecast_assets.lakehouse.spark_session import SparkOptions, spark_conf
from taxi_core.catalog import CatalogConfig
from taxi_core.settings import load_settings
settings = load_settings()
from forecast_assets.lakehouse.class_archive import ClassArchive
conf = spark_conf(CatalogConfig.from_settings(settings), settings.state_dir, SparkOptions.from_settings(settings))
# Started from the class archive, as the project's runs are (a first round records it).
folder = settings.state_dir / "tmp" / "spark-classes"
archive = ClassArchive.for_spark(folder, conf.get("spark.driver.extraClassPath", ""))
options = archive.java_options()
conf["spark.driver.extraJavaOptions"] = conf.get("spark.driver.extraJavaOptions", "") + " " + options
builder = SparkSession.builder
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
if archive.records(options):
    archive.recording_by(spark._jvm.java.lang.ProcessHandle.current().pid())
spark.sql("CREATE NAMESPACE IF NOT EXISTS floor")
ready = time.perf_counter()
yellow, green, weather = sys.argv[1], sys.argv[2], sys.argv[3:]
steps = {}
def timed(name, action):
    began = time.perf_counter()
    action()
    steps[name] = time.perf_counter() - began
timed("raw_green", lambda: spark.read.parquet(green).writeTo("floor.raw_green").createOrReplace())
timed("raw_yellow", lambda: spark.read.parquet(yellow).writeTo("floor.raw_yellow").createOrReplace())
timed("raw_weather", lambda: spark.read.csv(weather).writeTo("floor.raw_weather").createOrReplace())
hour = F.date_trunc("hour", "tpep_pickup_datetime").alias("pickup_hour")
counts = lambda: spark.table("floor.raw_yellow").groupBy(hour, "PULocationID").count()
timed("hourly_actuals", lambda: counts().writeTo("floor.actuals").createOrReplace())
print(f"spark-start {ready - started:.2f}, " + ", ".join(f"{name} {seconds:.2f}" for name, seconds in steps.items()))
"""


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{command[:3]} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - began, done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", required=True, type=Path, help="a state folder with the month's files staged")
    parser.add_argument("--month", default="2025-01")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    os.environ["TAXI_STATE_DIR"] = str(args.state)
    from month_floor import eligible_zones, staged_files

    from taxi_core.settings import load_settings

    files = staged_files(load_settings(), args.month)
    figures: dict[str, list[float]] = {"bare Spark": [], "DuckDB parallel": []}
    with tempfile.TemporaryDirectory(prefix="spark-floor-") as scratch:
        # The bare pipeline writes its own tables in a state folder of its own, beside the staged files' one.
        env = {**os.environ, "TAXI_STATE_DIR": str(Path(scratch) / "state"), "PYTHONPATH": str(ROOT)}
        spark = [sys.executable, "-c", BARE_SPARK, str(files.trips), str(files.green), *map(str, files.weather)]
        zones = ",".join(map(str, eligible_zones()))
        weather = ["--weather", *map(str, files.weather)]
        _timed(spark, env)  # untimed: records the class archive, as a state folder's first run does
        for round_ in range(args.repeat):
            out = Path(scratch) / f"duckdb-{round_}"
            duck = [sys.executable, str(ROOT / "benchmarks" / "month_floor.py"), "--month", args.month,
                    "--trips", str(files.trips), "--green", str(files.green), *weather, "--out", str(out),
                    "--zones", zones]  # fmt: skip
            seconds, said = _timed(spark, env)
            figures["bare Spark"].append(seconds)
            print(f"round {round_ + 1}: bare Spark {seconds:.2f} s ({said}), load {os.getloadavg()[0]:.2f}")
            seconds, _ = _timed(duck, {**os.environ, "PYTHONPATH": str(ROOT)})
            figures["DuckDB parallel"].append(seconds)
            print(f"round {round_ + 1}: DuckDB parallel {seconds:.2f} s, load {os.getloadavg()[0]:.2f}")
    print(f"\nmedian of {args.repeat} (min-max), each a new process:")
    for label, values in figures.items():
        print(f"  {label:16s} {statistics.median(values):6.2f} s ({min(values):.2f}-{max(values):.2f})")
    ratio = statistics.median(figures["bare Spark"]) / statistics.median(figures["DuckDB parallel"])
    print(f"  bare Spark / DuckDB parallel: {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
