"""The sample source writes the public formats, deterministically, with a known demand process."""

import hashlib

import pandas as pd
import pyarrow.parquet as pq

from forecast_assets.sources.noaa_format import ELEMENTS, MISSING_VALUE, NYC_COUNTY_FIPS, weather_file_path
from forecast_assets.sources.tlc_format import published_schema
from taxi_demo.sample_source import WEATHER_DIR, SampleSource
from tests.sample_months import TEST_TRIPS_PER_MONTH


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_same_seed_same_files(sample_source, tmp_path):
    again = SampleSource(tmp_path, trips_per_month=TEST_TRIPS_PER_MONTH)
    again.write_month("2025-01")
    assert _digest(again.trip_path("2025-01")) == _digest(sample_source.trip_path("2025-01"))
    assert _digest(again.truth_path("2025-01")) == _digest(sample_source.truth_path("2025-01"))


def test_trip_files_have_the_published_schema_of_their_year(sample_source):
    assert pq.read_schema(sample_source.trip_path("2024-12")) == published_schema(2024)
    assert pq.read_schema(sample_source.trip_path("2025-01")) == published_schema(2025)


def test_trip_counts_follow_the_recorded_true_rates(sample_source):
    trips = pq.read_table(sample_source.trip_path("2025-01"), columns=["tpep_pickup_datetime", "PULocationID"])
    frame = trips.to_pandas()
    in_month = frame[(frame.tpep_pickup_datetime >= "2025-01-01") & (frame.tpep_pickup_datetime < "2025-02-01")]
    truth = pd.read_parquet(sample_source.truth_path("2025-01"))
    expected = truth.true_rate.sum()
    # Poisson: the total lies within a few standard deviations of the summed rate.
    assert abs(len(in_month) - expected) < 5 * expected**0.5
    assert len(frame) - len(in_month) < 0.001 * len(frame)  # the few out-of-month clock errors
    busiest_true = truth.groupby("pulocationid").true_rate.sum().nlargest(5).index
    busiest_seen = in_month.groupby("PULocationID").size().nlargest(10).index
    assert set(busiest_true) <= set(busiest_seen)


def test_demand_has_daily_seasonality_and_a_weather_effect(sample_source):
    truth = pd.read_parquet(sample_source.truth_path("2025-01"))
    by_hour = truth.groupby(truth.pickup_hour.dt.hour).true_rate.sum()
    assert by_hour[18] > 3 * by_hour[4]
    manhattan = truth[truth.pulocationid == 161]
    daily = manhattan.groupby(manhattan.pickup_hour.dt.date).true_rate.sum()
    weekday_daily = daily[[pd.Timestamp(d).day_of_week == 2 for d in daily.index]]
    assert weekday_daily.max() > weekday_daily.min() * 1.05  # same weekday, different weather


def test_weather_files_have_the_noaa_layout(sample_source):
    for element in ELEMENTS:
        path = sample_source.root / WEATHER_DIR / weather_file_path(element, "2024-12")
        rows = [line.split(",") for line in path.read_text().splitlines()]
        assert all(len(row) == 37 for row in rows)
        assert {row[1] for row in rows} >= set(NYC_COUNTY_FIPS)
        assert "01001" in {row[1] for row in rows}  # a leading zero kept as NOAA writes it
        assert all(float(row[-1]) != MISSING_VALUE for row in rows)  # December has 31 days


def test_another_scale_writes_the_files_again(tmp_path):
    small = SampleSource(tmp_path, trips_per_month=2_000)
    small.write_months(["2025-01"])
    first = pq.read_metadata(small.trip_path("2025-01")).num_rows
    larger = SampleSource(tmp_path, trips_per_month=8_000)
    larger.write_months(["2025-01"])
    assert pq.read_metadata(larger.trip_path("2025-01")).num_rows > 3 * first
    small.write_months(["2025-01"])
    assert pq.read_metadata(small.trip_path("2025-01")).num_rows == first
