"""Start the training flow from Python (Dagster, tests) through Metaflow's Runner API."""

from __future__ import annotations

from flows import metaflow_env  # noqa: F401  (configures Metaflow before it is imported)

# isort: split
from metaflow import Run, Runner

from flows.lineage import DAGSTER_JOB_ENV, DAGSTER_RUN_ID_ENV
from forecast_assets.settings import PROJECT_ROOT

TRAIN_FLOW_FILE = PROJECT_ROOT / "flows" / "train.py"
STDERR_TAIL_LINES = 25


class FlowFailed(RuntimeError):
    """The flow ran and failed; the message carries the end of its error output."""


def run_training(
    parameters: dict | None = None,
    dagster_run_id: str | None = None,
    dagster_job: str | None = None,
    env: dict[str, str] | None = None,
    show_output: bool = True,
) -> Run:
    """Run ``TrainForecastModelFlow`` to completion and return its finished ``Run``."""
    run_env = dict(env or {})
    if dagster_run_id:
        run_env |= {DAGSTER_RUN_ID_ENV: dagster_run_id, DAGSTER_JOB_ENV: dagster_job or ""}
    runner = Runner(str(TRAIN_FLOW_FILE), show_output=show_output, env=run_env, cwd=str(PROJECT_ROOT))
    with runner.run(**(parameters or {})) as running:
        if running.status != "successful":
            tail = "\n".join(running.stderr.strip().splitlines()[-STDERR_TAIL_LINES:])
            msg = f"TrainForecastModelFlow run {running.run.pathspec if running.run else '?'} failed:\n{tail}"
            raise FlowFailed(msg)
        return running.run
