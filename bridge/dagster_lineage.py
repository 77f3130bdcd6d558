"""Dagster's event log as OpenLineage: runs and steps, materializations, checks and observations.

The source reads the event log in storage-id order through the public instance APIs
(``fetch_run_status_changes`` to find runs, ``get_records_for_run`` to read them) and gathers, for
each step, what the translator needs: planned and completed materializations, check evaluations,
and the versions of the step's upstream assets as they stood when the step started.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from dagster import AssetKey, AssetRecordsFilter, DagsterEventType, DagsterInstance, DagsterRun, EventLogRecord
from openlineage.client.event_v2 import RunState

from bridge.events import Assertion, DatasetRef, EventSpec, JobRef, event_key, run_event
from bridge.naming import dagster_job_name, dataset_for_asset, job_name, job_namespace, run_id
from forecast_assets.months import MonthWindow

log = logging.getLogger(__name__)

INTEGRATION = "DAGSTER"
SOURCE = "dagster"
RUN_TERMINAL = {
    DagsterEventType.RUN_SUCCESS: RunState.COMPLETE,
    DagsterEventType.RUN_FAILURE: RunState.FAIL,
    DagsterEventType.RUN_CANCELED: RunState.ABORT,
}
STEP_STATES = {
    DagsterEventType.STEP_START: RunState.START,
    DagsterEventType.STEP_SUCCESS: RunState.COMPLETE,
    DagsterEventType.STEP_FAILURE: RunState.FAIL,
}
READ_TYPES = {
    DagsterEventType.RUN_START,
    *RUN_TERMINAL,
    *STEP_STATES,
    DagsterEventType.ASSET_MATERIALIZATION,
    DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
    DagsterEventType.ASSET_CHECK_EVALUATION,
    DagsterEventType.ASSET_OBSERVATION,
}


# A table asset that found its month unchanged, or held it back after a failed audit, wrote nothing.
PUBLICATION = "publication"
NOT_WRITTEN = {"unchanged", "held back"}


def _time(record: EventLogRecord) -> datetime:
    return datetime.fromtimestamp(record.event_log_entry.timestamp, tz=UTC)


def _type(record: EventLogRecord) -> DagsterEventType:
    return record.event_log_entry.dagster_event.event_type


def _step(record: EventLogRecord) -> str | None:
    return record.event_log_entry.dagster_event.step_key


def output_ref(key: AssetKey, metadata: dict | None = None, data_version: str | None = None) -> DatasetRef:
    metadata = metadata or {}
    version = metadata.get("iceberg/snapshot_id") or metadata.get("model_version") or data_version
    schema = metadata.get("dagster/column_schema")
    columns = tuple((c.name, c.type) for c in schema.columns) if schema is not None else ()
    rows = metadata.get("dagster/row_count")
    return DatasetRef(dataset_for_asset(list(key.path)), None if version is None else str(version), columns, rows=rows)


def _metadata(materialization) -> dict:
    return {key: value.value for key, value in materialization.metadata.items()}


def code_location(run: DagsterRun, default: str) -> str:
    """The code location the run was launched from; runs executed in-process carry no origin."""
    return run.remote_job_origin.location_name if run.remote_job_origin else default


@dataclass
class RunView:
    """One Dagster run's records, and the lookups the translation needs."""

    dagster_run_id: str
    job: str
    partition: str | None
    records: list[EventLogRecord]
    upstream: Callable[[AssetKey, int], list[DatasetRef]]
    location: str = ""
    _planned: dict[str, list[AssetKey]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for record in self.records:
            if _type(record) == DagsterEventType.ASSET_MATERIALIZATION_PLANNED:
                key = record.event_log_entry.dagster_event.asset_key
                self._planned.setdefault(_step(record), []).append(key)

    @property
    def started_at(self) -> datetime:
        starts = [r for r in self.records if _type(r) == DagsterEventType.RUN_START]
        return _time(starts[0]) if starts else _time(self.records[0])

    @property
    def lineage_job(self) -> str:
        return dagster_job_name(self.job, self.location)

    @property
    def run_job(self) -> JobRef:
        return JobRef(job_namespace(), job_name(self.lineage_job), run_id(self.started_at, SOURCE, self.dagster_run_id))

    def step_job(self, step_key: str) -> JobRef:
        starts = [r for r in self.records if _step(r) == step_key and _type(r) == DagsterEventType.STEP_START]
        attempt = str(len(starts))
        started = _time(starts[-1]) if starts else self.started_at
        identity = (SOURCE, self.dagster_run_id, step_key, attempt)
        return JobRef(job_namespace(), job_name(self.lineage_job, step_key), run_id(started, *identity))

    def planned(self, step_key: str | None = None) -> list[AssetKey]:
        if step_key is None:
            return [key for keys in self._planned.values() for key in keys]
        return self._planned.get(step_key, [])

    def step_records(self, step_key: str, of_type: DagsterEventType) -> list[EventLogRecord]:
        return [r for r in self.records if _step(r) == step_key and _type(r) == of_type]

    def materialized(self, step_key: str | None = None) -> list[DatasetRef]:
        records = [r for r in self.records if _type(r) == DagsterEventType.ASSET_MATERIALIZATION]
        if step_key is not None:
            records = [r for r in records if _step(r) == step_key]
        refs = []
        for record in records:
            materialization = record.event_log_entry.dagster_event.step_materialization_data.materialization
            metadata = _metadata(materialization)
            if metadata.get(PUBLICATION) in NOT_WRITTEN:
                continue
            version = materialization.tags.get("dagster/data_version") if materialization.tags else None
            refs.append(output_ref(materialization.asset_key, metadata, version))
        return refs

    def nominal_time(self) -> tuple[datetime | None, datetime | None]:
        if not self.partition:
            return None, None
        try:
            window = MonthWindow.from_partition_key(self.partition)
        except ValueError:
            return None, None
        return window.start, window.end


def translate(
    view: RunView, new_records: list[EventLogRecord], untranslated: list[int] | None = None
) -> list[tuple[str, object]]:
    """OpenLineage events, with their outbox keys, for ``new_records`` of one run.

    A record that cannot be translated is logged with its storage id and added to ``untranslated``.
    """
    events = []
    for record in new_records:
        try:
            events += _translate_record(view, record)
        except Exception:  # one bad record must not stop the bridge; it is logged and counted
            log.exception("Could not translate Dagster event %s of run %s", record.storage_id, view.dagster_run_id)
            if untranslated is not None:
                untranslated.append(record.storage_id)
    return events


def _translate_record(view: RunView, record: EventLogRecord) -> list[tuple[str, object]]:
    kind = _type(record)
    if kind == DagsterEventType.RUN_START or kind in RUN_TERMINAL:
        spec = _run_spec(view, record, RunState.START if kind == DagsterEventType.RUN_START else RUN_TERMINAL[kind])
        return [(event_key(spec), run_event(spec))]
    if kind in STEP_STATES:
        nominal_start, nominal_end = view.nominal_time()
        spec = _step_spec(view, record, _step(record), STEP_STATES[kind], nominal_start, nominal_end)
        return [(event_key(spec), run_event(spec))]
    if kind == DagsterEventType.ASSET_OBSERVATION:
        spec = _observation_spec(view, record)
        # A step may observe many times: the storage id tells its events apart.
        return [(event_key(spec, str(record.storage_id)), run_event(spec))]
    return []


def _run_spec(view: RunView, record: EventLogRecord, state: RunState) -> EventSpec:
    planned = view.planned()
    produced = {dataset_for_asset(list(key.path)) for key in planned}
    upstream = {ref.name.key: ref for key in planned for ref in view.upstream(key, record.storage_id)}
    nominal_start, nominal_end = view.nominal_time()
    return EventSpec(
        state=state,
        time=_time(record),
        job=view.run_job,
        integration=INTEGRATION,
        job_type="JOB",
        inputs=[ref for ref in upstream.values() if ref.name not in produced],
        outputs=[output_ref(key) for key in planned] if state == RunState.START else view.materialized(),
        error=record.event_log_entry.message if state == RunState.FAIL else None,
        nominal_start=nominal_start,
        nominal_end=nominal_end,
    )


def _observation_spec(view: RunView, record: EventLogRecord) -> EventSpec:
    step_key = _step(record)
    observation = record.event_log_entry.dagster_event.event_specific_data.asset_observation
    version = observation.tags.get("dagster/data_version") if observation.tags else None
    return EventSpec(
        state=RunState.OTHER,
        time=_time(record),
        job=view.step_job(step_key) if step_key else view.run_job,
        integration=INTEGRATION,
        job_type="OBSERVATION",
        outputs=[output_ref(observation.asset_key, _metadata(observation), version)],
        parent=view.run_job if step_key else None,
    )


def _step_spec(view: RunView, record, step_key: str, state: RunState, nominal_start, nominal_end) -> EventSpec:
    start_records = view.step_records(step_key, DagsterEventType.STEP_START)
    as_of = start_records[-1].storage_id if start_records else record.storage_id
    planned = view.planned(step_key)
    inputs = [ref for key in planned for ref in view.upstream(key, as_of)]
    outputs = view.materialized(step_key) if state == RunState.COMPLETE else [output_ref(k) for k in planned]
    # A table asset audits its own month in the same step; its checks travel with the output it
    # published, or, when it published nothing, with the dataset it audited, as an input.
    assertions = _assertions(view.step_records(step_key, DagsterEventType.ASSET_CHECK_EVALUATION))
    for key, checked in assertions.items():
        name = dataset_for_asset(list(key.path))
        written = [i for i, ref in enumerate(outputs) if ref.name == name and ref.version is not None]
        if written:
            outputs[written[0]] = replace(outputs[written[0]], assertions=checked)
        else:
            inputs.append(replace(_audited(view, step_key, key), assertions=checked))
    job_type = "ASSET" if planned else "ASSET_CHECK" if assertions else "STEP"
    error = None
    if state == RunState.FAIL:
        failure = record.event_log_entry.dagster_event.step_failure_data
        error = failure.error.message.strip() if failure and failure.error else record.event_log_entry.message
    return EventSpec(
        state=state,
        time=_time(record),
        job=view.step_job(step_key),
        integration=INTEGRATION,
        job_type=job_type,
        inputs=inputs,
        outputs=outputs,
        parent=view.run_job,
        root=view.run_job,
        error=error,
        nominal_start=nominal_start,
        nominal_end=nominal_end,
    )


def _assertions(checks: list[EventLogRecord]) -> dict[AssetKey, tuple[Assertion, ...]]:
    by_asset: dict[AssetKey, list[Assertion]] = {}
    for record in checks:
        evaluation = record.event_log_entry.dagster_event.event_specific_data
        severity = evaluation.severity.value.lower() if evaluation.severity else "error"
        by_asset.setdefault(evaluation.asset_key, []).append(
            Assertion(name=evaluation.check_name, success=evaluation.passed, severity=severity)
        )
    return {key: tuple(assertions) for key, assertions in by_asset.items()}


def _audited(view: RunView, step_key: str, key: AssetKey) -> DatasetRef:
    """The version a step audited without publishing it: a held-back staged snapshot, or the published one."""
    for record in reversed(view.step_records(step_key, DagsterEventType.ASSET_MATERIALIZATION)):
        materialization = record.event_log_entry.dagster_event.step_materialization_data.materialization
        if materialization.asset_key == key:
            metadata = _metadata(materialization)
            version = metadata.get("staged_snapshot_id") or metadata.get("iceberg/snapshot_id")
            return replace(output_ref(key, metadata), version=None if version is None else str(version))
    return output_ref(key)


class DagsterSource:
    """Reads new event-log records run by run; the cursor is plain JSON kept in the outbox."""

    def __init__(
        self,
        instance: DagsterInstance,
        asset_parents: Callable[[AssetKey], list[AssetKey]],
        default_location: str = "",
        batch: int = 200,
    ):
        """``default_location``: the code location of runs executed in-process, which carry no origin."""
        self.instance, self.asset_parents, self.batch = instance, asset_parents, batch
        self.default_location = default_location
        self.untranslated: list[int] = []

    def upstream_versions(self, key: AssetKey, partition: str | None, before_storage_id: int) -> list[DatasetRef]:
        """Each parent of ``key`` at its newest materialization before ``before_storage_id``."""
        refs = []
        for parent in self.asset_parents(key):
            latest = None
            for partitions in ([partition], None) if partition else (None,):
                result = self.instance.fetch_materializations(
                    AssetRecordsFilter(
                        asset_key=parent, asset_partitions=partitions, before_storage_id=before_storage_id
                    ),
                    limit=1,
                )
                if result.records:
                    latest = result.records[0]
                    break
            if latest is None:
                refs.append(output_ref(parent))
                continue
            materialization = latest.asset_materialization
            version = materialization.tags.get("dagster/data_version") if materialization.tags else None
            refs.append(output_ref(parent, _metadata(materialization), version))
        return refs

    def read(self, cursor: dict) -> tuple[list[tuple[str, object]], dict]:
        """New events since ``cursor`` and the cursor after them."""
        cursor = {"run_starts": cursor.get("run_starts"), "open_runs": dict(cursor.get("open_runs", {}))}
        starts = self.instance.fetch_run_status_changes(
            DagsterEventType.RUN_START, limit=self.batch, cursor=cursor["run_starts"], ascending=True
        )
        for record in starts.records:
            cursor["open_runs"].setdefault(record.run_id, 0)
        if starts.records:
            cursor["run_starts"] = starts.cursor
        events = []
        for dagster_run_id, last_seen in sorted(cursor["open_runs"].items(), key=lambda item: item[1]):
            run = self.instance.get_run_by_id(dagster_run_id)
            if run is None:
                del cursor["open_runs"][dagster_run_id]
                continue
            records = list(self.instance.get_records_for_run(dagster_run_id, of_type=READ_TYPES).records)
            new = [r for r in records if r.storage_id > last_seen]
            if not new:
                continue
            partition = run.tags.get("dagster/partition")
            view = RunView(
                dagster_run_id,
                run.job_name,
                partition,
                records,
                lambda key, before, partition=partition: self.upstream_versions(key, partition, before),
                location=code_location(run, self.default_location),
            )
            events += translate(view, new, self.untranslated)
            if any(_type(r) in RUN_TERMINAL for r in new):
                del cursor["open_runs"][dagster_run_id]
            else:
                cursor["open_runs"][dagster_run_id] = new[-1].storage_id
        return events, cursor


def run_job_ref(instance: DagsterInstance, dagster_run_id: str, default_location: str = "") -> JobRef | None:
    """The OpenLineage job and run of a Dagster run, as its own events name it (for Metaflow's root)."""
    run = instance.get_run_by_id(dagster_run_id)
    starts = instance.get_records_for_run(dagster_run_id, of_type=DagsterEventType.RUN_START).records
    if run is None or not starts:
        return None
    name = dagster_job_name(run.job_name, code_location(run, default_location))
    return JobRef(job_namespace(), job_name(name), run_id(_time(starts[0]), SOURCE, dagster_run_id))
