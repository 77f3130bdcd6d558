"""The metadata every table materialization carries; the lineage bridge reads these keys."""

from __future__ import annotations

from typing import Any

from dagster import AssetKey, MetadataValue, TableColumn, TableSchema
from pyspark.sql.types import StructType

from forecast_assets.lakehouse.snapshots import PublishedMonth, StagedMonth, WriteResult
from forecast_assets.lakehouse.table_reading import TableReading, column_types
from forecast_assets.lakehouse.tables import TableSpec

SNAPSHOT_ID = "iceberg/snapshot_id"
TABLE_NAME = "dagster/table_name"
ROW_COUNT = "dagster/row_count"
COLUMN_SCHEMA = "dagster/column_schema"
# What became of a table's month, as its materialization says (the lineage bridge reads it).
PUBLICATION = "publication"
PUBLISHED, UNCHANGED, HELD_BACK = "published", "unchanged", "held back"


def snapshot_text(snapshot_id: int) -> MetadataValue:
    """An Iceberg snapshot id as text: it names a version, and Dagster would plot a number as a measure."""
    return MetadataValue.text(str(snapshot_id))


def table_key(identifier: str) -> AssetKey:
    """A table's asset key: its catalog identifier's parts, ``nyc_taxi.raw_yellow`` -> ``nyc_taxi/raw_yellow``."""
    return AssetKey(identifier.split("."))


def table_schema(schema: StructType, descriptions: dict[str, str]) -> TableSchema:
    """The rows' columns with their types and what each holds (the table's ``descriptions``)."""
    return TableSchema(
        columns=[
            TableColumn(name=field.name, type=field.dataType.simpleString(), description=descriptions.get(field.name))
            for field in schema.fields
        ]
    )


# Iceberg's types as Spark names them, so a schema read from the metadata reads as one from Spark's rows.
SPARK_TYPE_NAMES = {
    "boolean": "boolean",
    "int": "int",
    "long": "bigint",
    "float": "float",
    "double": "double",
    "date": "date",
    "timestamp": "timestamp_ntz",
    "timestamptz": "timestamp",
    "string": "string",
}


def metadata_schema(reading: TableReading, descriptions: dict[str, str]) -> TableSchema | None:
    """The table's columns as :func:`table_schema` gives them, from its metadata; None for a type Spark names
    otherwise than the table above does (nested or decimal columns, which these tables do not hold)."""
    columns = []
    for column, iceberg_type in column_types(reading).items():
        if iceberg_type not in SPARK_TYPE_NAMES:
            return None
        spark_type = SPARK_TYPE_NAMES[iceberg_type]
        columns.append(TableColumn(name=column, type=spark_type, description=descriptions.get(column)))
    return TableSchema(columns=columns)


def table_metadata(
    spec: TableSpec, write: WriteResult, schema: StructType, partition_key: str, **extra: Any
) -> dict[str, Any]:
    """Identifier, snapshot, partition row count and schema, plus whatever the asset adds."""
    return {
        TABLE_NAME: spec.identifier,
        SNAPSHOT_ID: snapshot_text(write.snapshot_id),
        ROW_COUNT: MetadataValue.int(write.rows_written),
        COLUMN_SCHEMA: table_schema(schema, spec.descriptions),
        "partition": partition_key,
        "rows_replaced": MetadataValue.int(write.rows_replaced),
        "table_rows": MetadataValue.int(write.table_rows),
        **extra,
    }


def unchanged_metadata(
    spec: TableSpec, partition_key: str, published: PublishedMonth, rows: int, schema: TableSchema | StructType
) -> dict[str, Any]:
    """A month found unchanged: the snapshot that published it, its rows and schema, and the run that published it."""
    return {
        TABLE_NAME: spec.identifier,
        PUBLICATION: UNCHANGED,
        SNAPSHOT_ID: snapshot_text(published.snapshot_id),
        ROW_COUNT: MetadataValue.int(rows),
        COLUMN_SCHEMA: schema if isinstance(schema, TableSchema) else table_schema(schema, spec.descriptions),
        "partition": partition_key,
        "published_by_run": published.properties.get("dagster.run-id", ""),
    }


def held_back_metadata(
    spec: TableSpec, partition_key: str, failed: list[str], staged: StagedMonth, current: int | None
) -> dict[str, Any]:
    """A month held back: the checks that failed, where it is staged and how to read it, and the snapshot ``main``
    still holds (``current``; None: the table is empty)."""
    metadata = {
        TABLE_NAME: spec.identifier,
        PUBLICATION: HELD_BACK,
        "failed_checks": ", ".join(failed),
        "staged_branch": staged.branch,
        "staged_snapshot_id": snapshot_text(staged.write.snapshot_id),
        "staged_rows": MetadataValue.int(staged.write.rows_written),
        "read_staged_with": staged.how_to_read,
        "partition": partition_key,
    }
    if current is not None:
        metadata[SNAPSHOT_ID] = snapshot_text(current)
    return metadata
