"""A second kind of source, from a package of its own: hours of daylight in New York, one CSV a month
(``daylight_YYYY-MM.csv``: ``date,hours``), registered through the ``taxi_forecast.sources`` entry-point group by
the tests that install it. Its own format, verifier, reader, audits and sample, declared here and nowhere else."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from forecast_assets.audits import no_duplicate_keys, no_null_keys, row_count_matches_source
from forecast_assets.lakehouse.tables import TableSpec
from forecast_assets.source_specs.sample import SampleCity, SourceSample
from forecast_assets.source_specs.spec import FileFacts, SourceFile, SourceRows, SourceSpec, StagedFiles
from forecast_assets.sources.download import SourceInvalid
from taxi_core.months import MonthWindow

SCHEMA = "date DATE, hours DOUBLE"
TABLE = TableSpec(
    name="raw_daylight",
    columns={"date": "date", "hours": "double", "source_file": "string"},
    partitioned_by="months(date)",
    month_column="date",
    descriptions={"date": "The day", "hours": "Hours from sunrise to sunset", "source_file": "The file it came from"},
)


def _files(month: str | None) -> tuple[SourceFile, ...]:
    return (SourceFile("daylight", f"daylight_{month}.csv"),)


def _verify(path: Path, url: str, file: SourceFile, window: MonthWindow | None) -> FileFacts:
    rows = list(csv.reader(io.StringIO(path.read_text())))
    if not rows or any(len(row) != 2 for row in rows):
        raise SourceInvalid(f"{path.name} from {url} is not a daylight file: each line is date,hours")
    return FileFacts(len(rows))


def _read(spark: SparkSession, staged: StagedFiles) -> SourceRows:
    lines = spark.read.schema(SCHEMA).csv(list(staged.paths))
    return SourceRows(lines.withColumn("source_file", F.lit(staged.file_names)), lines)


def _sample(city: SampleCity, month: str | None) -> dict[str, bytes]:
    days = pd.date_range(f"{month}-01", periods=pd.Period(str(month)).days_in_month, freq="D")
    hours = 12.2 + 2.9 * np.sin((days.dayofyear.to_numpy() - 80) / 365.25 * 2 * np.pi)
    hours += city.random(str(month), 77).normal(0, 0.005, len(days))
    lines = (f"{day:%Y-%m-%d},{value:.3f}" for day, value in zip(days, hours, strict=True))
    return {f"daylight_{month}.csv": ("\n".join(lines) + "\n").encode()}


SOURCE = SourceSpec(
    name="daylight",
    publisher="the sample",
    default_base_url="https://127.0.0.1/daylight",
    files=_files,
    verify=_verify,
    file_asset="daylight_files",
    file_description="The month's hours of daylight, one CSV line a day.",
    file_kind="csv",
    table=TABLE,
    table_description="Hours of daylight in New York, a row a day.",
    read=_read,
    audits=[
        row_count_matches_source("raw_daylight", "One row per line of the month's file."),
        no_null_keys("raw_daylight", ["date"]),
        no_duplicate_keys("raw_daylight", ["date"]),
    ],
    code_version="1",
    expected_rows=lambda staged: staged.rows,
    sample=SourceSample("daylight", _sample),
)
