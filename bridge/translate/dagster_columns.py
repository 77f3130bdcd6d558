"""Column lineage as Dagster asset metadata, both ways.

An asset reports ``dagster/column_lineage`` (Dagster's own entry, shown in its UI) and, when it knows
how each column was made, ``lineage/column_transformations`` (the same dependencies with their
OpenLineage transformation types). The bridge reads the second when present and otherwise the first,
so any project that reports Dagster's entry gets column lineage in OpenLineage and DataHub.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from dagster import AssetKey, MetadataValue, TableColumnDep, TableColumnLineage

from bridge.translate.column_lineage import (
    ColumnLineage,
    ColumnOrigin,
    InputColumn,
    lineage_from_json,
    lineage_to_json,
)

log = logging.getLogger(__name__)

DAGSTER_COLUMN_LINEAGE = "dagster/column_lineage"
COLUMN_TRANSFORMATIONS = "lineage/column_transformations"
# The open-source UI shows dagster/column_lineage only as JSON: this table is what a person reads there.
COLUMN_TABLE = "lineage/columns"


def column_lineage_metadata(lineage: ColumnLineage) -> dict[str, Any]:
    """Both metadata entries for ``lineage`` whose sources are asset keys' user strings."""
    deps = {
        column: [TableColumnDep(AssetKey.from_user_string(o.input.source), o.input.column) for o in origins]
        for column, origins in lineage.items()
        if origins
    }
    return {
        DAGSTER_COLUMN_LINEAGE: TableColumnLineage(deps_by_column=deps),
        COLUMN_TRANSFORMATIONS: MetadataValue.json(lineage_to_json(lineage)),
        COLUMN_TABLE: MetadataValue.md(column_lineage_markdown(lineage)),
    }


def column_lineage_markdown(lineage: ColumnLineage) -> str:
    """Each column and the input columns it comes from, with how, as a Markdown table."""
    lines = ["| column | comes from | how |", "|---|---|---|"]
    for column, origins in lineage.items():
        for origin in origins:
            how = ", ".join(f"{t.type} {t.subtype}".strip() for t in origin.transformations) or "-"
            lines.append(f"| {column} | {origin.input.source} `{origin.input.column}` | {how} |")
    return "\n".join(lines)


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
