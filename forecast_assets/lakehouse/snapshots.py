"""What a table's snapshots say about its months: which snapshot of ``main`` published each, what it was built from,
and what a month staged on a branch is. Pure readings of one loaded
:class:`~forecast_assets.lakehouse.table_reading.TableReading` (Spark's or pyiceberg's).

Each published snapshot records, in its summary, the partition it wrote and the identity of what it was built from,
so an unchanged source is recognised and not written again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from forecast_assets.lakehouse.table_reading import Snapshot, TableReading
from forecast_assets.lakehouse.tables import TableSpec
from taxi_core.months import MonthWindow
from taxi_core.wall_clock import REPLACED_SNAPSHOT_PROPERTY

PARTITION_PROPERTY = "dagster.partition"
RUN_PROPERTY = "dagster.run-id"
# A cherry-picked snapshot carries no properties of its own; it names the snapshot it copies.
CHERRY_PICK_SOURCE = "source-snapshot-id"
# A table property per partition (``audits.2025-01-01``): the audit results the month was published with.
AUDITS_PROPERTY_PREFIX = "audits."
# A table property per partition (``summary.2025-01-01``): what the month keeps of itself for its neighbours' audits.
SUMMARY_PROPERTY_PREFIX = "summary."


@dataclass(frozen=True)
class WriteResult:
    snapshot_id: int
    rows_written: int
    rows_replaced: int
    table_rows: int

    @classmethod
    def from_summary(cls, snapshot_id: int, summary: Mapping[str, str]) -> WriteResult:
        return cls(
            snapshot_id=snapshot_id,
            rows_written=int(summary.get("added-records", 0)),
            rows_replaced=int(summary.get("deleted-records", 0)),
            table_rows=int(summary.get("total-records", 0)),
        )


@dataclass(frozen=True)
class PublishedMonth:
    """The ``main`` snapshot that last wrote a month, and the properties it was written with."""

    snapshot_id: int
    properties: dict[str, str]

    def built_from(self, identity: Mapping[str, str]) -> bool:
        return all(self.properties.get(key) == value for key, value in identity.items())


@dataclass(frozen=True)
class StagedMonth:
    """A month written to ``branch`` and not yet published; ``observed``, the value of the column staging was asked
    to observe, computed over the rows as they were written."""

    spec: TableSpec
    window: MonthWindow | None
    branch: str
    write: WriteResult
    observed: Any = None

    @property
    def location(self) -> str:
        return f"{self.spec.identifier} branch {self.branch} (snapshot {self.write.snapshot_id})"

    @property
    def how_to_read(self) -> str:
        return f"SELECT * FROM {self.spec.identifier} VERSION AS OF '{self.branch}'"

    def rows(self, spark: SparkSession) -> DataFrame:
        staged = spark.read.option("branch", self.branch).table(self.spec.identifier)
        return staged.where(self.spec.rows_condition(self.window))


def main_history(state: TableReading) -> Iterator[tuple[int, dict[str, str], dict[str, str]]]:
    """``main``'s snapshots, newest first: id, own summary, and the properties of what it wrote.

    A cherry-picked snapshot's properties are those of the snapshot it copies. A table migrated to wall-clock
    types starts a new history whose first snapshot names the one ``main`` pointed at before: the walk goes on there.
    """
    snapshot = _snapshot_or_none(state, state.ref("main"))
    while snapshot is not None:
        source_id = snapshot.summary.get(CHERRY_PICK_SOURCE)
        source = state.snapshot(int(source_id)) if source_id else None
        yield snapshot.snapshot_id, snapshot.summary, (source or snapshot).summary
        replaced = snapshot.summary.get(REPLACED_SNAPSHOT_PROPERTY) if snapshot.parent_id is None else None
        snapshot = _snapshot_or_none(state, int(replaced) if replaced else snapshot.parent_id)


def _snapshot_or_none(state: TableReading, snapshot_id: int | None) -> Snapshot | None:
    return None if snapshot_id is None else state.snapshot(snapshot_id)


def published_month(state: TableReading, partition_key: str) -> PublishedMonth | None:
    """Walk ``main``'s ancestry back to the snapshot that last wrote the partition."""
    for snapshot_id, _, properties in main_history(state):
        if properties.get(PARTITION_PROPERTY) == partition_key:
            return PublishedMonth(snapshot_id, properties)
    return None


def published_months(state: TableReading, partition_keys: Iterable[str]) -> dict[str, int]:
    """The ``main`` snapshot that last wrote each of ``partition_keys`` that ``main`` has published, in one walk of
    its history (which stops once every one is found)."""
    wanted, found = set(partition_keys), {}
    for snapshot_id, _, properties in main_history(state):
        partition = properties.get(PARTITION_PROPERTY)
        if partition in wanted and partition not in found:
            found[partition] = snapshot_id
            if len(found) == len(wanted):
                break
    return found


def published_as(state: TableReading, staged_snapshot_id: int) -> int | None:
    """The ``main`` snapshot that published ``staged_snapshot_id``: itself, or its cherry-picked copy."""
    for snapshot_id, summary, _ in main_history(state):
        if staged_snapshot_id in (snapshot_id, int(summary.get(CHERRY_PICK_SOURCE, 0))):
            return snapshot_id
    return None


def staged_by(state: TableReading, branch: str) -> str | None:
    """The Dagster run that wrote ``branch``'s staged month; ``None`` when the branch holds no write of its own (its
    run ended after cutting it, before writing)."""
    head = state.ref(branch)
    on_main = {snapshot_id for snapshot_id, _, _ in main_history(state)}
    if head is None or head in on_main:
        return None
    snapshot = state.snapshot(head)
    return None if snapshot is None else snapshot.summary.get(RUN_PROPERTY)


def recorded_audits(state: TableReading, partition_key: str, snapshot_id: int) -> Any | None:
    """The audit results the month was published with at ``snapshot_id``; None if none were kept for that snapshot."""
    kept = state.property(f"{AUDITS_PROPERTY_PREFIX}{partition_key}")
    if kept is None:
        return None
    record = json.loads(kept)
    return record["results"] if record.get("snapshot-id") == snapshot_id else None


def recorded_summary(state: TableReading, partition_key: str, snapshot_id: int) -> dict[str, Any] | None:
    """What the month kept of itself when ``snapshot_id`` published it; None if it kept nothing for that snapshot
    (published before summaries were kept, or written again since)."""
    kept = state.property(f"{SUMMARY_PROPERTY_PREFIX}{partition_key}")
    if kept is None:
        return None
    record: dict[str, Any] = json.loads(kept)
    return record if record.get("snapshot-id") == snapshot_id else None
