"""A bad month never reaches the published tables; an unchanged one is not written again.

Each case serves a generated variant of the sample source from a loopback server to the real
ingestion job and compares every table's published (``main``) snapshot before and after.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from forecast_assets.assets.table_metadata import SNAPSHOT_ID
from forecast_assets.source_specs.yellow_trips import SOURCE as YELLOW_TRIPS
from forecast_assets.source_specs.yellow_trips import YELLOW
from forecast_assets.sources.noaa_format import weather_file_path
from taxi_demo.sample_source import TRIP_DIR, WEATHER_DIR
from tests.hostile_server import CUT_CHUNKED, GOOD, RESET, HostileServer
from tests.iceberg_tables import TABLES, branches, published_snapshots, table
from tests.loopback import serve_folder

pytestmark = pytest.mark.integration

MONTH, PARTITION = "2025-01", "2025-01-01"
RAW_YELLOW, ACTUALS = "nyc_taxi.raw_yellow", "nyc_taxi.yellow_rides_hourly_actuals"


@pytest.fixture
def restored(pipeline, sample_server):
    """After the test, the sample month is staged and published again from the sample server, so the next test
    (in any module) starts from the good data, fetched last from its usual address."""
    yield
    assert pipeline.run(PARTITION, sample_server).success


@pytest.fixture
def variant(restored, sample_source, tmp_path):
    """A copy of the sample source whose 2025-01 files the test rewrites; the sample month is restored after."""
    root = tmp_path / "source"
    shutil.copytree(sample_source.root, root)
    return root


def _trip_file(root: Path, month: str = MONTH) -> Path:
    return root / TRIP_DIR / YELLOW.file_name(month)


def _rewrite_trips(root: Path, change) -> pa.Table:
    path = _trip_file(root)
    trips = change(pq.read_table(path))
    pq.write_table(trips, path)
    return trips


def _some_rows(trips: pa.Table, share: float, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).random(trips.num_rows) < share


def _shift_pickups(trips: pa.Table, rows: np.ndarray, by: np.timedelta64) -> pa.Table:
    for column in ("tpep_pickup_datetime", "tpep_dropoff_datetime"):
        index = trips.schema.get_field_index(column)
        values = trips.column(column).to_numpy()
        shifted = pa.array(np.where(rows, values - by, values), type=trips.schema.field(column).type)
        trips = trips.set_column(index, column, shifted)
    return trips


def _week_copied_over_the_next(trips: pa.Table) -> pa.Table:
    """The month's first week moved a week later over its second (whose own trips are gone): every count, zone
    and weekday looks normal, and no record repeats."""
    day = pc.day(trips["tpep_pickup_datetime"]).to_numpy()
    first_week = trips.filter(pa.array(day <= 7))
    copy = _shift_pickups(first_week, np.ones(first_week.num_rows, dtype=bool), np.timedelta64(-7, "D"))
    return pa.concat_tables([trips.filter(pa.array((day < 8) | (day > 14))), copy])


def _zones_swapped(trips: pa.Table) -> pa.Table:
    pickups, dropoffs = trips["PULocationID"], trips["DOLocationID"]
    trips = trips.set_column(trips.schema.get_field_index("PULocationID"), "PULocationID", dropoffs)
    return trips.set_column(trips.schema.get_field_index("DOLocationID"), "DOLocationID", pickups)


def _run(pipeline, root: Path, run_config: dict | None = None):
    with serve_folder(root) as base_url:
        return pipeline.run(PARTITION, base_url, run_config)


def _failed_checks(result) -> set[str]:
    return {e.check_name for e in result.get_asset_check_evaluations() if not e.passed and e.severity.value == "ERROR"}


DIRTY_CASES = {
    "ten_percent_a_year_early": (
        lambda t: _shift_pickups(t, _some_rows(t, 0.10), np.timedelta64(365, "D")),
        {"raw_yellow_pickups_inside_month"},
    ),
    "null_pickup_zones": (
        lambda t: t.set_column(
            t.schema.get_field_index("PULocationID"),
            "PULocationID",
            pa.nulls(t.num_rows, t.schema.field("PULocationID").type),
        ),
        # With no zone at all, the month also lacks every usual zone, every borough and the neighbours' zone mix.
        {
            "raw_yellow_no_null_keys",
            "raw_yellow_zones_like_recent_months",
            "raw_yellow_zone_mix_like_recent_months",
            "raw_yellow_boroughs_like_recent_months",
        },
    ),
    "five_percent_exact_duplicates": (
        lambda t: pa.concat_tables([t, t.filter(pa.array(_some_rows(t, 0.05)))]),
        {"raw_yellow_no_duplicate_trips"},
    ),
    "every_trip_in_one_zone": (
        lambda t: t.set_column(
            t.schema.get_field_index("PULocationID"),
            "PULocationID",
            pa.array(np.full(t.num_rows, 132), type=t.schema.field("PULocationID").type),
        ),
        {
            "raw_yellow_zones_like_recent_months",
            "raw_yellow_zone_mix_like_recent_months",
            "raw_yellow_boroughs_like_recent_months",
        },
    ),
    "a_week_copied_over_the_next": (_week_copied_over_the_next, {"raw_yellow_no_repeated_days"}),
    # The boroughs end several times the trips they start: swapped, Brooklyn starts over 3x its share too.
    "pickup_and_dropoff_swapped": (
        _zones_swapped,
        {"raw_yellow_direction_like_recent_months", "raw_yellow_boroughs_like_recent_months"},
    ),
    # Short of half the month's rows, every day thinned alike: the month is short, yet no day is so short that a
    # day is missing (the sample's quietest January day, a snowy Sunday, keeps 0.6 of a typical day's trips).
    "under_half_of_the_month": (
        lambda t: t.filter(pa.array(_some_rows(t, 0.45))),
        {"raw_yellow_rows_like_recent_months"},
    ),
}


@pytest.mark.parametrize("case", sorted(DIRTY_CASES))
def test_a_dirty_month_is_held_back_and_no_published_table_changes(pipeline, variant, case):
    change, expected_failures = DIRTY_CASES[case]
    _rewrite_trips(variant, change)
    before = published_snapshots()
    rows_before = {name: table(name).scan().to_arrow().num_rows for name in TABLES}

    result = _run(pipeline, variant)

    assert not result.success
    assert published_snapshots() == before
    assert {name: table(name).scan().to_arrow().num_rows for name in TABLES} == rows_before
    assert _failed_checks(result) == expected_failures
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert "nyc_taxi/yellow_rides_hourly_actuals" not in materialized  # downstream never ran
    failure = next(e for e in result.get_step_failure_events() if e.step_key == "nyc_taxi__raw_yellow")
    message = failure.step_failure_data.user_failure_data.description
    assert message.startswith(f"{RAW_YELLOW} {MONTH} was NOT published: {', '.join(sorted(expected_failures))}")
    assert f"The published table still holds snapshot {before[RAW_YELLOW]}" in message
    # Each failed audit's figures, the file as served (name, address, sha256) and how to publish it anyway.
    for name in expected_failures:
        assert f"\n- {name}: " in message
    served = _trip_file(variant)
    assert f"\nFile: {served.name} from http://127.0.0.1:" in message
    assert f"sha256:{hashlib.sha256(served.read_bytes()).hexdigest()}" in message
    assert "accept:" in message and "reason:" in message
    held_back = pipeline.latest_metadata(RAW_YELLOW)
    assert held_back["publication"].value == "held back"
    assert held_back[SNAPSHOT_ID].value == str(before[RAW_YELLOW])
    report = _report(held_back)
    assert report["outcome"] == "held back" and set(report["failed"].split(", ")) == expected_failures
    assert report["rows_written"] == 0 and report["bytes_read"] == served.stat().st_size
    # The staged month is kept for inspection, where the check's metadata says.
    failed = next(e for e in result.get_asset_check_evaluations() if e.check_name in expected_failures)
    branch = failed.metadata["staged_branch"].value
    staged = table(RAW_YELLOW).scan(snapshot_id=branches(RAW_YELLOW)[branch]).to_arrow()
    assert pc.sum(pc.equal(staged["source_month"], MONTH)).as_py() == pq.read_metadata(_trip_file(variant)).num_rows


def test_another_months_file_is_refused(pipeline, variant):
    shutil.copyfile(_trip_file(variant, "2024-12"), _trip_file(variant))
    before = published_snapshots()
    result = _run(pipeline, variant)
    assert not result.success
    assert published_snapshots() == before
    # Every pickup is outside the month, so none of its days has its trips either.
    assert _failed_checks(result) == {"raw_yellow_pickups_inside_month", "raw_yellow_every_day_has_its_trips"}
    check = next(e for e in result.get_asset_check_evaluations() if e.check_name == "raw_yellow_pickups_inside_month")
    assert check.metadata["share"].value == "100%"
    assert "not 2025-01's data" in check.description


def test_a_repeated_noaa_row_changes_no_table(pipeline, variant):
    path = variant / WEATHER_DIR / weather_file_path("prcp", MONTH)
    lines = path.read_text().splitlines()
    nyc = next(line for line in lines if line.split(",")[1] == "36061")
    path.write_text("\n".join([*lines, nyc]) + "\n")
    before = published_snapshots()
    result = _run(pipeline, variant)
    assert not result.success
    failure = next(e for e in result.get_step_failure_events() if e.step_key == "weather_files")
    assert "prcp" in failure.step_failure_data.error.message
    # The trip side is unchanged too, so nothing at all is written.
    assert published_snapshots() == before


def test_a_republished_file_replaces_the_month(pipeline, variant):
    changed = None

    def reprice(trips: pa.Table) -> pa.Table:
        nonlocal changed
        changed = _some_rows(trips, 0.01, seed=11)
        fares = trips.column("fare_amount").to_numpy(zero_copy_only=False)
        index = trips.schema.get_field_index("fare_amount")
        return trips.set_column(index, "fare_amount", pa.array(np.where(changed, fares + 1.25, fares)))

    trips = _rewrite_trips(variant, reprice)
    before = published_snapshots()
    result = _run(pipeline, variant)
    assert result.success
    after = published_snapshots()
    assert after[RAW_YELLOW] != before[RAW_YELLOW]
    assert after["nyc_taxi.raw_weather"] == before["nyc_taxi.raw_weather"]  # its source did not change
    month = table(RAW_YELLOW).scan(row_filter=f"source_month == '{MONTH}'").to_arrow()
    assert month.num_rows == trips.num_rows  # replaced, not appended
    assert pc.sum(month["fare_amount"]).as_py() == pytest.approx(pc.sum(trips["fare_amount"]).as_py())
    assert int(changed.sum()) > 0
    # The counts do not depend on fares, but the actuals are rebuilt from the new raw month.
    assert pipeline.latest_metadata(ACTUALS)["publication"].value == "published"


def test_a_few_negative_fares_and_backwards_trips_are_counted_published_and_told_in_the_log(pipeline, variant):
    # 5% of fares (real files: 1.3-1.5%) and 0.5% of trips backwards (real: 0.002%): unusual, not damage.
    negative, backwards = (0.05, 3), (0.005, 4)

    def spoil(trips: pa.Table) -> pa.Table:
        rows = _some_rows(trips, *negative)
        index = trips.schema.get_field_index("fare_amount")
        fares = trips.column("fare_amount").to_numpy(zero_copy_only=False)
        trips = trips.set_column(index, "fare_amount", pa.array(np.where(rows, -np.abs(fares) - 1, fares)))
        index = trips.schema.get_field_index("tpep_dropoff_datetime")
        pickups = trips.column("tpep_pickup_datetime")
        earlier = pickups.to_numpy() - np.timedelta64(5, "m")
        dropoffs = pa.array(
            np.where(_some_rows(trips, *backwards), earlier, trips.column(index).to_numpy()),
            type=trips.schema.field(index).type,
        )
        return trips.set_column(index, "tpep_dropoff_datetime", dropoffs)

    trips = _rewrite_trips(variant, spoil)
    result = _run(pipeline, variant)
    assert result.success
    warned = {e.check_name: e for e in result.get_asset_check_evaluations() if not e.passed}
    assert set(warned) == {"raw_yellow_no_negative_fares", "raw_yellow_pickups_before_dropoffs"}
    assert all(e.severity.value == "WARN" for e in warned.values())
    assert warned["raw_yellow_no_negative_fares"].metadata["negative_fares"].value >= _some_rows(trips, *negative).sum()
    assert (
        warned["raw_yellow_pickups_before_dropoffs"].metadata["dropoffs_before_pickups"].value
        >= _some_rows(trips, *backwards).sum()
    )
    assert pipeline.latest_metadata(RAW_YELLOW)["publication"].value == "published"
    # Told where the user reads the run, not only as check records.
    warnings = [e.user_message for e in pipeline.instance.all_logs(result.run_id) if e.level == logging.WARNING]
    for name in warned:
        assert any(message.startswith(f"{RAW_YELLOW} {MONTH}: {name}: ") for message in warnings), warnings


def _in_2019_shape(trips: pa.Table) -> pa.Table:
    """As TLC published 2019-2021: int64 ids, double counts, an all-null ``airport_fee`` of Arrow type null."""
    columns = {}
    for field in trips.schema:
        column = trips.column(field.name)
        if field.name in ("VendorID", "PULocationID", "DOLocationID", "payment_type"):
            column = column.cast(pa.int64())
        elif field.name in ("passenger_count", "RatecodeID"):
            column = column.cast(pa.float64())
        elif field.name.lower() == "airport_fee":
            columns["airport_fee"] = pa.nulls(trips.num_rows)
            continue
        elif field.name == "cbd_congestion_fee":
            continue
        columns[field.name] = column
    return pa.table(columns)


def _in_nanoseconds(trips: pa.Table) -> pa.Table:
    """As pandas writes timestamps by default."""
    for column in ("tpep_pickup_datetime", "tpep_dropoff_datetime"):
        index = trips.schema.get_field_index(column)
        trips = trips.set_column(index, column, trips.column(column).cast(pa.timestamp("ns")))
    return trips


@pytest.mark.parametrize("shape", [_in_2019_shape, _in_nanoseconds], ids=["2019_null_airport_fee", "nanoseconds"])
def test_every_published_file_shape_ingests_to_the_same_rows(pipeline, variant, shape):
    path = _trip_file(variant)
    pq.write_table(shape(pq.read_table(path)), path, version="2.6", coerce_timestamps=None)
    actuals_before = table(ACTUALS).scan().to_pandas().sort_values(["pickup_hour", "pulocationid"])
    before = published_snapshots()

    result = _run(pipeline, variant)

    assert result.success, [e.step_failure_data.error.message for e in result.get_step_failure_events()]
    assert published_snapshots()[RAW_YELLOW] != before[RAW_YELLOW]  # a new file: the month is replaced
    month = table(RAW_YELLOW).scan(row_filter=f"source_month == '{MONTH}'").to_pandas()
    source = pq.read_table(path).to_pandas()
    assert len(month) == len(source)
    published = month.sort_values(["tpep_pickup_datetime", "pulocationid", "trip_distance"]).reset_index(drop=True)
    expected = source.sort_values(["tpep_pickup_datetime", "PULocationID", "trip_distance"]).reset_index(drop=True)
    # Wall-clock pickup times survive whatever the file's timestamp unit.
    same_pickups = (published.tpep_pickup_datetime == expected.tpep_pickup_datetime).all()
    assert same_pickups
    assert (published.pulocationid == expected.PULocationID).all()
    assert month.passenger_count.fillna(-1).sum() == expected.passenger_count.fillna(-1).sum()
    if "airport_fee" in source and source.airport_fee.isna().all():
        assert month.airport_fee.isna().all()
    actuals_after = table(ACTUALS).scan().to_pandas().sort_values(["pickup_hour", "pulocationid"])
    assert actuals_after.reset_index(drop=True).equals(actuals_before.reset_index(drop=True))


FAST_RETRIES = {"download_attempts": 3, "first_retry_wait_seconds": 0.05, "read_timeout_seconds": 1.0}


@pytest.mark.parametrize(("plan", "arrives"), [([RESET, GOOD], True), ([CUT_CHUNKED], False)], ids=["reset", "cut"])
def test_network_faults_are_retried_then_refused_with_no_table_changed(
    pipeline, sample_source, restored, plan, arrives
):
    before = published_snapshots()
    name = YELLOW.file_name(MONTH)
    body = sample_source.trip_path(MONTH).read_bytes()
    with HostileServer(body, plan, root=sample_source.root, target=name) as server:
        result = pipeline.run(PARTITION, server.url, **FAST_RETRIES)
    assert published_snapshots() == before  # the same file, or none: nothing to publish
    assert result.success is arrives
    if arrives:
        assert pipeline.latest_metadata(RAW_YELLOW)["publication"].value == "unchanged"
        return
    failure = next(e for e in result.get_step_failure_events() if e.step_key == "taxi_trip_files")
    message = failure.step_failure_data.user_failure_data.description
    assert message.startswith(f"Could not download {server.url}/{TRIP_DIR}/{name}: the body ended early")
    assert message.endswith("this run does not write nyc_taxi.raw_yellow or anything built from it.")
    assert server.requests == FAST_RETRIES["download_attempts"]


ROWS_AUDIT, RAW_YELLOW_OP = "raw_yellow_rows_like_recent_months", "nyc_taxi__raw_yellow"


def _report(metadata) -> dict:
    """The month's ingestion report, as its materialization's ``report/`` entries."""
    return {key.removeprefix("report/"): entry.value for key, entry in metadata.items() if key.startswith("report/")}


def _accepting(audits: list[str], reason: str) -> dict:
    return {"ops": {RAW_YELLOW_OP: {"config": {"accept": audits, "reason": reason}}}}


def _own_properties(snapshot) -> dict:
    """What the write recorded on the snapshot: a cherry-picked copy's summary points at the original."""
    summary = snapshot.summary
    source = summary.additional_properties.get("source-snapshot-id")
    return table(RAW_YELLOW).snapshot_by_id(int(source)).summary if source else summary


def test_an_accepted_audit_publishes_the_month_and_the_snapshot_checks_and_lineage_record_why(
    pipeline, variant, tmp_path
):
    from openlineage.client import OpenLineageClient

    from bridge.run.lineage_pass import run_pass
    from tests.lineage_bridges import bridge_at

    trips = _rewrite_trips(variant, lambda t: t.filter(pa.array(_some_rows(t, 0.45))))
    assert not _run(pipeline, variant).success  # under half the month: held back
    reason = "A real strike: TLC confirms under half the usual trips"

    result = _run(pipeline, variant, _accepting([ROWS_AUDIT], reason))

    assert result.success
    month = table(RAW_YELLOW).scan(row_filter=f"source_month == '{MONTH}'").to_arrow()
    assert month.num_rows == trips.num_rows
    published = table(RAW_YELLOW).current_snapshot()
    properties = _own_properties(published)
    assert properties["audit.accepted"] == ROWS_AUDIT and properties["audit.accepted-reason"] == reason
    [check] = [e for e in result.get_asset_check_evaluations() if e.check_name == ROWS_AUDIT]
    assert not check.passed and check.severity.value == "WARN"
    assert check.metadata["accepted"].value == reason and reason in check.description
    made = pipeline.latest_metadata(RAW_YELLOW)
    assert made["accepted_audits"].value == ROWS_AUDIT
    # The month's ingestion report, held to the file served and the snapshot Iceberg wrote.
    report = _report(made)
    served = _trip_file(variant)
    assert report["outcome"] == "published" and "failed" not in report and report["audits_failed"] == 0
    assert report["files_read"] == 1 and report["bytes_read"] == served.stat().st_size
    assert report["rows_in_files"] == pq.read_metadata(served).num_rows == trips.num_rows
    assert report["rows_written"] == int(published.summary["added-records"])
    assert ROWS_AUDIT in report["warned"].split(", ")
    assert f"- {ROWS_AUDIT}: Accepted by run" in report["warnings"]
    assert report["audits_passed"] + report["audits_warned"] == len(YELLOW_TRIPS.audits)
    assert {name for name in report if name.startswith("seconds_")} == {
        "seconds_look_up", "seconds_write", "seconds_audit", "seconds_publish"
    }  # fmt: skip

    events_file = tmp_path / "events.jsonl"
    transport = {"type": "file", "log_file_path": str(events_file), "append": True}
    client = OpenLineageClient(config={"transport": transport})
    graph = pipeline.definitions().resolve_asset_graph()
    run_pass(bridge_at(tmp_path, pipeline.settings), pipeline.instance, graph, client)
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    outputs = [
        output
        for event in events
        if event["eventType"] == "COMPLETE"
        for output in event.get("outputs", [])
        if output["facets"].get("version", {}).get("datasetVersion") == str(published.snapshot_id)
    ]
    assert outputs, "no lineage event names the accepted month's snapshot"
    assertions = {a["assertion"]: a for a in outputs[0]["facets"]["dataQualityAssertions"]["assertions"]}
    assert assertions[ROWS_AUDIT]["success"] is False and reason in assertions[ROWS_AUDIT]["description"]
    # The step's event carries the report the step recorded, as its stepReport run facet.
    [step] = [e for e in events if e["eventType"] == "COMPLETE" and e["outputs"] and e["outputs"][0] is outputs[0]]
    [carried] = [r for r in step["run"]["facets"]["stepReport"]["reports"] if r["dataset"] == RAW_YELLOW]
    assert carried["partition"] == PARTITION and carried["figures"] == report


ACTUALS_OP = "nyc_taxi__yellow_rides_hourly_actuals"


@pytest.mark.parametrize(
    ("config", "op", "expected"),
    [
        (
            _accepting(["raw_yellow_rows_like_recent_mnths"], "a reason"),
            RAW_YELLOW_OP,
            f"accept names raw_yellow_rows_like_recent_mnths, which is not an audit of {RAW_YELLOW}; its audits are ",
        ),
        (_accepting([ROWS_AUDIT], " "), RAW_YELLOW_OP, f"accept lists {ROWS_AUDIT} but gives no reason"),
        (
            {"ops": {ACTUALS_OP: {"config": {"top_zones": 0}}}},
            ACTUALS_OP,
            "The settings of nyc_taxi.yellow_rides_hourly_actuals are not valid: top_zones: Input should be greater "
            "than 0 (given 0)",
        ),
    ],
    ids=["misspelt_audit", "no_reason", "no_zones_kept"],
)
def test_settings_that_cannot_be_kept_are_refused_before_anything_is_written(pipeline, variant, config, op, expected):
    """Refused by the run's first steps (the downloads), in the time they take to start: nothing downloaded, no
    Spark step run, nothing staged or published."""
    before, staged_before = published_snapshots(), branches(RAW_YELLOW)
    result = _run(pipeline, variant, config)
    assert not result.success
    failures = result.get_step_failure_events()
    assert {e.step_key for e in failures} >= {"taxi_trip_files"}
    assert all(not e.step_key.startswith("nyc_taxi__") for e in failures)  # no table step ran
    for failure in failures:
        message = failure.step_failure_data.user_failure_data.description
        assert message.startswith(expected) and f"(ops: {op}). Nothing was downloaded" in message
    assert result.get_asset_materialization_events() == []
    assert published_snapshots() == before
    assert branches(RAW_YELLOW) == staged_before


def test_a_partition_outside_the_months_is_refused_before_any_download(pipeline):
    from taxi_core.settings import load_settings

    job = pipeline.definitions().resolve_job_def("monthly_ingestion")
    before = published_snapshots()
    # As `dagster job execute --tags '{"dagster/partition": ...}'` launches it: Dagster does not check the key.
    result = job.execute_in_process(
        instance=pipeline.instance, tags={"dagster/partition": "2031-02-01"}, raise_on_error=False
    )
    assert not result.success
    failure = next(e for e in result.get_step_failure_events() if e.step_key == "taxi_trip_files")
    message = failure.step_failure_data.user_failure_data.description
    assert message.startswith("Partition 2031-02-01 is not one of taxi_trip_files's months (")
    assert "TAXI_LAST_MONTH" in message
    assert not list(load_settings().state_dir.rglob("*2031-02*"))
    assert published_snapshots() == before
