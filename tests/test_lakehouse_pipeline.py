"""The monthly ingestion job on real Spark, Iceberg and a Dagster instance, read back with pyiceberg."""

import hashlib
import shutil

import pandas as pd
import pyarrow.parquet as pq
import pytest
from dagster import AssetKey, AssetSelection, DagsterEventType, Definitions, define_asset_job
from pyiceberg.expressions import EqualTo
from pyiceberg.types import TimestampType

from forecast_assets.assets.lakehouse_tables import eligible_zones
from forecast_assets.assets.month_checks import REUSED
from forecast_assets.assets.table_metadata import SNAPSHOT_ID
from forecast_assets.audits import ACTUALS_AUDITS
from forecast_assets.definitions import build_definitions
from forecast_assets.source_specs.yellow_trips import YELLOW
from forecast_assets.sources.noaa_format import ELEMENTS, NYC_COUNTY_FIPS
from taxi_core.names import TOP_ZONES
from taxi_demo.sample_source import TRIP_DIR, WEATHER_DIR
from tests.iceberg_tables import MONTHLY_SOURCES, TABLES, month_filter, published_snapshots, table
from tests.loopback import serve_folder
from tests.page_metadata import recorded_problems
from tests.sample_months import TEST_MONTHS

EVERY_AUDIT = [*(audit for source in MONTHLY_SOURCES for audit in source.audits), *ACTUALS_AUDITS]

pytestmark = pytest.mark.integration


def _table(name):
    return table(name)


def _snapshots() -> dict[str, int]:
    return published_snapshots()


def _raw_trips(month):
    return _table("nyc_taxi.raw_yellow").scan(row_filter=EqualTo("source_month", month)).to_arrow()


def _actuals(month):
    return (
        _table("nyc_taxi.yellow_rides_hourly_actuals").scan(row_filter=month_filter("pickup_hour", month)).to_pandas()
    )


def test_every_month_materializes_every_table_and_passes_every_check(pipeline):
    for month, result in pipeline.first_runs.items():
        assert result.success, month
        materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
        files = {source.file_asset for source in MONTHLY_SOURCES}
        assert materialized == {*files, *(t.replace(".", "/") for t in TABLES)}
        evaluations = result.get_asset_check_evaluations()
        assert len(evaluations) == len(EVERY_AUDIT)
        assert [e.check_name for e in evaluations if not e.passed] == []


def test_raw_trips_match_the_source_file_with_one_schema_across_years(pipeline, sample_source):
    for month in TEST_MONTHS:
        trips = _raw_trips(month)
        assert trips.num_rows == pq.ParquetFile(sample_source.trip_path(month)).metadata.num_rows
        assert set(trips.column_names) >= {"pulocationid", "airport_fee", "cbd_congestion_fee", "source_fingerprint"}
        assert trips.column("airport_fee").null_count < trips.num_rows  # Airport_fee and airport_fee both land
    assert _raw_trips("2024-12").column("cbd_congestion_fee").null_count == _raw_trips("2024-12").num_rows
    assert _raw_trips("2025-01").column("cbd_congestion_fee").null_count < _raw_trips("2025-01").num_rows


def test_actuals_hold_every_hour_of_every_zone_with_a_ride(pipeline, sample_source):
    month = "2025-01"
    actuals = _actuals(month)
    hours = 31 * 24
    # Recount from the source file with pandas, independently of Spark.
    trips = pq.read_table(sample_source.trip_path(month), columns=["tpep_pickup_datetime", "PULocationID"]).to_pandas()
    trips = trips[(trips.tpep_pickup_datetime >= "2025-01-01") & (trips.tpep_pickup_datetime < "2025-02-01")]
    ridden = trips[trips.PULocationID.isin(eligible_zones())].groupby("PULocationID").size()
    assert len(ridden) > TOP_ZONES  # the flow, not the table, chooses the busiest: it needs more to choose from
    assert len(actuals) == len(ridden) * hours
    assert actuals.groupby("pulocationid").pickup_hour.nunique().eq(hours).all()
    assert set(actuals.pulocationid) == set(ridden.index)
    assert actuals.groupby("pulocationid").total_rides.sum().sort_index().tolist() == ridden.sort_index().tolist()
    assert (actuals.total_rides == 0).any()  # quiet hours are present as zeros


def test_wall_clock_columns_are_timestamps_without_zone_and_keep_the_files_hours(pipeline, sample_source):
    for name, column in [
        ("nyc_taxi.raw_yellow", "tpep_pickup_datetime"),
        ("nyc_taxi.raw_yellow", "tpep_dropoff_datetime"),
        ("nyc_taxi.yellow_rides_hourly_actuals", "pickup_hour"),
    ]:
        field = _table(name).schema().find_field(column)
        assert isinstance(field.field_type, TimestampType), (name, column)  # Iceberg timestamp, no zone
        assert "New York wall-clock time" in field.doc and "02:00 hour" in field.doc
    month = "2025-01"
    # The trip file's own wall-clock hours (pyarrow, not Spark) are the actuals' hours with rides.
    pickups = pq.read_table(sample_source.trip_path(month), columns=["tpep_pickup_datetime", "PULocationID"])
    trips = pickups.to_pandas()
    trips = trips[(trips.tpep_pickup_datetime >= "2025-01-01") & (trips.tpep_pickup_datetime < "2025-02-01")]
    trips = trips[trips.PULocationID.isin(eligible_zones())]
    in_file = trips.groupby([trips.tpep_pickup_datetime.dt.floor("h"), "PULocationID"]).size()
    actuals = _actuals(month)
    assert actuals.pickup_hour.dt.tz is None
    ridden = actuals[actuals.total_rides > 0].set_index(["pickup_hour", "pulocationid"]).total_rides
    assert sorted(ridden.items()) == sorted((key, int(rides)) for key, rides in in_file.items())


def test_weather_is_long_format_for_the_five_boroughs(pipeline, sample_source):
    weather = _table("nyc_taxi.raw_weather").scan(row_filter=month_filter("date", "2024-12")).to_pandas()
    assert len(weather) == 5 * 31 * len(ELEMENTS)
    assert set(weather.county_fips) == set(NYC_COUNTY_FIPS)
    csv_row = next(
        line.split(",")
        for line in (sample_source.root / WEATHER_DIR / "2024" / "tmax-202412-cty-scaled.csv").read_text().splitlines()
        if line.split(",")[1] == "36061"
    )
    value = weather[
        (weather.county_fips == "36061") & (weather.element == "tmax") & (weather.date.astype(str) == "2024-12-07")
    ]
    assert value.value.item() == pytest.approx(float(csv_row[6 + 6]))


def test_materializations_carry_snapshot_schema_and_source(pipeline, sample_source):
    current = _snapshots()
    for name in TABLES:
        metadata = pipeline.latest_metadata(name)
        assert metadata[SNAPSHOT_ID].value == str(current[name])
        assert metadata["dagster/table_name"].value == name
        assert metadata["partition"].value == "2025-01-01"
        assert metadata["dagster/column_schema"].value.columns
        summary = _table(name).current_snapshot().summary
        assert summary["dagster.partition"] == "2025-01-01"
        # The run that wrote the snapshot: the latest run, or the one it names when it found the month unchanged.
        latest = pipeline.instance.get_latest_materialization_event(AssetKey(name.split(".")))
        unchanged = metadata["publication"].value == "unchanged"
        assert summary["dagster.run-id"] == (metadata["published_by_run"].value if unchanged else latest.run_id)
    raw = pipeline.latest_metadata("nyc_taxi.raw_yellow")
    digest = hashlib.sha256(sample_source.trip_path("2025-01").read_bytes()).hexdigest()
    assert raw["source_fingerprint"].value == f"sha256:{digest}"
    assert raw["source_file"].value == YELLOW.file_name("2025-01")
    assert raw["dagster/row_count"].value == _raw_trips("2025-01").num_rows
    actuals = pipeline.latest_metadata("nyc_taxi.yellow_rides_hourly_actuals")
    assert actuals["source_fingerprint"].value == raw["source_fingerprint"].value
    assert actuals["raw_yellow_snapshot_id"].value == raw[SNAPSHOT_ID].value


def test_every_materialization_and_check_fits_a_laptop_screen(pipeline):
    """Tables of a few columns, rounded figures, identities as text, no long JSON inline (tests/page_metadata.py)."""
    assert recorded_problems(pipeline.instance) == {}


def test_a_published_month_s_checks_name_no_staging_branch(pipeline):
    """Publishing drops the branch the month was staged on: its checks name the snapshot published instead."""
    kinds = {DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_CHECK_EVALUATION}
    checked = 0
    for run in pipeline.instance.get_runs():
        entries = [entry.dagster_event for entry in pipeline.instance.all_logs(run.run_id, of_type=kinds)]
        published = {
            event.asset_key
            for event in entries
            if event.is_step_materialization
            and getattr(event.materialization.metadata.get("publication"), "value", None) == "published"
        }
        for event in entries:
            evaluation = event.event_specific_data
            if event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION and evaluation.asset_key in published:
                assert not {"staged_branch", "read_staged_with"} & set(evaluation.metadata), evaluation.check_name
                assert "published" in evaluation.metadata["audited"].value
                checked += 1
    assert checked


def test_rematerializing_an_unchanged_month_writes_no_snapshot(pipeline):
    before = _snapshots()
    result = pipeline.run("2025-01-01")
    assert result.success
    assert _snapshots() == before
    for name in TABLES:
        metadata = pipeline.latest_metadata(name)
        assert metadata["publication"].value == "unchanged", name
        assert int(metadata[SNAPSHOT_ID].value) != 0
    evaluations = result.get_asset_check_evaluations()
    assert len(evaluations) == len(EVERY_AUDIT)
    # Not audited again: each check reports the result its month was published with, and says so.
    assert all(evaluation.metadata[REUSED].value is True for evaluation in evaluations)
    row_count = next(e for e in evaluations if e.check_name == "raw_yellow_row_count_matches_source")
    assert row_count.metadata["table_rows"].value == _raw_trips("2025-01").num_rows
    assert "not audited again" in row_count.metadata["audited"].value
    files = pipeline.latest_metadata("taxi_trip_files")
    assert files["downloaded"].value is False  # unchanged at the source: not fetched again


def test_a_forced_rewrite_replaces_the_month_with_identical_counts(pipeline):
    before = {name: pipeline.latest_metadata(name) for name in TABLES}
    snapshots = _snapshots()
    table_rows = {name: _table(name).scan().to_arrow().num_rows for name in TABLES}
    force = {"config": {"rewrite_unchanged": True}}
    # Every source's table is forced; the actuals are rewritten because the raw month they count is new.
    steps = [source.table.identifier.replace(".", "__") for source in MONTHLY_SOURCES]
    config = {"ops": {step: force for step in steps}}
    result = pipeline.run("2025-01-01", run_config=config)
    assert result.success
    after_snapshots = _snapshots()
    for name in TABLES:
        after = pipeline.latest_metadata(name)
        assert after["publication"].value == "published", name
        assert after["dagster/row_count"].value == before[name]["dagster/row_count"].value
        assert after_snapshots[name] != snapshots[name]
        assert _table(name).scan().to_arrow().num_rows == table_rows[name]


def test_a_check_fails_on_duplicated_actuals(pipeline):
    table = _table("nyc_taxi.yellow_rides_hourly_actuals")
    good_snapshot = table.current_snapshot().snapshot_id
    table.append(table.scan(row_filter=month_filter("pickup_hour", "2025-01"), limit=3).to_arrow())
    try:
        checks_only = define_asset_job(
            "actuals_checks",
            selection=AssetSelection.checks_for_assets(AssetKey(["nyc_taxi", "yellow_rides_hourly_actuals"])),
        )
        job = Definitions.merge(build_definitions(pipeline.settings), Definitions(jobs=[checks_only])).resolve_job_def(
            "actuals_checks"
        )
        # A checks-only run names its partition by tag, as the UI's "Execute checks" does.
        result = job.execute_in_process(
            tags={"dagster/partition": "2025-01-01"}, instance=pipeline.instance, raise_on_error=False
        )
        failed = {e.check_name: e for e in result.get_asset_check_evaluations() if not e.passed}
        assert set(failed) == {"actuals_no_duplicate_keys"}
        assert failed["actuals_no_duplicate_keys"].metadata["duplicate_keys"].value == 3
        # Every check names the version it checked: January's, the snapshot on main that last wrote the month
        # (per Iceberg's summaries; the rows appended since carry no partition of their own).
        table = _table("nyc_taxi.yellow_rides_hourly_actuals")
        snapshot = table.current_snapshot()
        while _written_month(table, snapshot) != "2025-01-01":
            snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id)
        checked = {e.metadata["iceberg/snapshot_id"].value for e in result.get_asset_check_evaluations()}
        assert checked == {str(snapshot.snapshot_id)}
    finally:
        table.manage_snapshots().rollback_to_snapshot(good_snapshot).commit()


def _written_month(table, snapshot) -> str | None:
    """The partition a snapshot's write names, or that of the snapshot it was cherry-picked from."""
    summary = snapshot.summary.additional_properties if snapshot.summary else {}
    source = summary.get("source-snapshot-id")
    if "dagster.partition" not in summary and source:
        return _written_month(table, table.snapshot_by_id(int(source)))
    return summary.get("dagster.partition")


@pytest.fixture
def bad_source(sample_source, tmp_path):
    """A copy of the sample source whose 2025-01 trip file a test spoils."""
    root = tmp_path / "source"
    shutil.copytree(sample_source.root, root)
    return root, root / TRIP_DIR / YELLOW.file_name("2025-01")


def _spoil(kind: str, path, sample_source):
    good = sample_source.trip_path("2025-01")
    if kind == "html":
        path.write_text("<!DOCTYPE html><html><body><h1>403 Forbidden</h1></body></html>")
    elif kind == "truncated":
        path.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    elif kind == "missing_column":
        pq.write_table(pq.read_table(good).drop(["tpep_pickup_datetime"]), path)


@pytest.mark.parametrize(
    ("kind", "partition", "expected"),
    [
        ("html", "2025-01-01", "yellow_tripdata_2025-01.parquet from .* is an HTML page"),
        ("truncated", "2025-01-01", "yellow_tripdata_2025-01.parquet from .* is truncated"),
        ("missing_column", "2025-01-01", "missing column 'tpep_pickup_datetime'"),
        (
            "missing_month",
            "2025-03-01",
            "yellow_tripdata_2025-03.parquet does not exist .* Materialize an earlier month",
        ),
    ],
)
def test_bad_input_fails_clearly_and_changes_no_table(pipeline, sample_source, bad_source, kind, partition, expected):
    root, trip_file = bad_source
    _spoil(kind, trip_file, sample_source)
    before = _snapshots()
    weather_before = _table("nyc_taxi.raw_weather").scan().to_pandas().sort_values(["county_fips", "date", "element"])
    staged_before = pipeline.latest_metadata("taxi_trip_files")["source_fingerprint"].value
    with serve_folder(root) as base_url:
        result = pipeline.run(partition, base_url)
    assert not result.success
    failure = next(e for e in result.get_step_failure_events() if e.step_key == "taxi_trip_files")
    message = failure.step_failure_data.error.message + " " + str(failure.step_failure_data.user_failure_data)
    assert pd.Series([message]).str.contains(expected, regex=True).item(), message
    after = _snapshots()
    assert after["nyc_taxi.raw_yellow"] == before["nyc_taxi.raw_yellow"]
    assert after["nyc_taxi.yellow_rides_hourly_actuals"] == before["nyc_taxi.yellow_rides_hourly_actuals"]
    weather_after = _table("nyc_taxi.raw_weather").scan().to_pandas().sort_values(["county_fips", "date", "element"])
    pd.testing.assert_frame_equal(weather_after.reset_index(drop=True), weather_before.reset_index(drop=True))
    assert pipeline.latest_metadata("taxi_trip_files")["source_fingerprint"].value == staged_before
