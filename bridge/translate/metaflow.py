"""Metaflow runs as OpenLineage: a job for the flow run and one per step, each task a run. Pure: records in, events out.

Inputs and outputs are what each step recorded (:mod:`bridge.sources.metaflow_recorder`); the step graph
links consecutive steps through the ``jobDependencies`` run facet even when they share no dataset;
a run launched by Dagster has the Dagster step that launched it as its parent and the Dagster run as
its root; a model the run wrote travels with the
flow's COMPLETE event as a ``modelTraining`` run facet (its metrics and hyperparameters).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from openlineage.client.event_v2 import RunEvent, RunState

from bridge.translate.column_lineage import lineage_from_json
from bridge.translate.events import (
    DatasetRef,
    Engine,
    EventSpec,
    InputField,
    JobRef,
    ModelTraining,
    SourceCode,
    ToolRun,
    event_key,
)
from bridge.translate.naming import Naming
from bridge.translate.partitions import PartitionVersion
from bridge.translate.run_ids import run_id
from bridge.translate.translator import LineageTranslator, as_translator, run_job_named, step_job_named

INTEGRATION = "METAFLOW"
SOURCE = "metaflow"


@dataclass(frozen=True)
class TaskRecord:
    pathspec: str
    step: str
    created_at: datetime
    finished_at: datetime | None
    state: str  # a RunState value: COMPLETE, FAIL, RUNNING, or ABORT (it ended without Metaflow saying so)
    error: str | None = None
    io: dict[str, Any] = field(default_factory=dict)  # the task's ``lineage_io``: {"reads": [...], "writes": [...]}


@dataclass(frozen=True)
class FlowRunRecord:
    """One Metaflow run as read from the client: its tasks, what each read and wrote, its Dagster root."""

    flow: str
    pathspec: str
    created_at: datetime
    finished_at: datetime | None
    state: str
    step_graph: dict[str, list[str]]
    tasks: list[TaskRecord]
    # The flow's code as its start task recorded it: docs ("" the flow's, then each step's), path, git, engine_version.
    code: dict[str, Any] = field(default_factory=dict)
    root: JobRef | None = None
    dagster_run_id: str | None = None  # the Dagster run that launched it, if one did
    parent: JobRef | None = None  # the Dagster step that launched it (its parent; the Dagster run is the root)
    # Why the run ended though Metaflow never said so (its process is gone): its state and its unfinished tasks'
    # are ABORT, at ``finished_at``.
    ended: str | None = None

    def to_json(self) -> str:
        data = asdict(self)
        for ref in ("root", "parent"):
            if getattr(self, ref):
                data[ref]["run_id"] = str(getattr(self, ref).run_id)
        return json.dumps(data, default=datetime.isoformat, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> FlowRunRecord:
        data = json.loads(text)

        def moment(value: str | None) -> datetime | None:
            return datetime.fromisoformat(value) if value else None

        tasks = [
            TaskRecord(**{**t, "created_at": moment(t["created_at"]), "finished_at": moment(t["finished_at"])})
            for t in data.pop("tasks")
        ]
        root, parent = data.pop("root"), data.pop("parent", None)
        return cls(
            **{**data, "created_at": moment(data["created_at"]), "finished_at": moment(data["finished_at"])},
            tasks=tasks,
            root=JobRef(root["namespace"], root["name"], UUID(root["run_id"])) if root else None,
            parent=JobRef(parent["namespace"], parent["name"], UUID(parent["run_id"])) if parent else None,
        )


def _source_code(code: dict[str, Any], naming: Naming) -> SourceCode | None:
    """The flow's file at the commit Metaflow recorded (git-info), if it ran from a git checkout."""
    git = code.get("git") or {}
    if not git.get("commit_sha") or not code.get("path"):
        return None
    repo = naming.portable_text(git.get("repo_url")) or None
    return SourceCode(git["commit_sha"], code["path"], repo, git.get("branch_name"))


def _nominal(tasks: list[TaskRecord]) -> tuple[datetime | None, datetime | None]:
    """The data interval a step recorded for the run (its training window), if one did."""
    for task in tasks:
        window = task.io.get("nominal")
        if window:
            return datetime.fromisoformat(window[0]), datetime.fromisoformat(window[1])
    return None, None


def translate_flow_run(record: FlowRunRecord, translator: LineageTranslator | Naming) -> list[tuple[str, RunEvent]]:
    """OpenLineage events, with their outbox keys, for one Metaflow run, named by ``translator`` (a naming policy
    alone: the default translator over it)."""
    translator = as_translator(translator)
    naming = translator.naming
    namespace = naming.job_namespace
    docs = record.code.get("docs") or {}
    engine = Engine("Metaflow", record.code["engine_version"]) if record.code.get("engine_version") else None
    source_code = _source_code(record.code, naming)
    nominal_start, nominal_end = _nominal(record.tasks)
    flow_name = run_job_named(translator.metaflow_flow_job(record.flow), f"Metaflow flow {record.flow}")
    flow_job = JobRef(namespace, flow_name, run_id(record.created_at, SOURCE, record.pathspec))
    root = record.root
    steps: dict[str, list[TaskRecord]] = {}
    for task in record.tasks:
        steps.setdefault(task.step, []).append(task)
    step_names = {
        step: step_job_named(translator.metaflow_step_job(record.flow, step), flow_name, f"{record.flow}.{step}")
        for step in steps
    }
    step_runs = {
        step: [JobRef(namespace, step_names[step], run_id(t.created_at, SOURCE, t.pathspec)) for t in tasks]
        for step, tasks in steps.items()
    }
    flow_inputs: dict[str, DatasetRef] = {}
    flow_outputs: dict[str, DatasetRef] = {}
    models: list[ModelTraining] = []
    specs = []
    for step, tasks in steps.items():
        upstream = [job for before, nexts in record.step_graph.items() if step in nexts for job in step_runs[before]]
        for task, job in zip(tasks, step_runs[step], strict=True):
            io = task.io if task.state == RunState.COMPLETE.value else {}
            inputs = [_ref(use, translator) for use in io.get("reads", [])]
            outputs = [_ref(use, translator) for use in io.get("writes", [])]
            models += [_model(use) for use in io.get("writes", []) if use.get("kind") == "model"]
            flow_inputs |= {ref.name.key: ref for ref in inputs}
            flow_outputs |= {ref.name.key: ref for ref in outputs}
            start = EventSpec(state=RunState.START, time=task.created_at, job=job, integration=INTEGRATION,
                              job_type="STEP", inputs=inputs, outputs=outputs, parent=flow_job,
                              root=root or flow_job, upstream_jobs=upstream,
                              tool_run=ToolRun(SOURCE, record.pathspec, task=task.pathspec),
                              engine=engine, documentation=docs.get(step), source_code=source_code,
                              nominal_start=nominal_start, nominal_end=nominal_end)  # fmt: skip
            specs.append(start)
            if task.state != RunState.RUNNING.value:
                finished_at = task.finished_at or task.created_at
                error = naming.portable_text(task.error)
                specs.append(replace(start, state=RunState(task.state), time=finished_at, error=error))
    inputs = [ref for key, ref in flow_inputs.items() if key not in flow_outputs]
    flow_start = EventSpec(state=RunState.START, time=record.created_at, job=flow_job, integration=INTEGRATION,
                           job_type="FLOW", inputs=inputs, outputs=list(flow_outputs.values()),
                           parent=record.parent or root, root=root,
                           tool_run=ToolRun(SOURCE, record.pathspec), engine=engine,
                           documentation=docs.get(""), source_code=source_code,
                           nominal_start=nominal_start, nominal_end=nominal_end)  # fmt: skip
    specs.insert(0, flow_start)
    if record.state != RunState.RUNNING.value:
        ended = [task.finished_at for task in record.tasks if task.finished_at]
        ended_at = record.finished_at or max(ended, default=record.created_at)
        complete = record.state == RunState.COMPLETE.value
        error = None if complete else record.ended or f"Metaflow run {record.pathspec} failed"
        model = models[-1] if complete and models else None
        specs.append(replace(flow_start, state=RunState(record.state), time=ended_at, error=error, model=model))
    return [(event_key(spec), translator.event(spec)) for spec in specs]


def _ref(use: dict[str, Any], translator: LineageTranslator) -> DatasetRef:
    columns_from = tuple(
        (
            column,
            tuple(
                InputField(translator.table_dataset(o.input.source), o.input.column, o.transformations) for o in origins
            ),
        )
        for column, origins in lineage_from_json(use.get("columns_from") or {}).items()
        if origins
    )
    schema = tuple((name, kind, about) for name, kind, about in use.get("schema") or ())
    return DatasetRef(
        translator.recorded_dataset(use["name"], use["kind"]),
        use["version"],
        schema,
        rows=use.get("rows"),
        columns_from=columns_from,
        partitions=tuple(PartitionVersion.from_json(p) for p in use.get("partitions") or ()),
    )


def _model(use: dict[str, Any]) -> ModelTraining:
    return ModelTraining(
        use["name"], use["version"], use.get("metrics") or {}, use.get("params") or {}, use.get("promotion")
    )
