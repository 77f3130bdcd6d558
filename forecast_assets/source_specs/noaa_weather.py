"""NOAA nClimGrid-Daily by county: four CSV files a month (precipitation and three temperatures)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from forecast_assets.audits import RAW_WEATHER_AUDITS
from forecast_assets.lakehouse.tables import TableSpec
from forecast_assets.source_specs.sample import SampleCity, SourceSample
from forecast_assets.source_specs.spec import FileFacts, SourceFile, SourceRows, SourceSpec, StagedFiles
from forecast_assets.sources.noaa_format import ELEMENTS, NYC_COUNTY_FIPS, county_file, weather_file_path
from forecast_assets.sources.verify import verify_weather_file
from forecast_assets.transforms.raw_weather import CSV_OPTIONS, CSV_SCHEMA, weather_long
from taxi_core.months import MonthWindow
from taxi_core.names import NOAA_BASE_URL, WEATHER_FILES, WEATHER_FOLDER

# The folder of the public URL the files sit in: the sample's folder for them.
SAMPLE_FOLDER = "nclimgrid-daily"

RAW_WEATHER = TableSpec(
    name="raw_weather",
    columns={"county_fips": "string", "date": "date", "element": "string", "value": "double"},
    partitioned_by="months(date)",
    month_column="date",
    descriptions={
        "county_fips": "FIPS code of the New York City county (borough) the value is for",
        "date": "The day the value is for",
        "element": "What was measured: prcp (precipitation, mm), tavg, tmin or tmax (temperature, degrees C)",
        "value": "The county's nClimGrid-Daily value for that day and element",
    },
)


def _files(month: str | None) -> tuple[SourceFile, ...]:
    return tuple(SourceFile(element, weather_file_path(element, str(month))) for element in ELEMENTS)


def _verify(path: Path, url: str, file: SourceFile, window: MonthWindow | None) -> FileFacts:
    month = window.month if window else ""
    return FileFacts(verify_weather_file(path, url, file.label, month).rows)


def _read(spark: SparkSession, staged: StagedFiles) -> SourceRows:
    csv_rows = spark.read.schema(CSV_SCHEMA).options(**CSV_OPTIONS).csv(list(staged.paths))
    return SourceRows(weather_long(csv_rows), csv_rows)


def _expected_rows(staged: StagedFiles) -> int | None:
    # One row per NYC county, day and element file.
    return len(NYC_COUNTY_FIPS) * staged.window.days * len(staged.records) if staged.window else None


def _sample(city: SampleCity, month: str | None) -> dict[str, bytes]:
    weather = city.weather(str(month))
    return {
        weather_file_path(element, str(month)): county_file(weather, element, str(month)).encode()
        for element in ELEMENTS
    }


SOURCE = SourceSpec(
    name="weather",
    folder=WEATHER_FOLDER,
    publisher="NOAA",
    default_base_url=NOAA_BASE_URL,
    files=_files,
    verify=_verify,
    file_asset=WEATHER_FILES,
    file_description="The month's NOAA nClimGrid-Daily county files (prcp, tavg, tmin, tmax), checked, fingerprinted.",
    file_kind="csv",
    table=RAW_WEATHER,
    table_description=(
        "Daily precipitation and temperature for the five NYC counties, one row per county, day and element."
    ),
    read=_read,
    audits=RAW_WEATHER_AUDITS,
    code_version="2",
    expected_rows=_expected_rows,
    publishing_delay="NOAA publishes a month some days after it ends",
    sample=SourceSample(SAMPLE_FOLDER, _sample),
)
