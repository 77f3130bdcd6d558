"""Read the actuals and weather tables and write the forecast table, through pyiceberg."""

from __future__ import annotations

from datetime import datetime, timedelta

import pandas as pd
import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import DayTransform
from pyiceberg.types import DoubleType, IntegerType, NestedField, StringType, TimestampType, TimestamptzType

from bridge.sources.iceberg_contents import partitions_for_lineage
from bridge.sources.metaflow_recorder import record_read, record_write
from bridge.translate.column_lineage import ColumnLineage
from flows.forecasting.row_filters import equal_to
from taxi_core.errors import PipelineError
from taxi_core.names import ACTUALS, FORECAST, ZONES
from taxi_core.names import RAW_WEATHER as WEATHER
from taxi_core.wall_clock import ZonedWallClock, wall_clock_doc

# How a user materializes a table: its asset key, which is its identifier's parts.
ACTUALS_ASSET = ACTUALS.replace(".", "/")
WEATHER_ASSET = WEATHER.replace(".", "/")
ZONES_ASSET = ZONES.replace(".", "/")
# The zone lookup's columns the forecast carries, by the forecast's name for each.
ZONE_NAMES = {"zone": "zone", "borough": "borough"}

_INTERVAL = "bound of the {} prediction interval, calibrated on the backtest's held-out errors"
FORECAST_SCHEMA = Schema(
    NestedField(
        1,
        "pickup_hour",
        TimestampType(),
        required=False,
        doc=wall_clock_doc("The hour forecast, as the actuals name it"),
    ),
    NestedField(2, "pulocationid", IntegerType(), required=False, doc="The TLC taxi zone the trips would begin in"),
    NestedField(
        3, "forecasted_total_rides", DoubleType(), required=False, doc="Trips expected to begin in the zone in the hour"
    ),
    NestedField(4, "model_name", StringType(), required=False, doc="The model that forecast it (the champion)"),
    NestedField(5, "model_version", StringType(), required=False, doc="The model version: its training run's pathspec"),
    NestedField(6, "metaflow_run_id", StringType(), required=False, doc="The Metaflow run that wrote the row"),
    NestedField(7, "created_at", TimestamptzType(), required=False, doc="When the row was written (UTC)"),
    NestedField(8, "zone", StringType(), required=False, doc="The zone's name, from nyc_taxi.taxi_zones"),
    NestedField(9, "borough", StringType(), required=False, doc="The zone's borough, from nyc_taxi.taxi_zones"),
    NestedField(10, "lower_80", DoubleType(), required=False, doc="Lower " + _INTERVAL.format("80%")),
    NestedField(11, "upper_80", DoubleType(), required=False, doc="Upper " + _INTERVAL.format("80%")),
    NestedField(12, "lower_95", DoubleType(), required=False, doc="Lower " + _INTERVAL.format("95%")),
    NestedField(13, "upper_95", DoubleType(), required=False, doc="Upper " + _INTERVAL.format("95%")),
)
# Each column's name, type and description, as the lineage and Dagster's column schema give them.
FORECAST_COLUMNS = [(field.name, str(field.field_type), field.doc) for field in FORECAST_SCHEMA.fields]
FORECAST_PARTITIONING = PartitionSpec(
    PartitionField(source_id=1, field_id=1000, transform=DayTransform(), name="pickup_hour_day")
)


class MissingInput(RuntimeError, PipelineError):
    """A table the flow reads does not exist or has no rows in the window asked for."""


def written_snapshot_id(table: Table) -> int:
    """The snapshot a write to ``table`` has just made."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        raise RuntimeError(f"{table.name()} has no snapshot after a write")  # an internal invariant: writes make one
    return snapshot.snapshot_id


def _wall_clock(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _wall_clock_typed(table: Table, identifier: str) -> Table:
    """The table, once its ``pickup_hour`` is typed as wall-clock time (an older version wrote timestamptz)."""
    if isinstance(table.schema().find_field("pickup_hour").field_type, TimestamptzType):
        raise ZonedWallClock(identifier, ["pickup_hour"])
    return table


def _load(catalog: Catalog, identifier: str, asset: str) -> Table:
    try:
        table = catalog.load_table(identifier)
    except NoSuchTableError as err:
        msg = (
            f"Table {identifier} does not exist: materialize the Dagster asset {asset} first "
            "(`./run demo`, or materialize it in `./run dagster dev`)."
        )
        raise MissingInput(msg) from err
    return _wall_clock_typed(table, identifier) if identifier == ACTUALS else table


def actuals_end(catalog: Catalog) -> datetime:
    """The hour after the newest one in the actuals table: where the next forecast starts."""
    table = _load(catalog, ACTUALS, ACTUALS_ASSET)
    hours = table.scan(selected_fields=("pickup_hour",)).to_arrow().column("pickup_hour")
    if len(hours) == 0:
        msg = f"Table {ACTUALS} is empty: materialize {ACTUALS_ASSET} for at least one month first."
        raise MissingInput(msg)
    newest: datetime = pa.compute.max(hours).as_py()
    return newest + timedelta(hours=1)


def _read_window(
    catalog: Catalog, identifier: str, asset: str, row_filter: str, window: str, otherwise: str
) -> tuple[pd.DataFrame, int]:
    """Rows matching ``row_filter`` at the current snapshot, recorded as this step's read with every partition read
    at the snapshot that wrote it (from the table's manifests)."""
    table = _load(catalog, identifier, asset)
    snapshot = table.current_snapshot()
    if snapshot is None:
        raise MissingInput(f"Table {identifier} holds no rows: materialize {asset} for the months between {window}.")
    snapshot_id = snapshot.snapshot_id
    frame = table.scan(row_filter=row_filter, snapshot_id=snapshot_id).to_pandas()
    if frame.empty:
        msg = f"Table {identifier} has no rows between {window}: materialize {asset} for those months, {otherwise}."
        raise MissingInput(msg)
    partitions = partitions_for_lineage(table, snapshot_id, row_filter)
    record_read(identifier, snapshot_id, rows=len(frame), partitions=partitions)
    return frame, snapshot_id


def read_actuals(catalog: Catalog, start: datetime, end: datetime) -> tuple[pd.DataFrame, int]:
    """Hourly rides in ``[start, end)`` and the snapshot they were read at."""
    frame, snapshot_id = _read_window(
        catalog,
        ACTUALS,
        ACTUALS_ASSET,
        f"pickup_hour >= '{_wall_clock(start)}' AND pickup_hour < '{_wall_clock(end)}'",
        f"{start:%Y-%m-%d %H:%M} and {end:%Y-%m-%d %H:%M}",
        "or pick an as-of time inside the data",
    )
    return frame.sort_values(["pulocationid", "pickup_hour"]).reset_index(drop=True), snapshot_id


def read_weather(catalog: Catalog, start: datetime, end: datetime) -> tuple[pd.DataFrame, int]:
    """Daily weather per county in ``[start, end)``, one column per element."""
    long, snapshot_id = _read_window(
        catalog,
        WEATHER,
        WEATHER_ASSET,
        f"date >= '{start:%Y-%m-%d}' AND date < '{end:%Y-%m-%d}'",
        f"{start:%Y-%m-%d} and {end:%Y-%m-%d}",
        "or train without weather",
    )
    wide = long.pivot_table(index=["county_fips", "date"], columns="element", values="value").reset_index()
    wide["date"] = pd.to_datetime(wide["date"])
    return wide, snapshot_id


def read_zones(catalog: Catalog) -> tuple[pd.DataFrame, int]:
    """TLC's zone lookup as published (``location_id``, ``zone``, ``borough``), and the snapshot read."""
    how = f"materialize {ZONES_ASSET} (job reference_data, which `./run demo` runs) first"
    table = _load(catalog, ZONES, f"{ZONES_ASSET} (job reference_data)")
    snapshot = table.current_snapshot()
    columns = ("location_id", *ZONE_NAMES)
    frame = table.scan(selected_fields=columns, snapshot_id=snapshot.snapshot_id).to_pandas() if snapshot else None
    if snapshot is None or frame is None or frame.empty:
        raise MissingInput(f"Table {ZONES} holds no zones: {how}.")
    record_read(ZONES, snapshot.snapshot_id, rows=len(frame))
    return frame, snapshot.snapshot_id


def with_zone_names(forecasts: pd.DataFrame, zones: pd.DataFrame) -> pd.DataFrame:
    """Each forecast row with its zone's name and borough (empty for a zone the lookup lacks)."""
    names = zones.rename(columns={"location_id": "pulocationid"})
    return forecasts.merge(names, on="pulocationid", how="left", validate="many_to_one")


def _described(schema: Schema) -> dict[str, str | None]:
    return {field.name: field.doc for field in schema.fields}


def write_forecasts(
    catalog: Catalog, forecasts: pd.DataFrame, run_id: str, columns_from: ColumnLineage | None = None
) -> int:
    """Replace this run's rows in the forecast table (a re-run of the same run never duplicates)."""
    created = catalog.create_table_if_not_exists(FORECAST, schema=FORECAST_SCHEMA, partition_spec=FORECAST_PARTITIONING)
    table = _wall_clock_typed(created, FORECAST)
    if _described(table.schema()) != _described(FORECAST_SCHEMA):
        # A table an older version created gains the newer columns (its rows keep them empty) and their docs.
        with table.update_schema() as update:
            update.union_by_name(FORECAST_SCHEMA)
    frame = forecasts.assign(
        pickup_hour=pd.to_datetime(forecasts["pickup_hour"]),
        created_at=pd.Timestamp.now(tz="UTC"),
    )
    arrow = pa.Table.from_pandas(frame[[f.name for f in FORECAST_SCHEMA.fields]], preserve_index=False)
    arrow = arrow.cast(FORECAST_SCHEMA.as_arrow())
    table.overwrite(arrow, overwrite_filter=equal_to("metaflow_run_id", run_id))
    snapshot_id = written_snapshot_id(table)
    record_write(FORECAST, snapshot_id, rows=len(frame), columns_from=columns_from, schema=FORECAST_COLUMNS)
    return snapshot_id


def read_forecasts(catalog: Catalog, run_id: str) -> pd.DataFrame:
    table = catalog.load_table(FORECAST)
    return table.scan(row_filter=equal_to("metaflow_run_id", run_id)).to_pandas()
