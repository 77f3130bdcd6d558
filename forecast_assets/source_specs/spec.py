"""What a data source is, declared once; the file asset, the table asset, their checks, the source
settings, the sensors and the lineage locations are all derived from it.

A source publishes files, per month or as one set for all time. A declaration says where they are
(a base URL, ``TAXI_<NAME>_BASE_URL`` to move it, and each file's path below it), how a download is
verified before it is staged, how the staged files are read into the table's rows, and which audits
those rows must pass before they are published.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from forecast_assets.audits import Audit
from forecast_assets.lakehouse.tables import TableSpec
from forecast_assets.lakehouse.zone_reference import ZoneReference
from forecast_assets.source_specs.sample import SourceSample
from forecast_assets.sources.download import FetchRecord
from forecast_assets.sources.stage import combined_fingerprint
from taxi_core.months import MonthWindow


@dataclass(frozen=True)
class SourceFile:
    """One file of a source: a label (for metadata keys) and its path below the source's base URL."""

    label: str
    path: str


@dataclass(frozen=True)
class FileFacts:
    """What verifying a download found: its rows, what a user should hear about, and metadata to show."""

    rows: int
    warnings: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StagedFiles:
    """The staged files a table is built from: their Spark paths, names and fetch records, in declared order."""

    window: MonthWindow | None
    files: tuple[SourceFile, ...]
    names: tuple[str, ...]
    paths: tuple[str, ...]
    records: tuple[FetchRecord, ...]

    @property
    def fingerprints(self) -> str:
        return ", ".join(record.fingerprint for record in self.records)

    @property
    def version(self) -> str:
        """The file asset's data version: the file's fingerprint, or one combined from several."""
        if len(self.records) == 1:
            return self.records[0].fingerprint
        return combined_fingerprint([record.fingerprint for record in self.records])

    @property
    def rows(self) -> int:
        return sum(record.rows or 0 for record in self.records)

    @property
    def file_names(self) -> str:
        return ", ".join(name.rsplit("/", 1)[-1] for name in self.names)

    @property
    def described(self) -> str:
        """Each file as a user finds it again: name, address and sha256."""
        return "; ".join(
            f"{name.rsplit('/', 1)[-1]} from {record.url} ({record.fingerprint})"
            for name, record in zip(self.names, self.records, strict=True)
        )


@dataclass(frozen=True)
class SourceRows:
    """A table's rows built from the staged files, and the DataFrame read from the files (for column lineage)."""

    rows: DataFrame
    read_from: DataFrame


Verify = Callable[[Path, str, SourceFile, MonthWindow | None], FileFacts]
Read = Callable[[SparkSession, StagedFiles], SourceRows]


def no_expected_rows(staged: StagedFiles) -> int | None:
    return None


@dataclass(frozen=True)
class SourceSpec:
    """One data source, from the files it publishes to the Iceberg table it feeds."""

    # Names the setting of its base URL (TAXI_TRIP_BASE_URL for "trip") and, by default, its staging folder.
    name: str
    publisher: str
    default_base_url: str
    # The source's files for a month (``YYYY-MM``), or for all time when the source is not monthly (None).
    files: Callable[[str | None], Sequence[SourceFile]]
    verify: Verify
    file_asset: str
    file_description: str
    file_kind: str
    table: TableSpec
    table_description: str
    read: Read
    audits: Sequence[Audit]
    # Bump when ``read`` changes what it writes: a month built by older code is then rewritten.
    code_version: str
    monthly: bool = True
    # How many rows the table (or its month) must hold, from the staged files.
    expected_rows: Callable[[StagedFiles], int | None] = no_expected_rows
    # A zone column to compare a month with its published neighbours by (the audits' ``neighbours``).
    neighbours_by: str | None = None
    # With it, the time column the neighbours' week is counted by and the zone column where trips end (the audits'
    # week and direction), for the months whose summaries did not keep them.
    neighbours_dated_by: str | None = None
    neighbours_ended_by: str | None = None
    # The zones the audits hold the rows to (the audits' ``zones``), read from the published tables.
    zone_reference: Callable[[SparkSession], ZoneReference] | None = None
    # When a missing file is expected (TLC and NOAA publish a month some weeks after it ends).
    publishing_delay: str = ""
    folder: str = ""
    # How the demo's sample source writes its files (None: it writes none, and the demo cannot ingest the source).
    sample: SourceSample | None = None

    @property
    def staging_folder(self) -> str:
        return self.folder or self.name

    @property
    def base_url_variable(self) -> str:
        return f"TAXI_{self.name.upper()}_BASE_URL"

    def staged_name(self, file: SourceFile) -> str:
        return f"{self.staging_folder}/{file.path}"

    def files_for(self, window: MonthWindow | None) -> tuple[SourceFile, ...]:
        return tuple(self.files(window.month if window else None))
