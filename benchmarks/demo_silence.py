"""How long the demo goes without a word, on a quiet machine and on a busy one: the longest silences a user sees.

    ./run python benchmarks/demo_silence.py [BUSY_PROCESSES]

Runs `./run demo` twice in new state folders of its own (the sample source, Spark, Dagster, Metaflow and a lineage
pass, all from scratch): first as the machine is, then with BUSY_PROCESSES (default: twice the cores) processes
spinning on the CPU beside it. Each line of its output is timed as it arrives; prints each run's wall time, the
machine's load, and its five longest silences with the line that ended each, beside the README's promise of a
line at least every 10 s. The uv install of each new state folder is left out: it happens once per folder.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMISE_SECONDS = 10.0
DEMO_STARTS = "==> Sample TLC and NOAA files"  # the first line after set-up: silences are counted from it


@dataclass
class Timed:
    wall: float = 0.0
    load: str = ""
    gaps: list[tuple[float, str]] = field(default_factory=list)  # seconds without a line, and the line after it


def _spin() -> None:
    while True:
        pass


def timed_demo(state: Path) -> Timed:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("TAXI_", "DAGSTER_", "METAFLOW_"))}
    env["TAXI_STATE_DIR"] = str(state)
    process = subprocess.Popen(
        [str(ROOT / "run"), "demo"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    timed, started, last = Timed(), None, 0.0
    for line in process.stdout:
        now = time.monotonic()
        if started is None:
            if DEMO_STARTS in line:
                started = last = now
            continue
        timed.gaps.append((now - last, " - ".join(line.strip().split(" - ")[-2:])[:110]))  # Dagster's step and message
        last = now
    if process.wait() != 0:
        raise SystemExit(f"the demo failed in {state} (exit {process.returncode})")
    timed.wall = time.monotonic() - (started or time.monotonic())
    timed.load = " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"
    timed.gaps.sort(reverse=True)
    return timed


def report(label: str, timed: Timed) -> None:
    longest = timed.gaps[0][0] if timed.gaps else 0.0
    verdict = "within" if longest <= PROMISE_SECONDS else "BEYOND"
    print(f"\n{label}: demo {timed.wall:.0f} s after set-up, load {timed.load}; longest silence {longest:.1f} s "
          f"({verdict} the {PROMISE_SECONDS:.0f} s promise)")  # fmt: skip
    for seconds, line in timed.gaps[:5]:
        print(f"  {seconds:5.1f} s, then: {line}")


def main() -> int:
    busy = int(sys.argv[1]) if len(sys.argv) > 1 else 2 * (os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="demo-silence-") as scratch:
        quiet = timed_demo(Path(scratch) / "quiet")
        report("As the machine is (baseline)", quiet)
        spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(busy)]
        for spinner in spinners:
            spinner.start()
        try:
            loaded = timed_demo(Path(scratch) / "busy")
        finally:
            for spinner in spinners:
                spinner.terminate()
        report(f"With {busy} processes spinning beside it", loaded)
    return 0


if __name__ == "__main__":
    sys.exit(main())
