"""Column lineage as Dagster asset metadata, both ways.

An asset reports ``dagster/column_lineage`` (Dagster's own entry) and, when it knows how each column
was made, ``lineage/columns``: a table of each column, the input column it comes from and how (the
OpenLineage transformation types), which a person reads on the materialization and the bridge reads
exactly. The bridge reads that table when present, then ``lineage/column_transformations`` (the same
as JSON, as materializations made before the table carry it), and otherwise Dagster's entry, so any
project that reports Dagster's entry gets column lineage in OpenLineage and DataHub.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from dagster import (
    AssetKey,
    MetadataValue,
    TableColumn,
    TableColumnDep,
    TableColumnLineage,
    TableMetadataValue,
    TableRecord,
    TableSchema,
)

from bridge.translate.column_lineage import ColumnLineage, ColumnOrigin, InputColumn, Transformation, lineage_from_json

log = logging.getLogger(__name__)

DAGSTER_COLUMN_LINEAGE = "dagster/column_lineage"
# The JSON form materializations made before the table carry (read, no longer written): the UI showed it inline.
COLUMN_TRANSFORMATIONS = "lineage/column_transformations"
# The open-source UI shows dagster/column_lineage only as JSON: this table is what a person reads there.
COLUMN_TABLE = "lineage/columns"
COLUMN, SOURCE, HOW = "column", "from", "how"
# Three columns fit a laptop screen's metadata table; an asset key's user string holds no space, so the input and
# its column share one cell and read back exactly.
COLUMN_TABLE_SCHEMA = TableSchema(
    columns=[
        TableColumn(COLUMN, "string", description="The column written"),
        TableColumn(SOURCE, "string", description="The input and its column, after a space (empty: no input column)"),
        TableColumn(HOW, "string", description="OpenLineage transformation types, comma-separated"),
    ]
)


def column_lineage_metadata(lineage: ColumnLineage) -> dict[str, Any]:
    """Both metadata entries for ``lineage`` whose sources are asset keys' user strings."""
    deps = {
        column: [TableColumnDep(AssetKey.from_user_string(o.input.source), o.input.column) for o in origins]
        for column, origins in lineage.items()
        if origins
    }
    return {
        DAGSTER_COLUMN_LINEAGE: TableColumnLineage(deps_by_column=deps),
        COLUMN_TABLE: column_lineage_table(lineage),
    }


def column_lineage_table(lineage: ColumnLineage) -> TableMetadataValue:
    """One row per column and input column it comes from, with how; a column made from no input has one empty row."""
    records = []
    for column, origins in lineage.items():
        if not origins:
            records.append(TableRecord({COLUMN: column, SOURCE: "", HOW: ""}))
        for origin in origins:
            source = f"{origin.input.source} {origin.input.column}"
            how = ", ".join(f"{t.type} {t.subtype}".strip() for t in origin.transformations)
            records.append(TableRecord({COLUMN: column, SOURCE: source, HOW: how}))
    return MetadataValue.table(records=records, schema=COLUMN_TABLE_SCHEMA)


def _lineage_from_table(table: TableMetadataValue) -> dict[str, tuple[ColumnOrigin, ...]]:
    lineage: dict[str, list[ColumnOrigin]] = {}
    for record in table.records:
        row = record.data
        origins = lineage.setdefault(str(row[COLUMN]), [])
        if row.get(SOURCE):
            source, _, input_column = str(row[SOURCE]).partition(" ")
            steps = [step.split(" ", 1) for step in str(row.get(HOW) or "").split(", ") if step]
            transformations = tuple(Transformation(step[0], step[1] if len(step) > 1 else "") for step in steps)
            origins.append(ColumnOrigin(InputColumn(source, input_column), transformations))
    return {column: tuple(origins) for column, origins in lineage.items()}


def derived_column_lineage(
    derive: Callable[[], ColumnLineage], what: str, warn: Callable[[str], object] = log.warning
) -> dict[str, Any]:
    """The metadata of ``derive()``, or none when it cannot be derived: lineage never fails a run."""
    try:
        return column_lineage_metadata(derive())
    except Exception as err:  # noqa: BLE001 - any failure of a lineage derivation is reported, never raised
        warn(f"No column lineage for {what}: {err}")
        return {}


def column_lineage_from_metadata(metadata: Mapping[str, Any]) -> dict[str, tuple[ColumnOrigin, ...]]:
    """The column lineage a materialization reported (values already unwrapped), sources as asset key strings."""
    table = metadata.get(COLUMN_TABLE)
    if isinstance(table, TableMetadataValue):
        return _lineage_from_table(table)
    typed = metadata.get(COLUMN_TRANSFORMATIONS)
    if isinstance(typed, Mapping):
        return lineage_from_json(typed)
    plain = metadata.get(DAGSTER_COLUMN_LINEAGE)
    if not isinstance(plain, TableColumnLineage):
        return {}
    return {
        column: tuple(ColumnOrigin(InputColumn(dep.asset_key.to_user_string(), dep.column_name), ()) for dep in deps)
        for column, deps in plain.deps_by_column.items()
    }
