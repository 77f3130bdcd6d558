"""Plain records of Dagster runs: what the translator needs, read once from the instance.

A :class:`DagsterRunRecords` holds one run's event-log records; for every moment the translator asks
about (a run or step starting or ending), the newest materialization of each upstream asset of the
run's partition before that moment; and the upstream materializations the run's own materializations
name in Dagster's data provenance (``dagster/input_event_pointer/...``). Translating it needs no
instance; it round-trips through JSON for golden tests.

Moments are a run's own storage ids, but they are compared with upstream materializations by time:
in Dagster's default SQLite storage each run has its own shard, whose storage ids say nothing about
the order of records in another run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from dagster import AssetKey, DagsterEvent, DagsterEventType, EventLogRecord, deserialize_value, serialize_value
from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluationPlanned
from dagster._core.definitions.data_version import INPUT_EVENT_POINTER_TAG_PREFIX

RUN_TERMINAL = {DagsterEventType.RUN_SUCCESS, DagsterEventType.RUN_FAILURE, DagsterEventType.RUN_CANCELED}
STEP_EVENTS = {DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE}
READ_TYPES = {
    DagsterEventType.RUN_START,
    *RUN_TERMINAL,
    *STEP_EVENTS,
    DagsterEventType.ASSET_MATERIALIZATION,
    DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
    DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED,
    DagsterEventType.ASSET_CHECK_EVALUATION,
    DagsterEventType.ASSET_OBSERVATION,
}


Data = TypeVar("Data")
_EVENT_TYPES = {kind.value: kind for kind in DagsterEventType}


def dagster_event(record: EventLogRecord) -> DagsterEvent:
    """The Dagster event of a record the bridge read: it reads only Dagster events (:data:`READ_TYPES`)."""
    event = record.event_log_entry.dagster_event
    if event is None:  # an internal invariant: the bridge reads only records of Dagster events (READ_TYPES)
        raise ValueError(f"Event log record {record.storage_id} is not a Dagster event")
    return event


def event_data(record: EventLogRecord, of_type: type[Data]) -> Data:
    """The event-specific data of a record whose event type says it is ``of_type``."""
    data = dagster_event(record).event_specific_data
    if not isinstance(data, of_type):
        kind = type(data).__name__
        # An internal invariant: the translation asks only of records whose event type says they carry it.
        raise TypeError(f"Event log record {record.storage_id} carries {kind}, not {of_type.__name__}")
    return data


def record_partition(record: EventLogRecord) -> str | None:
    """The partition a materialization or a check result is of (None: of none, or another kind of record)."""
    kind = event_type(record)
    if kind == DagsterEventType.ASSET_MATERIALIZATION:
        partition = dagster_event(record).step_materialization_data.materialization.partition
        return None if partition is None else str(partition)
    if kind in (DagsterEventType.ASSET_CHECK_EVALUATION, DagsterEventType.ASSET_MATERIALIZATION_PLANNED):
        # A check's result, or a range's planned materialization of one of its partitions.
        partition = getattr(dagster_event(record).event_specific_data, "partition", None)
        return None if partition is None else str(partition)
    return None


def event_type(record: EventLogRecord) -> DagsterEventType:
    # ``DagsterEvent.event_type`` builds the enum member from its value on every call; a translation asks often.
    return _EVENT_TYPES[dagster_event(record).event_type_value]


def step_key(record: EventLogRecord) -> str | None:
    return dagster_event(record).step_key


def _planned_asset(record: EventLogRecord) -> AssetKey:
    """The asset an ``ASSET_MATERIALIZATION_PLANNED`` record plans."""
    key = dagster_event(record).asset_key
    if key is None:  # an internal invariant: Dagster writes every planned materialization with its asset
        raise ValueError(f"Event log record {record.storage_id} plans no asset")
    return key


def planned_by_step(records: list[EventLogRecord]) -> dict[str | None, list[AssetKey]]:
    planned: dict[str | None, list[AssetKey]] = {}
    for record in records:
        if event_type(record) == DagsterEventType.ASSET_MATERIALIZATION_PLANNED:
            keys = planned.setdefault(step_key(record), [])
            key = _planned_asset(record)
            if key not in keys:  # a range plans each of its partitions
                keys.append(key)
    return planned


def planned_checks_by_step(records: list[EventLogRecord]) -> dict[str | None, list[AssetKey]]:
    """The assets each step plans to check."""
    planned: dict[str | None, list[AssetKey]] = {}
    for record in records:
        if event_type(record) == DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED:
            check = event_data(record, AssetCheckEvaluationPlanned)
            keys = planned.setdefault(step_key(record), [])
            if check.asset_key not in keys:
                keys.append(check.asset_key)
    return planned


def provenance_pointers(tags: Mapping[str, str] | None) -> dict[AssetKey, int]:
    """The upstream materialization (by storage id) Dagster recorded a materialization as computed from."""
    return {
        AssetKey.from_user_string(name[len(INPUT_EVENT_POINTER_TAG_PREFIX) :]): int(pointer)
        for name, pointer in (tags or {}).items()
        if name.startswith(INPUT_EVENT_POINTER_TAG_PREFIX) and pointer.isdigit()
    }


def upstream_moments(records: list[EventLogRecord]) -> dict[int, list[AssetKey]]:
    """The moments (storage ids) at which the translator reads upstream versions, and of which assets.

    A run's events read its planned assets' parents as they stood at that event; a step's events as
    they stood when the step (its last attempt) started.
    """
    planned = planned_by_step(records)
    everything = [key for keys in planned.values() for key in keys]
    last_start = step_starts(records)
    moments: dict[int, list[AssetKey]] = {}
    for record in records:
        kind = event_type(record)
        if kind == DagsterEventType.RUN_START or kind in RUN_TERMINAL:
            moments[record.storage_id] = everything
        elif kind in STEP_EVENTS:
            step = step_key(record)
            moments[last_start.get(step, record.storage_id)] = planned.get(step, [])
    return moments


def step_starts(records: list[EventLogRecord]) -> dict[str | None, int]:
    """Each step's last start (its last attempt's ``STEP_START``), by storage id."""
    return {step_key(r): r.storage_id for r in records if event_type(r) == DagsterEventType.STEP_START}


@dataclass(frozen=True)
class Upstream:
    """A parent asset and its newest materialization before a moment (``None``: never materialized)."""

    key: AssetKey
    materialization: EventLogRecord | None


@dataclass
class DagsterRunRecords:
    run_id: str
    job_name: str
    partition: str | None
    location: str
    records: list[EventLogRecord]
    upstream: dict[int, dict[AssetKey, list[Upstream]]] = field(default_factory=dict)
    # The time window of the run's partition, when its partitions are time windows.
    nominal_window: tuple[datetime, datetime] | None = None
    # Assets another tool makes (a Metaflow flow the step launches): that run reports their lineage.
    launched: list[AssetKey] = field(default_factory=list)
    # Upstream materializations named by the provenance of this run's materializations, by storage id.
    provenance: dict[int, EventLogRecord] = field(default_factory=dict)
    # What each asset the run plans is, as its definition describes it (by asset key string).
    descriptions: dict[str, str] = field(default_factory=dict)
    # A run of a range of partitions (Dagster's single-run backfill): each partition of the range, with its time
    # window and its own upstream versions (``upstream``'s form); empty for a run of one partition or none.
    partitions: tuple[str, ...] = ()
    partition_windows: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)
    partition_upstream: dict[str, dict[int, dict[AssetKey, list[Upstream]]]] = field(default_factory=dict)
    # True for the view of one partition of such a run (:meth:`partition_view`).
    of_range: bool = False

    def upstream_at(self, moment: int, key: AssetKey) -> list[Upstream]:
        return self.upstream.get(moment, {}).get(key, [])

    def partition_view(self, partition: str) -> DagsterRunRecords:
        """The run as one run of ``partition`` would record it: every materialization and check result of another
        partition left out, its upstream versions and time window that partition's."""
        return DagsterRunRecords(
            self.run_id,
            self.job_name,
            partition,
            self.location,
            [record for record in self.records if record_partition(record) in (None, partition)],
            self.partition_upstream.get(partition, {}),
            self.partition_windows.get(partition),
            self.launched,
            self.provenance,
            self.descriptions,
            of_range=True,
        )

    def to_json(self) -> str:
        # A run of a range only: the records of every other run read as they always did.
        of_range = (
            {
                "partitions": list(self.partitions),
                "partition_windows": {
                    key: [moment.isoformat() for moment in window] for key, window in self.partition_windows.items()
                },
                "partition_upstream": {
                    key: _upstream_json(by_moment) for key, by_moment in self.partition_upstream.items()
                },
            }
            if self.partitions
            else {}
        )
        return json.dumps(
            {
                **of_range,
                "run_id": self.run_id,
                "job_name": self.job_name,
                "partition": self.partition,
                "location": self.location,
                "nominal_window": [moment.isoformat() for moment in self.nominal_window]
                if self.nominal_window
                else None,
                "records": [json.loads(serialize_value(record)) for record in self.records],
                "launched": [json.loads(serialize_value(key)) for key in self.launched],
                "provenance": {
                    str(pointer): json.loads(serialize_value(record)) for pointer, record in self.provenance.items()
                },
                "descriptions": self.descriptions,
                "upstream": _upstream_json(self.upstream),
            },
            indent=1,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> DagsterRunRecords:
        data = json.loads(text)
        load = _load

        window = data.get("nominal_window")
        return cls(
            data["run_id"],
            data["job_name"],
            data["partition"],
            data["location"],
            [load(record) for record in data["records"]],
            _upstream_from_json(data["upstream"]),
            (datetime.fromisoformat(window[0]), datetime.fromisoformat(window[1])) if window else None,
            [load(key) for key in data.get("launched", [])],
            {int(pointer): load(record) for pointer, record in data.get("provenance", {}).items()},
            dict(data.get("descriptions", {})),
            tuple(data.get("partitions", ())),
            {
                key: (datetime.fromisoformat(start), datetime.fromisoformat(end))
                for key, (start, end) in data.get("partition_windows", {}).items()
            },
            {key: _upstream_from_json(entries) for key, entries in data.get("partition_upstream", {}).items()},
        )


def _load(value: Any) -> Any:
    return deserialize_value(json.dumps(value))


def _upstream_json(upstream: dict[int, dict[AssetKey, list[Upstream]]]) -> list[dict[str, Any]]:
    return [
        {
            "moment": moment,
            "asset": json.loads(serialize_value(key)),
            "parents": [
                {
                    "key": json.loads(serialize_value(parent.key)),
                    "materialization": json.loads(serialize_value(parent.materialization))
                    if parent.materialization
                    else None,
                }
                for parent in parents
            ],
        }
        for moment, by_key in sorted(upstream.items())
        for key, parents in by_key.items()
    ]


def _upstream_from_json(entries: list[dict[str, Any]]) -> dict[int, dict[AssetKey, list[Upstream]]]:
    upstream: dict[int, dict[AssetKey, list[Upstream]]] = {}
    for entry in entries:
        parents = [
            Upstream(_load(p["key"]), _load(p["materialization"]) if p["materialization"] else None)
            for p in entry["parents"]
        ]
        upstream.setdefault(entry["moment"], {})[_load(entry["asset"])] = parents
    return upstream
