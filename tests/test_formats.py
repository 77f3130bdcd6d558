"""The TLC and NOAA layouts: what loads, what is refused, and why."""

import pyarrow as pa
import pytest

from forecast_assets.source_specs.registry import registered_sources
from forecast_assets.source_specs.tlc_trips import TripSource
from forecast_assets.source_specs.yellow_trips import YELLOW
from forecast_assets.sources.noaa_format import row_problems

TRIP_LAYOUTS = [source.layout for source in registered_sources() if isinstance(source, TripSource)]


@pytest.mark.parametrize("layout", TRIP_LAYOUTS, ids=lambda layout: layout.service)
@pytest.mark.parametrize("year", [2019, 2020, 2021, 2022, 2023, 2024, 2025, 2026])
def test_every_published_layout_loads(layout, year):
    assert layout.schema_problems(layout.published_schema(year)) == []


@pytest.mark.parametrize("layout", TRIP_LAYOUTS, ids=lambda layout: layout.service)
def test_a_layout_declares_its_times_and_optional_columns_among_its_columns(layout):
    assert {layout.columns[layout.pickup], layout.columns[layout.dropoff]} == {"timestamp_ntz"}
    assert layout.optional <= set(layout.columns)
    assert set(layout.descriptions) == set(layout.columns)
    assert layout.file_month(layout.file_name("2025-01")) == "2025-01"
    assert all(layout.file_month(other.file_name("2025-01")) is None for other in TRIP_LAYOUTS if other != layout)


def test_layouts_drift_as_tlc_published_them():
    names_2023, names_2024, names_2025 = (YELLOW.published_schema(y).names for y in (2023, 2024, 2025))
    assert "airport_fee" in names_2023 and "Airport_fee" in names_2024
    assert "cbd_congestion_fee" not in names_2024 and "cbd_congestion_fee" in names_2025
    assert YELLOW.published_schema(2023).field("PULocationID").type == pa.int64()
    assert YELLOW.published_schema(2024).field("PULocationID").type == pa.int32()


def test_an_entirely_empty_optional_column_loads_and_an_empty_required_one_is_refused():
    schema = YELLOW.published_schema(2019)
    assert schema.field("airport_fee").type == pa.null()
    assert YELLOW.schema_problems(schema) == []
    empty_zone = schema.set(schema.get_field_index("PULocationID"), pa.field("PULocationID", pa.null()))
    assert YELLOW.schema_problems(empty_zone) == [
        "column 'pulocationid' is entirely empty (Arrow type null), but every trip needs it"
    ]


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_timestamps_load_in_any_unit(unit):
    schema = YELLOW.published_schema(2024)
    for name in ("tpep_pickup_datetime", "tpep_dropoff_datetime"):
        schema = schema.set(schema.get_field_index(name), pa.field(name, pa.timestamp(unit)))
    assert YELLOW.schema_problems(schema) == []


def test_a_missing_required_column_is_named():
    schema = YELLOW.published_schema(2024).remove(YELLOW.published_schema(2024).get_field_index("PULocationID"))
    assert YELLOW.schema_problems(schema) == ["missing column 'pulocationid'"]


def test_a_column_of_the_wrong_kind_is_named():
    schema = YELLOW.published_schema(2024)
    schema = schema.set(schema.get_field_index("tpep_pickup_datetime"), pa.field("tpep_pickup_datetime", pa.string()))
    assert YELLOW.schema_problems(schema) == ["column 'tpep_pickup_datetime' is string, expected timestamp"]


def test_new_columns_are_reported_not_refused():
    schema = YELLOW.published_schema(2025).append(pa.field("surge_fee", pa.float64()))
    assert YELLOW.schema_problems(schema) == []
    assert YELLOW.unmapped_columns(schema) == ["surge_fee"]


def test_noaa_rows_are_checked_for_month_element_and_shape():
    good = ["cty", "36061", "New York County", "2025", "01", "prcp"] + ["    1.00"] * 31
    assert row_problems(good, "prcp", "2025-01") == []
    assert row_problems(good, "tmax", "2025-01") == ["holds element 'prcp', expected 'tmax'"]
    assert row_problems(good, "prcp", "2025-02") == ["is for 2025-01, expected 2025-02"]
    assert row_problems(good[:20], "prcp", "2025-01") == ["has 20 fields, expected 37"]


def test_the_usual_zones_are_the_busiest_carrying_the_share_of_recent_trips():
    from forecast_assets.lakehouse.neighbours import NeighbourMonth
    from forecast_assets.trip_zones import usual_zones

    neighbours = [
        NeighbourMonth("2024-12", 100, {1: 60, 2: 30, 3: 9, 4: 1}),
        NeighbourMonth("2024-11", 100, {1: 50, 2: 40, 3: 10}),
    ]
    assert usual_zones(neighbours, trip_share=0.95) == {1, 2, 3}  # 110 + 70 + 19 = 199 of 200 trips
    assert usual_zones(neighbours, trip_share=0.5) == {1}
    assert usual_zones([]) == set()
