"""TLC's yellow-taxi trip records: one Parquet file a month, published some weeks after the month ends."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from forecast_assets.lakehouse.tables import TableSpec
from forecast_assets.lakehouse.zone_reference import published_lookup
from forecast_assets.source_specs.spec import FileFacts, SourceFile, SourceRows, SourceSpec, StagedFiles
from forecast_assets.sources.tlc_format import RAW_COLUMN_DESCRIPTIONS, RAW_COLUMN_TYPES, trip_file_name
from forecast_assets.sources.verify import verify_trip_file
from forecast_assets.transforms.raw_yellow import (
    LINEAGE_COLUMN_DESCRIPTIONS,
    LINEAGE_COLUMNS,
    normalize_trips,
    with_timestamps,
)
from forecast_assets.trip_audits import RAW_YELLOW_AUDITS
from taxi_core.months import MonthWindow
from taxi_core.names import TLC_BASE_URL, TRIP_FILES, TRIP_FOLDER

RAW_YELLOW = TableSpec(
    name="raw_yellow",
    columns=RAW_COLUMN_TYPES | LINEAGE_COLUMNS,
    partitioned_by="source_month",
    month_column="source_month",
    month_column_kind="text",
    descriptions=RAW_COLUMN_DESCRIPTIONS | LINEAGE_COLUMN_DESCRIPTIONS,
)


def _files(month: str | None) -> tuple[SourceFile, ...]:
    return (SourceFile("trips", trip_file_name(str(month))),)


def _verify(path: Path, url: str, file: SourceFile, window: MonthWindow | None) -> FileFacts:
    facts = verify_trip_file(path, url)
    if not facts.unmapped_columns:
        return FileFacts(facts.rows)
    unmapped = ", ".join(facts.unmapped_columns)
    return FileFacts(
        facts.rows,
        warnings=(f"{path.name} has columns the raw table does not keep: {unmapped}",),
        metadata={"unmapped_columns": unmapped},
    )


def _read(spark: SparkSession, staged: StagedFiles) -> SourceRows:
    published_file = spark.read.parquet(staged.paths[0])
    month = staged.window.month if staged.window else ""
    trips = normalize_trips(
        with_timestamps(published_file), month, staged.file_names, staged.records[0].fingerprint, datetime.now(UTC)
    )
    return SourceRows(trips, published_file)


SOURCE = SourceSpec(
    name="trip",
    folder=TRIP_FOLDER,
    publisher="TLC",
    default_base_url=TLC_BASE_URL,
    files=_files,
    verify=_verify,
    file_asset=TRIP_FILES,
    file_description="The month's TLC yellow-taxi trip file, downloaded, checked to be TLC Parquet, and fingerprinted.",
    file_kind="parquet",
    table=RAW_YELLOW,
    table_description="Every TLC yellow-taxi trip as published, one schema for all years, with its source file.",
    read=_read,
    audits=RAW_YELLOW_AUDITS,
    code_version="2",
    expected_rows=lambda staged: staged.rows,
    neighbours_by="pulocationid",
    zone_reference=published_lookup,
    publishing_delay="TLC publishes a month some weeks after it ends",
)
