"""Start the training flow from Python (Dagster, tests) through Metaflow's Runner API."""

from __future__ import annotations

from metaflow import Run, Runner

from flows.lineage import DAGSTER_JOB_ENV, DAGSTER_RUN_ID_ENV
from forecast_assets.settings import PROJECT_ROOT

TRAIN_FLOW_FILE = PROJECT_ROOT / "flows" / "train.py"
STDERR_TAIL_LINES = 25
TASK_STATUS_LINES = {"Task is starting.", "Task failed.", "Task finished successfully."}


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
            msg = f"TrainForecastModelFlow run {running.run.pathspec if running.run else '?'} failed:\n"
            raise FlowFailed(msg + _failure_report(running))
        return running.run


def _failure_report(running) -> str:
    """The failed task's exception line first, then the end of its traceback."""
    task_output = [line.split(")] ", 1)[1] for line in running.stdout.splitlines() if ")] " in line and "(pid " in line]
    lines = [line for line in task_output if line.strip() and line.strip() not in TASK_STATUS_LINES]
    if not lines:
        return running.stderr.strip()
    return lines[-1].strip() + "\n\n" + "\n".join(lines[-STDERR_TAIL_LINES:])
