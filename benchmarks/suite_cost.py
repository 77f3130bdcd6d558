"""Where the test suite's CPU goes: the README's test command in a fresh clone, as CI runs it, under the kernel's
process accounting, each process's CPU charged to a part of the suite.

    ./run python benchmarks/suite_cost.py [--keep FOLDER]

Needs root and `accton` (Debian's ``acct``; installed here when missing). Process accounting records every process
that ends, its CPU, its parent and its start, daemons included (PostgreSQL, Spark's master, workers and executors,
Dagster's run workers), which a ``time`` of the command misses once they leave their parent. The parts:

- **each whole-pipeline run** of the background lane (``tests/end_to_end.py``): the commands it started (their pids
  are in the session's lane report) and every process under them;
- **in line**: the pytest process itself and every other process under it (trainings the fixtures run, Spark's JVM,
  subprocesses of tests);
- **left their parent**: processes that outlived their parent (daemons, run workers), charged by when they started
  to the lane runs going on then, or to the in-line tests when none was.

Prints each part's core-seconds and share, the wall time, and the cores busy on average; the machine's load first.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Linux's ``struct acct_v3``: flag, version, tty, exit code, uid, gid, pid, ppid, start (s), elapsed (ticks), then
# user and system time and six more counters as comp_t, and the command's first 15 characters.
RECORD = struct.Struct("<BBHIIIIIIf8H16s")
TICKS = 100  # AHZ
SESSION = re.compile(r"whole-pipeline runs \(tests/end_to_end.py\), session pid (\d+)")
LANE_RUN = re.compile(r"^(\S+) \(track \d+\): (\d+) s, done (\d+) s after the lane started, .*pid ([\d,]+)$", re.M)


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    started: int  # seconds since the epoch
    seconds: float  # elapsed
    cpu: float  # user + system seconds
    command: str


def _comp(value: int) -> float:
    """A ``comp_t``: 13 bits of mantissa, 3 of base-8 exponent, in ticks."""
    return ((value & 0x1FFF) << (3 * (value >> 13))) / TICKS


def read_accounting(path: Path) -> list[Process]:
    data = path.read_bytes()
    found = []
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        fields = RECORD.unpack_from(data, offset)
        command = fields[18].split(b"\0")[0].decode(errors="replace")
        cpu = _comp(fields[10]) + _comp(fields[11])
        found.append(Process(fields[6], fields[7], fields[8], fields[9] / TICKS, cpu, command))
    return found


def charged(processes: list[Process], session: int, lane_pids: dict[str, list[int]]) -> Counter[str]:
    """Each part's CPU seconds (see the module's docstring)."""
    children: dict[int, list[Process]] = defaultdict(list)
    for process in processes:
        children[process.ppid].append(process)

    charged_already: set[int] = set()

    def under(process: Process) -> list[Process]:
        """``process`` and its descendants, each charged once. A pid is reused over a long session: a child is one
        that started after its parent did."""
        if id(process) in charged_already:
            return []
        charged_already.add(id(process))
        kids = [kid for kid in children.get(process.pid, []) if kid.started >= process.started]
        return [process, *(found for kid in kids for found in under(kid))]

    root = max((p for p in processes if p.pid == session), key=lambda p: p.seconds)
    parts: Counter[str] = Counter({"in line: pytest itself": root.cpu})
    charged_already.add(id(root))
    windows: dict[str, tuple[int, int]] = {}
    lane = {pid: name for name, pids in lane_pids.items() for pid in pids}
    for child in children[root.pid]:
        if child.started < root.started:
            continue
        name = lane.get(child.pid)
        part = name or "in line: under pytest"
        parts[part] += sum(p.cpu for p in under(child))
        if name:
            low, high = windows.get(name, (child.started, child.started))
            windows[name] = (min(low, child.started), max(high, int(child.started + child.seconds)))
    for orphan in (p for p in processes if p.ppid in (0, 1) and root.started <= p.started):
        during = sorted(name for name, (low, high) in windows.items() if low <= orphan.started <= high)
        parts[f"left their parent, during {' + '.join(during) or 'in-line tests only'}"] += sum(
            p.cpu for p in under(orphan)
        )
    return parts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", type=Path, help="keep the clone, the suite's output and the accounting file here")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("suite_cost.py: process accounting needs root")
    if shutil.which("accton") is None:
        subprocess.run(["apt-get", "install", "-y", "-qq", "acct"], check=True, stdout=subprocess.DEVNULL)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="suite-cost-"))
    folder.mkdir(parents=True, exist_ok=True)
    clone, accounting, output = folder / "clone", folder / "pacct", folder / "suite.log"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    accounting.write_bytes(b"")
    print(f"load {os.getloadavg()[0]:.2f}; the suite in {clone}, its output in {output}", flush=True)
    subprocess.run(["accton", str(accounting)], check=True, stdout=subprocess.DEVNULL)
    began = time.monotonic()
    try:
        with output.open("w") as log:
            environment = {**os.environ, "CI": "true"}
            done = subprocess.run(["bash", ".ci/run"], cwd=clone, env=environment, stdout=log, stderr=log, check=False)
    finally:
        subprocess.run(["accton", "off"], check=False, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - began
    printed = output.read_text(errors="replace")
    session = SESSION.search(printed)
    if session is None:
        sys.exit(f"suite_cost.py: the suite printed no lane report (exit {done.returncode}); see {output}")
    lane_pids = {match[1]: [int(pid) for pid in match[4].split(",")] for match in LANE_RUN.finditer(printed)}
    processes = read_accounting(accounting)
    parts = charged(processes, int(session[1]), lane_pids)
    total = sum(p.cpu for p in processes)
    print(f"suite exit {done.returncode}, {wall:.0f} s wall, {total:.0f} core-seconds, {total / wall:.2f} cores busy")
    print(f"{'part':<60} {'core-s':>8} {'share':>6}")
    for part, seconds in parts.most_common():
        print(f"{part:<60} {seconds:8.0f} {seconds / total:6.1%}")
    print(f"{'not under the session (install, the shell around it)':<60} {total - sum(parts.values()):8.0f}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
