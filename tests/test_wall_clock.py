"""New York wall-clock times are typed as such (Iceberg ``timestamp`` without zone) and come back unchanged:
from a trip file through Spark to the actuals and out through pyiceberg; a table an older version typed
``timestamptz`` is migrated with its values and history."""

from __future__ import annotations

from datetime import date, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.types import TimestampType

from taxi_core.months import MonthWindow
from taxi_core.wall_clock import REPLACED_SNAPSHOT_PROPERTY, ZonedWallClock
from tests.iceberg_tables import table

pytestmark = pytest.mark.integration

# A spring-forward day: 02:00-03:00 does not exist in New York; the trips jump from 01:xx to 03:xx.
PICKUPS = [
    datetime(2025, 3, 1, 0, 30),
    datetime(2025, 3, 9, 1, 59),
    datetime(2025, 3, 9, 3, 5),
    datetime(2025, 3, 31, 23, 59, 59),
]
ZONE = 132


@pytest.fixture(scope="module")
def spark():
    from forecast_assets.definitions import resources_for
    from taxi_core.settings import load_settings

    return resources_for(load_settings())["spark"].session


def _trip_file(path, unit: str) -> None:
    pickups = pa.array(PICKUPS, pa.timestamp("us")).cast(pa.timestamp(unit))
    trips = pa.table({"tpep_pickup_datetime": pickups, "tpep_dropoff_datetime": pickups, "PULocationID": [ZONE] * 4})
    pq.write_table(trips, path, coerce_timestamps=None if unit == "ns" else unit, version="2.6")


@pytest.mark.parametrize("unit", ["us", "ns"])
def test_a_trips_wall_clock_hour_is_the_actuals_pickup_hour_through_pyiceberg(spark, tmp_path, unit):
    from forecast_assets.lakehouse.tables import HOURLY_ACTUALS, TableSpec, ensure_table
    from forecast_assets.source_specs.yellow_trips import YELLOW
    from forecast_assets.transforms.hourly_actuals import hourly_actuals
    from forecast_assets.transforms.tlc_trips import normalize_trips, with_timestamps

    path = tmp_path / "yellow_tripdata_2025-03.parquet"
    _trip_file(path, unit)
    trips = normalize_trips(
        with_timestamps(spark.read.parquet(str(path)), YELLOW), YELLOW, "2025-03", path.name, "x", datetime.now()
    )
    assert dict(trips.dtypes)["tpep_pickup_datetime"] == "timestamp_ntz"
    spec = TableSpec(f"wall_clock_actuals_{unit}", HOURLY_ACTUALS.columns, HOURLY_ACTUALS.partitioned_by,
                     HOURLY_ACTUALS.month_column, descriptions=HOURLY_ACTUALS.descriptions)  # fmt: skip
    ensure_table(spark, spec)
    rows = hourly_actuals(spark, trips, datetime(2025, 3, 1), datetime(2025, 4, 1), [ZONE], None)
    rows.writeTo(spec.identifier).append()

    read = table(spec.identifier)
    assert isinstance(read.schema().find_field("pickup_hour").field_type, TimestampType)
    assert "New York wall-clock time" in read.schema().find_field("pickup_hour").doc
    actuals = read.scan().to_arrow()
    assert actuals.schema.field("pickup_hour").type == pa.timestamp("us")  # no zone
    by_hour = dict(
        zip(actuals.column("pickup_hour").to_pylist(), actuals.column("total_rides").to_pylist(), strict=True)
    )
    # The independent truth: the trip file itself, read with pyarrow, truncated to its wall-clock hours.
    in_file = [p.replace(minute=0, second=0) for p in pq.read_table(path).column("tpep_pickup_datetime").to_pylist()]
    assert {hour for hour, rides in by_hour.items() if rides} == set(in_file)
    assert by_hour[datetime(2025, 3, 1, 0)] == 1 and by_hour[datetime(2025, 3, 9, 2)] == 0  # the skipped hour
    assert len(by_hour) == 31 * 24  # every wall-clock hour of the month, as the grid lays them out
    partitions = {row["partition"]["pickup_hour_month"] for row in read.inspect.partitions().to_pylist()}
    assert partitions == {(2025 - 1970) * 12 + 2}  # March 2025, as before
    spark.sql(f"DROP TABLE {spec.identifier} PURGE")


def test_a_table_typed_timestamptz_by_an_older_version_is_migrated_keeping_values_and_history(spark):
    from forecast_assets.lakehouse.publication import Publication
    from forecast_assets.lakehouse.tables import HOURLY_ACTUALS, TableSpec

    spec = TableSpec("wall_clock_migrated", HOURLY_ACTUALS.columns, HOURLY_ACTUALS.partitioned_by,
                     HOURLY_ACTUALS.month_column, descriptions=HOURLY_ACTUALS.descriptions)  # fmt: skip
    # As the older version made it: TIMESTAMP is Iceberg's timestamptz, the wall-clock value labelled UTC.
    old = TableSpec(spec.name, {**spec.columns, "pickup_hour": "timestamp"}, spec.partitioned_by, spec.month_column)
    spark.sql(old.ddl())
    spark.sql(f"ALTER TABLE {spec.identifier} CREATE BRANCH IF NOT EXISTS main")
    month = spark.sql(
        f"SELECT TIMESTAMP '2025-01-01 00:00:00' AS pickup_hour, {ZONE} AS pulocationid, 7L AS total_rides"
    )
    # As a published month's commit: its summary names the partition.
    month.writeTo(spec.identifier).option("snapshot-property.dagster.partition", "2025-01-01").append()
    written = table(spec.identifier).current_snapshot().snapshot_id
    before = len(table(spec.identifier).snapshots())
    assert not isinstance(table(spec.identifier).schema().find_field("pickup_hour").field_type, TimestampType)

    with pytest.raises(ZonedWallClock, match=r"taxi migrate-times"):  # the flow's readers name the migration
        from flows.forecasting.tables import _wall_clock_typed

        _wall_clock_typed(table(spec.identifier), spec.identifier)

    # A publication opens the table as the pipeline does (ensure_table, which migrates it), then walks main's
    # history past the migration to the month's own commit.
    opened = Publication.open(spark, spec, MonthWindow.from_partition_key("2025-01-01"), "2025-01-01")
    assert opened.published.snapshot_id == written
    migrated = table(spec.identifier)
    field = migrated.schema().find_field("pickup_hour")
    assert isinstance(field.field_type, TimestampType) and field.doc == spec.descriptions["pickup_hour"]
    rows = migrated.scan().to_arrow().to_pylist()
    assert rows == [{"pickup_hour": datetime(2025, 1, 1, 0, 0), "pulocationid": ZONE, "total_rides": 7}]
    assert len(migrated.snapshots()) > before  # the earlier snapshots are kept
    assert migrated.snapshot_by_id(written) is not None
    first = migrated.current_snapshot()
    while first.parent_snapshot_id is not None:
        first = migrated.snapshot_by_id(first.parent_snapshot_id)
    assert first.summary[REPLACED_SNAPSHOT_PROPERTY] == str(written)
    spark.sql(f"DROP TABLE {spec.identifier} PURGE")


def test_a_forecast_table_typed_timestamptz_is_migrated_and_written_again(spark):
    import pandas as pd
    from pyiceberg.schema import Schema

    from flows.forecasting.tables import FORECAST_PARTITIONING, FORECAST_SCHEMA
    from forecast_assets.wall_clock_migration import migrate_forecast
    from taxi_core.catalog import CatalogConfig, open_catalog
    from taxi_core.settings import load_settings

    identifier = "nyc_taxi.wall_clock_forecast"
    old_fields = [replace_type(f) for f in FORECAST_SCHEMA.fields]
    catalog = open_catalog(CatalogConfig.from_settings(load_settings()))
    catalog.create_namespace_if_not_exists("nyc_taxi")
    old = catalog.create_table(identifier, schema=Schema(*old_fields), partition_spec=FORECAST_PARTITIONING)
    hour = pd.Timestamp("2025-02-01 00:00", tz="UTC")  # as an older version wrote it: the wall clock labelled UTC
    row = {f.name: None for f in FORECAST_SCHEMA.fields} | {"pickup_hour": hour, "pulocationid": ZONE}
    old.append(pa.Table.from_pylist([row], schema=Schema(*old_fields).as_arrow()))

    assert migrate_forecast(spark, identifier)
    migrated = catalog.load_table(identifier)
    field = migrated.schema().find_field("pickup_hour")
    assert isinstance(field.field_type, TimestampType) and "New York wall-clock time" in field.doc
    assert migrated.scan().to_arrow().column("pickup_hour").to_pylist() == [datetime(2025, 2, 1, 0, 0)]
    partitions = [p["partition"]["pickup_hour_day"] for p in migrated.inspect.partitions().to_pylist()]
    assert partitions == [date(2025, 2, 1)]  # the same day partition
    assert not migrate_forecast(spark, identifier)  # once is enough
    catalog.purge_table(identifier)


def replace_type(field):
    """A forecast column as an older version declared it: ``pickup_hour`` as timestamptz."""
    from pyiceberg.types import NestedField, TimestamptzType

    if field.name != "pickup_hour":
        return field
    return NestedField(field.field_id, field.name, TimestamptzType(), required=False, doc=field.doc)
