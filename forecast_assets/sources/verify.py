"""Check that a downloaded file really is the Parquet or CSV its name promises."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from forecast_assets.sources.download import SourceInvalid
from forecast_assets.sources.noaa_format import NYC_COUNTY_FIPS, row_problems
from forecast_assets.sources.tlc_format import TripLayout

PARQUET_MAGIC = b"PAR1"
HTML_STARTS = (b"<!doctype", b"<html", b"<?xml", b"<head", b"<body")


@dataclass(frozen=True)
class TripFileFacts:
    rows: int
    columns: list[str]
    unmapped_columns: list[str]


@dataclass(frozen=True)
class WeatherFileFacts:
    rows: int
    nyc_rows: int


def _looks_like_html(head: bytes) -> bool:
    return head.lstrip().lower().startswith(HTML_STARTS)


def verify_trip_file(path: Path, url: str, layout: TripLayout, setting: str) -> TripFileFacts:
    """``setting`` names where the file's address comes from (its source's base-URL setting)."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(512)
        handle.seek(max(size - 4, 0))
        tail = handle.read(4)
    if _looks_like_html(head):
        msg = (
            f"{path.name} from {url} is an HTML page, not Parquet: the server answered with a web "
            f"page (an error or login page). Check {setting} and that the month is published."
        )
        raise SourceInvalid(msg)
    if not head.startswith(PARQUET_MAGIC):
        msg = f"{path.name} from {url} is not a Parquet file (no PAR1 header); check the source URL"
        raise SourceInvalid(msg)
    if tail != PARQUET_MAGIC:
        msg = f"{path.name} from {url} is truncated ({size} bytes, no Parquet footer); download it again"
        raise SourceInvalid(msg)
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
        rows = parquet.metadata.num_rows
    except Exception as err:  # pyarrow raises several types for a damaged footer
        msg = f"{path.name} from {url} is a damaged Parquet file ({err}); download it again"
        raise SourceInvalid(msg) from err
    problems = layout.schema_problems(schema)
    if problems:
        msg = (
            f"{path.name} from {url} does not have the TLC {layout.service}-taxi layout: {'; '.join(problems)}. "
            f"The published schema may have changed; map the new layout in the {layout.service} source's TripLayout "
            "(forecast_assets/source_specs/)"
        )
        raise SourceInvalid(msg)
    return TripFileFacts(rows=rows, columns=schema.names, unmapped_columns=layout.unmapped_columns(schema))


def verify_weather_file(path: Path, url: str, element: str, month: str) -> WeatherFileFacts:
    data = path.read_bytes()
    if _looks_like_html(data[:512]):
        msg = f"{path.name} from {url} is an HTML page, not NOAA CSV; check TAXI_WEATHER_BASE_URL"
        raise SourceInvalid(msg)
    try:
        lines = [line for line in data.decode("utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError as err:
        msg = f"{path.name} from {url} is not text, so not a NOAA CSV; download it again"
        raise SourceInvalid(msg) from err
    if not lines:
        msg = f"{path.name} from {url} is empty; download it again"
        raise SourceInvalid(msg)
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        fields = line.split(",")
        problems = row_problems(fields, element, month)
        if problems:
            msg = (
                f"{path.name} from {url} line {number} {'; '.join(problems)}: not the nClimGrid-Daily "
                "county layout (the file may be truncated or changed); download it again"
            )
            raise SourceInvalid(msg)
        county = fields[1].strip().zfill(5)
        if county in first_line:
            msg = (
                f"{path.name} from {url} has two rows for county {county} (lines {first_line[county]} and "
                f"{number}); nClimGrid-Daily has one per county and month, so the file is damaged or "
                "changed: download it again, and report it to NOAA if it persists"
            )
            raise SourceInvalid(msg)
        first_line[county] = number
    counties = set(first_line)
    missing = sorted(set(NYC_COUNTY_FIPS) - counties)
    if missing:
        msg = f"{path.name} from {url} has no rows for NYC counties {', '.join(missing)}; check the source"
        raise SourceInvalid(msg)
    return WeatherFileFacts(rows=len(lines), nyc_rows=len(set(NYC_COUNTY_FIPS) & counties))
