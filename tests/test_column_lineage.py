"""Column lineage: derived from Spark's plans of the real transforms, carried to OpenLineage and DataHub."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import functions as F

from bridge.translate.column_lineage import ColumnOrigin, InputColumn, Transformation
from bridge.translate.dagster_columns import column_lineage_from_metadata, column_lineage_metadata
from bridge.translate.datahub import metadata_for
from bridge.translate.spark_plan import PlanNode, column_lineage, derive, plan_of
from flows.forecasting.column_lineage import UnknownFeature, forecast_lineage, model_lineage
from forecast_assets.source_specs.yellow_trips import COLUMNS as RAW_COLUMN_TYPES
from forecast_assets.source_specs.yellow_trips import YELLOW
from forecast_assets.transforms.hourly_actuals import hourly_actuals
from forecast_assets.transforms.raw_weather import CSV_OPTIONS, CSV_SCHEMA, weather_long
from forecast_assets.transforms.tlc_trips import normalize_trips, with_timestamps
from taxi_core.names import ACTUALS, RAW_WEATHER
from tests.test_golden import NAMING

TRIP_FILES, RAW_YELLOW = "taxi_trip_files", "nyc_taxi/raw_yellow"
GOLDEN_EVENTS = Path(__file__).parent / "golden" / "openlineage"


@pytest.fixture(scope="module")
def spark():
    from forecast_assets.definitions import resources_for
    from taxi_core.settings import load_settings

    return resources_for(load_settings())["spark"].session


@pytest.fixture(scope="module")
def trip_file(spark, tmp_path_factory):
    """A TLC-style file: the publisher's column names and case, a few trips."""
    path = tmp_path_factory.mktemp("tlc") / "yellow_tripdata_2025-01.parquet"
    pd.DataFrame(
        {
            "VendorID": [1, 2, 2],
            "tpep_pickup_datetime": pd.to_datetime(["2025-01-01 00:10", "2025-01-01 00:40", "2025-01-01 01:05"]),
            "PULocationID": [132, 132, 161],
            "trip_distance": [1.5, 2.0, 3.1],
            "fare_amount": [9.0, 12.5, 15.0],
        }
    ).to_parquet(path)
    return spark.read.parquet(str(path))


def _raw_yellow(trip_file):
    return normalize_trips(
        with_timestamps(trip_file, YELLOW), YELLOW, "2025-01", "f.parquet", "sha256:x", datetime(2025, 2, 1)
    )


def _direct(origins: tuple[ColumnOrigin, ...]) -> set[str]:
    return {o.input.column for o in origins if o.direct}


def _deciding(origins: tuple[ColumnOrigin, ...], subtype: str) -> set[str]:
    """The input columns that decide, by ``subtype`` (FILTER, JOIN...), which rows there are."""
    return {o.input.column for o in origins if Transformation("INDIRECT", subtype) in o.transformations}


pytestmark = pytest.mark.integration


def test_raw_yellow_columns_come_from_the_file_s_columns_renamed_and_cast(trip_file):
    lineage = column_lineage(_raw_yellow(trip_file), {TRIP_FILES: trip_file})
    by_file_column = {name: _direct(origins) for name, origins in lineage.items() if origins}
    assert by_file_column == {
        "vendorid": {"VendorID"},
        "tpep_pickup_datetime": {"tpep_pickup_datetime"},
        "pulocationid": {"PULocationID"},
        "trip_distance": {"trip_distance"},
        "fare_amount": {"fare_amount"},
    }
    assert set(lineage) == set(RAW_COLUMN_TYPES) | {"source_month", "source_file", "source_fingerprint", "ingested_at"}
    assert lineage["pulocationid"][0].transformations == (Transformation("DIRECT", "TRANSFORMATION"),)  # cast
    assert {o.input.source for origins in lineage.values() for o in origins} == {TRIP_FILES}


def test_changing_a_transform_changes_its_lineage_with_no_list_to_edit(trip_file):
    changed = (
        _raw_yellow(trip_file)
        .withColumn("fare_per_mile", F.col("fare_amount") / F.col("trip_distance"))
        .drop("vendorid")
        .where(F.col("trip_distance") > 0)
    )
    lineage = column_lineage(changed, {TRIP_FILES: trip_file})
    assert "vendorid" not in lineage
    assert _direct(lineage["fare_per_mile"]) == {"fare_amount", "trip_distance"}
    filtered = {
        o.input.column for o in lineage["pulocationid"] if Transformation("INDIRECT", "FILTER") in o.transformations
    }
    assert filtered == {"trip_distance"}


def test_actuals_count_the_trips_of_each_zone_and_hour(spark, trip_file):
    trips = _raw_yellow(trip_file)
    # A DataFrame of its own, as the published table is to the transform.
    table = spark.createDataFrame(trips.select("tpep_pickup_datetime", "pulocationid").toPandas())
    actuals = hourly_actuals(spark, table, datetime(2025, 1, 1), datetime(2025, 2, 1), [132, 161], 50)
    lineage = column_lineage(actuals, {RAW_YELLOW: table})
    assert _direct(lineage["pulocationid"]) == {"pulocationid"}
    assert _direct(lineage["total_rides"]) == set()  # count(1) reads no column's values...
    grouped = {
        o.input.column for o in lineage["total_rides"] if Transformation("INDIRECT", "GROUP_BY") in o.transformations
    }
    assert grouped == {"tpep_pickup_datetime", "pulocationid"}  # ...it counts the trips per hour and zone
    joined = {o.input.column for o in lineage["pickup_hour"] if Transformation("INDIRECT", "JOIN") in o.transformations}
    assert "tpep_pickup_datetime" in joined  # the month's hour grid, matched to the trips' hours


def test_weather_values_come_from_the_day_columns(spark, tmp_path):
    csv = tmp_path / "county.csv"
    csv.write_text("36061,NY,New York,2025,1,prcp," + ",".join(["1.5"] * 31) + "\n")
    rows = spark.read.schema(CSV_SCHEMA).options(**CSV_OPTIONS).csv(str(csv))
    lineage = column_lineage(weather_long(rows), {"weather_files": rows})
    assert _direct(lineage["value"]) == {f"day_{day:02d}" for day in range(1, 32)}
    assert _direct(lineage["county_fips"]) == {"region_code"}


def test_a_saved_plan_derives_the_same_lineage(trip_file):
    plan = plan_of(_raw_yellow(trip_file), {TRIP_FILES: trip_file})
    assert derive(PlanNode.from_json(json.loads(json.dumps(plan.to_json())))) == derive(plan)


def test_dagster_metadata_carries_the_lineage_both_ways(trip_file):
    lineage = column_lineage(_raw_yellow(trip_file), {TRIP_FILES: trip_file})
    metadata = column_lineage_metadata(lineage)
    plain = metadata["dagster/column_lineage"].deps_by_column
    assert [(d.asset_key.to_user_string(), d.column_name) for d in plain["pulocationid"]] == [
        (TRIP_FILES, "PULocationID")
    ]
    unwrapped = {key: getattr(value, "value", value) for key, value in metadata.items()}
    assert column_lineage_from_metadata(unwrapped) == {k: v for k, v in lineage.items()}
    only_dagster = column_lineage_from_metadata({"dagster/column_lineage": metadata["dagster/column_lineage"]})
    assert only_dagster["pulocationid"] == (ColumnOrigin(InputColumn(TRIP_FILES, "PULocationID"), ()),)


def test_a_model_without_weather_names_no_weather_column():
    without = forecast_lineage(["pulocationid", "hour", "lag_168", "seasonal_mean"])
    sources = {o.input.source for o in without["forecasted_total_rides"]}
    assert sources == {ACTUALS}
    with_weather = model_lineage(["pulocationid", "prcp_known"])
    assert {o.input.source for o in with_weather["prcp_known"]} == {RAW_WEATHER}
    with pytest.raises(UnknownFeature, match="Feature wind has no known source columns"):
        model_lineage(["wind"])


def _golden_events(prefix: str) -> list[dict]:
    return [
        entry["event"]
        for path in sorted(GOLDEN_EVENTS.glob(f"{prefix}*.json"))
        for entry in json.loads(path.read_text())
    ]


def test_datahub_gets_fine_grained_lineage_on_the_forecast_and_the_tables():
    aspects = [
        mcp for event in _golden_events("") if event["eventType"] == "COMPLETE" for mcp in metadata_for(event, NAMING)
    ]
    lineages = {
        (mcp.entityUrn, tuple(f.downstreams), tuple(f.upstreams))
        for mcp in aspects
        if type(mcp.aspect).__name__ == "UpstreamLineageClass"
        for f in mcp.aspect.fineGrainedLineages or []
    }
    forecast = "urn:li:dataset:(urn:li:dataPlatform:iceberg,nyc_taxi.yellow_rides_hourly_forecast,PROD)"
    actuals = "urn:li:dataset:(urn:li:dataPlatform:iceberg,nyc_taxi.yellow_rides_hourly_actuals,PROD)"
    downstream = f"urn:li:schemaField:({forecast},forecasted_total_rides)"
    upstreams = {u for urn, down, ups in lineages if urn == forecast and down == (downstream,) for u in ups}
    assert f"urn:li:schemaField:({actuals},total_rides)" in upstreams
    raw = "urn:li:dataset:(urn:li:dataPlatform:iceberg,nyc_taxi.raw_yellow,PROD)"
    assert any(urn == raw and "PULocationID" in ups[0] for urn, _, ups in lineages if len(ups) == 1)
