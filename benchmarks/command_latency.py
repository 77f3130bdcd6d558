"""How long a user waits for a refusal, ``--help`` and each read command, end to end through `./run`, beside
`./run python -c pass` (the floor: the shell script, uv and Python's start) measured in the same run.

    ./run python benchmarks/command_latency.py [--repeat 5] [--no-reads]

Refusals and help need no state. The read commands (`taxi-lineage show`, a column, `model`, `status`,
`picture`) answer from the state folder's lineage index: run `./run demo` first, or pass ``--no-reads``.
Prints each command's median and range of wall seconds and the machine's load when it started.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from harness import spread

ROOT = Path(__file__).resolve().parent.parent
FLOOR = ["python", "-c", "pass"]
REFUSALS = [
    ["demo", "--scale", "0"],
    ["demo", "--months", "2031-02"],
    ["demo", "--profile", "nope"],
    ["taxi", "--help"],
    ["taxi", "demo", "--nope"],
    ["taxi-lineage", "--help"],
    ["taxi-lineage", "nope"],
    # The flow's own launcher: Metaflow reads its options once the flow's module is imported.
    ["python", "flows/train.py", "run", "--nope"],
    ["python", "flows/train.py", "--help"],
]
READS = [
    ["taxi-lineage", "show", "nyc_taxi.yellow_rides_hourly_actuals"],
    ["taxi-lineage", "show", "nyc_taxi.yellow_rides_hourly_actuals.total_rides"],
    ["taxi-lineage", "model"],
    ["taxi-lineage", "status"],
]


def timed(command: list[str], repeat: int) -> tuple[list[float], set[int]]:
    """Each run's wall seconds, and the exit codes seen (a refusal's is 2, a read's 0)."""
    seconds, codes = [], set()
    for _ in range(repeat):
        began = time.perf_counter()
        done = subprocess.run([str(ROOT / "run"), *command], cwd=ROOT, capture_output=True, check=False)
        seconds.append(time.perf_counter() - began)
        codes.add(done.returncode)
    return seconds, codes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-reads", action="store_true", help="only the refusals and help (no demo state needed)")
    args = parser.parse_args()
    commands = [FLOOR, *REFUSALS]
    if not args.no_reads:
        picture = Path(tempfile.mkdtemp()) / "lineage.svg"
        commands += [*READS, ["taxi-lineage", "picture", "--out", str(picture)]]
    print(
        f"load average at the start: {' '.join(f'{value:.1f}' for value in os.getloadavg())}; {args.repeat} runs each"
    )
    floor = None
    for command in commands:
        seconds, codes = timed(command, args.repeat)
        median = statistics.median(seconds)
        floor = floor or median
        print(f"  {spread(seconds)} median, {median / floor:4.1f}x the floor, "
              f"exit {','.join(map(str, sorted(codes)))}  ./run {' '.join(command)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
