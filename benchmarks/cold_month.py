"""A month as a Dagster run in a new process, the run launcher's way, timed from outside: where a cold run's time goes.

    ./run python benchmarks/cold_month.py --state /tmp/cold [--trips 3000000] [--plan first,rewrite]
        [--java-options=-XX:TieredStopAtLevel=1] [--conf spark.sql.shuffle.partitions=4] [--event-log]

Each run is ``dagster job execute -m forecast_assets.definitions -j monthly_ingestion`` in a child process
(imports, definitions, Spark's start, every step), with the sample month served from 127.0.0.1. ``first``
runs it on an empty lakehouse and staging folder; ``rewrite``, again with ``rewrite_unchanged`` on every table
step; ``twice``, two forced rewrites in one new process (what a Spark session that outlives runs would save).
The state folder is kept between invocations: the sample month is written once, and the class archive is
recorded once (a user's is on by default), by a run that is not reported.

For each run: wall time, the CPU of the child and every process under it (the JVM included), each step's
duration from the Dagster instance, and the driver JVM's CPU by thread (JIT compilers, GC, task threads,
the rest) with its class-loading and GC times from its performance counters (the compilers' own counter stays
at zero without ``-XX:+CITime``: their threads' CPU says it). ``--event-log``
also counts each step's Spark jobs, stages and tasks (Spark's event log: left off when timing).
``--java-options`` and ``--conf`` are added to the driver's Spark settings, for trying flags; ``--code`` runs
another checkout's code (a ``git worktree`` of the commit before a change), in a state folder of its own.
With ``TAXI_SPARK_CLASS_ARCHIVE=false`` no archive is recorded or used.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOB = "monthly_ingestion"
TABLE_STEPS = ("nyc_taxi__raw_yellow", "nyc_taxi__raw_green", "nyc_taxi__raw_weather",
               "nyc_taxi__yellow_rides_hourly_actuals")  # fmt: skip
PR_SET_CHILD_SUBREAPER = 36
EXTRA_ENV = "COLD_MONTH_EXTRA_SPARK_CONF"  # JSON: read by this script's child, which patches spark_conf
# Long-lived counters of HotSpot's performance data (hsperfdata), in ticks of sun.os.hrt.frequency.
COUNTERS = {
    "class_load_s": "sun.cls.time",
    "gc_young_s": "sun.gc.collector.0.time",
    "gc_old_s": "sun.gc.collector.1.time",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", type=Path, required=True, help="the state folder, kept between invocations")
    parser.add_argument("--trips", type=int, default=3_000_000)
    parser.add_argument("--month", default="2025-01")
    parser.add_argument("--plan", default="first,rewrite", help="runs in order: first, rewrite, twice")
    parser.add_argument("--java-options", default="", help="added to spark.driver.extraJavaOptions")
    parser.add_argument("--conf", action="append", default=[], help="key=value added to the Spark settings")
    parser.add_argument("--event-log", action="store_true", help="count Spark jobs per step (Spark's event log)")
    parser.add_argument("--label", default="", help="printed with each result, and in --results")
    parser.add_argument("--results", type=Path, help="a JSON-lines file each run's figures are appended to")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose code the runs use (a before)")
    args = parser.parse_args()
    state = args.state.resolve()
    state.mkdir(parents=True, exist_ok=True)
    env = environment(state, args)
    prepare(state, args, env)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the JVM outlives its Python parent: its CPU is still ours
    for kind in args.plan.split(","):
        figures = measure(kind, state, args, env)
        report(figures)
        if args.results:
            with args.results.open("a") as out:
                out.write(json.dumps(figures) + "\n")
    return 0


def environment(state: Path, args: argparse.Namespace) -> dict[str, str]:
    sys.path.insert(0, str(ROOT))
    from taxi_demo.sample_source import source_folders

    env = dict(os.environ)
    env |= {"TAXI_STATE_DIR": str(state), "DAGSTER_HOME": str(state / "dagster"), "PYTHONPATH": str(args.code)}
    env |= {f"TAXI_{name.upper()}_BASE_URL": "" for name in source_folders()}  # set once served
    extra = dict(item.split("=", 1) for item in args.conf)
    if args.java_options:
        extra["+java"] = args.java_options
    if args.event_log:
        (state / "eventlog").mkdir(exist_ok=True)
        extra |= {"spark.eventLog.enabled": "true", "spark.eventLog.dir": (state / "eventlog").as_uri()}
    env[EXTRA_ENV] = json.dumps(extra)
    return env


def prepare(state: Path, args: argparse.Namespace, env: dict[str, str]) -> None:
    """The sample month, the Dagster instance's folder, and the class archive (recorded by an unreported run)."""
    from taxi_demo.sample_source import SampleSource

    home = state / "dagster"
    home.mkdir(exist_ok=True)
    if not (home / "dagster.yaml").exists():
        shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    started = time.perf_counter()
    SampleSource(state / "sample_source", trips_per_month=args.trips).write_months([args.month])
    print(f"sample month {args.month} ({args.trips:,} trips) ready in {time.perf_counter() - started:.1f} s")
    archives = state / "tmp" / "spark-classes"
    if env.get("TAXI_SPARK_CLASS_ARCHIVE", "true") != "false" and not any(archives.glob("*.jsa")):
        print("recording the class archive with a first run (not reported)")
        measure("first", state, args, env)
        measure("rewrite", state, args, env)  # moves the finished recording into place, checked
        if not any(archives.glob("*.jsa")):
            print("warning: no class archive was recorded", file=sys.stderr)


def reset_lakehouse(state: Path) -> None:
    for path in ("warehouse", "catalog.sqlite", "staging", "eventlog"):
        target = state / path
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)


def measure(kind: str, state: Path, args: argparse.Namespace, env: dict[str, str]) -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT))
    from loopback import serve_folder

    from taxi_demo.sample_source import source_folders

    if kind == "first":
        reset_lakehouse(state)
    shutil.rmtree(state / "eventlog", ignore_errors=True)
    if args.event_log:
        (state / "eventlog").mkdir()
    partition = f"{args.month}-01"
    config = state / "rewrite.yaml"
    config.write_text(json.dumps({"ops": {step: {"config": {"rewrite_unchanged": True}} for step in TABLE_STEPS}}))
    command = [sys.executable, __file__, "--child", "job", "execute", "-m", "forecast_assets.definitions", "-j", JOB,
               "--tags", json.dumps({"dagster/partition": partition})]  # fmt: skip
    if kind in ("rewrite", "twice"):
        command += ["-c", str(config)]
    if kind == "twice":
        command[2] = "--child-twice"
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    with serve_folder(state / "sample_source") as base_url:
        child_env = env | {f"TAXI_{name.upper()}_BASE_URL": f"{base_url}/{folder}"
                           for name, folder in source_folders().items()}  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        child = subprocess.Popen(command, env=child_env, cwd=state, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        watcher = JvmWatcher(child.pid)
        watcher.start()
        output = child.stdout.read().decode(errors="replace") if child.stdout else ""
        code = child.wait()
        wall = time.perf_counter() - started
        watcher.stop()
        reap_orphans()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        (state / "failed_run.log").write_text(output)
        raise SystemExit(f"the {kind} run failed ({code}); its output is in {state / 'failed_run.log'}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    figures = {
        "label": args.label, "kind": kind, "trips": args.trips, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "load_before": " ".join(load_before), "load_after": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
        "max_rss_mib": round(after.ru_maxrss / 1024), "java_options": args.java_options, "conf": args.conf,
    }  # fmt: skip
    figures |= {"steps": step_seconds(state, kind)} | watcher.figures()
    figures["actuals_log"] = step_log(state, "nyc_taxi__yellow_rides_hourly_actuals")
    spark_start = state / "tmp" / "spark_start_seconds"
    figures["spark_start_s"] = float(spark_start.read_text()) if spark_start.exists() else None
    if args.event_log:
        figures["spark_jobs"] = spark_jobs(state / "eventlog", step_windows(state, kind))
    return figures


def reap_orphans() -> None:
    """Wait for the JVM (an orphan adopted by this process), so its CPU counts in RUSAGE_CHILDREN."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.05)


def step_seconds(state: Path, kind: str) -> dict[str, float]:
    """Each step's duration in the last run (both runs for ``twice``), from the Dagster instance."""
    return {step: round(end - start, 2) for step, (start, end) in step_windows(state, kind).items()}


def step_windows(state: Path, kind: str) -> dict[str, tuple[float, float]]:
    """Each step's start and end (epoch seconds) in the last run (both runs for ``twice``)."""
    os.environ["DAGSTER_HOME"] = str(state / "dagster")
    from dagster import DagsterInstance

    instance = DagsterInstance.get()
    runs = instance.get_runs(limit=2 if kind == "twice" else 1)
    steps: dict[str, tuple[float, float]] = {}
    for n, run in enumerate(reversed(runs)):
        suffix = f" (run {n + 1})" if kind == "twice" else ""
        for stat in sorted(instance.get_run_step_stats(run.run_id), key=lambda s: s.start_time or 0):
            steps[stat.step_key + suffix] = (stat.start_time or 0, stat.end_time or 0)
    return steps


def step_log(state: Path, step: str) -> list[str]:
    """The step's log lines in the last run, each with the seconds since the step started: its phases."""
    from dagster import DagsterInstance

    instance = DagsterInstance.get()
    run = instance.get_runs(limit=1)[0]
    entries = [entry for entry in instance.all_logs(run.run_id) if entry.step_key == step]
    if not entries:
        return []
    began = entries[0].timestamp
    return [f"{entry.timestamp - began:6.2f} s  {entry.user_message[:110]}" for entry in entries if entry.user_message]


class JvmWatcher(threading.Thread):
    """Samples the driver JVM under ``root``: CPU per thread (from /proc) and its performance counters."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.pid = root, None
        self.threads: dict[int, tuple[str, float]] = {}
        self.perfdata = b""
        self._halt = threading.Event()
        self.tick = os.sysconf("SC_CLK_TCK")

    def run(self) -> None:
        while not self._halt.wait(0.2):
            if self.pid is None:
                self.pid = self._find_jvm()
                continue
            try:
                self._sample()
            except (FileNotFoundError, ProcessLookupError):
                return

    def stop(self) -> None:
        self._halt.set()
        self.join()

    def _find_jvm(self) -> int | None:
        import psutil

        try:
            for process in psutil.Process(self.root).children(recursive=True):
                if "org.apache.spark.deploy.SparkSubmit" in " ".join(process.cmdline()):
                    return process.pid
        except psutil.Error:
            pass
        return None

    def _sample(self) -> None:
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                stat = (task / "stat").read_text()
            except OSError:  # the thread ended (ESRCH) since the folder was listed
                continue
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2 :].split()
            self.threads[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / self.tick)
        perf = Path(f"/tmp/hsperfdata_{os.environ.get('USER', 'root')}/{self.pid}")
        with contextlib.suppress(FileNotFoundError):
            self.perfdata = perf.read_bytes()

    def figures(self) -> dict:
        by_kind: dict[str, float] = defaultdict(float)
        for name, seconds in self.threads.values():
            by_kind[thread_kind(name)] += seconds
        found = {"jvm_threads_cpu_s": {kind: round(seconds, 2) for kind, seconds in sorted(by_kind.items())}}
        found["jvm_cpu_s"] = round(sum(by_kind.values()), 2)
        others: dict[str, float] = defaultdict(float)
        for name, seconds in self.threads.values():
            if thread_kind(name) == "other":
                others[name.rstrip("0123456789")] += seconds
        found["jvm_other_threads_s"] = dict(
            sorted(((k, round(v, 2)) for k, v in others.items()), key=lambda kv: -kv[1])[:8]
        )
        counters = perf_counters(self.perfdata) if self.perfdata else {}
        frequency = counters.get("sun.os.hrt.frequency", 0)
        if frequency:
            found["jvm_counters_s"] = {
                key: round(counters.get(name, 0) / frequency, 2) for key, name in COUNTERS.items()
            }
            found["jvm_classes_loaded"] = counters.get("java.cls.loadedClasses", 0)
        return found


def thread_kind(name: str) -> str:
    if "CompilerThre" in name:
        return "jit_" + name[:2].lower()
    if name.startswith(("GC Thread", "G1 ", "VM Thread", "VM Periodic")):
        return "gc_vm"
    if name.startswith("Executor task"):
        return "tasks"
    if name == "java":
        return "main"
    return "other"


def perf_counters(data: bytes) -> dict[str, int]:
    """The long counters of a HotSpot performance data file (its documented prologue and entry layout)."""
    order = "<" if data[4] == 1 else ">"
    entry_offset, entries = struct.unpack_from(order + "ii", data, 24)
    found, offset = {}, entry_offset
    for _ in range(entries):
        length, name_offset, vector, kind, _, _, _, data_offset = struct.unpack_from(order + "iiicbbbi", data, offset)
        name = data[offset + name_offset : data.index(b"\0", offset + name_offset)].decode()
        if kind == b"J" and vector == 0:
            found[name] = struct.unpack_from(order + "q", data, offset + data_offset)[0]
        offset += length
    return found


def spark_jobs(folder: Path, windows: dict[str, tuple[float, float]]) -> dict[str, dict[str, int]]:
    """Jobs, stages and tasks in Spark's event log, by the step running when each job was submitted."""
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


def report(figures: dict) -> None:
    head = f"{figures['label'] + ': ' if figures['label'] else ''}{figures['kind']}"
    load = f"load {figures['load_before']} -> {figures['load_after']}"
    print(f"\n{head}: {figures['wall_s']} s wall, {figures['cpu_s']} s CPU (children), "
          f"spark start {figures['spark_start_s']} s, {load}")  # fmt: skip
    for step, seconds in figures["steps"].items():
        print(f"  {step:55s} {seconds:7.2f} s")
    print(f"  JVM CPU {figures.get('jvm_cpu_s')} s by thread: {figures.get('jvm_threads_cpu_s')}")
    print(f"  JVM other threads: {figures.get('jvm_other_threads_s')}")
    print(f"  JVM counters: {figures.get('jvm_counters_s')}, classes {figures.get('jvm_classes_loaded')}")
    print("  the actuals step's log:")
    for line in figures.get("actuals_log", []):
        print(f"    {line}")
    for step, found in figures.get("spark_jobs", {}).items():
        print(f"  Spark in {step}: {found}")


def child(argv: list[str], twice: bool) -> int:
    """Dagster's command line, with the benchmark's extra Spark settings patched into ``spark_conf``."""
    extra = json.loads(os.environ.get(EXTRA_ENV) or "{}")
    if extra:
        from forecast_assets.lakehouse import spark_session

        original = spark_session.spark_conf

        def patched(*a, **k):  # type: ignore[no-untyped-def]
            conf = original(*a, **k)
            java = extra.get("+java", "")
            conf["spark.driver.extraJavaOptions"] = f"{conf.get('spark.driver.extraJavaOptions', '')} {java}".strip()
            return conf | {key: value for key, value in extra.items() if not key.startswith("+")}

        spark_session.spark_conf = patched
        import forecast_assets.resources as resources

        resources.spark_conf = patched  # type: ignore[attr-defined]
    from dagster._cli import main as dagster_main

    if not twice:
        sys.argv = ["dagster", *argv]
        return dagster_main() or 0
    # Two runs in one process: the second finds the first's SparkSession (getOrCreate keeps one per process).
    return twice_in_process(argv)


def twice_in_process(argv: list[str]) -> int:
    from dagster import DagsterInstance

    from forecast_assets import definitions

    tags = json.loads(argv[argv.index("--tags") + 1])
    config = json.loads(Path(argv[argv.index("-c") + 1]).read_text())
    job = definitions.defs().resolve_job_def(JOB)
    instance = DagsterInstance.get()
    for n in range(2):
        started = time.perf_counter()
        result = job.execute_in_process(instance=instance, partition_key=tags["dagster/partition"], run_config=config)
        print(f"in-process rewrite {n + 1}: {time.perf_counter() - started:.1f} s, success {result.success}")
        if not result.success:
            return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("--child", "--child-twice"):
        sys.exit(child(sys.argv[2:], sys.argv[1] == "--child-twice"))
    sys.exit(main())
