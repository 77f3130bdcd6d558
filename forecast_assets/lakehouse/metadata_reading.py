"""An Iceberg table's metadata as pyiceberg reads it: no JVM, no Spark session.

A step asks this first whether its month is already published from the same inputs: if it is, nothing needs
writing and the run never starts Spark. The answers are the same as Spark's catalog gives
(:class:`~forecast_assets.lakehouse.table_reading.TableReading`).
"""

from __future__ import annotations

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.table import Table

from forecast_assets.lakehouse.table_reading import Snapshot
from forecast_assets.lakehouse.tables import TableSpec
from taxi_core.months import MonthWindow


class MetadataReading:
    """One load of a table's current metadata file, through pyiceberg (a :class:`TableReading`)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def ref(self, name: str) -> int | None:
        ref = self._table.metadata.refs.get(name)
        return None if ref is None else ref.snapshot_id

    def branches(self, prefix: str = "") -> list[str]:
        refs = self._table.metadata.refs
        branches = (name for name, ref in refs.items() if ref.snapshot_ref_type == "branch")
        return sorted(name for name in branches if name.startswith(prefix))

    def snapshot(self, snapshot_id: int) -> Snapshot | None:
        found = self._table.snapshot_by_id(snapshot_id)
        if found is None:
            return None
        summary = dict(found.summary.additional_properties) if found.summary is not None else {}
        return Snapshot(found.snapshot_id, found.parent_snapshot_id, summary)

    def schema_json(self) -> str:
        return self._table.schema().model_dump_json()

    def property(self, key: str) -> str | None:
        return self._table.properties.get(key)

    def rows_in_month(self, spec: TableSpec, window: MonthWindow | None, snapshot_id: int) -> int | None:
        """The rows of the month (the whole table for no window) at ``snapshot_id``, counted from its data files'
        manifests, not their rows; None where deletes would have to be read to tell."""
        scan = self._table.scan(row_filter=_month_filter(spec, window), snapshot_id=snapshot_id)
        rows = 0
        for task in scan.plan_files():
            if task.delete_files:
                return None
            rows += task.file.record_count
        return rows


def _month_filter(spec: TableSpec, window: MonthWindow | None) -> str:
    """``spec.rows_condition`` in pyiceberg's filter syntax: the month's partition, which holds exactly its rows."""
    column = spec.month_column
    if window is None or column is None:
        return "true"
    if spec.month_column_kind == "text":
        return f"{column} = '{window.month}'"
    as_text = "%Y-%m-%d" if spec.columns[column] == "date" else "%Y-%m-%dT%H:%M:%S"
    return f"{column} >= '{window.start.strftime(as_text)}' and {column} < '{window.end.strftime(as_text)}'"


def read_metadata(catalog: Catalog, identifier: str) -> MetadataReading | None:
    """The table ``identifier`` as the catalog holds it now; None if there is no such table."""
    try:
        return MetadataReading(catalog.load_table(identifier))
    except (NoSuchTableError, NoSuchNamespaceError):
        return None
