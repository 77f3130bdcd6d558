"""Record, per Metaflow step, which datasets it read and wrote, with no code in the steps.

A flow's table and model I/O calls :func:`record_read`, :func:`record_write` and :func:`record_model`;
the ``@record_lineage`` flow mutator wraps every step so that what a step recorded is saved as its
``lineage_io`` artifact. The ``start`` step also saves the step graph, the mark of the process running
the flow and, when Dagster launched the run (:data:`DAGSTER_RUN_ID_ENV` in the flow's environment), the
Dagster parent run. The bridge's
Metaflow source reads these artifacts instead of guessing.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metaflow import FlowMutator, FlowSpec, current, user_step_decorator

from bridge.liveness import mark
from bridge.translate.column_lineage import ColumnLineage, lineage_to_json
from bridge.translate.partitions import PartitionVersion, in_order

if TYPE_CHECKING:
    from metaflow.user_decorators.mutable_flow import MutableFlow

log = logging.getLogger(__name__)

DAGSTER_RUN_ID_ENV = "DAGSTER_RUN_ID"
DAGSTER_JOB_ENV = "DAGSTER_JOB_NAME"
DAGSTER_STEP_ENV = "DAGSTER_STEP_KEY"
# The artifacts every step (and the start step) saves; the Metaflow source reads them.
LINEAGE_IO, LINEAGE_STEP_GRAPH, LINEAGE_PARENT = "lineage_io", "lineage_step_graph", "lineage_parent"
# The start step's record of the flow's code: its docstrings (the flow's under "") and its file in its repository.
LINEAGE_CODE = "lineage_code"
# The start step's mark of the process that runs the flow (Metaflow's runtime, its parent): while it lives, so
# may the run; once it is gone, the run has ended, whatever Metaflow recorded (:mod:`bridge.liveness`).
LINEAGE_RUNTIME = "lineage_runtime"


@dataclass(frozen=True)
class DatasetUse:
    """One dataset version a step touched: a table at a snapshot, or a model at a version.

    ``name`` is a table's catalog identifier, or the name a project's naming policy knows another
    dataset by (a model's); a model carries what it learned: its metrics and hyperparameters.
    """

    name: str
    kind: str  # "table" or "model"
    version: str
    rows: int | None = None
    metrics: dict[str, float] | None = None
    params: dict[str, str] | None = None
    # A written dataset's column lineage, as :func:`bridge.translate.column_lineage.lineage_to_json`;
    # its sources are tables.
    columns_from: dict[str, list[dict[str, Any]]] | None = None
    # A written table's columns: name, type and description of each.
    schema: list[tuple[str, str, str | None]] | None = None
    # A read table's partitions, each at the version that wrote it, as PartitionVersion.to_json gives them.
    partitions: list[dict[str, Any]] | None = None
    # A model version's champion/challenger decision: whether it serves, instead of which version, and why.
    promotion: dict[str, Any] | None = None


@dataclass(frozen=True)
class Promotion:
    """A champion/challenger decision: the version trained, the one serving before it, whether the new one
    serves now, why, and the figures the reason rests on."""

    challenger: str
    serving: str | None
    promoted: bool
    reason: str
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def now_serving(self) -> str:
        return self.challenger if self.promoted or self.serving is None else self.serving

    def to_json(self) -> dict[str, Any]:
        return {
            "challenger": self.challenger, "serving": self.serving, "promoted": self.promoted,
            "nowServing": self.now_serving, "reason": self.reason,
            "figures": {key: float(value) for key, value in self.figures.items()},
        }  # fmt: skip


@dataclass
class StepLineage:
    reads: list[DatasetUse] = field(default_factory=list)
    writes: list[DatasetUse] = field(default_factory=list)
    nominal: tuple[str, str] | None = None  # the data interval the run is for, [start, end), ISO times

    def to_artifact(self) -> dict[str, Any]:
        found: dict[str, Any] = {"reads": [asdict(d) for d in self.reads], "writes": [asdict(d) for d in self.writes]}
        if self.nominal:
            found["nominal"] = list(self.nominal)
        return found


_current_step: ContextVar[StepLineage | None] = ContextVar("current_step_lineage", default=None)


def record_read(
    name: str,
    version: str | int,
    kind: str = "table",
    rows: int | None = None,
    partitions: Iterable[PartitionVersion] = (),
) -> None:
    """The step read ``name`` at ``version``; ``partitions``, what it read of a partitioned table: each partition at
    the version that wrote it (:func:`bridge.sources.iceberg_contents.partitions_read`)."""
    parts = [p.to_json() for p in in_order(partitions)] or None
    _record("reads", DatasetUse(name, kind, str(version), rows, partitions=parts))


def record_write(
    name: str,
    version: str | int,
    kind: str = "table",
    rows: int | None = None,
    columns_from: ColumnLineage | None = None,
    schema: Iterable[tuple[str, str, str | None]] | None = None,
) -> None:
    """The step wrote ``name`` at ``version``; ``columns_from`` says which table columns each column comes from,
    ``schema`` names its columns with their types and descriptions."""
    columns = list(schema) if schema is not None else None
    _record("writes", DatasetUse(name, kind, str(version), rows, columns_from=_columns(columns_from), schema=columns))


def record_model(
    name: str,
    version: str,
    metrics: dict[str, float],
    params: dict[str, Any],
    columns_from: ColumnLineage | None = None,
    promotion: Promotion | None = None,
) -> None:
    """The step wrote model ``name`` at ``version``, with its metrics, hyperparameters and input columns.

    ``columns_from`` maps each of the model's features to the table columns it is computed from;
    ``promotion`` says whether this version serves, instead of which one, and why.
    """
    metrics = {key: float(value) for key, value in metrics.items()}
    params = {k: str(v) for k, v in params.items()}
    decided = promotion.to_json() if promotion else None
    model = DatasetUse(name, "model", str(version), None, metrics, params, _columns(columns_from), promotion=decided)
    _record("writes", model)


def record_nominal_time(start: datetime, end: datetime) -> None:
    """The data interval the run is for (a training window): its lineage's nominal time. Naive times are UTC."""
    recorder = _current_step.get()
    if recorder is not None:
        recorder.nominal = (_utc_iso(start), _utc_iso(end))


def _utc_iso(moment: datetime) -> str:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def _columns(lineage: ColumnLineage | None) -> dict[str, list[dict[str, Any]]] | None:
    return lineage_to_json(lineage) if lineage else None


def _record(direction: str, use: DatasetUse) -> None:
    recorder = _current_step.get()
    if recorder is None:
        log.debug("No step is recording lineage; %s %s not recorded", direction, use.name)
        return
    uses = getattr(recorder, direction)
    if use not in uses:
        uses.append(use)


@contextmanager
def recording() -> Iterator[StepLineage]:
    """Record what the code inside reads and writes (each step of a ``@record_lineage`` flow runs inside one)."""
    recorder = StepLineage()
    token = _current_step.set(recorder)
    try:
        yield recorder
    finally:
        _current_step.reset(token)


def step_graph() -> dict[str, list[str]]:
    """Each step and the steps that follow it, from Metaflow's own graph."""
    graph = current.graph  # type: ignore[attr-defined]  # Metaflow adds Current.graph once a flow runs
    return {name: list(info.get("next", [])) for name, info in graph["steps"].items()}


def flow_code(flow: FlowSpec) -> dict[str, Any]:
    """The flow's docstrings (the flow's under ``""``, then each step's) and its file's path in its git checkout."""
    graph = current.graph  # type: ignore[attr-defined]  # Metaflow adds Current.graph once a flow runs
    docs = {"": graph.get("doc") or ""} | {name: info.get("doc") or "" for name, info in graph["steps"].items()}
    source = inspect.getsourcefile(type(flow))
    path = None
    if source is not None:
        file = Path(source).resolve()
        root = next((folder for folder in file.parents if (folder / ".git").exists()), None)
        path = file.relative_to(root).as_posix() if root else file.name
    return {"docs": {name: doc.strip() for name, doc in docs.items() if doc.strip()}, "path": path}


def dagster_parent() -> dict[str, str] | None:
    run_id = os.environ.get(DAGSTER_RUN_ID_ENV)
    if not run_id:
        return None
    return {
        "run_id": run_id,
        "job_name": os.environ.get(DAGSTER_JOB_ENV, ""),
        "step_key": os.environ.get(DAGSTER_STEP_ENV, ""),
    }


@user_step_decorator  # type: ignore[untyped-decorator]  # Metaflow leaves user_step_decorator unannotated
def lineage_recorder(step_name: str, flow: FlowSpec, inputs: Any) -> Iterator[None]:
    if step_name == "start":
        setattr(flow, LINEAGE_STEP_GRAPH, step_graph())
        setattr(flow, LINEAGE_PARENT, dagster_parent())
        setattr(flow, LINEAGE_CODE, flow_code(flow))
        setattr(flow, LINEAGE_RUNTIME, mark(os.getppid()).to_json())
    with recording() as recorder:
        try:
            yield
        finally:
            setattr(flow, LINEAGE_IO, recorder.to_artifact())


class record_lineage(FlowMutator):  # noqa: N801 - used as a decorator, named like one
    """Flow decorator: every step saves the datasets it read and wrote as ``lineage_io``."""

    def mutate(self, mutable_flow: MutableFlow) -> None:
        for _, step in mutable_flow.steps:
            step.add_decorator(lineage_recorder)
