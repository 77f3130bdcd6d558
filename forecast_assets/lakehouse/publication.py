"""Write-audit-publish for one month of an Iceberg table, on an Iceberg branch, as one straight path.

:meth:`Publication.open` loads the table's state once (creating the table if need be) and reads how the month is
published; :meth:`~Publication.stage` writes the month to a branch that readers of ``main`` do not see;
:meth:`~Publication.publish` makes it current on ``main`` (a fast-forward, or a cherry-pick when another month was
published meanwhile), keeps its audit results and its summary, and drops the branches earlier audits of the month
left. Each operation updates the state it was opened with, so what the caller reads from the publication is always
current.

Several runs may publish to one table at once: each branch operation is retried when another writer
commits first (see ``commits``), and a month is never applied twice.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, SparkSession

from forecast_assets.lakehouse.commits import committed, committed_sql
from forecast_assets.lakehouse.snapshots import (
    AUDITS_PROPERTY_PREFIX,
    SUMMARY_PROPERTY_PREFIX,
    PublishedMonth,
    StagedMonth,
    WriteResult,
    published_as,
    published_month,
    recorded_audits,
    staged_by,
)
from forecast_assets.lakehouse.table_state import TableState
from forecast_assets.lakehouse.tables import TableSpec, ensure_table
from taxi_core.months import MonthWindow

log = logging.getLogger(__name__)

MAIN_MOVED_ON = "another writer published to main since the branch was cut"
STAGED_PREFIX = "audit_"
OBSERVED = "observed"


def _literal(text: str) -> str:
    """``text`` inside a Spark SQL string literal."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


def staging_branch(window: MonthWindow | None, run_id: str) -> str:
    """``audit_2025_01_1a2b3c4d`` (``audit_all_1a2b3c4d`` for a whole table): a plain identifier, so Spark SQL
    needs no quoting."""
    run = re.sub(r"\W", "_", run_id[:8])
    slice_name = window.month.replace("-", "_") if window else "all"
    return f"{STAGED_PREFIX}{slice_name}_{run}"


@dataclass(frozen=True)
class LeftBranch:
    """A branch an earlier audit of the month left, dropped once the month is published; ``run_id``, the run whose
    staged month it held (None: its run ended after cutting it, before writing)."""

    branch: str
    run_id: str | None


@dataclass(frozen=True)
class Published:
    """What publishing a staged month did."""

    write: WriteResult
    dropped: tuple[LeftBranch, ...]


class Publication:
    """One partition of one table through write-audit-publish, over the table's state loaded once.

    ``published`` is the ``main`` snapshot that last wrote the partition (None before the first), ``main`` the
    snapshot ``main`` points at, ``published_audits`` the audit results ``published`` was published with, ``state``
    the table's state as the last operation left it (for readings no attribute holds).
    """

    def __init__(self, spark: SparkSession, spec: TableSpec, window: MonthWindow | None, partition_key: str) -> None:
        self.spark, self.spec, self.window, self.partition_key = spark, spec, window, partition_key
        self.state: TableState = ensure_table(spark, spec)
        self.published: PublishedMonth | None = None
        self.main: int | None = None
        self.published_audits: Any | None = None
        self._read()

    @classmethod
    def open(cls, spark: SparkSession, spec: TableSpec, window: MonthWindow | None, partition_key: str) -> Publication:
        """The table (created if need be) and how the partition is published now."""
        return cls(spark, spec, window, partition_key)

    def _read(self) -> None:
        state = self.state
        self.main = state.ref("main")
        self.published = published_month(state, self.partition_key)
        snapshot = self.published.snapshot_id if self.published is not None else None
        self.published_audits = None if snapshot is None else recorded_audits(state, self.partition_key, snapshot)

    def stage(
        self, rows: DataFrame, run_id: str, properties: Mapping[str, str], observe: Column | None = None
    ) -> StagedMonth:
        """Replace the month (the whole table for no window) on a fresh branch cut from ``main``; ``main`` does not
        change. ``observe``, an aggregate column, is computed over the rows while they are written."""
        spark, spec, branch = self.spark, self.spec, staging_branch(self.window, run_id)
        cut = f"ALTER TABLE {spec.identifier} CREATE OR REPLACE BRANCH {branch}"
        committed_sql(spark, spec.identifier, f"while cutting {branch}", cut)

        def write_rows() -> Observation | None:
            observation = None if observe is None else Observation()
            written = rows.select(*spec.columns)
            if observe is not None and observation is not None:
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

        observation = committed(spec.identifier, f"while writing {branch}", write_rows)
        state = self.state.refresh()
        self._read()
        head = state.snapshot(state.ref(branch) or 0)
        if head is None:  # an invariant: the write just committed the branch's head
            raise RuntimeError(f"{spec.identifier}: {branch} has no snapshot after its write")
        observed = None if observation is None else observation.get[OBSERVED]
        write = WriteResult.from_summary(head.snapshot_id, head.summary)
        return StagedMonth(spec, self.window, branch, write, observed)

    def publish(
        self, staged: StagedMonth, audits: Callable[[int], Any], summary: Mapping[str, Any] | None = None
    ) -> Published:
        """Make the staged month current on ``main``, keep ``audits(published snapshot)`` as the results it was
        published with and ``summary`` (JSON-able) as what it keeps of itself, and drop its branch and those earlier
        audits of the month left."""
        table = self.spec.identifier
        snapshot_id = committed(table, f"while publishing {staged.branch}", lambda: self._make_current(staged))
        self._record_audits(snapshot_id, audits(snapshot_id), summary)
        left = self.state.branches(prefix=staging_branch(self.window, ""))
        dropped = tuple(
            LeftBranch(branch, None if branch == staged.branch else staged_by(self.state, branch)) for branch in left
        )
        for branch in left:
            drop = f"ALTER TABLE {table} DROP BRANCH IF EXISTS {branch}"
            committed_sql(self.spark, table, f"while dropping {branch}", drop)
        state = self.state.refresh()
        self._read()
        head = state.snapshot(snapshot_id)
        total = int(head.summary.get("total-records", 0)) if head is not None else 0
        write = staged.write
        others = tuple(branch for branch in dropped if branch.branch != staged.branch)
        return Published(WriteResult(snapshot_id, write.rows_written, write.rows_replaced, total), others)

    def _make_current(self, staged: StagedMonth) -> int:
        table, snapshot_id = self.spec.identifier, staged.write.snapshot_id
        # A retry after a lost race may find the month already published: it is not applied twice.
        already = published_as(self.state.refresh(), snapshot_id)
        if already is not None:
            return already
        try:
            self.spark.sql(f"CALL lakehouse.system.fast_forward('{table}', 'main', '{staged.branch}')").collect()
        except Exception as err:  # Iceberg raises a JVM ValidationException when main has moved on
            if "not an ancestor" not in str(err):
                raise
            # Another month was published since the branch was cut: apply just this month's change.
            log.info("%s: %s; cherry-picking snapshot %s", table, MAIN_MOVED_ON, snapshot_id)
            self.spark.sql(f"CALL lakehouse.system.cherrypick_snapshot('{table}', {snapshot_id})").collect()
        published = published_as(self.state.refresh(), snapshot_id)
        if published is None:  # an invariant: the procedure above just published it
            raise RuntimeError(f"{table}: snapshot {snapshot_id} of {staged.branch} was published but is not on main")
        return published

    def _record_audits(self, snapshot_id: int, results: Any, summary: Mapping[str, Any] | None) -> None:
        """Keep ``results`` (JSON-able) as the audit record of the month ``snapshot_id`` published on ``main``, and
        ``summary`` (if any) as the month's summary, in one commit.

        Audits run after the staged snapshot is committed, so its summary cannot hold them; a table property keyed
        by partition can, and names the snapshot it belongs to, so a later write of the month makes it stale.
        """
        records = {AUDITS_PROPERTY_PREFIX: {"snapshot-id": snapshot_id, "results": results}}
        if summary is not None:
            records[SUMMARY_PROPERTY_PREFIX] = {**summary, "snapshot-id": snapshot_id}
        assignments = ", ".join(
            f"'{prefix}{self.partition_key}' = '{_literal(json.dumps(record, sort_keys=True, separators=(',', ':')))}'"
            for prefix, record in records.items()
        )
        statement = f"ALTER TABLE {self.spec.identifier} SET TBLPROPERTIES ({assignments})"
        what = f"while recording the audits of {self.partition_key}"
        committed_sql(self.spark, self.spec.identifier, what, statement)

    def discard(self, staged: StagedMonth) -> None:
        """Drop a staged month's branch without publishing it; ``main`` stays as it was."""
        drop = f"ALTER TABLE {self.spec.identifier} DROP BRANCH IF EXISTS {staged.branch}"
        committed_sql(self.spark, self.spec.identifier, f"while dropping {staged.branch}", drop)
        self.state.refresh()
        self._read()
