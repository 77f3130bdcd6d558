"""What a table's asset hands to write-audit-publish: one month of the table, how to build its rows, what it is
audited against and what it is built from."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from dagster import AssetExecutionContext, AssetKey
from pyspark.sql import DataFrame

from bridge.translate.column_lineage import ColumnLineage
from bridge.translate.spark_plan import column_lineage
from forecast_assets.audits import Audit, MonthFacts
from forecast_assets.ingestion_report import SourceRead
from forecast_assets.lakehouse.table_reading import TableReading
from forecast_assets.lakehouse.tables import TableSpec
from forecast_assets.month_summary import Summarise
from taxi_core.months import MonthWindow

WHOLE_TABLE = "whole table"


def selected_audits(context: AssetExecutionContext, audits: Sequence[Audit]) -> list[Audit]:
    """The audits whose checks this step runs (every one, unless the user chose some)."""
    selected = {key.name for key in context.selected_asset_check_keys}
    return [audit for audit in audits if audit.name in selected]


@dataclass(frozen=True)
class MonthRows:
    """A month's rows, and the DataFrames they are read from by asset key (for column lineage)."""

    rows: DataFrame
    inputs: Mapping[AssetKey, DataFrame]

    def column_lineage(self) -> ColumnLineage:
        """Derived from the rows' plan once per shape (the inputs' and the rows' schemas) in a process: the months of
        a range share it, and a plan walk costs some 80 ms of calls into the JVM."""
        labelled = {key.to_user_string(): frame for key, frame in self.inputs.items()}
        shape = (
            self.rows.schema.json(),
            *(f"{label}={frame.schema.json()}" for label, frame in sorted(labelled.items())),
        )
        if shape not in _LINEAGE_BY_SHAPE:
            _LINEAGE_BY_SHAPE[shape] = column_lineage(self.rows, labelled)
        return _LINEAGE_BY_SHAPE[shape]


# The code is the process's: the same schemas in and out give the same column lineage.
_LINEAGE_BY_SHAPE: dict[tuple[str, ...], ColumnLineage] = {}


@dataclass(frozen=True)
class MonthWrite:
    """One month of one table, as its asset hands it to write-audit-publish."""

    spec: TableSpec
    # The audits this step runs: the table's, as the step's selected checks choose them (``selected_audits``).
    audits: list[Audit]
    window: MonthWindow | None
    # What the audits hold the month to (its published neighbours, the zone lookup): read from the table's state once
    # it is open (``state``), and only when the month is audited.
    read_facts: Callable[[TableReading | None], MonthFacts]
    # What the month is built from (source fingerprints, inputs, settings, code version), recorded
    # on the snapshot; the month is unchanged when the published one was built from the same.
    identity: dict[str, str]
    build_rows: Callable[[], MonthRows]
    metadata: dict[str, Any] = field(default_factory=dict)
    # The source files as a user finds them again (name, address, sha256), for a held-back month's message.
    files: str = ""
    # The files the month is read from, in figures, for its ingestion report (None: it is built from tables).
    read: SourceRead | None = None
    # What the published month keeps of itself for its neighbours' audits (None: nothing).
    summarise: Summarise | None = None
    # The table's state as write-audit-publish loaded it (None until the table is open).
    state: TableReading | None = None

    @cached_property
    def facts(self) -> MonthFacts:
        return self.read_facts(self.state)

    @property
    def partition(self) -> str:
        """The month's partition key; a table written whole has one slice, recorded as ``whole table``."""
        return self.window.partition_key if self.window else WHOLE_TABLE

    @property
    def label(self) -> str:
        return self.window.month if self.window else "(whole table)"
