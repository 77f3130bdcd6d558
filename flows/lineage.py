"""Record, per Metaflow step, which datasets it read and wrote, with no code in the steps.

Table and model I/O helpers call :func:`record_read` / :func:`record_write`; the
``@record_lineage`` flow mutator wraps every step so that what a step recorded is saved as its
``lineage_io`` artifact. The ``start`` step also saves the step graph and, when Dagster launched
the run, the Dagster parent run. The lineage bridge reads these artifacts instead of guessing.
"""

from __future__ import annotations

import logging
import os
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field

from metaflow import FlowMutator, current, user_step_decorator

log = logging.getLogger(__name__)

DAGSTER_RUN_ID_ENV = "DAGSTER_RUN_ID"
DAGSTER_JOB_ENV = "DAGSTER_JOB_NAME"


@dataclass(frozen=True)
class DatasetUse:
    """One dataset version a step touched: a table at a snapshot, or a model at a version."""

    name: str
    kind: str  # "table" or "model"
    version: str
    rows: int | None = None


@dataclass
class StepLineage:
    reads: list[DatasetUse] = field(default_factory=list)
    writes: list[DatasetUse] = field(default_factory=list)

    def to_artifact(self) -> dict:
        return {"reads": [asdict(d) for d in self.reads], "writes": [asdict(d) for d in self.writes]}


_current_step: ContextVar[StepLineage | None] = ContextVar("current_step_lineage", default=None)


def record_read(name: str, version: str | int, kind: str = "table", rows: int | None = None) -> None:
    _record("reads", DatasetUse(name, kind, str(version), rows))


def record_write(name: str, version: str | int, kind: str = "table", rows: int | None = None) -> None:
    _record("writes", DatasetUse(name, kind, str(version), rows))


def _record(direction: str, use: DatasetUse) -> None:
    recorder = _current_step.get()
    if recorder is None:
        log.debug("No step is recording lineage; %s %s not recorded", direction, use.name)
        return
    uses = getattr(recorder, direction)
    if use not in uses:
        uses.append(use)


def step_graph() -> dict[str, list[str]]:
    """Each step and the steps that follow it, from Metaflow's own graph."""
    return {name: list(info.get("next", [])) for name, info in current.graph["steps"].items()}


def dagster_parent() -> dict[str, str] | None:
    run_id = os.environ.get(DAGSTER_RUN_ID_ENV)
    if not run_id:
        return None
    return {"run_id": run_id, "job_name": os.environ.get(DAGSTER_JOB_ENV, "")}


@user_step_decorator
def lineage_recorder(step_name, flow, inputs):
    recorder = StepLineage()
    token = _current_step.set(recorder)
    if step_name == "start":
        flow.lineage_step_graph = step_graph()
        flow.lineage_parent = dagster_parent()
    try:
        yield
    finally:
        _current_step.reset(token)
        flow.lineage_io = recorder.to_artifact()


class record_lineage(FlowMutator):  # noqa: N801 - used as a decorator, named like one
    """Flow decorator: every step saves the datasets it read and wrote as ``lineage_io``."""

    def mutate(self, mutable_flow):
        for _, step in mutable_flow.steps:
            step.add_decorator(lineage_recorder)
