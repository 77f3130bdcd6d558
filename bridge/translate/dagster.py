"""Dagster runs as OpenLineage: a job for the run, one per step, checks as assertions. Pure: records in, events out.

A run is a ``JOB``; each step a child job (``ASSET``, ``ASSET_CHECK`` or ``STEP``) with the run as
parent and root. A step's outputs are what it materialized (or, until it completes, what it planned).
Its inputs are its assets' parents at the versions it read them, from the best record there is:
what the materialization itself says it read (``lineage/input_versions``), else the upstream
materialization Dagster's data provenance points at, else the parent's newest materialization of the
run's partition before the step started (the only answer before the step has materialized).
A step that launches another tool's run (its assets are ``launched``) names no datasets: it is that
run's parent, and that run says what it read and wrote; the checks the step reports for what that run
wrote are a check job of their own (``<step>__checks``, the step's child). A step that found its month unchanged names
the table at the version it checked, as an output; a step that only executes an asset's checks is a
job of its own (``<step>__checks``), so no job both reads and writes one table.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    DagsterEventType,
    EventLogRecord,
)
from dagster._core.events import AssetObservationData
from dagster.version import __version__ as dagster_version
from openlineage.client.event_v2 import RunEvent, RunState

from bridge.translate.dagster_columns import column_lineage_from_metadata
from bridge.translate.dagster_inputs import CODE_BRANCH, CODE_COMMIT, CODE_PATH, DATA_VERSION, INPUT_VERSIONS
from bridge.translate.dagster_records import (
    RUN_TERMINAL,
    DagsterRunRecords,
    dagster_event,
    event_data,
    event_type,
    planned_by_step,
    planned_checks_by_step,
    provenance_pointers,
    step_key,
    step_starts,
)
from bridge.translate.events import (
    Assertion,
    DatasetRef,
    Engine,
    EventSpec,
    InputField,
    JobRef,
    SourceCode,
    ToolRun,
    event_key,
)
from bridge.translate.naming import DatasetName, Naming
from bridge.translate.run_ids import run_id
from bridge.translate.translator import LineageTranslator, as_translator, run_job_named, step_job_named

log = logging.getLogger(__name__)

INTEGRATION = "DAGSTER"
SOURCE = "dagster"
ENGINE = Engine("Dagster", dagster_version)
RUN_STATES = {
    DagsterEventType.RUN_START: RunState.START,
    DagsterEventType.RUN_SUCCESS: RunState.COMPLETE,
    DagsterEventType.RUN_FAILURE: RunState.FAIL,
    DagsterEventType.RUN_CANCELED: RunState.ABORT,
}
STEP_STATES = {
    DagsterEventType.STEP_START: RunState.START,
    DagsterEventType.STEP_SUCCESS: RunState.COMPLETE,
    DagsterEventType.STEP_FAILURE: RunState.FAIL,
}
# Materialization metadata the bridge reads: the version a table asset wrote, and whether it wrote at all.
VERSION_KEYS = ("iceberg/snapshot_id", "model_version")
STAGED_VERSION = "staged_snapshot_id"
PUBLICATION = "publication"
UNCHANGED, HELD_BACK = "unchanged", "held back"  # found its month unchanged; held it back after a failed audit
CHECKS_SUFFIX = "__checks"
# A step's report of what it wrote, a figure per metadata key under this prefix: the step's stepReport run facet.
REPORT_PREFIX = "report/"
TABLE_NAME = "dagster/table_name"

Keyed = tuple[str, RunEvent]
Recorded = AssetMaterialization | AssetObservation  # what a run's records say of an asset


def _time(record: EventLogRecord) -> datetime:
    return datetime.fromtimestamp(record.event_log_entry.timestamp, tz=UTC)


def _metadata(entry: Recorded) -> dict[str, Any]:
    return {key: value.value for key, value in entry.metadata.items()}


def _metadata_value(entry: Recorded, key: str) -> Any:
    value = entry.metadata.get(key)
    return None if value is None else value.value


def _data_version(entry: Recorded) -> str | None:
    """The entry's own version: a range's partition says it in its metadata (``lineage/data_version``)."""
    said = _metadata_value(entry, DATA_VERSION)
    if said is not None:
        return str(said)
    return entry.tags.get("dagster/data_version") if entry.tags else None


def _materialization(record: EventLogRecord) -> AssetMaterialization:
    """The materialization an ``ASSET_MATERIALIZATION`` record holds."""
    return dagster_event(record).step_materialization_data.materialization


def _step(record: EventLogRecord) -> str:
    """The step of a step event: Dagster records every step event with its step's key."""
    step = step_key(record)
    if step is None:  # an internal invariant: Dagster writes every step event with its step's key
        raise ValueError(f"Step event {record.storage_id} names no step")
    return step


def run_ref(records: DagsterRunRecords, translator: LineageTranslator | Naming) -> JobRef:
    """The OpenLineage job and run of a Dagster run (a launched Metaflow run's root)."""
    return _Run(records, as_translator(translator)).job


def step_job(records: DagsterRunRecords, translator: LineageTranslator | Naming, step: str) -> JobRef:
    """The OpenLineage job and run of one step of a Dagster run (a launched Metaflow run's parent)."""
    return _Run(records, as_translator(translator)).step_job(step)


@dataclass
class _Run:
    """One run's records with the lookups the translation needs; all of them answered from the records."""

    records: DagsterRunRecords
    translator: LineageTranslator

    def __post_init__(self) -> None:
        self.naming = self.translator.naming
        self.planned = planned_by_step(self.records.records)
        self.planned_checks = planned_checks_by_step(self.records.records)
        # The run's records by step and type, in order: every event of the run looks some of them up.
        self.by_step: dict[tuple[str | None, DagsterEventType], list[EventLogRecord]] = {}
        self.last_made: dict[AssetKey, AssetMaterialization] = {}  # each asset's last materialization in the run
        for record in self.records.records:
            kind = event_type(record)
            self.by_step.setdefault((step_key(record), kind), []).append(record)
            if kind == DagsterEventType.ASSET_MATERIALIZATION:
                made = _materialization(record)
                self.last_made[made.asset_key] = made
        self.last_start = step_starts(self.records.records)
        self._step_jobs: dict[str, JobRef] = {}
        # A materialization as a dataset, by the entry's identity (the entry kept alive beside it): a run's
        # events name the same versions again (a step's START and COMPLETE, the run's, each downstream step).
        self._entry_refs: dict[tuple[int, AssetKey, bool], tuple[Recorded, DatasetRef]] = {}

    @cached_property
    def started_at(self) -> datetime:
        starts = self.step_records(None, DagsterEventType.RUN_START)
        return _time(starts[0] if starts else self.records.records[0])

    @cached_property
    def tool_run(self) -> ToolRun:
        return ToolRun(SOURCE, self.records.run_id, partition=self.records.partition)

    def source_code(self, step: str) -> SourceCode | None:
        """The code the step ran, as its materializations say (``code/commit``, ``code/path``)."""
        for record in self.step_records(step, DagsterEventType.ASSET_MATERIALIZATION):
            metadata = _metadata(_materialization(record))
            if metadata.get(CODE_COMMIT) and metadata.get(CODE_PATH):
                return SourceCode(str(metadata[CODE_COMMIT]), str(metadata[CODE_PATH]), None, metadata.get(CODE_BRANCH))
        return None

    def documentation(self, step: str) -> str | None:
        """What the step makes, as its assets' definitions describe them."""
        keys = self.planned.get(step, []) or self.planned_checks.get(step, [])
        described = [self.records.descriptions.get(key.to_user_string()) for key in keys]
        return "\n\n".join(text for text in described if text) or None

    @cached_property
    def job_name(self) -> str:
        """The run's job in lineage, as the translator names it."""
        r = self.records
        return run_job_named(self.translator.dagster_job(r.job_name, r.location), f"Dagster job {r.job_name}")

    @cached_property
    def job(self) -> JobRef:
        started = run_id(self.started_at, SOURCE, self.records.run_id)
        return JobRef(self.naming.job_namespace, self.job_name, started)

    def step_job_name(self, step: str, leaf: str) -> str:
        """The job of ``step`` (as the job ``leaf``: the step, or its checks), as the translator names it."""
        r = self.records
        assets = self.planned.get(step, []) or self.planned_checks.get(step, [])
        paths = [tuple(key.path) for key in assets]
        name = self.translator.dagster_step_job(r.job_name, r.location, leaf, paths)
        return step_job_named(name, self.job_name, f"step {leaf} of Dagster job {r.job_name}")

    def step_job(self, step: str) -> JobRef:
        if step not in self._step_jobs:
            self._step_jobs[step] = self._step_job(step)
        return self._step_jobs[step]

    @cached_property
    def partition_runs(self) -> list[_Run]:
        """A run of a range of partitions as one run per partition (each as a one-partition run records it); none
        for another run."""
        return [_Run(self.records.partition_view(key), self.translator) for key in self.records.partitions]

    def _step_job(self, step: str) -> JobRef:
        starts = self.step_records(step, DagsterEventType.STEP_START)
        started = _time(starts[-1]) if starts else self.started_at
        identity: tuple[str, ...] = (SOURCE, self.records.run_id, step, str(len(starts)))
        if self.records.of_range:  # one run of the step per partition of its range
            identity += (str(self.records.partition),)
        leaf = f"{step}{CHECKS_SUFFIX}" if self.checks_only(step) else step
        return JobRef(self.naming.job_namespace, self.step_job_name(step, leaf), run_id(started, *identity))

    def launched_checks_job(self, step: str) -> JobRef:
        """The job of the checks a launching step reports for the run it launched (``<step>__checks``)."""
        starts = self.step_records(step, DagsterEventType.STEP_START)
        started = _time(starts[-1]) if starts else self.started_at
        identity = (SOURCE, self.records.run_id, step, CHECKS_SUFFIX, str(len(starts)))
        name = self.step_job_name(step, f"{step}{CHECKS_SUFFIX}")
        return JobRef(self.naming.job_namespace, name, run_id(started, *identity))

    def checks_only(self, step: str) -> bool:
        """True when the step is an asset's own step (its op named for the asset) executing only its checks."""
        if self.planned.get(step):
            return False
        return any("__".join(key.path) == step for key in self.planned_checks.get(step, []))

    def all_planned(self) -> list[AssetKey]:
        """Every asset the run's own steps make (not those a launched run makes)."""
        return [key for keys in self.planned.values() for key in keys if key not in self.records.launched]

    def launches(self, step: str) -> bool:
        planned = self.planned.get(step, [])
        return bool(planned) and all(key in self.records.launched for key in planned)

    def step_records(self, step: str | None, of_type: DagsterEventType) -> list[EventLogRecord]:
        return self.by_step.get((step, of_type), [])

    def step_ended(self, step: str) -> bool:
        """True when the step's last attempt succeeded or failed (Dagster recorded its end)."""
        started = self.last_start.get(step, 0)
        ends = [
            *self.step_records(step, DagsterEventType.STEP_SUCCESS),
            *self.step_records(step, DagsterEventType.STEP_FAILURE),
        ]
        return any(end.storage_id > started for end in ends)

    def step_as_of(self, step: str, default: int) -> int:
        """The moment a step's inputs are read at: its last attempt's start (the moments the source read at)."""
        return self.last_start.get(step, default)

    def ref(
        self,
        key: AssetKey,
        metadata: dict[str, Any] | None = None,
        data_version: str | None = None,
        written: bool = False,
    ) -> DatasetRef:
        """``key`` as recorded in ``metadata``; the column lineage only when this run ``written`` it."""
        metadata = metadata or {}
        version = next((metadata[k] for k in VERSION_KEYS if k in metadata), data_version)
        schema = metadata.get("dagster/column_schema")
        columns = tuple((c.name, c.type, c.description) for c in schema.columns) if schema is not None else ()
        return DatasetRef(
            self.translator.asset_dataset(key.path),
            None if version is None else str(version),
            columns,
            rows=metadata.get("dagster/row_count"),
            columns_from=self.columns_from(metadata) if written else (),
        )

    def entry_ref(self, key: AssetKey, entry: Recorded, written: bool = False) -> DatasetRef:
        """``key`` as ``entry`` records it (as :meth:`ref`), made once per run."""
        found = self._entry_refs.get((id(entry), key, written))
        if found is None:
            ref = self.ref(key, _metadata(entry), _data_version(entry), written)
            found = self._entry_refs[(id(entry), key, written)] = (entry, ref)
        return found[1]

    def columns_from(self, metadata: dict[str, Any]) -> tuple[tuple[str, tuple[InputField, ...]], ...]:
        lineage = column_lineage_from_metadata(metadata)
        sources: dict[str, DatasetName] = {}  # a table's columns come from a few sources: each named once
        for origins in lineage.values():
            for origin in origins:
                if origin.input.source not in sources:
                    path = AssetKey.from_user_string(origin.input.source).path
                    sources[origin.input.source] = self.translator.asset_dataset(path)
        return tuple(
            (
                column,
                tuple(InputField(sources[o.input.source], o.input.column, o.transformations) for o in origins),
            )
            for column, origins in lineage.items()
            if origins
        )

    def upstream(self, key: AssetKey, moment: int, finished: bool = True) -> list[DatasetRef]:
        """``key``'s parents at the versions it read them (see the module's docstring).

        Before the step ``finished`` only the moment counts, so a START event is the same whenever it is read.
        """
        made = self.materialization_of(key) if finished else None
        tags = made.tags if made is not None else None
        declared = (_metadata_value(made, INPUT_VERSIONS) if made is not None else None) or {}
        pointers = provenance_pointers(tags)
        refs: list[DatasetRef] = []
        for parent in self.records.upstream_at(moment, key):
            read = self.records.provenance.get(pointers[parent.key]) if parent.key in pointers else None
            # Dagster's pointer names the parent's newest materialization, of any partition: only one of
            # the run's own partition is what a monthly step read.
            if read is not None and self.records.partition and read.partition_key not in (None, self.records.partition):
                read = None
            read = read or parent.materialization
            ref = self.ref(parent.key) if read is None else self.entry_ref(parent.key, _materialization(read))
            if parent.key.to_user_string() in declared:
                ref = replace(ref, version=str(declared[parent.key.to_user_string()]))
            refs.append(ref)
        return refs

    def materialization_of(self, key: AssetKey) -> AssetMaterialization | None:
        """The run's last materialization of ``key``, if it made one."""
        return self.last_made.get(key)

    def materialized(self, of: list[AssetKey], step: str | None = None) -> list[DatasetRef]:
        """What the run (or ``step``) materialized: a table at the version it published, left unchanged, or staged."""
        refs: list[DatasetRef] = []
        for record in self.records.records:
            if event_type(record) != DagsterEventType.ASSET_MATERIALIZATION or (step and step_key(record) != step):
                continue
            materialization = _materialization(record)
            if materialization.asset_key not in of:
                continue
            ref = self.entry_ref(materialization.asset_key, materialization, written=True)
            publication = _metadata_value(materialization, PUBLICATION)
            if publication == UNCHANGED:  # checked, not written: no rows, no column lineage of its own
                ref = replace(ref, rows=None, columns_from=())
            elif publication == HELD_BACK:  # written where readers cannot see it: the staged snapshot
                staged = _metadata_value(materialization, STAGED_VERSION)
                ref = replace(ref, version=None if staged is None else str(staged), rows=None)
            refs.append(ref)
        return refs

    def nominal(self) -> tuple[datetime | None, datetime | None]:
        window = self.records.nominal_window
        return (window[0], window[1]) if window else (None, None)


def translate_run(
    records: DagsterRunRecords,
    translator: LineageTranslator | Naming,
    new: set[int] | None = None,
    untranslated: list[int] | None = None,
) -> list[Keyed]:
    """OpenLineage events, with their outbox keys, for the records of one run (only those in ``new``, if given),
    named by ``translator`` (a naming policy alone: the default translator over it).

    A record that cannot be translated is logged with its storage id and added to ``untranslated``.
    """
    run = _Run(records, as_translator(translator))
    events: list[Keyed] = []
    for record in records.records:
        if new is not None and record.storage_id not in new:
            continue
        try:
            events += _translate_record(run, record)
        except Exception:  # one bad record must not stop the bridge; it is logged and counted
            log.exception("Could not translate Dagster event %s of run %s", record.storage_id, records.run_id)
            if untranslated is not None:
                untranslated.append(record.storage_id)
    return events


def _translate_record(run: _Run, record: EventLogRecord) -> list[Keyed]:
    kind = event_type(record)
    if kind in RUN_STATES:
        spec = _run_spec(run, record, RUN_STATES[kind])
        return [*_unfinished_steps_ended(run, record, RUN_STATES[kind]), (event_key(spec), run.translator.event(spec))]
    if kind in STEP_STATES:
        step = _step(record)
        if run.partition_runs:
            return [_partition_step_event(each, record, step, STEP_STATES[kind]) for each in run.partition_runs]
        spec = _step_spec(run, record, step, STEP_STATES[kind])
        return [(event_key(spec), run.translator.event(spec)), *_launched_checks(run, record, step, STEP_STATES[kind])]
    if kind == DagsterEventType.ASSET_OBSERVATION:
        spec = _observation_spec(run, record)
        # A step may observe many times: the storage id tells its events apart.
        return [(event_key(spec, str(record.storage_id)), run.translator.event(spec))]
    return []


def _run_spec(run: _Run, record: EventLogRecord, state: RunState) -> EventSpec:
    planned = run.all_planned()
    produced = {run.translator.asset_dataset(key.path) for key in planned}
    finished = state != RunState.START
    upstream = {ref.name.key: ref for key in planned for ref in run.upstream(key, record.storage_id, finished)}
    nominal_start, nominal_end = run.nominal()
    return EventSpec(
        state=state,
        time=_time(record),
        job=run.job,
        integration=INTEGRATION,
        job_type="JOB",
        inputs=[ref for ref in upstream.values() if ref.name not in produced],
        outputs=[run.ref(key) for key in planned] if state == RunState.START else run.materialized(planned),
        error=run.naming.portable_text(record.event_log_entry.message)
        if state in (RunState.FAIL, RunState.ABORT)
        else None,
        nominal_start=nominal_start,
        nominal_end=nominal_end,
        tool_run=run.tool_run,
        engine=ENGINE,
    )


def _unfinished_steps_ended(run: _Run, record: EventLogRecord, state: RunState) -> list[Keyed]:
    """A run that failed or was canceled with steps still started (its process killed or lost, then marked failed
    by run monitoring or canceled in the UI): each such step ends as the run did, ABORT or FAIL, saying so."""
    if state not in (RunState.FAIL, RunState.ABORT):
        return []
    how = "was canceled" if state == RunState.ABORT else "failed"
    said = (record.event_log_entry.message or "").strip()
    events = []
    for step in run.last_start:
        if step is None or run.step_ended(step):
            continue
        error = f"The step never finished: its Dagster run {how} while it ran" + (f" ({said})" if said else "")
        for each in run.partition_runs or [run]:
            spec = replace(_step_spec(each, record, step, state), error=run.naming.portable_text(error))
            events.append((event_key(spec), run.translator.event(spec)))
    return events


def _partition_step_event(run: _Run, record: EventLogRecord, step: str, state: RunState) -> Keyed:
    """One partition's run of a step of a range: it failed only when the step failed and the partition was held back
    or never materialized; a month the step published before failing on another ran to its end."""
    made_records = run.step_records(step, DagsterEventType.ASSET_MATERIALIZATION)
    if state == RunState.FAIL:
        made = [_materialization(r) for r in made_records]
        if made and all(_metadata_value(m, PUBLICATION) != HELD_BACK for m in made):
            state = RunState.COMPLETE
    spec = _step_spec(run, record, step, state)
    if state == RunState.COMPLETE:
        spec = replace(spec, error=None)
    if state != RunState.START and made_records:
        # The partition's run ends when its month was recorded, not with the step: the months of a range then end
        # in the order they were written, which is the order a table's versions hold one another.
        spec = replace(spec, time=min(spec.time, _time(made_records[-1])))
    return event_key(spec), run.translator.event(spec)


def _observation_spec(run: _Run, record: EventLogRecord) -> EventSpec:
    step = step_key(record)
    observation = event_data(record, AssetObservationData).asset_observation
    return EventSpec(
        state=RunState.OTHER,
        time=_time(record),
        job=run.step_job(step) if step else run.job,
        integration=INTEGRATION,
        job_type="OBSERVATION",
        outputs=[run.entry_ref(observation.asset_key, observation)],
        parent=run.job if step else None,
        tool_run=run.tool_run,
    )


def _step_spec(run: _Run, record: EventLogRecord, step: str, state: RunState) -> EventSpec:
    moment = run.step_as_of(step, record.storage_id)
    planned = [] if run.launches(step) else run.planned.get(step, [])
    inputs = [ref for key in planned for ref in run.upstream(key, moment, state != RunState.START)]
    outputs = run.materialized(planned, step) if state == RunState.COMPLETE else [run.ref(k) for k in planned]
    # A table asset audits its own month in the same step; its checks travel with the output it
    # published, or, when it published nothing, with the dataset it audited, as an input. They are
    # results of the step, so its START names none of them.
    # A launching step names no dataset: the checks it reports for the launched run are a job of their own.
    launched = run.launches(step)
    assertions = {} if launched else _assertions(run.step_records(step, DagsterEventType.ASSET_CHECK_EVALUATION))
    for key, checked in assertions.items() if state != RunState.START else ():
        name = run.translator.asset_dataset(key.path)
        written = [i for i, ref in enumerate(outputs) if ref.name == name and ref.version is not None]
        if written:
            outputs[written[0]] = replace(outputs[written[0]], assertions=checked)
        else:
            inputs.append(replace(_audited(run, step, key), assertions=checked))
    job_type = "ASSET" if planned else "ASSET_CHECK" if assertions else "STEP"
    error = None
    if state == RunState.FAIL and event_type(record) == DagsterEventType.STEP_FAILURE:
        failure = dagster_event(record).step_failure_data
        error = failure.error.message.strip() if failure and failure.error else record.event_log_entry.message
    nominal_start, nominal_end = run.nominal()
    return EventSpec(
        reports=() if state == RunState.START else _reports(run, step),
        state=state,
        time=_time(record),
        job=run.step_job(step),
        integration=INTEGRATION,
        job_type=job_type,
        inputs=inputs,
        outputs=outputs,
        parent=run.job,
        root=run.job,
        error=run.naming.portable_text(error),
        nominal_start=nominal_start,
        nominal_end=nominal_end,
        tool_run=run.tool_run,
        engine=ENGINE,
        documentation=run.documentation(step),
        source_code=run.source_code(step),
    )


def _reports(run: _Run, step: str) -> tuple[dict[str, Any], ...]:
    """What the step reported of each materialization (its ``report/`` figures), by the dataset and partition it
    wrote; text made portable as an error's is."""
    reports = []
    for record in run.step_records(step, DagsterEventType.ASSET_MATERIALIZATION):
        made = _materialization(record)
        metadata = _metadata(made)
        figures = {
            key.removeprefix(REPORT_PREFIX): run.naming.portable_text(value) if isinstance(value, str) else value
            for key, value in metadata.items()
            if key.startswith(REPORT_PREFIX) and isinstance(value, str | int | float | bool)
        }
        if figures:
            dataset = str(metadata.get(TABLE_NAME) or made.asset_key.to_user_string())
            partition = made.partition or metadata.get("partition")
            reports.append(
                {"dataset": dataset, **({"partition": str(partition)} if partition else {}), "figures": figures}
            )
    return tuple(reports)


def _assertions(checks: list[EventLogRecord]) -> dict[AssetKey, tuple[Assertion, ...]]:
    by_asset: dict[AssetKey, list[Assertion]] = {}
    for record in checks:
        evaluation = event_data(record, AssetCheckEvaluation)
        severity = evaluation.severity.value.lower() if evaluation.severity else "error"
        by_asset.setdefault(evaluation.asset_key, []).append(
            Assertion(
                name=evaluation.check_name,
                success=evaluation.passed,
                severity=severity,
                description=evaluation.description,
            )
        )
    return {key: tuple(assertions) for key, assertions in by_asset.items()}


def _audited(run: _Run, step: str, key: AssetKey) -> DatasetRef:
    """The version a step audited without publishing it: a held-back staged snapshot, or the published one."""
    for record in reversed(run.step_records(step, DagsterEventType.ASSET_MATERIALIZATION)):
        materialization = _materialization(record)
        if materialization.asset_key == key:
            metadata = _metadata(materialization)
            version = metadata.get(STAGED_VERSION) or metadata.get(VERSION_KEYS[0])
            return replace(run.ref(key, metadata), version=None if version is None else str(version))
    # A step that only executed the checks: the version they say they checked (``iceberg/snapshot_id``).
    for record in reversed(run.step_records(step, DagsterEventType.ASSET_CHECK_EVALUATION)):
        evaluation = event_data(record, AssetCheckEvaluation)
        checked = evaluation.metadata.get(VERSION_KEYS[0]) if evaluation.asset_key == key else None
        if checked is not None:
            return replace(run.ref(key), version=str(checked.value))
    return run.ref(key)


def _launched_checks(run: _Run, record: EventLogRecord, step: str, state: RunState) -> list[Keyed]:
    """The checks a launching step reports for the run it launched (evaluated by that run on what it wrote, and
    recorded by the step after the materializations they checked), as a check job of their own, a child of the
    step: it starts with the first result recorded and ends with the step, each checked dataset an input carrying
    the results."""
    if state == RunState.START or not run.launches(step):
        return []
    evaluations = run.step_records(step, DagsterEventType.ASSET_CHECK_EVALUATION)
    assertions = _assertions(evaluations)
    if not assertions:
        return []
    audited = {key: _audited(run, step, key) for key in assertions}
    events = []
    for moment, at in ((RunState.START, evaluations[0]), (state, record)):
        spec = EventSpec(
            state=moment,
            time=_time(at),
            job=run.launched_checks_job(step),
            integration=INTEGRATION,
            job_type="ASSET_CHECK",
            inputs=[
                replace(ref, assertions=assertions[key]) if moment != RunState.START else ref
                for key, ref in audited.items()
            ],
            parent=run.step_job(step),
            root=run.job,
            tool_run=run.tool_run,
            engine=ENGINE,
        )
        events.append((event_key(spec), run.translator.event(spec)))
    return events


def is_finished(records: list[EventLogRecord]) -> bool:
    return any(event_type(r) in RUN_TERMINAL for r in records)
