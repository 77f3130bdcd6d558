"""TLC's trip-record files as a family: one declaration of a service's layout makes a whole source.

A TLC trip source is one Parquet file a month, ``{service}_tripdata_YYYY-MM.parquet``, published some weeks after the
month ends. Given its :class:`TripLayout`, everything else is the family's: the verifier, the normaliser, the raw
table (TLC's columns, then where each row came from), and the audits of a month, held to the zone lookup and to the
published months around it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from forecast_assets.lakehouse.tables import TableSpec
from forecast_assets.lakehouse.zone_reference import published_lookup
from forecast_assets.source_specs.sample import SampleCity, SourceSample, parquet_bytes
from forecast_assets.source_specs.spec import FileFacts, SourceFile, SourceRows, SourceSpec, StagedFiles
from forecast_assets.sources.tlc_format import TripLayout
from forecast_assets.sources.verify import verify_trip_file
from forecast_assets.transforms.tlc_trips import (
    LINEAGE_COLUMN_DESCRIPTIONS,
    LINEAGE_COLUMNS,
    normalize_trips,
    with_timestamps,
)
from forecast_assets.trip_audits import trip_audits
from forecast_assets.trip_calendar import DROPOFF_ZONE, PICKUP_ZONE
from taxi_core.months import MonthWindow
from taxi_core.names import TLC_BASE_URL

# Bump when the family's reading changes what it writes: every trip source's months built by older code are rewritten.
FAMILY_CODE_VERSION = "2"
# Where TLC keeps every service's trip files, the folder of its base URL: the sample's folder for them.
SAMPLE_FOLDER = "trip-data"


@dataclass(frozen=True)
class TripSource(SourceSpec):
    """A source of the TLC trip-file family: a :class:`SourceSpec` that keeps the layout it was made from."""

    layout: TripLayout = field(kw_only=True)


def trip_table(name: str, layout: TripLayout) -> TableSpec:
    """The raw table of a trip layout: its columns, then the file each row came from; a partition per file."""
    return TableSpec(
        name=name,
        columns=dict(layout.columns) | LINEAGE_COLUMNS,
        partitioned_by="source_month",
        month_column="source_month",
        month_column_kind="text",
        descriptions=dict(layout.descriptions) | LINEAGE_COLUMN_DESCRIPTIONS,
    )


def trip_source(
    layout: TripLayout,
    *,
    name: str,
    table: str,
    file_asset: str,
    folder: str = "",
    code_version: str = "",
) -> TripSource:
    """The source of ``layout``'s files: ``name`` names its base-URL setting (``TAXI_<NAME>_BASE_URL``) and, unless
    ``folder`` is given, its staging folder; ``code_version`` is the declaration's own, added to the family's."""
    spec = trip_table(table, layout)
    setting = f"TAXI_{name.upper()}_BASE_URL"

    def files(month: str | None) -> tuple[SourceFile, ...]:
        return (SourceFile("trips", layout.file_name(str(month))),)

    def verify(path: Path, url: str, file: SourceFile, window: MonthWindow | None) -> FileFacts:
        facts = verify_trip_file(path, url, layout, setting)
        if not facts.unmapped_columns:
            return FileFacts(facts.rows)
        unmapped = ", ".join(facts.unmapped_columns)
        return FileFacts(
            facts.rows,
            warnings=(f"{path.name} has columns {spec.identifier} does not keep: {unmapped}",),
            metadata={"unmapped_columns": unmapped},
        )

    def read(spark: SparkSession, staged: StagedFiles) -> SourceRows:
        published_file = spark.read.parquet(staged.paths[0])
        month = staged.window.month if staged.window else ""
        trips = normalize_trips(
            with_timestamps(published_file, layout),
            layout,
            month,
            staged.file_names,
            staged.records[0].fingerprint,
            datetime.now(UTC),
        )
        return SourceRows(trips, published_file)

    def sample(city: SampleCity, month: str | None) -> dict[str, bytes]:
        return {layout.file_name(str(month)): parquet_bytes(city.trips(str(month), layout))}

    return TripSource(
        name=name,
        folder=folder,
        publisher="TLC",
        default_base_url=TLC_BASE_URL,
        files=files,
        verify=verify,
        file_asset=file_asset,
        file_description=(
            f"The month's TLC {layout.service}-taxi trip file, downloaded, checked to be TLC Parquet, "
            "and fingerprinted."
        ),
        file_kind="parquet",
        table=spec,
        table_description=(
            f"Every TLC {layout.service}-taxi trip as published, one schema for all years, with its source file."
        ),
        read=read,
        audits=trip_audits(table, layout),
        code_version=".".join(version for version in (FAMILY_CODE_VERSION, code_version) if version),
        expected_rows=lambda staged: staged.rows,
        neighbours_by=PICKUP_ZONE,
        neighbours_dated_by=layout.pickup,
        neighbours_ended_by=DROPOFF_ZONE,
        zone_reference=published_lookup,
        publishing_delay="TLC publishes a month some weeks after it ends",
        sample=SourceSample(SAMPLE_FOLDER, sample) if layout.sample else None,
        layout=layout,
    )
