"""Write-audit-publish for one month of an Iceberg table, on an Iceberg branch.

A month is written to a branch that readers of ``main`` do not see, audited there, and only
then made current on ``main`` (a fast-forward, or a cherry-pick when another month was published
meanwhile). Each published snapshot records, in its summary, which partition it wrote and the
identity of what it was built from, so an unchanged source is recognised and not written again.

Several runs may publish to one table at once: each branch operation is retried when another writer
commits first (see ``commits``), and a month is never applied twice.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, SparkSession

from forecast_assets.lakehouse.commits import committed, committed_sql
from forecast_assets.lakehouse.table_state import Snapshot, TableState, table_state
from forecast_assets.lakehouse.tables import TableSpec, ensure_table
from taxi_core.months import MonthWindow
from taxi_core.wall_clock import REPLACED_SNAPSHOT_PROPERTY

log = logging.getLogger(__name__)

PARTITION_PROPERTY = "dagster.partition"
MAIN_MOVED_ON = "another writer published to main since the branch was cut"
STAGED_PREFIX = "audit_"
# A cherry-picked snapshot carries no properties of its own; it names the snapshot it copies.
CHERRY_PICK_SOURCE = "source-snapshot-id"
# A table property per partition (``audits.2025-01-01``): the audit results the month was published with.
AUDITS_PROPERTY_PREFIX = "audits."
OBSERVED = "observed"


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
    """A month written to ``branch`` and not yet published; ``observed``, the value of the column ``stage_month``
    was asked to observe, computed over the rows as they were written."""

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


def staging_branch(window: MonthWindow | None, run_id: str) -> str:
    """``audit_2025_01_1a2b3c4d`` (``audit_all_1a2b3c4d`` for a whole table): a plain identifier, so Spark SQL
    needs no quoting."""
    run = re.sub(r"\W", "_", run_id[:8])
    slice_name = window.month.replace("-", "_") if window else "all"
    return f"{STAGED_PREFIX}{slice_name}_{run}"


def _state(spark: SparkSession, spec: TableSpec) -> TableState:
    state = table_state(spark, spec.identifier)
    if state is None:
        msg = f"{spec.identifier} does not exist: it is created when its first month is written"
        raise RuntimeError(msg)
    return state


def published_snapshot(spark: SparkSession, spec: TableSpec) -> int | None:
    ensure_table(spark, spec)
    return _state(spark, spec).ref("main")


def _main_history(state: TableState) -> Iterator[tuple[int, dict[str, str], dict[str, str]]]:
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


def _snapshot_or_none(state: TableState, snapshot_id: int | None) -> Snapshot | None:
    return None if snapshot_id is None else state.snapshot(snapshot_id)


def published_month(spark: SparkSession, spec: TableSpec, partition_key: str) -> PublishedMonth | None:
    """Walk ``main``'s ancestry back to the snapshot that last wrote the partition."""
    ensure_table(spark, spec)
    for snapshot_id, _, properties in _main_history(_state(spark, spec)):
        if properties.get(PARTITION_PROPERTY) == partition_key:
            return PublishedMonth(snapshot_id, properties)
    return None


def stage_month(
    spark: SparkSession,
    spec: TableSpec,
    rows: DataFrame,
    window: MonthWindow | None,
    branch: str,
    properties: Mapping[str, str],
    observe: Column | None = None,
) -> StagedMonth:
    """Replace the month (the whole table for ``window`` None) on a fresh branch cut from ``main``; ``main`` does
    not change. ``observe``, an aggregate column, is computed over the rows while they are written."""
    ensure_table(spark, spec)
    cut = f"ALTER TABLE {spec.identifier} CREATE OR REPLACE BRANCH {branch}"
    committed_sql(spark, spec.identifier, f"while cutting {branch}", cut)

    def write() -> Observation | None:
        observation = None if observe is None else Observation()
        written = rows.select(*spec.columns)
        if observation is not None:
            written = written.observe(observation, observe.alias(OBSERVED))
        # Writes go through the branch identifier: a ``branch`` write option is ignored by Spark.
        writer = written.writeTo(f"{spec.identifier}.branch_{branch}")
        # A month is one partition: each task writes its own rows' file, rather than every row being shuffled
        # to one task that writes them all (Iceberg's default hash distribution); fan-out keeps any input safe.
        writer = writer.option("distribution-mode", "none").option("fanout-enabled", "true")
        for key, value in properties.items():
            writer = writer.option(f"snapshot-property.{key}", value)
        # Each row lies in the month's one partition, so this swaps exactly that partition (an unpartitioned
        # table is swapped whole), and writing it again after Iceberg's own retries ran out does the same.
        writer.overwritePartitions()
        return observation

    observation = committed(spec.identifier, f"while writing {branch}", write)
    state = _state(spark, spec)
    head = state.snapshot(state.ref(branch))
    observed = None if observation is None else observation.get[OBSERVED]
    return StagedMonth(spec, window, branch, WriteResult.from_summary(head.snapshot_id, head.summary), observed)


def publish(spark: SparkSession, staged: StagedMonth) -> WriteResult:
    """Make the staged month current on ``main`` and drop its branch; returns the snapshot that did it."""
    table = staged.spec.identifier
    published = committed(table, f"while publishing {staged.branch}", lambda: _make_current(spark, staged))
    discard(spark, staged.spec, staged.branch)
    summary = _state(spark, staged.spec).snapshot(published).summary
    write = staged.write
    return WriteResult(published, write.rows_written, write.rows_replaced, int(summary.get("total-records", 0)))


def _make_current(spark: SparkSession, staged: StagedMonth) -> int:
    table, snapshot_id = staged.spec.identifier, staged.write.snapshot_id
    # A retry after a lost race may find the month already published: it is not applied twice.
    already = _published_as(spark, staged.spec, snapshot_id)
    if already is not None:
        return already
    try:
        spark.sql(f"CALL lakehouse.system.fast_forward('{table}', 'main', '{staged.branch}')").collect()
    except Exception as err:  # Iceberg raises a JVM ValidationException when main has moved on
        if "not an ancestor" not in str(err):
            raise
        # Another month was published since the branch was cut: apply just this month's change.
        log.info("%s: %s; cherry-picking snapshot %s", table, MAIN_MOVED_ON, snapshot_id)
        spark.sql(f"CALL lakehouse.system.cherrypick_snapshot('{table}', {snapshot_id})").collect()
    published = _published_as(spark, staged.spec, snapshot_id)
    if published is None:
        raise RuntimeError(f"{table}: snapshot {snapshot_id} of {staged.branch} was published but is not on main")
    return published


def _published_as(spark: SparkSession, spec: TableSpec, staged_snapshot_id: int) -> int | None:
    """The ``main`` snapshot that published ``staged_snapshot_id``: itself, or its cherry-picked copy."""
    for snapshot_id, summary, _ in _main_history(_state(spark, spec)):
        if staged_snapshot_id in (snapshot_id, int(summary.get(CHERRY_PICK_SOURCE, 0))):
            return snapshot_id
    return None


def discard(spark: SparkSession, spec: TableSpec, branch: str) -> None:
    drop = f"ALTER TABLE {spec.identifier} DROP BRANCH IF EXISTS {branch}"
    committed_sql(spark, spec.identifier, f"while dropping {branch}", drop)


def staged_branches(spark: SparkSession, spec: TableSpec, window: MonthWindow | None) -> list[str]:
    """Branches kept from earlier audits of the month that failed."""
    return _state(spark, spec).branches(prefix=staging_branch(window, ""))


def staged_by(spark: SparkSession, spec: TableSpec, branch: str) -> str | None:
    """The Dagster run that wrote ``branch``'s staged month; ``None`` when the branch holds no write of its own (its
    run ended after cutting it, before writing)."""
    state = _state(spark, spec)
    head = state.ref(branch)
    on_main = {snapshot_id for snapshot_id, _, _ in _main_history(state)}
    if head is None or head in on_main:
        return None
    return state.snapshot(head).summary.get("dagster.run-id")


def record_audits(spark: SparkSession, spec: TableSpec, partition_key: str, snapshot_id: int, results: Any) -> None:
    """Keep ``results`` (JSON-able) as the audit record of the month ``snapshot_id`` published on ``main``.

    Audits run after the staged snapshot is committed, so its summary cannot hold them; a table property keyed by
    partition can, and names the snapshot it belongs to, so a later write of the month makes it stale.
    """
    record = json.dumps({"snapshot-id": snapshot_id, "results": results}, sort_keys=True)
    literal = record.replace("\\", "\\\\").replace("'", "\\'")
    key = f"{AUDITS_PROPERTY_PREFIX}{partition_key}"
    statement = f"ALTER TABLE {spec.identifier} SET TBLPROPERTIES ('{key}' = '{literal}')"
    committed_sql(spark, spec.identifier, f"while recording the audits of {partition_key}", statement)


def recorded_audits(spark: SparkSession, spec: TableSpec, partition_key: str, snapshot_id: int) -> Any | None:
    """The audit results the month was published with at ``snapshot_id``; None if none were kept for that snapshot."""
    kept = _state(spark, spec).property(f"{AUDITS_PROPERTY_PREFIX}{partition_key}")
    if kept is None:
        return None
    record = json.loads(kept)
    return record["results"] if record.get("snapshot-id") == snapshot_id else None
