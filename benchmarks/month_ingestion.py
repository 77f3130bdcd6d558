"""A month through the ingestion job as a user pays for it, a Dagster run in a new process, beside its floors.

    ./run python benchmarks/month_ingestion.py [--trips 3000000] [--month 2025-01] [--repeat 3]
        [--plan first,unchanged,rewrite] [--beside duckdb,anchor,bare-spark] [--state DIR]
        [--jvm] [--event-log] [--java-options=-XX:TieredStopAtLevel=1] [--conf spark.sql.shuffle.partitions=4]
        [--code OTHER_CHECKOUT] [--results FILE] [--no-class-archive]

Writes a sample month and serves it from 127.0.0.1 (the settings' TAXI_<SOURCE>_BASE_URL point there). Each run is
a Dagster run in a new process, started as a run launcher starts one: the run is created in a persistent
DagsterInstance (the benchmark's own DAGSTER_HOME, with the project's ``dagster.yaml``) from the code location's
reconstructable job (``monthly_ingestion``, the month's partition tag), and ``dagster api execute_run
<ExecuteRunArgs>`` runs it in a new Python process: imports, definitions, Spark's start when a step needs it, every
step. It is the command Dagster's container launchers run.

The plan (``--plan``, in order): ``first`` on an empty lakehouse, ``unchanged`` (a re-run that finds the month
published), ``rewrite`` (``--repeat`` forced rewrites, ``rewrite_unchanged`` on every table step) and ``twice`` (two
forced rewrites in one new process: what a Spark session that outlives runs would save). After each run, on the
same staged files and each in its own new process, the floors ``--beside`` it (``month_floor.py``): DuckDB with
parallel writes, DuckDB + pyiceberg (Iceberg to Iceberg) and bare Spark.

For every process: wall time, CPU (user + system of its whole tree: this process is its children's subreaper, so
Spark's JVM is counted even when it outlives the run's process), peak RSS (the largest process, and the tree's,
sampled), the load average at its start and end; for the Dagster runs each step's duration from the instance,
whether a JVM ran and Spark's start. ``--jvm`` adds the driver JVM's CPU by thread (JIT compilers, GC, task
threads) with its class-loading and GC times from its HotSpot counters; ``--event-log`` counts each step's Spark
jobs, stages and tasks (left off when timing). ``--java-options`` and ``--conf`` are added to the driver's Spark
settings, for trying flags; ``--code`` runs another checkout's code (a ``git worktree`` of the commit before a
change); ``--state`` keeps the state folder (its sample month and class archive) between invocations. Last, the
medians with min-max of each figure and of each run's ratio to the floors beside it, and the published actuals
compared with DuckDB's and the anchor's, cell for cell. ``--results FILE`` appends every run's figures as JSON.

Spark's class archive is recorded before the timed runs (two untimed starts), as a state folder has it after its
first run; ``--no-class-archive`` starts every JVM without one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness import (
    BENCHMARKS,
    ROOT,
    Process,
    become_subreaper,
    dagster_job,
    execute_run_command,
    machine,
    prepare_class_archive,
    project_on_path,
    rewrite_config,
    served_sample,
    spark_start,
    spread,
    step_seconds,
    timed_process,
)

JOB = "monthly_ingestion"
FLOORS = {"duckdb": "DuckDB parallel", "anchor": "DuckDB + pyiceberg", "bare-spark": "bare Spark"}


@dataclass
class Round:
    label: str
    ours: Process
    beside: dict[str, Process] = field(default_factory=dict)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trips", type=int, default=3_000_000, help="trips per month in the sample source")
    parser.add_argument("--month", default="2025-01", help="month to ingest, YYYY-MM")
    parser.add_argument("--repeat", type=int, default=3, help="forced rewrites, each beside its floors")
    parser.add_argument(
        "--plan", default="first,unchanged,rewrite", help="runs in order: first, unchanged, rewrite, twice"
    )
    parser.add_argument("--beside", default="duckdb,anchor", help=f"floors run beside each: {', '.join(FLOORS)}, none")
    parser.add_argument("--state", type=Path, help="a state folder kept between invocations (default: a new one)")
    parser.add_argument("--jvm", action="store_true", help="the driver JVM's CPU by thread and its counters")
    parser.add_argument("--event-log", action="store_true", help="count Spark jobs per step (Spark's event log)")
    parser.add_argument("--java-options", default="", help="added to spark.driver.extraJavaOptions")
    parser.add_argument("--conf", action="append", default=[], help="key=value added to the Spark settings")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose code the runs use (a before)")
    parser.add_argument("--results", type=Path, help="a JSON-lines file each run's figures are appended to")
    parser.add_argument("--no-class-archive", action="store_true", help="start every Spark JVM without a class archive")
    args = parser.parse_args()
    beside = [name for name in args.beside.split(",") if name in FLOORS]
    become_subreaper()
    if args.state is not None:
        args.state.mkdir(parents=True, exist_ok=True)
        return measure(args, args.state.resolve(), beside)
    with tempfile.TemporaryDirectory(prefix="taxi-bench-") as folder:  # a month's tables are a few GB
        return measure(args, Path(folder), beside)


def environment(args: argparse.Namespace, folder: Path) -> dict[str, str]:
    """The runs' settings: the benchmark's own state and Dagster folders, and the checkout whose code runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAXI_", "DAGSTER_"))}
    env |= {
        "TAXI_STATE_DIR": str(folder / "state"),
        "DAGSTER_HOME": str(folder / "dagster"),
        "TAXI_SPARK_CLASS_ARCHIVE": "false" if args.no_class_archive else "true",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(args.code), os.environ.get("PYTHONPATH")])),
    }
    # The project's own setting for more Spark settings (TAXI_SPARK_CONF), the driver's flags added to its own.
    extra = dict(item.split("=", 1) for item in args.conf)
    if args.event_log:
        extra |= {"spark.eventLog.enabled": "true", "spark.eventLog.dir": (folder / "eventlog").as_uri()}
    if args.java_options:
        from forecast_assets.definitions import resources_for
        from taxi_core.settings import load_settings

        own = resources_for(load_settings(env))["spark"].spark_config().get("spark.driver.extraJavaOptions", "")
        extra["spark.driver.extraJavaOptions"] = f"{own} {args.java_options}".strip()
    if extra:
        env["TAXI_SPARK_CONF"] = json.dumps(extra)
    return env


def measure(args: argparse.Namespace, folder: Path, beside: list[str]) -> int:
    home = folder / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    project_on_path(args.code)
    os.chdir(folder)  # no checkout's .env is read: the runs' settings are the environment's alone
    env = environment(args, folder)
    os.environ.update(env)
    print(machine())
    with served_sample(folder / "source", args.trips, [args.month]) as base_urls:
        env |= base_urls
        os.environ.update(env)
        if not args.no_class_archive:
            prepare_class_archive(env, folder, folder / "state")
        rounds = run_rounds(args, folder, env, beside)
    summarize(rounds, beside)
    if {"duckdb", "anchor"} & set(beside):
        compare_actuals(args.month, rounds, folder)
    return 0


def run_rounds(args: argparse.Namespace, folder: Path, env: dict[str, str], beside: list[str]) -> list[Round]:
    from dagster import DagsterInstance, DagsterRunStatus
    from month_floor import eligible_zones, staged_files

    from taxi_core.settings import load_settings

    job, origin = dagster_job(JOB, args.code)
    rewrite = rewrite_config(job)
    plan: list[tuple[str, dict[str, Any], bool]] = []
    for kind in args.plan.split(","):
        if kind == "rewrite":
            plan += [(f"forced rewrite {n + 1}/{args.repeat}", rewrite, True) for n in range(args.repeat)]
        else:
            plan.append({"first": ("first run", {}, False), "unchanged": ("unchanged re-run", {}, False),
                         "twice": ("two rewrites in one process", rewrite, True)}[kind])  # fmt: skip
    zones = ",".join(map(str, eligible_zones()))
    tags = {"dagster/partition": f"{args.month}-01"}
    rounds = []
    with DagsterInstance.from_config(str(folder / "dagster")) as instance:
        for n, (label, config, forced) in enumerate(plan):
            if label == "first run":
                _empty_lakehouse(folder / "state")
            shutil.rmtree(folder / "eventlog", ignore_errors=True)
            (folder / "eventlog").mkdir()
            run_id, command = execute_run_command(instance, job, origin, config, tags)
            if label.startswith("two"):  # as this script, which executes the run's job a second time in its process
                command = [sys.executable, __file__, "--run-twice", *command[3:]]
            ours = timed_process(command, env, folder, folder / f"run-{n}.log", watch_jvm=args.jvm)
            finished = instance.get_run_by_id(run_id)
            if finished is None or finished.status != DagsterRunStatus.SUCCESS:
                msg = f"the {label} did not succeed; its log is {folder / f'run-{n}.log'}"
                raise RuntimeError(msg)
            ours.steps = step_seconds(instance, run_id)
            ours.spark_start = spark_start(instance, run_id)
            if args.event_log:
                ours.jvm_detail["spark_jobs"] = spark_jobs(folder / "eventlog", instance, run_id)
            files = staged_files(load_settings(), args.month)
            inputs = ["--month", args.month, "--trips", str(files.trips), "--green", str(files.green), "--zones", zones]
            inputs += ["--weather", *map(str, files.weather)]
            done = Round(label, ours)
            for way in beside:
                out = (
                    ["--out", str(folder / ("anchor" if way == "anchor" else f"floor-{n}"))]
                    if way != "bare-spark"
                    else []
                )
                argv = [sys.executable, str(BENCHMARKS / "month_floor.py"), "--way", way, *inputs, *out]
                argv += ["--rewrite"] if forced and way == "anchor" else []
                floor_env = env | {"TAXI_STATE_DIR": str(folder / "bare-spark")} if way == "bare-spark" else env
                done.beside[way] = timed_process(argv, floor_env, folder, folder / f"{way}-{n}.log")
            rounds.append(done)
            report(done)
            if args.results:
                with args.results.open("a") as out_file:
                    out_file.write(json.dumps({"label": label, "trips": args.trips, **asdict(ours)}) + "\n")
    return rounds


def _empty_lakehouse(state: Path) -> None:
    for path in ("warehouse", "catalog.sqlite", "staging"):
        target = state / path
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)


def spark_jobs(folder: Path, instance: Any, run_id: str) -> dict[str, dict[str, int]]:
    """Jobs, stages and tasks in Spark's event log, by the step running when each job was submitted."""
    windows = {s.step_key: (s.start_time or 0, s.end_time or 0) for s in instance.get_run_step_stats(run_id)}
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def step_at(millis: int) -> str:
        return next((step for step, (start, end) in windows.items() if start <= millis / 1000 <= end), "between steps")

    for log in folder.iterdir():
        for line in log.read_text().splitlines():
            event = json.loads(line)
            kind = event.get("Event", "")
            if kind == "SparkListenerJobStart":
                step = counts[step_at(event["Submission Time"])]
                step["jobs"] += 1
                step["stages"] += len(event.get("Stage Infos", []))
            elif kind == "SparkListenerTaskEnd":
                info = event["Task Info"]
                step = counts[step_at(info["Launch Time"])]
                step["tasks"] += 1
                step["task_ms"] += info["Finish Time"] - info["Launch Time"]
    return {step: dict(found) for step, found in counts.items()}


def report(done: Round) -> None:
    ours = done.ours
    jvm = "a JVM ran (Spark started" if ours.jvm else "no JVM (Spark not started"
    jvm += f", in {ours.spark_start:.1f} s)" if ours.spark_start is not None else ")"
    outlived = f"; its last process exited {ours.outlived:.1f} s after it" if ours.outlived > 0.05 else ""
    print(f"\n{done.label}: {jvm}{outlived}")
    print(f"  Dagster run        {ours.line()}")
    for step, seconds in ours.steps.items():
        print(f"    {step:44s}{seconds:7.2f} s")
    for line in ours.output.splitlines():
        if line.startswith('{"second_run_seconds"'):
            print(f"    the second run in the same process: {json.loads(line)['second_run_seconds']:.2f} s")
    for key, value in ours.jvm_detail.items():
        print(f"    JVM {key}: {value}")
    for way, process in done.beside.items():
        seconds = inside(process)
        steps = ", ".join(f"{step} {value:.2f}" for step, value in seconds.items() if step != "total")
        print(f"  {FLOORS[way]:18s} {process.line()}")
        print(f"    in the process {seconds.get('total', 0.0):.2f} s: {steps}")


def inside(process: Process) -> dict[str, float]:
    return json.loads(process.output.splitlines()[-1])["seconds"]


def step_of(process: Process, table: str) -> float:
    """A table's step: a Dagster run's from its step stats, a floor's process's as it timed it."""
    if not process.steps:
        return inside(process).get(table, float("nan"))
    (seconds,) = [s for key, s in process.steps.items() if key.endswith(table)]
    return seconds


def summarize(rounds: list[Round], beside: list[str]) -> None:
    rewrites = [r for r in rounds if r.label.startswith("forced rewrite")] or rounds

    def outside(process: Process) -> float:
        return process.wall - (sum(process.steps.values()) if process.steps else inside(process).get("total", 0.0))

    figures: list[tuple[str, Callable[[Process], float], list[Round], str]] = [
        ("month, wall", lambda p: p.wall, rewrites, "s"),
        ("month, CPU (process tree)", lambda p: p.cpu, rewrites, "s"),
        ("  outside any step", outside, rewrites, "s"),
        ("peak RSS, largest process", lambda p: p.peak_rss / 2**30, rewrites, "GiB"),
    ]
    for table in ("raw_yellow", "raw_green", "raw_weather", "hourly_actuals"):
        figures.append((f"{table} step", lambda p, t=table: step_of(p, t), rewrites, "s"))
    for label in ("first run", "unchanged re-run", "two rewrites in one process"):
        chosen = [r for r in rounds if r.label == label]
        if chosen:
            figures.append((f"{label}, wall", lambda p: p.wall, chosen, "s"))
    print(
        f"\nMedians (min-max) of the {len(rewrites)} forced rewrites, each beside the floors of its round; ratios are"
    )
    print("each round's own. Steps: ours from Dagster's step stats (the first step that needs Spark pays its start),")
    print("the floors' timed inside their process. Outside any step: the process's start, imports, definitions, the")
    print("gaps between steps and its exit.\n")
    head = f"{'':29s}{'Dagster run':>23s}"
    for way in beside:
        head += f"{FLOORS[way]:>23s}{'ratio':>20s}"
    print(head)
    for label, figure, chosen, unit in figures:
        ours = [figure(r.ours) for r in chosen]
        line = f"{label:29s}{spread(ours, unit):>23s}"
        for way in beside:
            theirs = [figure(r.beside[way]) for r in chosen]
            ratios = [o / t for o, t in zip(ours, theirs, strict=True) if t == t and t > 0]
            line += f"{spread(theirs, unit):>23s}{spread(ratios, 'x', 1) if ratios else '':>20s}"
        print(line)
    starts = [r.ours.spark_start for r in rewrites if r.ours.spark_start is not None]
    if starts:
        print(f"{'Spark start (in its step)':29s}{spread(starts):>23s}")
    loads = [load for r in rounds for p in (r.ours, *r.beside.values()) for load in p.load]
    print(f"\nload average (1 min) at the processes' starts and ends: {min(loads):.2f}-{max(loads):.2f}")
    for r in rounds:
        if r.label == "unchanged re-run":
            said = f", {r.ours.spark_start:.1f} s to start" if r.ours.spark_start is not None else ""
            print(f"the unchanged re-run started Spark: {'yes' if r.ours.jvm else 'no'}{said}")


def compare_actuals(month: str, rounds: list[Round], folder: Path) -> None:
    import pyarrow.parquet as pq
    from month_floor import anchor_actuals, published_actuals, same_actuals

    from taxi_core.settings import load_settings

    ours = published_actuals(load_settings(), month)
    last = rounds[-1].beside
    theirs = {}
    if "duckdb" in last:
        theirs["DuckDB's"] = pq.read_table(json.loads(last["duckdb"].output.splitlines()[-1])["actuals"])
    if "anchor" in last:
        theirs["the anchor's"] = anchor_actuals(folder / "anchor", month)
    for name, table in theirs.items():
        difference = same_actuals(ours, table)
        print(f"the published actuals ({ours.num_rows:,} rows) against {name}: "
              f"{difference or 'identical, row for row and cell for cell'}")  # fmt: skip


def run_twice(argv: list[str]) -> int:
    """The run's process for ``twice``: Dagster's ``api execute_run``, then the run's job executed again in this
    process (the second run finds the first's SparkSession: what a session that outlives runs would save)."""
    from dagster import DagsterInstance
    from dagster._cli import main as dagster_main

    from forecast_assets import definitions

    sys.argv = ["dagster", *argv]
    try:
        dagster_main()
    except SystemExit as ended:  # its command line exits when the run ends
        if ended.code:
            return int(ended.code)
    instance = DagsterInstance.get()
    run = instance.get_runs(limit=1)[0]
    job = definitions.defs().resolve_job_def(run.job_name)
    began = time.perf_counter()
    second = job.execute_in_process(instance=instance, run_config=run.run_config, tags=run.tags)
    print(json.dumps({"second_run_seconds": round(time.perf_counter() - began, 2), "success": second.success}))
    return 0 if second.success else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if len(sys.argv) > 1 and sys.argv[1] == "--run-twice":
        sys.exit(run_twice(sys.argv[2:]))
    sys.exit(main())
