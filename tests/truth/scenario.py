"""Run the real pipeline through a hard history and record what really happened, without the bridge.

    ./run python -m tests.truth.scenario OUT.json [STATE_DIR]

In a state folder of its own: the zone lookup, three sample months ingested latest first, an unchanged re-run, a
forced rewrite, a month whose audit fails, a republished file with changed rows, a launch of one
partition's actuals through the instance as the UI launches it, shell training without and then
with weather, and one lineage pass. The truth is read from the staged files (their sha256 after each
run), the Iceberg snapshots (their summaries and main's ancestry, through pyiceberg) and the Metaflow
runs' artifacts; the lineage's claims from the OpenLineage events, the lineage command's answers and
DataHub Lite. Both go to OUT.json for :mod:`tests.truth.oracle` to compare.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MONTHS = ["2025-01", "2024-11", "2024-12"]  # the latest first
TRIPS = 20_000
ACTUALS = "nyc_taxi.yellow_rides_hourly_actuals"
FORECAST = "nyc_taxi.yellow_rides_hourly_forecast"


def sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def in_state_folder(state: Path, months: list[str], trips: int):
    """This process on ``state``, a state folder of its own with the sample source of ``months`` and a Dagster
    instance there; its settings, with the tools' environment in place."""
    os.environ["TAXI_STATE_DIR"] = str(state)
    os.environ["DAGSTER_HOME"] = str(state / "dagster")
    (state / "dagster").mkdir(parents=True, exist_ok=True)
    from taxi_core.settings import PROJECT_ROOT, load_settings

    link = state / "dagster" / "dagster.yaml"
    if not link.exists():
        link.symlink_to(PROJECT_ROOT / "dagster.yaml")
    from taxi_demo.cli import init

    os.environ.update(init(load_settings(), sorted(months), trips))
    settings = load_settings()
    from taxi_core.tool_env import apply_tool_environment

    apply_tool_environment(settings)
    return settings


def main(out: Path, state: Path) -> None:
    settings = in_state_folder(state, MONTHS, TRIPS)
    # Dagster and Metaflow read their configuration when imported: only now.
    from tests.truth.history import History

    history = History(settings, state)
    history.play()
    out.write_text(json.dumps(history.record(), indent=1, sort_keys=True))


def capture(command, *args) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        command(*args)
    return printed.getvalue()


def run_flow(*arguments: str) -> None:
    from taxi_core.settings import PROJECT_ROOT

    command = [sys.executable, str(PROJECT_ROOT / "flows" / "train.py"), "run", *arguments]
    subprocess.run(command, check=True, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    target = Path(sys.argv[1])
    main(target, Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp(prefix="taxi-truth-")))
