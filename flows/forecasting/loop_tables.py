"""The daily forecast and forecast accuracy tables, through pyiceberg: each day's rows replaced as one partition."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from datetime import date

import pandas as pd
import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.expressions import And
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)

from flows.forecasting.row_filters import equal_to, one_of
from flows.forecasting.tables import MissingInput, written_snapshot_id
from taxi_core.names import DAILY_FORECAST, FORECAST_ACCURACY
from taxi_core.wall_clock import wall_clock_doc

_SERIES = "The series: city, city/BOROUGH or city/BOROUGH/ZONE"
_INTERVAL = "bound of the {} prediction interval"
DAILY_FORECAST_SCHEMA = Schema(
    NestedField(1, "forecast_day", DateType(), required=False, doc="The day forecast (America/New_York)"),
    NestedField(2, "pickup_hour", TimestampType(), required=False, doc=wall_clock_doc("The hour forecast")),
    NestedField(3, "series", StringType(), required=False, doc=_SERIES),
    NestedField(4, "level", StringType(), required=False, doc="city, borough or zone"),
    NestedField(5, "pulocationid", IntegerType(), required=False, doc="The TLC zone (empty for a total)"),
    NestedField(6, "borough", StringType(), required=False, doc="The borough (empty for the city)"),
    NestedField(7, "forecast", DoubleType(), required=False, doc="Trips expected, reconciled: totals add up"),
    NestedField(8, "lower_80", DoubleType(), required=False, doc="Lower " + _INTERVAL.format("80%")),
    NestedField(9, "upper_80", DoubleType(), required=False, doc="Upper " + _INTERVAL.format("80%")),
    NestedField(10, "lower_95", DoubleType(), required=False, doc="Lower " + _INTERVAL.format("95%")),
    NestedField(11, "upper_95", DoubleType(), required=False, doc="Upper " + _INTERVAL.format("95%")),
    NestedField(12, "model_forecast", DoubleType(), required=False, doc="The series' own model's forecast, before"),
    NestedField(
        13, "data_end", TimestampType(), required=False, doc="Where the actuals published at the day's start end"
    ),
    NestedField(14, "model_version", StringType(), required=False, doc="The serving version that made it (pathspec)"),
    NestedField(15, "actuals_snapshot_id", LongType(), required=False, doc="The actuals' snapshot it was made from"),
    NestedField(16, "created_at", TimestamptzType(), required=False, doc="When the row was written (UTC)"),
)
ACCURACY_SCHEMA = Schema(
    NestedField(1, "day", DateType(), required=False, doc="The forecast day scored (America/New_York)"),
    NestedField(2, "series", StringType(), required=False, doc=_SERIES),
    NestedField(3, "level", StringType(), required=False, doc="city, borough or zone"),
    NestedField(4, "borough", StringType(), required=False, doc="The borough (empty for the city)"),
    NestedField(5, "pulocationid", IntegerType(), required=False, doc="The TLC zone (empty for a total)"),
    NestedField(6, "hours", IntegerType(), required=False, doc="Hours scored"),
    NestedField(7, "rides", DoubleType(), required=False, doc="Actual trips over the hours scored"),
    NestedField(8, "forecast_rides", DoubleType(), required=False, doc="Forecast trips over the same hours"),
    NestedField(9, "mae", DoubleType(), required=False, doc="Mean absolute error per hour"),
    NestedField(10, "bias", DoubleType(), required=False, doc="(forecast - actual) / actual, summed over the hours"),
    NestedField(11, "naive_mae", DoubleType(), required=False, doc="Seasonal naive's MAE, from the same data_end"),
    NestedField(12, "ratio_to_naive", DoubleType(), required=False, doc="mae / naive_mae"),
    NestedField(13, "coverage_80", DoubleType(), required=False, doc="Share of hours inside the 80% interval"),
    NestedField(14, "coverage_95", DoubleType(), required=False, doc="Share of hours inside the 95% interval"),
    NestedField(15, "model_version", StringType(), required=False, doc="The version whose forecast was scored"),
    NestedField(16, "data_end", TimestampType(), required=False, doc="Where the forecast's actuals ended"),
    NestedField(17, "forecast_snapshot_id", LongType(), required=False, doc=f"The {DAILY_FORECAST} snapshot scored"),
    NestedField(18, "actuals_snapshot_id", LongType(), required=False, doc="The actuals' snapshot scored against"),
    NestedField(19, "scored_at", TimestamptzType(), required=False, doc="When the row was written (UTC)"),
)


def columns(schema: Schema) -> list[tuple[str, str, str | None]]:
    """Each column's name, type and description, as the lineage and Dagster's column schema give them."""
    return [(field.name, str(field.field_type), field.doc) for field in schema.fields]


def _by_day(source_id: int, name: str) -> PartitionSpec:
    return PartitionSpec(PartitionField(source_id=source_id, field_id=1000, transform=IdentityTransform(), name=name))


def _replace_days(catalog: Catalog, identifier: str, schema: Schema, column: str, rows: pd.DataFrame) -> int:
    """Replace the rows of every day in ``rows`` by them, in one snapshot; its id."""
    table = catalog.create_table_if_not_exists(identifier, schema=schema, partition_spec=_by_day(1, column))
    arrow = pa.Table.from_pandas(rows[[field.name for field in schema.fields]], preserve_index=False)
    days = sorted({day.isoformat() for day in rows[column]})
    with warnings.catch_warnings():
        # A day written for the first time has no rows to replace, which pyiceberg warns of; nothing is wrong.
        warnings.filterwarnings("ignore", message="Delete operation did not match any records")
        table.overwrite(arrow.cast(schema.as_arrow()), overwrite_filter=one_of(column, days))
    return written_snapshot_id(table)


def write_daily_forecasts(catalog: Catalog, rows: pd.DataFrame, model_version: str, actuals_snapshot_id: int) -> int:
    """Replace the forecasts of every day in ``rows`` (``serving.FORECAST_COLUMNS``); the snapshot written."""
    frame = rows.assign(
        forecast_day=pd.to_datetime(rows.forecast_day).dt.date,
        model_version=model_version,
        actuals_snapshot_id=actuals_snapshot_id,
        created_at=pd.Timestamp.now(tz="UTC"),
    )
    return _replace_days(catalog, DAILY_FORECAST, DAILY_FORECAST_SCHEMA, "forecast_day", frame)


def write_accuracy(catalog: Catalog, scores: pd.DataFrame) -> int:
    """Replace the scores of every day in ``scores``; the snapshot written."""
    frame = scores.assign(day=pd.to_datetime(scores.day).dt.date, scored_at=pd.Timestamp.now(tz="UTC"))
    return _replace_days(catalog, FORECAST_ACCURACY, ACCURACY_SCHEMA, "day", frame)


def _read_days(
    catalog: Catalog, identifier: str, column: str, days: Sequence[date], asset: str
) -> tuple[pd.DataFrame, int]:
    try:
        table = catalog.load_table(identifier)
    except NoSuchTableError as err:
        raise MissingInput(f"Table {identifier} does not exist: materialize the Dagster asset {asset} first.") from err
    snapshot = table.current_snapshot()
    if snapshot is None:
        raise MissingInput(f"Table {identifier} holds no rows: materialize the Dagster asset {asset} first.")
    wanted = [day.isoformat() for day in days]
    found = table.scan(row_filter=one_of(column, wanted) if len(wanted) > 1 else equal_to(column, wanted[0]),
                       snapshot_id=snapshot.snapshot_id).to_pandas()  # fmt: skip
    return found, snapshot.snapshot_id


def read_daily_forecast(catalog: Catalog, day: date) -> tuple[pd.DataFrame, int]:
    """The forecast of ``day`` as the table holds it now, and the snapshot read."""
    rows, snapshot_id = _read_days(catalog, DAILY_FORECAST, "forecast_day", [day], "daily_forecast")
    if rows.empty:
        msg = f"{DAILY_FORECAST} has no forecast of {day}: materialize daily_forecast for {day} first."
        raise MissingInput(msg)
    return rows, snapshot_id


def read_accuracy(catalog: Catalog, days: Sequence[date]) -> pd.DataFrame:
    """The scores of ``days`` the table holds (none for a day not scored)."""
    try:
        return _read_days(catalog, FORECAST_ACCURACY, "day", days, "forecast_accuracy")[0]
    except MissingInput:
        return pd.DataFrame(columns=[field.name for field in ACCURACY_SCHEMA.fields])


def read_all_accuracy(catalog: Catalog) -> pd.DataFrame:
    """Every score the table holds (none before the first day is scored)."""
    try:
        return catalog.load_table(FORECAST_ACCURACY).scan().to_pandas()
    except NoSuchTableError:
        return pd.DataFrame(columns=[field.name for field in ACCURACY_SCHEMA.fields])


def read_earlier_days(
    catalog: Catalog, first: date, last: date, model_version: str, actuals_snapshot_id: int
) -> pd.DataFrame | None:
    """The forecasts of the days ``first``..``last`` (inclusive) this version made from this actuals' snapshot, as
    the table holds them (``None`` when there are none): what a later day's forecast starts from."""
    if last < first:
        return None
    try:
        table = catalog.load_table(DAILY_FORECAST)
    except NoSuchTableError:
        return None
    days = [day.date().isoformat() for day in pd.date_range(first, last, freq="D")]
    rows = table.scan(
        row_filter=And(
            one_of("forecast_day", days),
            equal_to("model_version", model_version),
            equal_to("actuals_snapshot_id", actuals_snapshot_id),
        )
    ).to_pandas()
    return rows if len(rows) else None
