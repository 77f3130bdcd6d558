"""A published trip month keeps its rows and trips per zone, and the audits of the months around it read them from
the table's metadata instead of rereading its rows.

Truth is read independently: the published month with pyiceberg and grouped with pyarrow, the snapshot that
published it by walking ``main``'s ancestry with pyiceberg.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from forecast_assets.audit_run import audit_month
from forecast_assets.audits import ERROR, MonthFacts
from forecast_assets.lakehouse.neighbours import counted_from_table, neighbour_months
from forecast_assets.lakehouse.table_state import table_state
from forecast_assets.lakehouse.zone_reference import ZoneReference
from forecast_assets.source_specs.yellow_trips import RAW_YELLOW as RAW_YELLOW_SPEC
from forecast_assets.source_specs.yellow_trips import SOURCE as YELLOW_TRIPS
from forecast_assets.source_specs.yellow_trips import YELLOW
from taxi_core.months import MonthWindow
from taxi_core.zones import ZONE_LOOKUP
from taxi_demo.sample_source import TRIP_DIR
from tests.iceberg_tables import table
from tests.loopback import serve_folder
from tests.sample_months import TEST_MONTHS, read_trips

pytestmark = pytest.mark.integration

NEIGHBOUR, MONTH = TEST_MONTHS
RAW_YELLOW = "nyc_taxi.raw_yellow"
WINDOW = MonthWindow.from_partition_key(MONTH)


@pytest.fixture(scope="module")
def spark(pipeline):
    from forecast_assets.definitions import resources_for
    from taxi_core.settings import load_settings

    return resources_for(load_settings())["spark"].session


def _published_by(partition: str) -> int:
    """The ``main`` snapshot that last wrote ``partition``, walking back from the head (a cherry-picked copy's own
    summary names the snapshot it copies)."""
    trips = table(RAW_YELLOW)
    snapshot = trips.current_snapshot()
    while snapshot is not None:
        properties = snapshot.summary.additional_properties
        source = properties.get("source-snapshot-id")
        if source:
            properties = trips.snapshot_by_id(int(source)).summary.additional_properties
        if properties.get("dagster.partition") == partition:
            return snapshot.snapshot_id
        parent = snapshot.parent_snapshot_id
        snapshot = trips.snapshot_by_id(parent) if parent is not None else None
    raise AssertionError(f"no snapshot of main wrote {partition}")


def _counted(month: str) -> tuple[int, dict[int, int]]:
    """The published month's rows and pickups per zone, read with pyiceberg and counted with pyarrow."""
    scan = table(RAW_YELLOW).scan(row_filter=f"source_month == '{month}'", selected_fields=("pulocationid",))
    zones = scan.to_arrow()["pulocationid"]
    return len(zones), _by_zone(zones)


def _by_zone(zones: pa.ChunkedArray) -> dict[int, int]:
    counts = pc.value_counts(zones).to_pylist()
    return {int(item["values"]): int(item["counts"]) for item in counts if item["values"] is not None}


def _summary(month: str) -> dict:
    return json.loads(table(RAW_YELLOW).properties[f"summary.{month}-01"])


def _refusing(months):
    raise AssertionError(f"months counted from the table: {list(months)}")


@pytest.mark.parametrize("month", TEST_MONTHS)
def test_a_published_month_keeps_its_rows_and_trips_per_zone_naming_its_snapshot(pipeline, month):
    summary = _summary(month)
    rows, by_zone = _counted(month)
    assert summary["snapshot-id"] == _published_by(f"{month}-01")
    assert summary["rows"] == rows
    assert {int(zone): trips for zone, trips in summary["trips-by-zone"].items()} == by_zone
    dropoffs, week = _ends_and_week(month)
    assert {int(zone): trips for zone, trips in summary["dropoffs-by-zone"].items()} == dropoffs
    assert summary["pickups-by-hour-of-week"] == week


def _ends_and_week(month: str) -> tuple[dict[int, int], list[int]]:
    """The published month's drop-offs per zone, and its pickups inside the month per hour of the week (Monday
    0-1 am first), read with pyiceberg and counted with pandas."""
    scan = table(RAW_YELLOW).scan(
        row_filter=f"source_month == '{month}'", selected_fields=("dolocationid", "tpep_pickup_datetime")
    )
    trips = scan.to_arrow()
    pickups = trips["tpep_pickup_datetime"].to_pandas()
    inside = pickups[pickups.dt.strftime("%Y-%m") == month]
    hours = (inside.dt.day_of_week * 24 + inside.dt.hour).value_counts()
    return _by_zone(trips["dolocationid"]), [int(hours.get(hour, 0)) for hour in range(168)]


def test_the_neighbours_are_read_from_the_summaries_alone_and_match_their_rows(spark):
    [neighbour] = neighbour_months(table_state(spark, RAW_YELLOW), WINDOW, _refusing)
    assert (neighbour.month, neighbour.rows, dict(neighbour.trips_by_zone)) == (NEIGHBOUR, *_counted(NEIGHBOUR))
    # The same as rereading the month's rows, as the audits did before summaries were kept.
    count = counted_from_table(spark, RAW_YELLOW_SPEC, "pulocationid", "tpep_pickup_datetime", "dolocationid")
    reread = count([NEIGHBOUR])[NEIGHBOUR]
    assert neighbour == reread


@pytest.fixture
def summary_changed(spark):
    """The neighbour's summary as the test leaves it is put back after (the table's rows are never touched)."""
    key = f"summary.{NEIGHBOUR}-01"
    kept = table(RAW_YELLOW).properties[key]
    yield key
    literal = kept.replace("\\", "\\\\").replace("'", "\\'")
    spark.sql(f"ALTER TABLE {RAW_YELLOW} SET TBLPROPERTIES ('{key}' = '{literal}')")


@pytest.mark.parametrize("kept", ["none", "stale"])
def test_a_neighbour_without_a_summary_of_its_snapshot_is_counted_from_its_rows_alone(spark, summary_changed, kept):
    if kept == "none":  # published before summaries were kept
        spark.sql(f"ALTER TABLE {RAW_YELLOW} UNSET TBLPROPERTIES ('{summary_changed}')")
    else:  # a summary of an earlier write of the month, which the snapshot publishing it now replaced
        stale = _summary(NEIGHBOUR) | {"snapshot-id": 1, "rows": 1}
        spark.sql(f"ALTER TABLE {RAW_YELLOW} SET TBLPROPERTIES ('{summary_changed}' = '{json.dumps(stale)}')")
    asked = []
    count = counted_from_table(spark, RAW_YELLOW_SPEC, "pulocationid", "tpep_pickup_datetime", "dolocationid")

    def counting(months):
        asked.append(list(months))
        return count(months)

    [neighbour] = neighbour_months(table_state(spark, RAW_YELLOW), WINDOW, counting)
    assert asked == [[NEIGHBOUR]]
    assert (neighbour.month, neighbour.rows, dict(neighbour.trips_by_zone)) == (NEIGHBOUR, *_counted(NEIGHBOUR))


def _trips(sample_source, month: str) -> pd.DataFrame:
    return read_trips(sample_source.trip_path(month))


def _blocked(spark, trips: pd.DataFrame, facts: MonthFacts) -> set[str]:
    judged = audit_month(spark.createDataFrame(trips), YELLOW_TRIPS.audits, replace(facts, expected_rows=len(trips)))
    return {audit.name for audit, result in judged if audit.blocking and not result.passed and result.severity == ERROR}


DAMAGE = {
    # Every day a tenth of itself: short beside the neighbour, and every day too.
    "a_tenth_of_the_month": (
        lambda trips: trips[np.random.default_rng(3).random(len(trips)) < 0.1],
        {"raw_yellow_rows_like_recent_months", "raw_yellow_every_day_has_its_trips"},
    ),
    "every_trip_in_one_zone": (
        lambda trips: trips.assign(pulocationid=132),
        {
            "raw_yellow_zones_like_recent_months",
            "raw_yellow_zone_mix_like_recent_months",
            "raw_yellow_boroughs_like_recent_months",
        },
    ),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_month_is_held_back_beside_its_neighbours_summaries(spark, sample_source, case):
    lookup = pd.read_csv(ZONE_LOOKUP)
    zones = ZoneReference(dict(zip(lookup["LocationID"], lookup["Borough"], strict=True)), "TLC's lookup (pandas)")
    neighbours = neighbour_months(table_state(spark, RAW_YELLOW), WINDOW, _refusing)
    facts = MonthFacts(WINDOW, neighbours=neighbours, zones=zones)
    month = _trips(sample_source, MONTH)
    assert _blocked(spark, month, facts) == set()
    damage, named = DAMAGE[case]
    assert _blocked(spark, damage(month), facts) == named


@pytest.fixture
def neighbour_restored(pipeline, sample_server):
    """The sample's neighbour month is published again from the sample server after the test."""
    yield
    assert pipeline.run(f"{NEIGHBOUR}-01", sample_server).success


def test_a_republished_month_keeps_its_new_summary_and_its_neighbour_is_audited_against_it(
    pipeline, sample_source, neighbour_restored, tmp_path
):
    root = tmp_path / "source"
    shutil.copytree(sample_source.root, root)
    path = root / TRIP_DIR / YELLOW.file_name(NEIGHBOUR)
    trips = pq.read_table(path)
    kept = trips.filter(pa.array(np.random.default_rng(9).random(trips.num_rows) < 0.8))
    pq.write_table(kept, path)
    before = _summary(NEIGHBOUR)["snapshot-id"]

    with serve_folder(root) as base_url:
        assert pipeline.run(f"{NEIGHBOUR}-01", base_url).success

    summary = _summary(NEIGHBOUR)
    assert summary["snapshot-id"] == _published_by(f"{NEIGHBOUR}-01") != before
    assert summary["rows"] == kept.num_rows == _counted(NEIGHBOUR)[0]
    assert {int(zone): trips for zone, trips in summary["trips-by-zone"].items()} == _by_zone(kept["PULocationID"])
    # The month beside it, audited again, is held to the neighbour's new rows.
    rewrite = {"ops": {"nyc_taxi__raw_yellow": {"config": {"rewrite_unchanged": True}}}}
    result = pipeline.run(f"{MONTH}-01", run_config=rewrite)
    assert result.success
    [rows_audit] = [
        e for e in result.get_asset_check_evaluations() if e.check_name == "raw_yellow_rows_like_recent_months"
    ]
    assert rows_audit.metadata["median_of_recent_months"].value == kept.num_rows
    assert rows_audit.metadata["compared_with"].value == NEIGHBOUR
