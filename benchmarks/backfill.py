"""History in one run: N months of the ingestion as one Dagster run, as N runs, as bare Spark and as DuckDB.

    ./run python benchmarks/backfill.py [--trips 150000] [--months 1 3 6 12] [--repeat 2]

Writes 12 (the largest of ``--months``) consecutive sample months and serves them from 127.0.0.1. A state folder
of its own gets them staged and published once (untimed, with Spark's class archive recorded as a state folder
has it after its first run). Then, for each repetition and each number of months N, interleaved and each in new
processes:

- **one run**: ``monthly_ingestion`` over the N months as one Dagster run (a single-run backfill: the range's tags),
  run as a run launcher runs it (``dagster api execute_run`` in a new process), every table step rewriting its
  months (``rewrite_unchanged``), so each writes what a first ingestion writes;
- **N runs**: the same, one run (one new process) per month, as Dagster's per-partition backfill launches them;
- **bare Spark**: one new process that starts the same Spark session (the project's settings, its class archive)
  and writes the same months with the same reads and transforms straight to ``main`` of a catalog of its own: no
  Dagster, no audits, no staging branches;
- **DuckDB**: one new process writing the same months with DuckDB's parallel writes and the same audits
  (``month_floor.duckdb_month``), as Parquet.

For each: wall time, CPU (user + system of the whole process tree: this process is its children's subreaper, so
a JVM that outlives its run is counted), the largest process's peak RSS, the load average at start and end, and
for the Dagster runs how many times Spark started. Last, medians with min-max, and each one run's ratios to the
one-month run and to bare Spark of the same repetition. ``--json FILE`` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness import (
    BENCHMARKS,
    ROOT,
    become_subreaper,
    dagster_job,
    execute_run_command,
    prepare_class_archive,
    rewrite_config,
    spread,
    timed_process,
)

JOB = "monthly_ingestion"
FIRST_MONTH = "2024-01"
WAYS = ("one run", "N runs", "bare Spark", "DuckDB")


@dataclass
class Figures:
    way: str
    months: int
    repetition: int
    wall: float
    cpu: float
    peak_rss: int
    load_start: float
    load_end: float
    spark_starts: int


def months_from(first: str, count: int) -> list[str]:
    year, month = map(int, first.split("-"))
    found = []
    for _ in range(count):
        found.append(f"{year}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trips", type=int, default=150_000, help="trips per month in the sample source")
    parser.add_argument("--months", type=int, nargs="+", default=[1, 3, 6, 12], help="range lengths to time")
    parser.add_argument("--repeat", type=int, default=2, help="repetitions of every way and length, interleaved")
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=WAYS, help="which ways to time")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--bare-spark", nargs="+", help=argparse.SUPPRESS)  # the bare Spark process
    parser.add_argument("--duckdb", nargs="+", help=argparse.SUPPRESS)  # the DuckDB process
    args = parser.parse_args()
    if args.bare_spark:
        return bare_spark(args.bare_spark)
    if args.duckdb:
        return duckdb_months(args.duckdb)
    become_subreaper()
    with tempfile.TemporaryDirectory(prefix="taxi-backfill-") as folder:
        return measure(args, Path(folder))


def measure(args: argparse.Namespace, folder: Path) -> int:

    state, home = folder / "state", folder / "dagster"
    home.mkdir(parents=True)
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    all_months = months_from(FIRST_MONTH, max(args.months))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAXI_", "DAGSTER_"))}
    env |= {
        "TAXI_STATE_DIR": str(state),
        "DAGSTER_HOME": str(home),
        "TAXI_FIRST_MONTH": all_months[0],
        "TAXI_LAST_MONTH": all_months[-1],
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(BENCHMARKS), os.environ.get("PYTHONPATH")])),
    }
    os.environ.update(env)
    os.chdir(folder)  # no checkout's .env is read: the runs' settings are the environment's alone

    from taxi_demo.sample_source import SampleSource, source_folders
    from tests.loopback import serve_folder

    started = time.perf_counter()
    source = SampleSource(folder / "source", trips_per_month=args.trips)
    source.write_months(all_months)
    print(f"{len(all_months)} sample months from {all_months[0]}, {args.trips:,} trips each, written in "
          f"{time.perf_counter() - started:.0f} s")  # fmt: skip
    print(f"machine: {os.cpu_count()} cores, load average {Path('/proc/loadavg').read_text().strip()}")
    with serve_folder(source.root) as base_url:
        env |= {f"TAXI_{name.upper()}_BASE_URL": f"{base_url}/{sub}" for name, sub in source_folders().items()}
        os.environ.update(env)
        prepare_class_archive(env, folder, state)
        runs = Runs(folder, env, home)
        print("the months staged and published once (untimed) ...", flush=True)
        runs.one_run(all_months, rewrite=False, log="prepare")
        bare_env = env | {"TAXI_STAGING": str(state / "staging"), "TAXI_STATE_DIR": str(folder / "bare")}
        (folder / "bare").mkdir()
        print("bare Spark's tables written once (untimed) ...", flush=True)
        runs.bare(all_months, bare_env, "bare-prepare")
        found: list[Figures] = []
        for repetition in range(1, args.repeat + 1):
            for count in args.months:
                months = all_months[:count]
                for way in args.ways:
                    label = f"{way}, {count} month{'s' * (count > 1)}, repetition {repetition}/{args.repeat}"
                    print(f"{label} ...", flush=True)
                    figures = runs.way(way, months, bare_env, f"{way.replace(' ', '-')}-{count}-{repetition}")
                    figures.repetition = repetition
                    found.append(figures)
                    print(f"  {figures.wall:7.1f} s wall {figures.cpu:7.1f} s CPU  peak {figures.peak_rss / 2**30:.2f} "
                          f"GiB  load {figures.load_start:.1f} -> {figures.load_end:.1f}"
                          + (f"  Spark started {figures.spark_starts}x" if way in WAYS[:2] else ""))  # fmt: skip
    summarize(found, args)
    if args.json:
        args.json.write_text(json.dumps([asdict(f) for f in found], indent=1))
    return 0


class Runs:
    """The ways of writing months, each timed in new processes."""

    def __init__(self, folder: Path, env: dict[str, str], home: Path) -> None:
        from dagster import DagsterInstance

        self.folder, self.env = folder, env
        self.instance = DagsterInstance.from_config(str(home))
        self.job, self.origin = dagster_job(JOB)
        self.rewrite = rewrite_config(self.job)

    def way(self, way: str, months: list[str], bare_env: dict[str, str], log: str) -> Figures:
        if way == "one run":
            return self.one_run(months, rewrite=True, log=log)
        if way == "N runs":
            each = [self.one_run([month], rewrite=True, log=f"{log}-{month}") for month in months]
            return Figures(way, len(months), 0, sum(f.wall for f in each), sum(f.cpu for f in each),
                           max(f.peak_rss for f in each), each[0].load_start, each[-1].load_end,
                           sum(f.spark_starts for f in each))  # fmt: skip
        if way == "bare Spark":
            return self.bare(months, bare_env, log)
        return self.duckdb(months, log)

    def one_run(self, months: list[str], rewrite: bool, log: str) -> Figures:
        from dagster import DagsterRunStatus
        from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

        first, last = f"{months[0]}-01", f"{months[-1]}-01"
        tags = (
            {"dagster/partition": first}
            if len(months) == 1
            else {ASSET_PARTITION_RANGE_START_TAG: first, ASSET_PARTITION_RANGE_END_TAG: last}
        )
        run_id, command = execute_run_command(
            self.instance, self.job, self.origin, self.rewrite if rewrite else {}, tags
        )
        process = timed_process(command, self.env, self.folder, self.folder / f"{log}.log")
        finished = self.instance.get_run_by_id(run_id)
        if finished is None or finished.status != DagsterRunStatus.SUCCESS:
            raise RuntimeError(f"the run of {months} did not succeed; its log is {self.folder / log}.log")
        starts = sum(
            1 for entry in self.instance.all_logs(run_id) if "Starting Spark" in (entry.user_message or "")
            and "done in" in (entry.user_message or "")
        )  # fmt: skip
        return _figures("one run" if len(months) > 1 or rewrite else "prepare", months, process, starts)

    def bare(self, months: list[str], env: dict[str, str], log: str) -> Figures:

        argv = [sys.executable, str(BENCHMARKS / "backfill.py"), "--bare-spark", *months]
        return _figures("bare Spark", months, timed_process(argv, env, self.folder, self.folder / f"{log}.log"), 1)

    def duckdb(self, months: list[str], log: str) -> Figures:

        argv = [sys.executable, str(BENCHMARKS / "backfill.py"), "--duckdb", str(self.folder / "duckdb"), *months]
        return _figures("DuckDB", months, timed_process(argv, self.env, self.folder, self.folder / f"{log}.log"), 0)


def _figures(way: str, months: list[str], process: Any, starts: int) -> Figures:
    return Figures(way, len(months), 0, process.wall, process.cpu, process.peak_rss, *process.load, starts)


def bare_spark(months: list[str]) -> int:
    """The same reads and writes as the job's table steps, straight to ``main``: the floor under Spark + Iceberg."""
    from forecast_assets.assets.lakehouse_tables import eligible_zones
    from forecast_assets.definitions import resources_for
    from forecast_assets.lakehouse.tables import HOURLY_ACTUALS, ensure_table, month_rows
    from forecast_assets.resources import StagingResource
    from forecast_assets.source_specs.registry import registered_sources
    from forecast_assets.source_specs.spec import StagedFiles
    from forecast_assets.source_specs.yellow_trips import RAW_YELLOW
    from forecast_assets.transforms.hourly_actuals import hourly_actuals
    from taxi_core.months import MonthWindow
    from taxi_core.settings import load_settings
    from taxi_core.tool_env import apply_tool_environment

    settings = load_settings()
    apply_tool_environment(settings)
    spark = resources_for(settings)["spark"].session
    store = StagingResource.of(settings).store()
    sources = [source for source in registered_sources() if source.monthly]
    for spec in [source.table for source in sources] + [HOURLY_ACTUALS]:
        ensure_table(spark, spec)

    def write(rows: Any, spec: Any) -> None:
        writer = rows.select(*spec.columns).writeTo(spec.identifier)
        writer.option("distribution-mode", "none").option("fanout-enabled", "true").overwritePartitions()

    for month in months:
        window = MonthWindow.from_partition_key(month)
        for source in sources:
            files = source.files_for(window)
            names = tuple(source.staged_name(file) for file in files)
            records = tuple(store.record(name) for name in names)
            staged = StagedFiles(window, files, names, tuple(store.spark_path(n) for n in names), records)  # type: ignore[arg-type]
            write(source.read(spark, staged).rows, source.table)
        trips = month_rows(spark, RAW_YELLOW, window)
        write(hourly_actuals(spark, trips, window.start, window.end, eligible_zones(), None), HOURLY_ACTUALS)
    return 0


def duckdb_months(arguments: list[str]) -> int:
    """The months with DuckDB (parallel writes) and the same audits, one after another in this process."""
    from month_floor import duckdb_month, staged_files

    from taxi_core.settings import load_settings

    out, months = Path(arguments[0]), arguments[1:]
    settings = load_settings()
    for month in months:
        duckdb_month(month, staged_files(settings, month), out)
    return 0


def summarize(found: list[Figures], args: argparse.Namespace) -> None:
    def of(way: str, count: int) -> list[Figures]:
        return [f for f in found if f.way == way and f.months == count]

    print(f"\nMedians (min-max) of {args.repeat} repetitions, {args.trips:,} trips a month; each way in new processes, "
          "interleaved. CPU: the whole process tree.\n")  # fmt: skip
    header = f"{'months':>6s}  " + "".join(f"{way + ' wall':>22s}{way + ' CPU':>22s}" for way in args.ways)
    print(header)
    for count in args.months:
        row = f"{count:>6d}  "
        for way in args.ways:
            figures = of(way, count)
            row += f"{spread([f.wall for f in figures]):>22s}{spread([f.cpu for f in figures]):>22s}"
        print(row)
    if "one run" not in args.ways:
        return
    base = {f.repetition: f for f in of("one run", min(args.months))}
    print(f"\nOne run of N months against the one-month run of its repetition ({min(args.months)} month), against "
          "bare Spark doing the same writes and against N runs:")  # fmt: skip
    for count in args.months:
        runs = of("one run", count)
        wall = [f.wall / base[f.repetition].wall for f in runs]
        cpu = [f.cpu / base[f.repetition].cpu for f in runs]
        bare = {f.repetition: f for f in of("bare Spark", count)}
        to_bare = [f.cpu / bare[f.repetition].cpu for f in runs if f.repetition in bare]
        separate = {f.repetition: f for f in of("N runs", count)}
        to_separate = [f.cpu / separate[f.repetition].cpu for f in runs if f.repetition in separate]
        starts = sorted({f.spark_starts for f in runs})
        print(f"  {count:>2d} months: wall {spread(wall, 'x', 2)}, CPU {spread(cpu, 'x', 2)} of one month's run; "
              + (f"CPU {spread(to_bare, 'x', 2)} bare Spark's; " if to_bare else "")
              + (f"CPU {spread(to_separate, 'x', 2)} of {count} runs'; " if to_separate else "")
              + f"Spark started {'/'.join(map(str, starts))}x, peak "
              f"{statistics.median(f.peak_rss for f in runs) / 2**30:.2f} GiB")  # fmt: skip
    loads = [load for f in found for load in (f.load_start, f.load_end)]
    print(f"\nload average (1 min) at the processes' starts and ends: {min(loads):.2f}-{max(loads):.2f}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(BENCHMARKS))
    sys.exit(main())
