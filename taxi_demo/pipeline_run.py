"""Launch the ingestion and training jobs on the Dagster instance as the UI does, and wait for them.

Runs are created from the code location in ``workspace.yaml`` (so they carry its origin and show on
the job pages, the Overview timeline and the asset pages) and started by the instance's run
launcher, in their own process. Like ``dagster job launch``, without the daemon's queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from dagster import AssetKey, AssetMaterialization, DagsterEvent, DagsterEventType, DagsterInstance
from dagster._core.definitions.selector import JobSubsetSelector
from dagster._core.event_api import EventLogRecord
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG
from dagster._core.utils import coerce_valid_log_level
from dagster._core.workspace.context import WorkspaceProcessContext, WorkspaceRequestContext
from dagster._core.workspace.load_target import WorkspaceFileTarget
from dagster_shared.error import SerializableErrorInfo

from forecast_assets.assets.table_metadata import ROW_COUNT, SNAPSHOT_ID
from taxi_core.errors import PipelineError
from taxi_core.interrupts import uninterrupted
from taxi_core.months import MonthWindow
from taxi_core.names import LOCATION_NAME
from taxi_core.progress import SilenceWatch, print_now, reporting_while
from taxi_core.settings import PROJECT_ROOT

WORKSPACE_FILE = PROJECT_ROOT / "workspace.yaml"
REPOSITORY_NAME = "__repository__"
INGESTION_JOB, REFERENCE_JOB, TRAINING_JOB = "monthly_ingestion", "reference_data", "train_forecast_model"
FORECAST_JOB, SCORING_JOB = "daily_forecast", "score_forecasts"
QUIET: dict[str, object] = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
POLL_SECONDS = 0.5
LINES_PER_ASSET = 12  # a run's summary lists each partition of an asset up to this many, else the last and a count
# After a Ctrl-C, how long the demo waits for the run it follows to stop before it says what it left.
STOP_SECONDS = 120.0
SUMMARY_EVENTS = {
    DagsterEventType.ASSET_MATERIALIZATION,
    DagsterEventType.ASSET_CHECK_EVALUATION,
    DagsterEventType.STEP_FAILURE,
    DagsterEventType.RUN_FAILURE,
}


class CodeLocationFailed(PipelineError):
    """The project's code location did not load; the message quotes why."""


class RunLost(PipelineError):
    """A run the demo launched is no longer in the Dagster instance."""


@dataclass
class RunOutcome:
    """What the demo prints about one finished run, read back from the instance's event log."""

    run_id: str
    label: str
    success: bool
    tables: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@contextmanager
def code_location(instance: DagsterInstance) -> Iterator[WorkspaceRequestContext]:
    """The project's code location, loaded from workspace.yaml in a code server process."""
    target = WorkspaceFileTarget(paths=[str(WORKSPACE_FILE)])
    with ExitStack() as stack:
        with reporting_while(print_now, "  loading", ends=False):
            # The code server's own INFO lines ("Starting Dagster code server ...") say nothing to a demo's reader;
            # its warnings and errors still show.
            process_context = stack.enter_context(
                WorkspaceProcessContext(instance, target, code_server_log_level="WARNING")
            )
            workspace = process_context.create_request_context()
        location_error = workspace.get_code_location_error(LOCATION_NAME)
        if location_error is not None:
            msg = (
                f"The code location {LOCATION_NAME} in {WORKSPACE_FILE} failed to load; fix what this says and run "
                f"again (`./run dagster dev` shows the same error):\n{location_error.to_string()}"
            )
            raise CodeLocationFailed(msg)
        yield workspace


def has_job(workspace: WorkspaceRequestContext, job_name: str) -> bool:
    return workspace.get_code_location(LOCATION_NAME).get_repository(REPOSITORY_NAME).has_job(job_name)


def launch(
    instance: DagsterInstance,
    workspace: WorkspaceRequestContext,
    job_name: str,
    tags: dict[str, str] | None = None,
    run_config: Mapping[str, object] | None = None,
    asset_selection: list[AssetKey] | None = None,
) -> str:
    """Create a run of ``job_name`` (of ``asset_selection`` only, as the UI's Materialize) and start it."""
    run_id = _create_run(instance, workspace, job_name, tags, run_config, asset_selection)
    instance.launch_run(run_id, workspace)
    return run_id


def run_to_end(
    instance: DagsterInstance,
    workspace: WorkspaceRequestContext,
    job_name: str,
    tags: dict[str, str] | None = None,
    run_config: Mapping[str, object] | None = None,
) -> RunOutcome:
    """Launch a run of ``job_name`` and wait for its end, saying what it does while it is silent."""
    # Planning a run asks the code server for its execution plan: on a busy machine that alone takes 20 s.
    with reporting_while(print_now, "  launching the run", ends=False):
        run_id = launch(instance, workspace, job_name, tags, run_config)
    return wait_for(instance, run_id)


def submit(
    instance: DagsterInstance,
    workspace: WorkspaceRequestContext,
    job_name: str,
    tags: dict[str, str] | None = None,
    run_config: Mapping[str, object] | None = None,
) -> str:
    """Create a run and put it in the instance's run queue, as the UI's Launch button does; the daemon starts it."""
    run_id = _create_run(instance, workspace, job_name, tags, run_config)
    instance.submit_run(run_id, workspace)
    return run_id


def _create_run(
    instance: DagsterInstance,
    workspace: WorkspaceRequestContext,
    job_name: str,
    tags: dict[str, str] | None,
    run_config: Mapping[str, object] | None,
    asset_selection: list[AssetKey] | None = None,
) -> str:
    location = workspace.get_code_location(LOCATION_NAME)
    repository = location.get_repository(REPOSITORY_NAME)
    selector = JobSubsetSelector(
        location_name=location.name,
        repository_name=repository.name,
        job_name=job_name,
        op_selection=None,
        asset_selection=asset_selection,
    )
    job = location.get_job(selector)
    run_config = {**QUIET, **(run_config or {})}
    plan = location.get_execution_plan(job, run_config, step_keys_to_execute=None, known_state=None, instance=instance)
    run = instance.create_run(
        job_name=job_name,
        run_id=None,
        run_config=run_config,
        resolved_op_selection=None,
        step_keys_to_execute=plan.execution_plan_snapshot.step_keys_to_execute,
        op_selection=None,
        status=None,
        root_run_id=None,
        parent_run_id=None,
        tags={**job.tags, **(tags or {})},
        job_snapshot=job.job_snapshot,
        execution_plan_snapshot=plan.execution_plan_snapshot,
        parent_job_snapshot=job.parent_job_snapshot,
        remote_job_origin=job.get_remote_origin(),
        job_code_origin=job.get_python_origin(),
        asset_selection=frozenset(asset_selection) if asset_selection else None,
        asset_check_selection=None,
        asset_graph=repository.asset_graph,
    )
    return run.run_id


def wait_for(instance: DagsterInstance, run_id: str) -> RunOutcome:
    """Block until the run has finished, then summarise it from the event log."""
    try:
        run = _follow(instance, run_id)
    except KeyboardInterrupt:
        _let_it_stop(instance, run_id)
        raise
    if run is None:
        msg = (
            f"Run {run_id} disappeared from the Dagster instance at {instance.root_directory} while the demo waited "
            "on it (was the run deleted, or the state folder wiped?); run the demo again"
        )
        raise RunLost(msg)
    first, last = run.tags.get(ASSET_PARTITION_RANGE_START_TAG), run.tags.get(ASSET_PARTITION_RANGE_END_TAG)
    label = run.tags.get("dagster/partition") or (f"{first}...{last}" if first and last else run.job_name)
    outcome = RunOutcome(run_id, label, run.is_success)
    for event in _events(instance, run_id, SUMMARY_EVENTS):
        if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
            made = event.step_materialization_data.materialization
            # A run of a range says which of its partitions each line is.
            of = f"  [{made.partition}]" if first and made.partition else ""
            outcome.tables.append(_materialization_line(made) + of)
        elif event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.asset_check_evaluation_data
            if not evaluation.passed:
                severity = "warns" if evaluation.severity.value == "WARN" else "FAILED"
                day = f" on {evaluation.partition}" if evaluation.partition else ""
                outcome.problems.append(
                    f"check {evaluation.check_name} {severity}{day}: {evaluation.description or ''}"
                )
        elif event.event_type == DagsterEventType.STEP_FAILURE:
            error = event.step_failure_data.error
            message = _with_causes(error) if error else event.message or ""
            outcome.problems.append(f"step {event.step_key} FAILED: {message[:4000]}")
        elif not outcome.problems:
            outcome.problems.append(f"run FAILED: {event.message}")
    return outcome


def _follow(instance: DagsterInstance, run_id: str) -> DagsterRun | None:
    """The run once it has finished. It prints its own log; while it says nothing (its process starting, on a busy
    machine 20 s and more), the wait says what the run is doing, from its newest event."""
    run = instance.get_run_by_id(run_id)
    newest: list[EventLogRecord | None] = [None]  # the run's newest event record: what the silence watch names

    def running() -> str:
        entry = newest[0].event_log_entry if newest[0] is not None else None
        step = entry.step_key if entry is not None else None
        return f"  run {run_id[:8]} (" + (f"step {step}" if step else "starting its process") + ")"

    cursor: str | None = None
    watch = SilenceWatch(print_now, running)
    with watch.watching():
        while run is not None and not run.is_finished:
            time.sleep(POLL_SECONDS)
            found = instance.get_records_for_run(run_id, cursor=cursor)
            cursor = found.cursor if found.records else cursor
            # Only what the run's console shows counts as said: its INFO lines, not Dagster's debug events.
            shown = [
                record
                for record in found.records
                if coerce_valid_log_level(record.event_log_entry.level) >= logging.INFO
            ]
            if shown:
                newest[0] = shown[-1]
                watch.heard()
            run = instance.get_run_by_id(run_id)
    return run


def _let_it_stop(instance: DagsterInstance, run_id: str) -> None:
    """After a Ctrl-C: wait for the run to stop, at most ``STOP_SECONDS``, so that what its processes print as they
    stop (the terminal interrupted them too) comes before the demo's summary, not after the prompt. A second Ctrl-C
    does not cut the wait short. The run is not also cancelled through Dagster: that marks it ended at once, while
    its processes are still stopping and printing."""
    print(f"\nCtrl-C: waiting for run {run_id[:8]} to stop, then saying what each table holds", flush=True)
    deadline = time.monotonic() + STOP_SECONDS
    with uninterrupted(), reporting_while(print_now, f"  run {run_id[:8]} stopping", ends=False):
        while time.monotonic() < deadline:
            run = instance.get_run_by_id(run_id)
            if run is None or run.is_finished:
                return
            time.sleep(POLL_SECONDS)
    print(f"  run {run_id[:8]} has not stopped in {STOP_SECONDS:.0f} s: `./run dagster dev` shows it", flush=True)


def _events(
    instance: DagsterInstance, run_id: str, of_type: DagsterEventType | set[DagsterEventType]
) -> list[DagsterEvent]:
    """The run's Dagster events of ``of_type``, in order (the log's entries of a type all carry their event)."""
    return [entry.dagster_event for entry in instance.all_logs(run_id, of_type=of_type) if entry.dagster_event]


def _with_causes(error: SerializableErrorInfo | None) -> str:
    """The error and what caused it: Dagster's wrapper says only which op failed, the cause says why."""
    messages = []
    while error is not None:
        messages.append(error.message.strip())
        error = error.cause
    return "\n  caused by: ".join(messages)


def _materialization_line(materialization: AssetMaterialization) -> str:
    metadata = {key: value.value for key, value in materialization.metadata.items()}
    name = materialization.asset_key.to_user_string()
    publication = metadata.get("publication")
    if publication == "held back":
        return (
            f"{name:40s} NOT published ({metadata.get('failed_checks')} failed); published table unchanged, "
            f"staged month kept: {metadata.get('read_staged_with')}"
        )
    if SNAPSHOT_ID in metadata and ROW_COUNT in metadata:
        line = f"{name:40s} rows={metadata[ROW_COUNT]:>9}  snapshot={metadata[SNAPSHOT_ID]}"
        return line + ("  (unchanged source: nothing written)" if publication == "unchanged" else "")
    if "model_version" in metadata and "champion" in metadata:
        line = f"{name:40s} {metadata['model_version']}: {metadata['champion']}" + _model_score(metadata)
        return line + (f"\n    serving: {metadata['promotion']}" if "promotion" in metadata else "")
    return name


def _model_score(metadata: Mapping[str, object]) -> str:
    """The champion's held-out figures (older versions: its backtest MAE)."""
    if "held_out_mae_vs_naive_median" in metadata:
        return (
            f" (held out: {metadata['held_out_mae_vs_naive_median']:.2f}x seasonal naive in the median week, "
            f"{metadata['held_out_mae_vs_naive_worst']:.2f}x in the worst; 80% intervals held "
            f"{_coverage_80(metadata)})"
        )
    return f" (backtest MAE {metadata['backtest_mae']:.3f})" if "backtest_mae" in metadata else ""


def _coverage_80(metadata: Mapping[str, object]) -> str:
    """A percentage (a share, in versions recorded before the page showed it as one)."""
    if "held_out_coverage_80_pct" in metadata:
        return f"{metadata['held_out_coverage_80_pct']:.1f}%"
    return f"{metadata['held_out_coverage_80']:.1%}"


def months_of(months: list[str]) -> dict[str, str]:
    """The tags of one run over ``months`` (YYYY-MM, consecutive): a single-run backfill of the monthly assets."""
    first, last = (MonthWindow.from_partition_key(month).partition_key for month in (min(months), max(months)))
    if first == last:
        return {"dagster/partition": first}
    return {ASSET_PARTITION_RANGE_START_TAG: first, ASSET_PARTITION_RANGE_END_TAG: last}


def consecutive(months: list[str]) -> list[list[str]]:
    """``months`` (YYYY-MM) as runs of consecutive months, in order: each is one run."""
    runs: list[list[str]] = []
    for month in sorted(months):
        if runs and MonthWindow.from_partition_key(runs[-1][-1]).end == MonthWindow.from_partition_key(month).start:
            runs[-1].append(month)
        else:
            runs.append([month])
    return runs


def months_published(instance: DagsterInstance, run_id: str, months: list[str]) -> list[str]:
    """The ``months`` every table the run planned holds as the run left them (published, or found unchanged): a run
    of a range that failed may still have published its other months."""
    planned = _events(instance, run_id, DagsterEventType.ASSET_MATERIALIZATION_PLANNED)
    tables = {event.asset_key for event in planned if event.asset_key and len(event.asset_key.path) > 1}
    kept: dict[AssetKey, set[str]] = {}
    for event in _events(instance, run_id, DagsterEventType.ASSET_MATERIALIZATION):
        made = event.step_materialization_data.materialization
        publication = made.metadata.get("publication")
        if made.partition and publication is not None and publication.value in ("published", "unchanged"):
            kept.setdefault(made.asset_key, set()).add(str(made.partition)[:7])
    return [month for month in months if tables and all(month in kept.get(key, set()) for key in tables)]


def days_of(month: str) -> dict[str, str]:
    """The tags of a run over every day of ``month``: one run for a range of partitions, as a backfill's."""
    window = MonthWindow.from_partition_key(month)
    last = window.end - timedelta(days=1)
    return {
        ASSET_PARTITION_RANGE_START_TAG: f"{window.start:%Y-%m-%d}",
        ASSET_PARTITION_RANGE_END_TAG: f"{last:%Y-%m-%d}",
    }


def accuracy_lines(instance: DagsterInstance, run_id: str) -> list[str]:
    """Each day the run scored: the city's MAE and bias, the zones' MAE against naive's, their 80% coverage, and
    the alarms that fired."""
    fired: dict[str, list[str]] = {}
    for event in _events(instance, run_id, DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = event.asset_check_evaluation_data
        if not evaluation.passed:
            fired.setdefault(evaluation.partition or "", []).append(evaluation.check_name)
    lines = [f"{'day':10s} {'city MAE':>9s} {'city bias':>9s} {'zones MAE/naive':>15s} {'80% held':>8s}  alarms"]
    materialized = _events(instance, run_id, DagsterEventType.ASSET_MATERIALIZATION)
    for event in sorted(materialized, key=lambda event: event.partition or ""):
        materialization = event.step_materialization_data.materialization
        if materialization.partition is None:
            continue
        figures = {key: value.value for key, value in materialization.metadata.items()}
        lines.append(
            f"{materialization.partition:10s} {figures['city_mae']:9.1f} {figures['city_bias_pct']:8.1f}% "
            f"{figures['zone_ratio_to_naive']:15.2f} {figures['zone_coverage_80_pct']:7.1f}%  "
            + (", ".join(fired.get(materialization.partition, [])) or "none")
        )
    return lines


def print_outcome(outcome: RunOutcome) -> None:
    print(f"Run {outcome.run_id} ({outcome.label}): {'succeeded' if outcome.success else 'FAILED'}")
    for line in _one_line_per_asset(outcome.tables) + outcome.problems:
        print(f"  {line}")


def _one_line_per_asset(lines: list[str]) -> list[str]:
    """A run of many partitions (a backfill of days) says each asset once, with how many partitions it wrote; a run
    of a few (a year of months) says each."""
    by_asset: dict[str, list[str]] = {}
    for line in lines:
        by_asset.setdefault(line.split(" ", 1)[0], []).append(line)
    return [
        line
        for found in by_asset.values()
        for line in (found if len(found) <= LINES_PER_ASSET else [f"{found[-1]}  ({len(found)} partitions)"])
    ]


def newest_plot(state: Path) -> Path | None:
    plots = sorted((state / "plots").glob("forecast_*.png"), key=lambda path: path.stat().st_mtime)
    return plots[-1] if plots else None
