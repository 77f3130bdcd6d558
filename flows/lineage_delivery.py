"""The training flow's exit hook: a run made from the shell ends with its lineage delivered, or says why not.

A run Dagster launched is left to Dagster (its lineage sensor, or the demo's own pass). Any other run,
finished or failed, runs one pass of the project's lineage command (``taxi-lineage``, beside this
Python), so `taxi-lineage model` and `show` name the new version at once. The pass goes through the
command, not an import: the lineage configuration belongs to the code location, above the flow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bridge.sources.metaflow_recorder import DAGSTER_RUN_ID_ENV
from taxi_core.progress import reporting_while
from taxi_core.settings import SettingsError, load_settings

LINEAGE_COMMAND = "taxi-lineage"
HOOK = f"{__name__}.deliver_lineage"  # how @exit_hook names it: imported by Metaflow after the run
# The pass stops sending after TAXI_LINEAGE_PASS_SECONDS; this leaves room for its imports and a slow disk.
EXTRA_SECONDS = 60


def deliver_lineage(run: Any = None) -> None:
    """Metaflow calls this once the run has ended (``run``: the Metaflow client's Run); it prints what it did."""
    pathspec = run.pathspec if run is not None else "this run"
    if os.environ.get(DAGSTER_RUN_ID_ENV):
        say(f"Lineage of {pathspec}: Dagster launched it, so Dagster's lineage sensor (or the demo) delivers it.")
        return
    try:
        settings = load_settings()
    except SettingsError as err:
        say(f"Lineage of {pathspec} not delivered: {err}")
        return
    if not settings.lineage_after_training:
        say(f"Lineage of {pathspec}: not delivered now (TAXI_LINEAGE_AFTER_TRAINING=false); `./run taxi-lineage`")
        return
    command = [str(Path(sys.executable).with_name(LINEAGE_COMMAND))]
    # Metaflow holds a hook's standard output until it returns: the pass speaks on standard error, as it goes.
    say(f"Lineage of {pathspec}, one pass of `./run taxi-lineage`:")
    try:
        with reporting_while(say, "  lineage pass", ends=False):
            done = subprocess.run(
                command, stdout=sys.stderr, stderr=sys.stderr, timeout=settings.lineage_pass_seconds + EXTRA_SECONDS
            )
    except (OSError, subprocess.TimeoutExpired) as err:
        say(f"  not delivered yet ({err}): `./run taxi-lineage` delivers it.")
        return
    if done.returncode != 0:
        say(f"  The pass ended with exit {done.returncode}: `./run taxi-lineage status` says what waits and why.")


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
