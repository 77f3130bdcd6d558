"""Read Metaflow runs of the followed flows, through the Metaflow client, into plain records, then translate them.

The cursor keeps a watermark (the creation time of the oldest unfinished run) and the runs finished
since, so each run is translated while it runs and once more when it has finished, never again.

A run ends when Metaflow says so, or when its process is gone (killed, or its machine restarted), which
Metaflow never records: the bridge then ends it as ABORT, its unfinished tasks too, with the reason
(:func:`ended_because`). While a task of the run still works on this machine (its flow's process gone or
not), the run goes on: it may still write. Otherwise the process is the one the start step marked
(:mod:`bridge.liveness`); before the start step finished, a run with no process on this machine and no record
for ``NO_PROCESS_GRACE_SECONDS`` has ended; a run whose process is on another machine, after ``SILENT_SECONDS``
without a record.
With Metaflow's local metadata, a pass that finds no new run folder and no unfinished run reads
nothing more: an idle pass costs one directory listing, whatever the history.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from metaflow import Flow, Run, Task, get_metadata, namespace
from metaflow.exception import MetaflowNotFound
from openlineage.client.event_v2 import RunEvent, RunState

from bridge.liveness import ProcessMark, gone, machine_restarted, processes_with
from bridge.sources.metaflow_folders import folder_digest
from bridge.sources.metaflow_recorder import (
    LINEAGE_CODE,
    LINEAGE_IO,
    LINEAGE_PARENT,
    LINEAGE_RUNTIME,
    LINEAGE_STEP_GRAPH,
)
from bridge.translate.events import JobRef
from bridge.translate.metaflow import FlowRunRecord, TaskRecord, translate_flow_run
from bridge.translate.naming import Naming
from bridge.translate.translator import LineageTranslator, as_translator

log = logging.getLogger(__name__)

KEEP_FINISHED = 200  # finished run ids remembered past the watermark
KEEP_ENDED = 20  # runs the bridge ended, remembered for `status`
# A run whose start step has not finished has no process mark yet: Metaflow starts its first task within
# seconds, so this long with no process of the run on this machine and no record from it, it has ended.
NO_PROCESS_GRACE_SECONDS = 120.0
# A run whose process is on another machine cannot be checked: this long without a record, it is taken as ended.
SILENT_SECONDS = 24 * 3600.0
DagsterRunJob = Callable[[str], JobRef | None]
DagsterStepJob = Callable[[str, str], JobRef | None]


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _artifact(task: Task, name: str, default: Any = None) -> Any:
    try:
        return task[name].data
    except KeyError:  # Metaflow's own answer for an artifact the task does not have
        return default


def task_state(task: Task) -> RunState:
    """COMPLETE, FAIL, or RUNNING: Metaflow marks a failed attempt in its metadata, not in ``finished``."""
    if task.successful:
        return RunState.COMPLETE
    if task.metadata_dict.get("attempt_ok") == "False":
        return RunState.FAIL
    return RunState.RUNNING


def _task_error(task: Task) -> str:
    """The exception's last line (its type and message), from the task's record of it."""
    text = str(task.exception or "") or (task.stderr or "")
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else f"Metaflow task {task.pathspec} failed"


def run_folder(flow_name: str) -> Path | None:
    """The flow's folder in Metaflow's local metadata; ``None`` for a metadata service."""
    provider, _, root = get_metadata().partition("@")
    return Path(root) / ".metaflow" / flow_name if provider == "local" else None


def run_folders(flow_name: str) -> str | None:
    """A digest of the flow's run folders in Metaflow's local metadata; ``None`` for a metadata service."""
    folder = run_folder(flow_name)
    return folder_digest(folder) if folder is not None else None


def flow_runs(flow_name: str) -> list[Run]:
    """Every run of ``flow_name`` in every Metaflow namespace, oldest first; none if the flow never ran."""
    namespace(None)
    try:
        # Flow.__init__ is unannotated. runs() without tags is iterating the flow, typed as its runs
        # (Flow.__iter__ is annotated as yielding tasks).
        flow = Flow(flow_name)  # type: ignore[no-untyped-call]
        return sorted(flow.runs(), key=lambda run: run.created_at)
    except MetaflowNotFound:
        return []


# What a finished task recorded never changes: read from Metaflow once per process (the watcher's passes
# re-read a running flow's tasks every half second), by task pathspec; the oldest forgotten past the limit.
_COMPLETED: dict[str, TaskRecord] = {}
# A run's start task: parent, step graph, code, and the mark of the flow's process.
_STARTS: dict[str, tuple[Any, dict[str, Any], dict[str, Any], ProcessMark | None]] = {}
KEEP_COMPLETED = 20_000


def _remember(cache: dict[str, Any], key: str, value: Any) -> None:
    cache[key] = value
    while len(cache) > KEEP_COMPLETED:
        del cache[next(iter(cache))]


def _task_record(step: str, task: Task) -> TaskRecord:
    """One task as the translator needs it; a completed one from what an earlier pass of this process read."""
    known = _COMPLETED.get(task.pathspec)
    if known is not None:
        return known
    state = task_state(task)
    record = TaskRecord(
        pathspec=task.pathspec,
        step=step,
        created_at=_utc(task.created_at),
        finished_at=_utc(task.finished_at) if task.finished_at else None,
        state=state.value,
        error=_task_error(task) if state == RunState.FAIL else None,
        io=_artifact(task, LINEAGE_IO, {}) if state == RunState.COMPLETE else {},
    )
    if state == RunState.COMPLETE:  # a failed attempt may be retried: only a completed task is final
        _remember(_COMPLETED, task.pathspec, record)
    return record


def _start_artifacts(start: Task) -> tuple[Any, dict[str, Any], dict[str, Any], ProcessMark | None]:
    """What the start task recorded: the Dagster run and step that launched the run, the flow's step graph, its
    code (docstrings and file, with the git commit and the Metaflow version Metaflow recorded with the task), and
    the mark of the process running the flow."""
    known = _STARTS.get(start.pathspec)
    if known is not None:
        return known
    code = dict(_artifact(start, LINEAGE_CODE) or {})
    metadata = start.metadata_dict
    code["engine_version"] = metadata.get("metaflow_version")
    with contextlib.suppress(ValueError, TypeError):  # git-info is JSON Metaflow wrote; absent outside a checkout
        code["git"] = json.loads(metadata.get("git-info") or "{}")
    runtime = ProcessMark.from_json(_artifact(start, LINEAGE_RUNTIME))
    found = (_artifact(start, LINEAGE_PARENT), _artifact(start, LINEAGE_STEP_GRAPH, {}), code, runtime)
    if task_state(start) == RunState.COMPLETE:
        _remember(_STARTS, start.pathspec, found)
    return found


def _state_of(run: Run, tasks: list[TaskRecord]) -> RunState:
    """COMPLETE, FAIL (a task failed an attempt) or RUNNING, from the run's tasks as just read."""
    if run.successful:
        return RunState.COMPLETE
    return RunState.FAIL if any(task.state == RunState.FAIL.value for task in tasks) else RunState.RUNNING


def run_record(
    run: Run, dagster_run: DagsterRunJob, dagster_step: DagsterStepJob | None = None, now: float | None = None
) -> FlowRunRecord:
    """Everything the translator needs of one run, read now, so that nothing reads Metaflow later; a run Metaflow
    leaves running whose process is gone, ended (:func:`ended_because`)."""
    start = run["start"].task if "start" in [step.id for step in run] else None
    parent, step_graph, code, runtime = _start_artifacts(start) if start else (None, {}, {}, None)
    tasks = [_task_record(step.id, task) for step in run for task in step]
    record = FlowRunRecord(
        flow=run.pathspec.split("/")[0],
        pathspec=run.pathspec,
        created_at=_utc(run.created_at),
        finished_at=_utc(run.finished_at) if run.finished_at else None,
        state=_state_of(run, tasks).value,
        step_graph=step_graph,
        tasks=sorted(tasks, key=lambda task: (task.created_at, task.pathspec)),  # the client lists the newest first
        code=code,
        root=dagster_run(parent["run_id"]) if parent else None,
        dagster_run_id=parent["run_id"] if parent else None,
        parent=dagster_step(parent["run_id"], parent["step_key"])
        if parent and parent.get("step_key") and dagster_step
        else None,
    )
    if record.state != RunState.RUNNING.value:
        return record
    now = time.time() if now is None else now
    why = ended_because(record, runtime, run.id, now)
    return ended(record, why, datetime.fromtimestamp(now, UTC)) if why else record


def last_record(record: FlowRunRecord) -> datetime:
    """The latest moment the run recorded anything: its start, a task's start or end."""
    moments = [record.created_at, *(t.created_at for t in record.tasks), *(t.finished_at for t in record.tasks)]
    return max(moment for moment in moments if moment is not None)


def ended_because(record: FlowRunRecord, runtime: ProcessMark | None, run_id: str, now: float) -> str | None:
    """Why a run Metaflow leaves running has ended (``None`` while it may still run)."""
    silent = now - last_record(record).timestamp()
    if processes_with(run_id):  # a task of it still works here (its flow's process may be gone): it may write yet
        return None
    if runtime is not None:
        is_gone = gone(runtime)
        if is_gone and machine_restarted(runtime):
            return f"the machine restarted since its process ({runtime.where()}) started; ended by the lineage bridge"
        if is_gone:
            return f"its process ({runtime.where()}) is gone (killed or crashed); ended by the lineage bridge"
        if is_gone is None and silent > SILENT_SECONDS:
            return (
                f"no record from it for {silent / 3600:.0f} h and its process ({runtime.where()}) is on another "
                "machine; ended by the lineage bridge"
            )
        return None
    if silent <= NO_PROCESS_GRACE_SECONDS:
        return None
    return (
        f"no process of it on this machine and no record from it for {silent:.0f} s (it stopped before its start "
        "step finished); ended by the lineage bridge"
    )


def ended(record: FlowRunRecord, why: str, at: datetime) -> FlowRunRecord:
    """``record`` ended as ABORT ``at`` (when the bridge found it had), and each of its unfinished tasks with it."""
    tasks = [
        replace(task, state=RunState.ABORT.value, finished_at=at, error=why)
        if task.state == RunState.RUNNING.value
        else task
        for task in record.tasks
    ]
    return replace(record, state=RunState.ABORT.value, finished_at=at, tasks=tasks, ended=why)


class MetaflowSource:
    """The runs of the followed flows; ``dagster_run`` and ``dagster_step`` name the Dagster run and step that
    launched one (its root and its parent)."""

    name = "metaflow"

    def __init__(
        self,
        flows: Iterable[str],
        translator: LineageTranslator | Naming,
        dagster_run: DagsterRunJob | None = None,
        dagster_step: DagsterStepJob | None = None,
    ):
        self.flows, self.translator = tuple(flows), as_translator(translator)
        self.dagster_run = dagster_run or (lambda run_id: None)
        self.dagster_step = dagster_step
        self.untranslated: list[int] = []

    def read(self, cursor: dict[str, Any]) -> tuple[list[tuple[str, RunEvent]], dict[str, Any]]:
        """New events since ``cursor`` and the cursor after them; one cursor entry per flow."""
        events: list[tuple[str, RunEvent]] = []
        after: dict[str, Any] = {}
        for flow in self.flows:
            flow_events, after[flow] = self._read_flow(flow, cursor.get(flow, {}))
            events += flow_events
        return events, after

    def _read_flow(self, flow: str, cursor: dict[str, Any]) -> tuple[list[tuple[str, RunEvent]], dict[str, Any]]:
        folder = run_folder(flow)
        folders = folder_digest(folder) if folder is not None else None
        if folders is not None and cursor.get("settled") == folders:
            return [], cursor | {"folder": str(folder)}  # where an idle pass looks for a new run (bridge.run.idle)
        finished = dict(cursor.get("finished", {}))
        ended_runs = dict(cursor.get("ended", {}))
        watermark = cursor.get("watermark", 0.0)
        runs = flow_runs(flow)
        events: list[tuple[str, RunEvent]] = []
        unfinished: list[float] = []  # only runs read here can be: every other one is known to have finished
        for run in runs:
            created = _utc(run.created_at).timestamp()
            if created < watermark or run.id in finished:
                continue
            record = run_record(run, self.dagster_run, self.dagster_step)
            events += translate_flow_run(record, self.translator)
            if record.ended:
                ended_at = record.finished_at or last_record(record)
                ended_runs[record.pathspec] = {"why": record.ended, "at": ended_at.isoformat(timespec="seconds")}
            if record.state != RunState.RUNNING.value:
                finished[run.id] = created
            else:
                unfinished.append(created)
        newest_done = sorted(finished.values())[-KEEP_FINISHED:]
        watermark = min(unfinished) if unfinished else (newest_done[0] if newest_done else watermark)
        finished = {run: created for run, created in finished.items() if created >= watermark}
        after = {"watermark": watermark, "finished": finished}
        if ended_runs:  # for `status`: the runs the bridge ended, the latest few
            after["ended"] = dict(sorted(ended_runs.items(), key=lambda item: item[1]["at"])[-KEEP_ENDED:])
        if folder is not None:
            after["folder"] = str(folder)  # where status counts the runs not seen yet (bridge.run.unseen)
        if not unfinished and folders is not None:
            after["settled"] = folders  # every run is finished and translated: nothing changes until a new one
        return events, after
