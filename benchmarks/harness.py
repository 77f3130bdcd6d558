"""What every benchmark shares: timing a new process and its whole tree, timing work in this one, interleaving the
ways compared so a drift in the machine's load touches each alike, serving the sample source from 127.0.0.1, running
a Dagster job as a run launcher does, and printing medians with their spread.

A benchmark is a script: ``./run python benchmarks/NAME.py``. It imports this module as ``harness`` (its folder is
first on ``sys.path`` when it runs) and puts the project on the path with :func:`project_on_path`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
CODE_LOCATION = ("forecast_assets.definitions", "defs")
PR_SET_CHILD_SUBREAPER = 36
ORPHAN_PATIENCE = 120.0  # seconds a run's leftover processes (a JVM writing its class archive) may take to exit
SPARK_STARTED = re.compile(r"Starting Spark.*: done in ([\d.]+) s")
# Long-lived counters of HotSpot's performance data (hsperfdata), in ticks of sun.os.hrt.frequency.
JVM_COUNTERS = {
    "class_load_s": "sun.cls.time",
    "gc_young_s": "sun.gc.collector.0.time",
    "gc_old_s": "sun.gc.collector.1.time",
}
SPARK_START = """
from forecast_assets.definitions import resources_for
from taxi_core.settings import load_settings
from taxi_core.tool_env import apply_tool_environment

settings = load_settings()
apply_tool_environment(settings)
resources_for(settings)["spark"].session.stop()
"""
T = TypeVar("T")


def project_on_path(code: Path = ROOT) -> None:
    """The project's packages (``code``: another checkout, for a before) and this folder, importable."""
    for folder in (BENCHMARKS, code):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))


# --- a new process and its whole tree ---


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
    jvm_detail: dict[str, Any] = field(default_factory=dict)  # the driver JVM's CPU by thread and its counters

    def line(self) -> str:
        return (f"{self.wall:7.2f} s wall {self.cpu:7.2f} s CPU  peak {gib(self.peak_rss)} (tree {gib(self.tree_rss)})"
                f"  load {self.load[0]:.2f} -> {self.load[1]:.2f}")  # fmt: skip


def become_subreaper() -> None:
    """This process adopts what its children leave running (a JVM outliving its run), so their CPU is counted."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("cannot become the runs' subreaper: a JVM that outlives its run is not counted", file=sys.stderr)


def gib(size: int) -> str:
    return f"{size / 2**30:.2f} GiB"


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def load_text() -> str:
    """The 1, 5 and 15-minute load averages, as a line of a report says them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


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


class JvmWatcher(threading.Thread):
    """The Spark driver JVM under ``root``: its CPU per thread (from /proc) and its HotSpot counters."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.pid = root, None
        self.threads: dict[int, tuple[str, float]] = {}
        self.perfdata = b""
        self.done = threading.Event()
        self.tick = os.sysconf("SC_CLK_TCK")

    def run(self) -> None:
        while not self.done.wait(0.2):
            if self.pid is None:
                self.pid = self._find_jvm()
                continue
            try:
                self._sample()
            except (FileNotFoundError, ProcessLookupError):
                return

    def _find_jvm(self) -> int | None:
        for pid in descendants(self.root):
            with contextlib.suppress(OSError):
                if b"org.apache.spark.deploy.SparkSubmit" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return pid
        return None

    def _sample(self) -> None:
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                stat = (task / "stat").read_text()
            except OSError:  # the thread ended since the folder was listed
                continue
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2 :].split()
            self.threads[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / self.tick)
        perf = Path(f"/tmp/hsperfdata_{os.environ.get('USER', 'root')}/{self.pid}")
        with contextlib.suppress(FileNotFoundError):
            self.perfdata = perf.read_bytes()

    def figures(self) -> dict[str, Any]:
        by_kind: dict[str, float] = defaultdict(float)
        for name, seconds in self.threads.values():
            by_kind[thread_kind(name)] += seconds
        found: dict[str, Any] = {"threads_cpu_s": {kind: round(s, 2) for kind, s in sorted(by_kind.items())}}
        found["cpu_s"] = round(sum(by_kind.values()), 2)
        counters = perf_counters(self.perfdata) if self.perfdata else {}
        frequency = counters.get("sun.os.hrt.frequency", 0)
        if frequency:
            found["counters_s"] = {
                key: round(counters.get(name, 0) / frequency, 2) for key, name in JVM_COUNTERS.items()
            }
            found["classes_loaded"] = counters.get("java.cls.loadedClasses", 0)
        return found


def thread_kind(name: str) -> str:
    if "CompilerThre" in name:
        return "jit_" + name[:2].lower()
    if name.startswith(("GC Thread", "G1 ", "VM Thread", "VM Periodic")):
        return "gc_vm"
    if name.startswith("Executor task"):
        return "tasks"
    return "main" if name == "java" else "other"


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


def timed_process(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, log: Path, watch_jvm: bool = False
) -> Process:
    """``argv`` in a new process, until it and every process it started have exited (call :func:`become_subreaper`
    first to count a JVM that outlives it). Its output goes to ``log`` (stderr) and ``log.out`` (stdout)."""
    load_start = load_average()
    started = time.perf_counter()
    printed = log.with_suffix(".out")
    # Into files, not pipes: a JVM holding a pipe open would keep the reader waiting after the run's end.
    with (
        log.open("w") as err,
        printed.open("w") as out,
        subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdout=out, stderr=err) as child,
    ):
        sampler = TreeSampler(child.pid)
        watcher = JvmWatcher(child.pid) if watch_jvm else None
        for thread in (sampler, watcher):
            if thread is not None:
                thread.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        for thread in (sampler, watcher):
            if thread is not None:
                thread.done.set()
                thread.join()
    cpu, peak = usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024
    for leftover in reap_orphans():
        cpu, peak = cpu + leftover.ru_utime + leftover.ru_stime, max(peak, leftover.ru_maxrss * 1024)
    outlived = time.perf_counter() - started - wall
    if child.returncode != 0:
        msg = f"{' '.join(argv[:4])} ... exited with {child.returncode}; its log is {log}"
        raise RuntimeError(msg)
    load = (load_start, load_average())
    process = Process(wall, cpu, peak, sampler.peak, sampler.jvm, load, outlived, printed.read_text())
    process.jvm_detail = watcher.figures() if watcher is not None else {}
    return process


def reap_orphans() -> list[Any]:
    """The usage of the processes a run left behind (reparented here), once each has exited."""
    usages, deadline = [], time.monotonic() + ORPHAN_PATIENCE
    while True:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
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


# --- work in this process, and the ways compared ---


def timed(action: Callable[[], T]) -> tuple[float, T]:
    """Seconds ``action`` took, and what it returned."""
    began = time.perf_counter()
    done = action()
    return time.perf_counter() - began, done


def repeated(action: Callable[[], object], repeat: int) -> list[float]:
    """Seconds of each of ``repeat`` calls of ``action``."""
    return [timed(action)[0] for _ in range(repeat)]


def interleaved(ways: Mapping[str, Callable[[int], T]], repeat: int) -> dict[str, list[T]]:
    """Each way called once a round (with the round's number), ``repeat`` rounds, the order turning each round, so
    a drift in the machine's load or caches falls on every way alike."""
    found: dict[str, list[T]] = {name: [] for name in ways}
    names = list(ways)
    for round_ in range(repeat):
        turn = round_ % len(names)
        for name in names[turn:] + names[:turn]:
            found[name].append(ways[name](round_))
    return found


def spread(values: Sequence[float], unit: str = "s", digits: int = 2) -> str:
    """The median, with the min-max when there is more than one value."""
    middle = statistics.median(values)
    if len(values) == 1:
        return f"{middle:.{digits}f} {unit}"
    return f"{middle:.{digits}f} {unit} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def machine() -> str:
    return f"machine: {os.cpu_count()} cores, load average {Path('/proc/loadavg').read_text().strip()}"


# --- the sample source, served ---


@contextlib.contextmanager
def served_sample(root: Path, trips: int, months: Sequence[str]) -> Iterator[dict[str, str]]:
    """The sample source's ``months`` written under ``root`` (kept when written before at that scale) and served
    from 127.0.0.1: yields the settings that point the pipeline there (``TAXI_<SOURCE>_BASE_URL``)."""
    from taxi_demo.sample_source import SampleSource, source_folders
    from tests.loopback import serve_folder

    began = time.perf_counter()
    SampleSource(root, trips_per_month=trips).write_months(list(months))
    print(f"sample months {', '.join(months)}: {trips:,} trips a month, ready in {time.perf_counter() - began:.1f} s")
    with serve_folder(root) as base_url:
        yield {f"TAXI_{name.upper()}_BASE_URL": f"{base_url}/{folder}" for name, folder in source_folders().items()}


# --- a Dagster job, run as a run launcher runs it ---


def dagster_job(job: str, code: Path = ROOT) -> tuple[Any, Any]:
    """The code location's job and its origin, as a run launcher knows them: the module, run with this Python's
    ``-m dagster``."""
    from dagster._core.code_pointer import ModuleCodePointer
    from dagster._core.definitions.reconstruct import ReconstructableRepository

    repository = ReconstructableRepository(
        ModuleCodePointer(*CODE_LOCATION, working_directory=str(code)), entry_point=[sys.executable, "-m", "dagster"]
    )
    return repository.get_definition().get_job(job), repository.get_reconstructable_job(job).get_python_origin()


def rewrite_config(job: Any) -> dict[str, Any]:
    """Run config that makes every table step write its months again (``rewrite_unchanged``)."""

    def fields(node: Any) -> set[str]:
        config = node.definition.config_schema
        kind = config.as_field().config_type if config is not None else None
        return set(getattr(kind, "fields", {}) or {})

    steps = [node.name for node in job.graph.nodes if "rewrite_unchanged" in fields(node)]
    return {"ops": {step: {"config": {"rewrite_unchanged": True}} for step in steps}}


def execute_run_command(instance: Any, job: Any, origin: Any, config: Mapping[str, Any], tags: Mapping[str, str]):
    """A new run of ``job`` in ``instance``, and the command that executes it in a new process (``dagster api
    execute_run``, what Dagster's container launchers run)."""
    from dagster._grpc.types import ExecuteRunArgs

    run = instance.create_run_for_job(job_def=job, run_config=dict(config), tags=dict(tags), job_code_origin=origin)
    command = ExecuteRunArgs(
        job_origin=origin, run_id=run.run_id, instance_ref=instance.get_ref(), set_exit_code_on_failure=True
    ).get_command_args()
    return run.run_id, list(command)


def step_seconds(instance: Any, run_id: str) -> dict[str, float]:
    stats = sorted(instance.get_run_step_stats(run_id), key=lambda s: s.start_time or 0)
    return {s.step_key: (s.end_time or 0) - (s.start_time or 0) for s in stats}


def spark_start(instance: Any, run_id: str) -> float | None:
    """Spark's start as the run's log reports it ("Starting Spark (...): done in 4.2 s"); None when it did not."""
    for entry in instance.all_logs(run_id):
        if said := SPARK_STARTED.search(entry.user_message or ""):
            return float(said.group(1))
    return None


def prepare_class_archive(env: Mapping[str, str], folder: Path, state: Path) -> None:
    """Two untimed Spark starts: the first records the class archive, the second checks it and moves it in place,
    as a state folder has it after its first run."""
    from forecast_assets.definitions import resources_for
    from forecast_assets.lakehouse.class_archive import ClassArchive
    from taxi_core.settings import load_settings

    for n in range(2):
        timed_process([sys.executable, "-c", SPARK_START], env, folder, folder / f"spark-start-{n}.log")
    class_path = resources_for(load_settings(dict(env)))["spark"].spark_config().get("spark.driver.extraClassPath", "")
    archive = ClassArchive.for_spark(state / "tmp" / "spark-classes", class_path)
    ready = archive is not None and archive.archive.exists()
    print(f"Spark's class archive: {'recorded before the timed runs' if ready else 'NOT ready: runs start without'}")
