"""A month through the ingestion job as a user pays for it, a Dagster run in a new process, beside DuckDB.

    ./run python benchmarks/month_ingestion.py [--trips 3000000] [--month 2025-01] [--repeat 3]
                                               [--no-class-archive]

Writes a sample month and serves it from 127.0.0.1 (the settings' TAXI_<SOURCE>_BASE_URL point there).
Each month is then a Dagster run in a new process, started as a run launcher starts one: the run is
created in a persistent DagsterInstance (the benchmark's own DAGSTER_HOME, with the project's
``dagster.yaml``) from the code location's reconstructable job (``forecast_assets.definitions:defs``,
``monthly_ingestion``, the month's partition tag), and ``dagster api execute_run <ExecuteRunArgs>`` runs
it in a new Python process. That process imports the code location, builds the definitions, starts
Spark when a step needs it and runs every step (the job's in-process executor). It is the command
Dagster's container launchers run; Dagster 1.13's DefaultRunLauncher asks the code server, which does
the same work in a process it spawns (``start_run_in_subprocess``).

Runs: the month's first run (an empty lakehouse), an unchanged re-run and ``--repeat`` forced rewrites
(``rewrite_unchanged`` for every table step). After each, on the same staged files and each in its own
new process (imports included): DuckDB with parallel writes (``month_floor``), and DuckDB + pyiceberg,
Iceberg to Iceberg (``month_anchor``: ``add_files`` on an audit branch, the same audits, ``main``
fast-forwarded; it leaves an unchanged month alone as the job does). For every process: wall time, CPU
(user + system of its whole tree: this process is its children's subreaper, so Spark's JVM is counted
even when it outlives the run's process), peak RSS (the largest process, and the tree's, sampled), the
load average at its start and end; for the Dagster runs each step's duration from the instance and
whether a JVM ran. Last, the medians with min-max of each figure and of each run's ratio to the DuckDB
runs beside it, and the published actuals compared with DuckDB's and the anchor's, cell for cell.

Spark's class archive is recorded before the timed runs (two untimed starts), as a state folder has it
after its first run; ``--no-class-archive`` starts every JVM without one. Left out: write-audit-publish
against a straight write to ``main``, which needs a Spark session in this process (a minute or more a
round; its last figures are in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
CODE_LOCATION = ("forecast_assets.definitions", "defs")
JOB = "monthly_ingestion"
PR_SET_CHILD_SUBREAPER = 36
SPARK_STARTED = re.compile(r"Starting Spark.*: done in ([\d.]+) s")
ORPHAN_PATIENCE = 120.0  # seconds a run's leftover processes (a JVM writing its class archive) may take to exit
SPARK_START = """
from forecast_assets.definitions import resources_for
from taxi_core.settings import load_settings
from taxi_core.tool_env import apply_tool_environment

settings = load_settings()
apply_tool_environment(settings)
resources_for(settings)["spark"].session.stop()
"""


@dataclass
class Process:
    """One timed process and its whole tree."""

    wall: float
    cpu: float
    peak_rss: int  # bytes: the largest single process of the tree
    tree_rss: int  # bytes: the most the tree held at once, sampled every 0.1 s
    jvm: bool
    load: tuple[float, float]  # 1-minute load average at the start and at the end
    outlived: float  # seconds its last descendant outlived it
    output: str
    steps: dict[str, float] = field(default_factory=dict)
    spark_start: float | None = None  # as the run's log says Spark's start took

    def line(self) -> str:
        return (f"{self.wall:7.2f} s wall {self.cpu:7.2f} s CPU  peak {gib(self.peak_rss)} (tree {gib(self.tree_rss)})"
                f"  load {self.load[0]:.2f} -> {self.load[1]:.2f}")  # fmt: skip


def gib(size: int) -> str:
    return f"{size / 2**30:.2f} GiB"


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def descendants(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        parent = queue.pop()
        try:
            listed = list(Path(f"/proc/{parent}/task").glob("*/children"))
        except OSError:  # it exited while the tree was walked
            continue
        for children in listed:
            try:
                kids = [int(kid) for kid in children.read_text().split()]
            except OSError:
                continue
            found += kids
            queue += kids
    return found


class TreeSampler(threading.Thread):
    """The tree's resident memory and whether a JVM is in it, every 0.1 s while the process runs."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.jvm, self.done = pid, 0, False, threading.Event()

    def run(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while not self.done.wait(0.1):
            total = 0
            for pid in [self.pid, *descendants(self.pid)]:
                try:
                    total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
                    self.jvm = self.jvm or Path(f"/proc/{pid}/comm").read_text().strip() == "java"
                except (OSError, IndexError, ValueError):
                    continue
            self.peak = max(self.peak, total)


def timed_process(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> Process:
    """``argv`` in a new process, until it and every process it started have exited."""
    load_start = load_average()
    started = time.perf_counter()
    printed = log.with_suffix(".out")
    # Into files, not pipes: a JVM holding a pipe open would keep the reader waiting after the run's end.
    with (
        log.open("w") as err,
        printed.open("w") as out,
        subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=err) as child,
    ):
        sampler = TreeSampler(child.pid)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        sampler.done.set()
        sampler.join()
    cpu, peak = usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024
    for leftover in reap_orphans():
        cpu, peak = cpu + leftover.ru_utime + leftover.ru_stime, max(peak, leftover.ru_maxrss * 1024)
    outlived = time.perf_counter() - started - wall
    if child.returncode != 0:
        msg = f"{' '.join(argv[:4])} ... exited with {child.returncode}; its log is {log}"
        raise RuntimeError(msg)
    load = (load_start, load_average())
    return Process(wall, cpu, peak, sampler.peak, sampler.jvm, load, outlived, printed.read_text())


def reap_orphans() -> list[Any]:
    """The usage of the processes a run left behind (reparented here), once each has exited."""
    usages, deadline = [], time.monotonic() + ORPHAN_PATIENCE
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return usages
        if pid:
            usages.append(usage)
        elif time.monotonic() > deadline:
            left = descendants(os.getpid())
            print(f"  (processes {left} still running {ORPHAN_PATIENCE:.0f} s after their run: stopped)")
            for orphan in left:
                os.kill(orphan, 9)
            deadline = float("inf")
        else:
            time.sleep(0.05)


@dataclass
class Round:
    label: str
    ours: Process
    floor: Process
    anchor: Process


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trips", type=int, default=3_000_000, help="trips per month in the sample source")
    parser.add_argument("--month", default="2025-01", help="month to ingest, YYYY-MM")
    parser.add_argument("--repeat", type=int, default=3, help="forced rewrites, each with a DuckDB and an anchor run")
    parser.add_argument("--no-class-archive", action="store_true", help="start every Spark JVM without a class archive")
    args = parser.parse_args()
    # The run's JVM outlives its Python process by a moment: reaped here, its CPU is counted.
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("cannot become the runs' subreaper: a JVM that outlives its run is not counted", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="taxi-bench-") as folder:  # a month's tables are a few GB
        return measure(args, Path(folder))


def measure(args: argparse.Namespace, folder: Path) -> int:
    state, home = folder / "state", folder / "dagster"
    home.mkdir(parents=True)
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("TAXI_", "DAGSTER_"))}
    child_env |= {
        "TAXI_STATE_DIR": str(state),
        "DAGSTER_HOME": str(home),
        "TAXI_SPARK_CLASS_ARCHIVE": "false" if args.no_class_archive else "true",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    os.environ.update(child_env)
    os.chdir(folder)  # no checkout's .env is read: the runs' settings are the environment's alone

    from taxi_core.settings import load_settings
    from taxi_demo.sample_source import SampleSource, source_folders
    from tests.loopback import serve_folder

    started = time.perf_counter()
    source = SampleSource(folder / "source", trips_per_month=args.trips)
    source.write_month(args.month)
    print(
        f"sample month {args.month}: {args.trips:,} trips requested, written in {time.perf_counter() - started:.1f} s"
    )
    print(f"machine: {os.cpu_count()} cores, load average {Path('/proc/loadavg').read_text().strip()}")
    with serve_folder(source.root) as base_url:
        child_env |= {
            f"TAXI_{name.upper()}_BASE_URL": f"{base_url}/{folder_}" for name, folder_ in source_folders().items()
        }
        os.environ.update(child_env)
        if not args.no_class_archive:
            prepare_class_archive(child_env, folder, state)
        rounds = run_rounds(args, folder, child_env, home)
    settings = load_settings()
    summarize(rounds, args.repeat)
    compare_actuals(settings, args.month, rounds, folder)
    return 0


def prepare_class_archive(env: dict[str, str], folder: Path, state: Path) -> None:
    """Two untimed Spark starts: the first records the class archive, the second checks it and moves it in place."""
    from forecast_assets.definitions import resources_for
    from forecast_assets.lakehouse.class_archive import ClassArchive
    from taxi_core.settings import load_settings

    for n in range(2):
        timed_process([sys.executable, "-c", SPARK_START], env, folder, folder / f"spark-start-{n}.log")
    # The archive of the class path the runs' driver has (a local one: Iceberg's runtime on it).
    class_path = resources_for(load_settings(env))["spark"].spark_config().get("spark.driver.extraClassPath", "")
    archive = ClassArchive.for_spark(state / "tmp" / "spark-classes", class_path)
    ready = archive is not None and archive.archive.exists()
    print(f"Spark's class archive: {'recorded before the timed runs' if ready else 'NOT ready: runs start without'}")


def run_rounds(args: argparse.Namespace, folder: Path, env: dict[str, str], home: Path) -> list[Round]:
    from dagster import DagsterInstance, DagsterRunStatus
    from dagster._core.code_pointer import ModuleCodePointer
    from dagster._core.definitions.reconstruct import ReconstructableRepository
    from dagster._grpc.types import ExecuteRunArgs
    from month_floor import eligible_zones, staged_files

    from taxi_core.settings import load_settings

    # A run launcher's origin: the code location as a module, run with this Python's ``-m dagster``.
    repository = ReconstructableRepository(
        ModuleCodePointer(*CODE_LOCATION, working_directory=str(ROOT)), entry_point=[sys.executable, "-m", "dagster"]
    )
    job = repository.get_definition().get_job(JOB)
    origin = repository.get_reconstructable_job(JOB).get_python_origin()
    table_steps = [node.name for node in job.graph.nodes if "rewrite_unchanged" in config_fields(node)]
    rewrite = {"ops": {step: {"config": {"rewrite_unchanged": True}} for step in table_steps}}
    zones = ",".join(map(str, eligible_zones()))
    partition = f"{args.month}-01"
    plan = [("first run", {}, False), ("unchanged re-run", {}, False)]
    plan += [(f"forced rewrite {n + 1}/{args.repeat}", rewrite, True) for n in range(args.repeat)]
    rounds = []
    with DagsterInstance.from_config(str(home)) as instance:
        for n, (label, config, forced) in enumerate(plan):
            run = instance.create_run_for_job(
                job_def=job, run_config=config, tags={"dagster/partition": partition}, job_code_origin=origin
            )
            command = ExecuteRunArgs(
                job_origin=origin, run_id=run.run_id, instance_ref=instance.get_ref(), set_exit_code_on_failure=True
            ).get_command_args()
            ours = timed_process(list(command), env, folder, folder / f"run-{n}.log")
            finished = instance.get_run_by_id(run.run_id)
            if finished is None or finished.status != DagsterRunStatus.SUCCESS:
                msg = f"the {label} did not succeed; its log is {folder / f'run-{n}.log'}"
                raise RuntimeError(msg)
            ours.steps = step_seconds(instance, run.run_id)
            ours.spark_start = spark_start(instance, run.run_id)
            files = staged_files(load_settings(), args.month)
            inputs = ["--month", args.month, "--trips", str(files.trips), "--green", str(files.green), "--zones", zones]
            inputs += ["--weather", *map(str, files.weather)]
            floor = timed_process(
                [sys.executable, str(BENCHMARKS / "month_floor.py"), *inputs, "--out", str(folder / f"floor-{n}")],
                env, folder, folder / f"floor-{n}.log",
            )  # fmt: skip
            anchor = timed_process(
                [sys.executable, str(BENCHMARKS / "month_anchor.py"), *inputs, "--warehouse", str(folder / "anchor")]
                + (["--rewrite"] if forced else []),
                env, folder, folder / f"anchor-{n}.log",
            )  # fmt: skip
            rounds.append(Round(label, ours, floor, anchor))
            report(rounds[-1])
    return rounds


def config_fields(node: Any) -> set[str]:
    config = node.definition.config_schema
    kind = config.as_field().config_type if config is not None else None
    return set(getattr(kind, "fields", {}) or {})


def step_seconds(instance: Any, run_id: str) -> dict[str, float]:
    stats = sorted(instance.get_run_step_stats(run_id), key=lambda s: s.start_time or 0)
    return {s.step_key: (s.end_time or 0) - (s.start_time or 0) for s in stats}


def spark_start(instance: Any, run_id: str) -> float | None:
    """Spark's start as the run's log reports it ("Starting Spark (...): done in 4.2 s"); None when it did not."""
    for entry in instance.all_logs(run_id):
        if said := SPARK_STARTED.search(entry.user_message or ""):
            return float(said.group(1))
    return None


def report(done: Round) -> None:
    ours = done.ours
    jvm = "a JVM ran (Spark started" if ours.jvm else "no JVM (Spark not started"
    jvm += f", in {ours.spark_start:.1f} s)" if ours.spark_start is not None else ")"
    outlived = f"; its last process exited {ours.outlived:.1f} s after it" if ours.outlived > 0.05 else ""
    print(f"\n{done.label}: {jvm}{outlived}")
    print(f"  Dagster run        {ours.line()}")
    for step, seconds in ours.steps.items():
        print(f"    {step:44s}{seconds:7.2f} s")
    for name, process in (("DuckDB parallel", done.floor), ("DuckDB + pyiceberg", done.anchor)):
        seconds = inside(process)
        steps = ", ".join(f"{step} {value:.2f}" for step, value in seconds.items() if step != "total")
        print(f"  {name:18s} {process.line()}")
        print(f"    in the process {seconds['total']:.2f} s: {steps}")


def inside(process: Process) -> dict[str, float]:
    return json.loads(process.output.splitlines()[-1])["seconds"]


def spread(values: list[float], unit: str = "s", digits: int = 2) -> str:
    middle = statistics.median(values)
    if len(values) == 1:
        return f"{middle:.{digits}f} {unit}"
    return f"{middle:.{digits}f} {unit} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def step_of(process: Process, table: str) -> float:
    """A table's step: a Dagster run's from its step stats, a DuckDB process's as it timed it."""
    if not process.steps:
        return inside(process)[table]
    (seconds,) = [s for key, s in process.steps.items() if key.endswith(table)]
    return seconds


def summarize(rounds: list[Round], repeat: int) -> None:
    rewrites = [r for r in rounds if r.label.startswith("forced rewrite")]
    first, unchanged = rounds[0], rounds[1]

    def each(figure: Callable[[Process], float], rows: list[Round] = rewrites) -> list[tuple[float, float, float]]:
        return [(figure(r.ours), figure(r.floor), figure(r.anchor)) for r in rows]

    def outside(process: Process) -> float:
        return process.wall - (sum(process.steps.values()) if process.steps else inside(process)["total"])

    figures: list[tuple[str, list[tuple[float, float, float]], str]] = [
        ("month, wall", each(lambda p: p.wall), "s"),
        ("month, CPU (process tree)", each(lambda p: p.cpu), "s"),
        ("  outside any step", each(outside), "s"),
        ("peak RSS, largest process", each(lambda p: p.peak_rss / 2**30), "GiB"),
    ]
    for table in ("raw_yellow", "raw_green", "raw_weather", "hourly_actuals"):
        figures.append((f"{table} step", each(lambda p, t=table: step_of(p, t)), "s"))
    figures.append(("first run, wall", each(lambda p: p.wall, [first]), "s"))
    figures.append(("unchanged re-run, wall", each(lambda p: p.wall, [unchanged]), "s"))
    print(f"\nMedians (min-max) of the {repeat} forced rewrites, each beside the DuckDB runs of its round; ratios are")
    print("each round's own. DuckDB parallel writes the month every time; the anchor's unchanged re-run checks the")
    print("fingerprints and writes nothing, as the job's does. Steps: ours from Dagster's step stats (the first step")
    print("that needs Spark pays its start), DuckDB's timed inside their process. Outside any step: the process's")
    print("start, imports, definitions, the gaps between steps and its exit.\n")
    print(f"{'':27s}{'Dagster run':>23s}{'DuckDB parallel':>23s}{'ratio':>23s}{'DuckDB+pyiceberg':>23s}{'ratio':>23s}")
    for label, values, unit in figures:
        ours, floor, anchor = ([v[i] for v in values] for i in range(3))
        to_floor = [o / f for o, f in zip(ours, floor, strict=True)]
        to_anchor = [o / a for o, a in zip(ours, anchor, strict=True)]
        print(f"{label:27s}{spread(ours, unit):>23s}{spread(floor, unit):>23s}{spread(to_floor, 'x', 1):>23s}"
              f"{spread(anchor, unit):>23s}{spread(to_anchor, 'x', 1):>23s}")  # fmt: skip
    starts = [r.ours.spark_start for r in rewrites if r.ours.spark_start is not None]
    if starts:
        print(f"{'Spark start (in its step)':27s}{spread(starts):>23s}")
    loads = [load for r in rounds for p in (r.ours, r.floor, r.anchor) for load in p.load]
    print(f"\nload average (1 min) at the processes' starts and ends: {min(loads):.2f}-{max(loads):.2f}")
    said = f", {unchanged.ours.spark_start:.1f} s to start" if unchanged.ours.spark_start is not None else ""
    print(f"the unchanged re-run started Spark: {'yes' if unchanged.ours.jvm else 'no'}{said}")


def compare_actuals(settings: Any, month: str, rounds: list[Round], folder: Path) -> None:
    import pyarrow.parquet as pq
    from month_anchor import published_actuals as anchor_actuals
    from month_floor import published_actuals, same_actuals

    ours = published_actuals(settings, month)
    floor = pq.read_table(json.loads(rounds[-1].floor.output.splitlines()[-1])["actuals"])  # the last round's
    for name, theirs in (("DuckDB's", floor), ("the anchor's", anchor_actuals(folder / "anchor", month))):
        difference = same_actuals(ours, theirs)
        print(f"the published actuals ({ours.num_rows:,} rows) against {name}: "
              f"{difference or 'identical, row for row and cell for cell'}")  # fmt: skip


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(BENCHMARKS))
    sys.exit(main())
