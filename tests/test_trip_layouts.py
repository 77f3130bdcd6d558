"""A third TLC trip layout, TLC's high-volume for-hire trips (``fhvhv_tripdata``), declared in a package of its own
(:mod:`tests.outside_package.high_volume_trips`) and nowhere else: no ``VendorID``, ``trip_distance``,
``fare_amount`` or ``total_amount``; ``hvfhs_license_num``, ``request_datetime``, ``trip_miles``,
``base_passenger_fare`` and ``driver_pay`` instead. Its file is verified, normalised into its raw table's columns
and audited by the family's code from its declaration alone (installed as a source and run through Dagster:
:mod:`tests.test_installed_source`).

The layout also declares its sample (its own columns drawn from the trips: a request some minutes before each
pickup, the driver's pay from the fare), so the demo's sample source writes its months unedited; what a file holds
is read back with pyarrow, not through the product's code.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from forecast_assets.audit_run import audit_month
from forecast_assets.audits import ERROR, MonthFacts
from forecast_assets.lakehouse.zone_reference import ZoneReference
from forecast_assets.source_specs.tlc_trips import trip_source
from forecast_assets.sources.tlc_format import LayoutError
from forecast_assets.transforms.tlc_trips import normalize_trips, with_timestamps
from taxi_core.months import MonthWindow
from taxi_core.zones import ZONE_LOOKUP
from taxi_demo.demand_model import DemandSpec
from taxi_demo.demo_city import DemoCity
from taxi_demo.sample_source import DEFAULT_SEED
from tests.audit_verdicts import neighbour_from_trips
from tests.outside_package.high_volume_trips import COLUMNS, HIGH_VOLUME, SOURCE, layout
from tests.sample_months import TEST_MONTHS, TEST_TRIPS_PER_MONTH

NEIGHBOUR, MONTH = TEST_MONTHS


@pytest.fixture(scope="module")
def spark():
    from forecast_assets.definitions import resources_for
    from taxi_core.settings import load_settings

    return resources_for(load_settings())["spark"].session


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, tuple[Path, pa.Table]]:
    """Each month's file as the demo's sample source writes it from the layout's declared sample."""
    folder = tmp_path_factory.mktemp("fhvhv")
    city = DemoCity(DemandSpec(TEST_TRIPS_PER_MONTH, DEFAULT_SEED))
    assert SOURCE.sample is not None
    written = {}
    for month in TEST_MONTHS:
        path = folder / HIGH_VOLUME.file_name(month)
        path.write_bytes(SOURCE.sample.files(city, month)[HIGH_VOLUME.file_name(month)])
        written[month] = (path, pq.read_table(path))
    return written


def _normalised(spark, path, month: str):
    return normalize_trips(
        with_timestamps(spark.read.parquet(str(path)), HIGH_VOLUME), HIGH_VOLUME, month, path.name, "sha256:test",
        datetime.now(UTC),
    )  # fmt: skip


def _facts(files) -> MonthFacts:
    lookup = pd.read_csv(ZONE_LOOKUP, keep_default_na=False)
    neighbour = files[NEIGHBOUR][1].to_pandas().rename(columns=str.lower)
    neighbour = neighbour.rename(columns={"pickup_datetime": "tpep_pickup_datetime"})
    return MonthFacts(
        MonthWindow.from_partition_key(f"{MONTH}-01"),
        neighbours=(neighbour_from_trips(NEIGHBOUR, neighbour),),
        zones=ZoneReference(dict(zip(lookup["LocationID"], lookup["Borough"], strict=True)), "TLC's lookup"),
    )


pytestmark = pytest.mark.integration


def test_a_third_layout_is_verified_normalised_and_audited_from_its_declaration_alone(spark, files):
    path, written = files[MONTH]
    facts = SOURCE.verify(path, path.as_uri(), SOURCE.files(MONTH)[0], MonthWindow.from_partition_key(f"{MONTH}-01"))
    assert facts.rows == written.num_rows and not facts.warnings

    rows = _normalised(spark, path, MONTH)
    assert rows.columns[: len(COLUMNS)] == list(COLUMNS)
    kept = rows.select("request_datetime", "pickup_datetime", "driver_pay").toPandas()
    assert kept["request_datetime"].tolist() == written["request_datetime"].to_pandas().tolist()
    assert kept["driver_pay"].tolist() == written["driver_pay"].to_pylist()
    waited = (kept["pickup_datetime"] - kept["request_datetime"]).dt.total_seconds()
    assert waited.between(60, 900).all()  # as the sample declares: requested 1 to 15 minutes before the pickup

    judged = audit_month(rows, SOURCE.audits, _with_rows(_facts(files), written.num_rows))
    failed = {audit.name: result.description for audit, result in judged if not result.passed}
    assert failed == {}
    names = {audit.name for audit, _ in judged}
    assert {"raw_fhvhv_no_duplicate_trips", "raw_fhvhv_distances_possible", "raw_fhvhv_no_negative_fares"} <= names


def _with_rows(facts: MonthFacts, rows: int) -> MonthFacts:
    from dataclasses import replace

    return replace(facts, expected_rows=rows)


def test_the_third_layout_s_own_money_and_identity_columns_are_what_its_audits_hold(spark, files):
    path, written = files[MONTH]
    trips = written.to_pandas()
    negative = np.random.default_rng(2).random(len(trips)) < 0.5
    trips["driver_pay"] = np.where(negative, -trips["driver_pay"].abs() - 1, trips["driver_pay"])
    doubled = pd.concat([trips, trips.iloc[: len(trips) // 20]], ignore_index=True)  # 5% written twice
    damaged = path.with_name("damaged_" + path.name)
    pq.write_table(pa.Table.from_pandas(doubled, schema=written.schema, preserve_index=False), damaged)
    judged = audit_month(_normalised(spark, damaged, MONTH), SOURCE.audits, _with_rows(_facts(files), len(doubled)))
    held = {audit.name: result for audit, result in judged if not result.passed and result.severity == ERROR}
    assert {"raw_fhvhv_no_negative_fares", "raw_fhvhv_no_duplicate_trips"} <= set(held)
    assert "have a negative base_passenger_fare or driver_pay" in held["raw_fhvhv_no_negative_fares"].description


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"distance": "trip_distance"}, "distance names 'trip_distance', which is not one of its columns"),
        ({"charges": ("hvfhs_license_num",)}, "charges column 'hvfhs_license_num' is string"),
        ({"identity": ()}, "identity names no column"),
        ({"pickup": "trip_miles"}, "pickup column 'trip_miles' is double"),
        ({"optional": frozenset({"airport_fee"})}, "optional column 'airport_fee' is not one of its columns"),
    ],
    ids=["missing_distance", "string_charge", "no_identity", "pickup_not_a_time", "unknown_optional"],
)
def test_a_layout_that_does_not_declare_what_its_family_reads_is_refused_when_declared(changes, named):
    with pytest.raises(LayoutError, match="The TLC fhvhv trip layout is not declared right") as refused:
        layout(**changes)
    assert named in str(refused.value)


def test_a_layout_without_a_distance_has_no_distance_audit():
    without = layout(distance=None)
    audits = {audit.name for audit in trip_source(without, name="x", table="raw_x", file_asset="x_files").audits}
    assert "raw_x_distances_possible" not in audits and "raw_x_no_negative_fares" in audits
