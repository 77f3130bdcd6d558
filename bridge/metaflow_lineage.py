"""Metaflow runs as OpenLineage: a job for the flow run and one per step, each task an OpenLineage run.

Inputs and outputs come from what each step recorded (``lineage_io``, see ``flows/lineage.py``);
the step graph (``lineage_step_graph``) links consecutive steps through the ``jobDependencies``
run facet even when they share no dataset; a run launched by Dagster has the Dagster run as root.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from openlineage.client.event_v2 import RunState

import flows  # noqa: F401  (points Metaflow at the state folder before Metaflow is imported)
from bridge.events import DatasetRef, EventSpec, JobRef, event_key, run_event
from bridge.naming import dataset_for_metaflow_use, job_name, job_namespace, run_id

log = logging.getLogger(__name__)

INTEGRATION = "METAFLOW"
SOURCE = "metaflow"
FLOW_NAME = "TrainForecastModelFlow"
KEEP_FINISHED = 200  # finished run ids remembered past the watermark


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _artifact(task, name: str, default=None):
    try:
        return task[name].data
    except KeyError:
        return default


class MetaflowSource:
    def __init__(self, flow_name: str = FLOW_NAME, dagster_run: Callable[[str, str], JobRef | None] | None = None):
        self.flow_name = flow_name
        self.dagster_run = dagster_run or (lambda run_id, job: None)

    def read(self, cursor: dict) -> tuple[list[tuple[str, object]], dict]:
        from metaflow import Flow, namespace
        from metaflow.exception import MetaflowNotFound

        namespace(None)
        finished = dict(cursor.get("finished", {}))
        watermark = cursor.get("watermark", 0.0)
        try:
            runs = list(Flow(self.flow_name))
        except MetaflowNotFound:
            return [], cursor
        events = []
        for run in sorted(runs, key=lambda r: r.created_at):
            created = _utc(run.created_at).timestamp()
            if created < watermark or run.id in finished:
                continue
            events += self.translate_run(run)
            if run_state(run) != RunState.RUNNING:
                finished[run.id] = created
        unfinished = [_utc(r.created_at).timestamp() for r in runs if run_state(r) == RunState.RUNNING]
        newest_done = sorted(finished.values())[-KEEP_FINISHED:]
        watermark = min(unfinished) if unfinished else (newest_done[0] if newest_done else watermark)
        finished = {run: created for run, created in finished.items() if created >= watermark}
        return events, {"watermark": watermark, "finished": finished}

    def translate_run(self, run) -> list[tuple[str, object]]:
        start_task = run["start"].task if "start" in [s.id for s in run] else None
        graph = _artifact(start_task, "lineage_step_graph", {}) if start_task else {}
        parent = _artifact(start_task, "lineage_parent") if start_task else None
        flow_job = JobRef(job_namespace(), job_name(self.flow_name), run_id(_utc(run.created_at), SOURCE, run.pathspec))
        root = self.dagster_run(parent["run_id"], parent["job_name"]) if parent else None
        tasks = {step.id: list(step) for step in run}
        step_runs = {step: [self._task_job(task) for task in step_tasks] for step, step_tasks in tasks.items()}
        flow_inputs, flow_outputs = {}, {}
        events = []
        for step, step_tasks in tasks.items():
            upstream = [job for before, nexts in graph.items() if step in nexts for job in step_runs.get(before, [])]
            for task, job in zip(step_tasks, step_runs[step], strict=True):
                state = task_state(task)
                io = _artifact(task, "lineage_io", {}) if state == RunState.COMPLETE else {}
                inputs = [_ref(use) for use in io.get("reads", [])]
                outputs = [_ref(use) for use in io.get("writes", [])]
                flow_inputs |= {ref.name.key: ref for ref in inputs}
                flow_outputs |= {ref.name.key: ref for ref in outputs}
                common = dict(job=job, integration=INTEGRATION, job_type="STEP", inputs=inputs, outputs=outputs,
                              parent=flow_job, root=root or flow_job, upstream_jobs=upstream)  # fmt: skip
                events.append(EventSpec(state=RunState.START, time=_utc(task.created_at), **common))
                if state != RunState.RUNNING:
                    error = _task_error(task) if state == RunState.FAIL else None
                    finished_at = _utc(task.finished_at or task.created_at)
                    events.append(EventSpec(state=state, time=finished_at, error=error, **common))
        inputs = [ref for key, ref in flow_inputs.items() if key not in flow_outputs]
        flow_common = dict(job=flow_job, integration=INTEGRATION, job_type="FLOW", inputs=inputs,
                           outputs=list(flow_outputs.values()), parent=root, root=root)  # fmt: skip
        events.insert(0, EventSpec(state=RunState.START, time=_utc(run.created_at), **flow_common))
        state = run_state(run)
        if state != RunState.RUNNING:
            ended = [task.finished_at for step_tasks in tasks.values() for task in step_tasks if task.finished_at]
            ended_at = _utc(run.finished_at or max(ended, default=run.created_at))
            error = None if state == RunState.COMPLETE else f"Metaflow run {run.pathspec} failed"
            events.append(EventSpec(state=state, time=ended_at, error=error, **flow_common))
        return [(event_key(spec), run_event(spec)) for spec in events]

    def _task_job(self, task) -> JobRef:
        step = task.pathspec.split("/")[2]
        return JobRef(
            job_namespace(), job_name(self.flow_name, step), run_id(_utc(task.created_at), SOURCE, task.pathspec)
        )


def task_state(task) -> RunState:
    """COMPLETE, FAIL, or RUNNING: Metaflow marks a failed attempt in its metadata, not in ``finished``."""
    if task.successful:
        return RunState.COMPLETE
    if task.metadata_dict.get("attempt_ok") == "False":
        return RunState.FAIL
    return RunState.RUNNING


def run_state(run) -> RunState:
    if run.successful:
        return RunState.COMPLETE
    if any(task_state(task) == RunState.FAIL for step in run for task in step):
        return RunState.FAIL
    return RunState.RUNNING


def _ref(use: dict) -> DatasetRef:
    return DatasetRef(dataset_for_metaflow_use(use["name"], use["kind"]), use["version"], rows=use.get("rows"))


def _task_error(task) -> str:
    """The exception's last line (its type and message), from the task's record of it."""
    text = str(task.exception or "") or (task.stderr or "")
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else f"Metaflow task {task.pathspec} failed"
