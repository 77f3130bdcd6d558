"""Read a Dagster instance's event log, run by run, into plain records, then translate them.

Runs are found in storage-id order through the public instance APIs (``fetch_run_status_changes``)
and their records read in bulk (:mod:`bridge.sources.dagster_log`); the upstream versions each step
saw are looked up here, so the translation (:mod:`bridge.translate.dagster`) never touches the instance.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import cached_property
from time import time
from typing import Any, Protocol

from dagster import (
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    DagsterRun,
    EventLogRecord,
    PartitionKeyRange,
    RunsFilter,
    TimeWindowPartitionsDefinition,
)
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from bridge.sources.dagster_log import EventLog, SqliteEventLog, event_log
from bridge.translate.dagster import Keyed, is_finished, run_ref, step_job, translate_run
from bridge.translate.dagster_records import (
    READ_TYPES,
    DagsterRunRecords,
    Upstream,
    dagster_event,
    event_type,
    planned_by_step,
    provenance_pointers,
    upstream_moments,
)
from bridge.translate.events import JobRef
from bridge.translate.naming import Naming
from bridge.translate.translator import LineageTranslator, as_translator

Parents = Callable[[AssetKey], list[AssetKey]]


class AssetGraph(Protocol):
    """What the bridge needs of a Dagster asset graph (``Definitions.resolve_asset_graph()``, a repository's)."""

    def has(self, key: AssetKey) -> bool: ...

    def get(self, key: AssetKey) -> Any: ...


def asset_parents(graph: AssetGraph) -> Parents:
    """Each asset's parents in a Dagster asset graph (a repository's, or a code location's remote one)."""

    def parents(key: AssetKey) -> list[AssetKey]:
        return sorted(graph.get(key).parent_keys) if graph.has(key) else []

    return parents


def code_location(run: DagsterRun, default: str) -> str:
    """The code location the run was launched from; runs executed in-process carry no origin."""
    return run.remote_job_origin.location_name if run.remote_job_origin else default


class DagsterSource:
    """Reads new event-log records run by run; the cursor is plain JSON kept in the outbox."""

    name = "dagster"

    def __init__(
        self,
        instance: DagsterInstance,
        graph: AssetGraph | Callable[[], AssetGraph],
        translator: LineageTranslator | Naming,
        default_location: str = "",
        launcher_kinds: tuple[str, ...] = (),
        batch: int = 200,
        log: Callable[[DagsterInstance], EventLog] = event_log,
    ):
        """``translator`` names jobs and datasets (a naming policy alone: the default translator over it).

        ``default_location``: the code location of runs executed in-process, which carry no origin.

        ``launcher_kinds``: Dagster kinds of assets another tool's run makes (``metaflow``): the step that
        materializes them launched that run.

        ``graph`` may be a function: it is called when a run first needs translating, so a pass with
        nothing new never loads the code location. ``log`` opens the instance's event log (by default
        its SQLite files when it keeps them, else its APIs: :func:`bridge.sources.dagster_log.event_log`).
        """
        self.instance, self._graph, self.batch = instance, graph, batch
        self.translator = as_translator(translator)
        self._log = log
        self.launcher_kinds = launcher_kinds
        self.default_location = default_location
        self.untranslated: list[int] = []

    @cached_property
    def log(self) -> EventLog:
        """The instance's event log, read in bulk for this pass."""
        return self._log(self.instance)

    def close(self) -> None:
        if "log" in self.__dict__:
            self.log.close()
            del self.__dict__["log"]

    @cached_property
    def graph(self) -> AssetGraph:
        return self._graph() if callable(self._graph) else self._graph

    @cached_property
    def parents(self) -> Parents:
        return asset_parents(self.graph)

    def run_records(self, dagster_run_id: str) -> DagsterRunRecords | None:
        """One run's records and the upstream versions its events name; ``None`` if the run is gone."""
        fetched = self._fetch(dagster_run_id)
        return self._assembled(dagster_run_id, *fetched) if fetched else None

    def _fetch(
        self, dagster_run_id: str, run: DagsterRun | None = None
    ) -> tuple[DagsterRun, list[EventLogRecord]] | None:
        run = run or self.instance.get_run_by_id(dagster_run_id)
        if run is None:
            return None
        return run, self.log.records_for_runs([dagster_run_id], READ_TYPES)[dagster_run_id]

    def _assembled(self, dagster_run_id: str, run: DagsterRun, records: list[EventLogRecord]) -> DagsterRunRecords:
        partition = run.tags.get("dagster/partition")
        times = {record.storage_id: record.timestamp for record in records}
        moments = upstream_moments(records)

        def upstream_of(partition: str | None) -> dict[int, dict[AssetKey, list[Upstream]]]:
            return {
                moment: {key: self._upstream(key, partition, times.get(moment, time())) for key in keys}
                for moment, keys in moments.items()
            }

        partitions = self._range(run, records)
        return DagsterRunRecords(
            dagster_run_id,
            run.job_name,
            partition,
            code_location(run, self.default_location),
            records,
            upstream_of(partition),
            self._nominal_window(records, partition),
            [key for keys in planned_by_step(records).values() for key in keys if self._launched(key)],
            self._provenance(records),
            self._descriptions(records),
            partitions,
            {key: window for key in partitions if (window := self._nominal_window(records, key))},
            {key: upstream_of(key) for key in partitions},
        )

    def _range(self, run: DagsterRun, records: list[EventLogRecord]) -> tuple[str, ...]:
        """The partitions of a run of a range (Dagster's single-run backfill), in order; none for another run."""
        first, last = run.tags.get(ASSET_PARTITION_RANGE_START_TAG), run.tags.get(ASSET_PARTITION_RANGE_END_TAG)
        if not first or not last:
            return ()
        for keys in planned_by_step(records).values():
            for key in keys:
                partitions = self.graph.get(key).partitions_def if self.graph.has(key) else None
                if partitions is not None:
                    try:
                        return tuple(partitions.get_partition_keys_in_range(PartitionKeyRange(first, last)))
                    except Exception:  # keys of an older partitions definition: the range as its two ends
                        return tuple(dict.fromkeys((first, last)))
        return ()

    def _descriptions(self, records: list[EventLogRecord]) -> dict[str, str]:
        """What each asset the run plans is, from its definition (the asset's docstring)."""
        keys = {key for planned in planned_by_step(records).values() for key in planned}
        found = {key: self.graph.get(key).description for key in keys if self.graph.has(key)}
        return {key.to_user_string(): text.strip() for key, text in found.items() if text}

    def _provenance(self, records: list[EventLogRecord]) -> dict[int, EventLogRecord]:
        """The upstream materializations the run's materializations were computed from, per Dagster."""
        wanted: dict[AssetKey, set[int]] = {}
        for record in records:
            if event_type(record) == DagsterEventType.ASSET_MATERIALIZATION:
                tags = dagster_event(record).step_materialization_data.materialization.tags
                for parent, pointer in provenance_pointers(tags).items():
                    wanted.setdefault(parent, set()).add(pointer)
        found: dict[int, EventLogRecord] = {}
        for parent, pointers in wanted.items():
            found |= {record.storage_id: record for record in self.log.materializations(parent, pointers)}
        return found

    def _launched(self, key: AssetKey) -> bool:
        tags = self.graph.get(key).tags if self.graph.has(key) else {}
        return any(f"dagster/kind/{kind}" in tags for kind in self.launcher_kinds)

    def _upstream(self, key: AssetKey, partition: str | None, before: float) -> list[Upstream]:
        """Each parent of ``key`` at its newest materialization before the time ``before``."""
        found: list[Upstream] = []
        for parent in self.parents(key):
            latest = None
            # The same partition first (a month's table reads that month's files), then any.
            for partitions in ([partition], None) if partition else (None,):
                latest = self.log.latest_before(parent, partitions, before)
                if latest is not None:
                    break
            found.append(Upstream(parent, latest))
        return found

    def _nominal_window(self, records: list[EventLogRecord], partition: str | None) -> tuple[datetime, datetime] | None:
        if not partition:
            return None
        for keys in planned_by_step(records).values():
            for key in keys:
                partitions = self.graph.get(key).partitions_def if self.graph.has(key) else None
                if isinstance(partitions, TimeWindowPartitionsDefinition):
                    try:
                        window = partitions.time_window_for_partition_key(partition)
                    except Exception:  # a key from an older partitions definition: no nominal time
                        return None
                    return window.start, window.end
        return None

    def read(self, cursor: dict[str, Any]) -> tuple[list[Keyed], dict[str, Any]]:
        """New events since ``cursor`` and the cursor after them."""
        cursor = {"run_starts": cursor.get("run_starts"), "open_runs": dict(cursor.get("open_runs", {}))}
        if isinstance(self.log, SqliteEventLog):  # where an idle pass looks for anything new (bridge.run.idle)
            cursor["event_log"] = str(self.log.index_path)
        starts = self.instance.fetch_run_status_changes(
            DagsterEventType.RUN_START, limit=self.batch, cursor=cursor["run_starts"], ascending=True
        )
        for record in starts.records:
            cursor["open_runs"].setdefault(record.run_id, 0)
        if starts.records:
            cursor["run_starts"] = starts.cursor
        events: list[Keyed] = []
        ordered = sorted(cursor["open_runs"].items(), key=lambda item: item[1])
        # Every run's records first, then their upstream versions: one lookup window per upstream asset.
        wanted = [run_id for run_id, _ in ordered]
        runs = {run.run_id: run for run in self.instance.get_runs(RunsFilter(run_ids=wanted))} if wanted else {}
        read = self.log.records_for_runs([run_id for run_id in wanted if run_id in runs], READ_TYPES)
        fetched = {run_id: (runs[run_id], read[run_id]) if run_id in runs else None for run_id in wanted}
        for dagster_run_id, last_seen in ordered:
            run_and_records = fetched[dagster_run_id]
            if run_and_records is None:
                del cursor["open_runs"][dagster_run_id]
                continue
            records = self._assembled(dagster_run_id, *run_and_records)
            new = {r.storage_id for r in records.records if r.storage_id > last_seen}
            if not new:
                continue
            events += translate_run(records, self.translator, new, self.untranslated)
            if is_finished(records.records):
                del cursor["open_runs"][dagster_run_id]
            else:
                cursor["open_runs"][dagster_run_id] = max(new)
        return events, cursor

    def _starts(self, dagster_run_id: str) -> DagsterRunRecords | None:
        """Only what names a run and its steps: its origin, its start records and what its steps plan (no upstream
        lookups)."""
        run = self.instance.get_run_by_id(dagster_run_id)
        if run is None:
            return None
        # What each step plans too: a translator may name a step's job by the assets it makes or checks.
        kinds = {
            DagsterEventType.RUN_START,
            DagsterEventType.STEP_START,
            DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
            DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED,
        }
        records = self.log.records_for_runs([dagster_run_id], kinds)[dagster_run_id]
        if not any(event_type(record) == DagsterEventType.RUN_START for record in records):
            return None
        location = code_location(run, self.default_location)
        return DagsterRunRecords(dagster_run_id, run.job_name, run.tags.get("dagster/partition"), location, records)

    def step_job(self, dagster_run_id: str, step: str) -> JobRef | None:
        """The OpenLineage job and run of one step of a Dagster run, as its own events name it (a flow's parent)."""
        records = self._starts(dagster_run_id)
        return step_job(records, self.translator, step) if records else None

    def run_job(self, dagster_run_id: str) -> JobRef | None:
        """The OpenLineage job and run of a Dagster run, as its own events name it (a Metaflow run's root)."""
        records = self._starts(dagster_run_id)
        return run_ref(records, self.translator) if records else None
