"""Bad files are refused with a message that names the file and what to do."""

import pyarrow.parquet as pq
import pytest

from forecast_assets.source_specs.yellow_trips import YELLOW
from forecast_assets.sources.download import SourceInvalid
from forecast_assets.sources.noaa_format import weather_file_path
from forecast_assets.sources.verify import verify_trip_file, verify_weather_file
from taxi_demo.sample_source import WEATHER_DIR

URL = "https://example.invalid/trip-data/yellow_tripdata_2025-01.parquet"


def test_a_good_trip_file_reports_its_rows(sample_source):
    facts = verify_trip_file(sample_source.trip_path("2025-01"), URL, YELLOW, "TAXI_TRIP_BASE_URL")
    assert facts.rows == pq.ParquetFile(sample_source.trip_path("2025-01")).metadata.num_rows


def test_html_saved_as_parquet(tmp_path):
    path = tmp_path / "yellow_tripdata_2025-01.parquet"
    path.write_text("<!DOCTYPE html><html><body>Access Denied</body></html>")
    with pytest.raises(SourceInvalid, match=r"yellow_tripdata_2025-01.parquet .* is an HTML page"):
        verify_trip_file(path, URL, YELLOW, "TAXI_TRIP_BASE_URL")


def test_truncated_parquet(sample_source, tmp_path):
    path = tmp_path / "yellow_tripdata_2025-01.parquet"
    path.write_bytes(sample_source.trip_path("2025-01").read_bytes()[:50_000])
    with pytest.raises(SourceInvalid, match="is truncated .* download it again"):
        verify_trip_file(path, URL, YELLOW, "TAXI_TRIP_BASE_URL")


def test_missing_required_column(sample_source, tmp_path):
    path = tmp_path / "yellow_tripdata_2025-01.parquet"
    pq.write_table(pq.read_table(sample_source.trip_path("2025-01")).drop(["PULocationID"]), path)
    with pytest.raises(SourceInvalid, match="missing column 'pulocationid'"):
        verify_trip_file(path, URL, YELLOW, "TAXI_TRIP_BASE_URL")


def test_not_parquet_at_all(tmp_path):
    path = tmp_path / "yellow_tripdata_2025-01.parquet"
    path.write_bytes(b"VendorID,tpep_pickup_datetime\n1,2025-01-01\n")
    with pytest.raises(SourceInvalid, match="not a Parquet file"):
        verify_trip_file(path, URL, YELLOW, "TAXI_TRIP_BASE_URL")


def test_weather_csv_with_a_cut_row(sample_source, tmp_path):
    source = sample_source.root / WEATHER_DIR / weather_file_path("tmax", "2025-01")
    path = tmp_path / source.name
    path.write_text(source.read_text()[:-120])
    with pytest.raises(SourceInvalid, match=r"tmax-202501-cty-scaled.csv .* line \d+ has \d+ fields"):
        verify_weather_file(path, "file:///x", "tmax", "2025-01")


def test_weather_csv_without_nyc_rows(sample_source, tmp_path):
    source = sample_source.root / WEATHER_DIR / weather_file_path("prcp", "2025-01")
    path = tmp_path / source.name
    path.write_text("\n".join(line for line in source.read_text().splitlines() if ",36061," not in line))
    with pytest.raises(SourceInvalid, match="no rows for NYC counties 36061"):
        verify_weather_file(path, "file:///x", "prcp", "2025-01")


def test_weather_csv_with_a_repeated_county_row(sample_source, tmp_path):
    source = sample_source.root / WEATHER_DIR / weather_file_path("prcp", "2025-01")
    path = tmp_path / source.name
    lines = source.read_text().splitlines()
    repeated = next(number for number, line in enumerate(lines, start=1) if ",36061," in line)
    path.write_text("\n".join([*lines, lines[repeated - 1]]) + "\n")
    with pytest.raises(SourceInvalid, match=rf"two rows for county 36061 \(lines {repeated} and {len(lines) + 1}\)"):
        verify_weather_file(path, "file:///x", "prcp", "2025-01")
