"""Sources from other packages, installed through the ``taxi_forecast.sources`` entry-point group: TLC's
high-volume for-hire trips (:mod:`tests.outside_package.high_volume_trips`), a third trip layout with none of
yellow's money columns, and hours of daylight (:mod:`tests.outside_package.daylight`), a second kind of source with
its own format; each declared there and nowhere else.

With no edit in the product or the demo, the sample source writes their months from the samples they declare;
the code location gains their file and table assets, their checks and sensors; the monthly job ingests and
audits their months; their materializations carry their ingestion reports; and the lineage names each file's
sha256, the snapshot each month was published at and the columns the tables' own columns come from. Each is held
to a record the product did not write: the served file read with pyarrow or pandas, the table read with pyiceberg.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from dagster import AssetKey, instance_for_test
from openlineage.client import OpenLineageClient
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan

from bridge.run.lineage_pass import run_pass
from forecast_assets.lineage import naming
from forecast_assets.source_specs import registry
from taxi_demo.sample_source import SampleSource
from tests.iceberg_tables import table
from tests.installed_entry_point import install_entry_point
from tests.lineage_bridges import bridge_at
from tests.loopback import serve_folder
from tests.outside_package.daylight import SOURCE as DAYLIGHT
from tests.outside_package.high_volume_trips import HIGH_VOLUME, SOURCE
from tests.pipeline import Pipeline
from tests.sample_months import TEST_MONTHS, TEST_TRIPS_PER_MONTH
from tests.test_trip_sources import _published_month

pytestmark = pytest.mark.integration

DECLARATIONS = {
    SOURCE.name: "tests.outside_package.high_volume_trips:SOURCE",
    DAYLIGHT.name: "tests.outside_package.daylight:SOURCE",
}
RAW = SOURCE.table.identifier
KEYS = [AssetKey(SOURCE.file_asset), AssetKey(RAW.split("."))]
DAYLIGHT_KEYS = [AssetKey(DAYLIGHT.file_asset), AssetKey(DAYLIGHT.table.identifier.split("."))]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The sources registered by packages of their own, as installed distributions register them."""
    site = tmp_path_factory.mktemp("site")
    for name, declaration in DECLARATIONS.items():
        install_entry_point(site, f"outside-{name}", registry.ENTRY_POINT_GROUP, name, declaration)
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(site))
        registry.registered_sources.cache_clear()
        yield registry.registered_sources()
    registry.registered_sources.cache_clear()


@pytest.fixture(scope="module")
def ingested(installed, settings, tmp_path_factory):
    """The sample source written with the installed source among the others, served, and the source's months run
    through the monthly job (its own assets, as its sensor asks for them); then one lineage pass."""
    sample = SampleSource(tmp_path_factory.mktemp("with_fhvhv") / "source", trips_per_month=TEST_TRIPS_PER_MONTH)
    sample.write_months(TEST_MONTHS)
    folder = tmp_path_factory.mktemp("fhvhv_lineage")
    with serve_folder(sample.root) as base_url, instance_for_test() as instance:
        pipeline = Pipeline(instance, base_url, settings)
        assert pipeline.run_job("reference_data").success
        job = pipeline.definitions().resolve_job_def("monthly_ingestion")
        results = {
            month: job.execute_in_process(
                partition_key=f"{month}-01",
                instance=instance,
                asset_selection=KEYS + DAYLIGHT_KEYS,
                raise_on_error=False,
            )
            for month in TEST_MONTHS
        }
        transport = {"type": "file", "log_file_path": str(folder / "events.jsonl"), "append": True}
        graph = pipeline.definitions().resolve_asset_graph()
        run_pass(bridge_at(folder, settings), instance, graph, OpenLineageClient(config={"transport": transport}))
        definitions = pipeline.definitions()
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    return sample, results, events, definitions


def _pickups(rows, pickup: str) -> Counter:
    hours = pc.floor_temporal(rows.column(pickup), unit="hour").to_pylist()
    return Counter(zip(hours, rows.column("pulocationid").to_pylist(), strict=True))


def test_the_installed_source_is_registered_sampled_and_derived_with_no_edit(installed, ingested):
    sample, _, _, definitions = ingested
    assert [source.name for source in installed][-2:] == sorted(DECLARATIONS)
    assert all(sample.trip_path(month, HIGH_VOLUME).exists() for month in TEST_MONTHS)
    assert set(KEYS) <= set(definitions.resolve_asset_graph().get_all_asset_keys())
    checks = {key.name for key in definitions.resolve_asset_graph().asset_check_keys if key.asset_key == KEYS[1]}
    assert checks == {audit.name for audit in SOURCE.audits}
    assert f"new_{SOURCE.name}_months" in {sensor.name for sensor in definitions.sensors or []}


def test_each_month_holds_its_file_s_trips_and_passed_every_audit(ingested):
    sample, results, _, _ = ingested
    for month, result in results.items():
        assert result.success, month
        served = pq.read_table(sample.trip_path(month, HIGH_VOLUME))
        served = served.rename_columns([name.lower() for name in served.column_names])
        published = table(RAW).scan(row_filter=EqualTo("source_month", month)).to_arrow()
        assert published.num_rows == served.num_rows > 0
        assert _pickups(published, HIGH_VOLUME.pickup) == _pickups(served, HIGH_VOLUME.pickup)
        for column in ("request_datetime", "driver_pay", "trip_miles"):
            assert Counter(published.column(column).to_pylist()) == Counter(served.column(column).to_pylist())
        evaluated = {e.check_name: e.passed for e in result.get_asset_check_evaluations() if e.asset_key == KEYS[1]}
        assert evaluated == {audit.name: True for audit in SOURCE.audits}, month
        [made] = [e.materialization for e in result.get_asset_materialization_events() if e.asset_key == KEYS[1]]
        report = {k.removeprefix("report/"): v.value for k, v in made.metadata.items() if k.startswith("report/")}
        assert report["rows_in_files"] == served.num_rows == report["rows_written"]
        assert report["bytes_read"] == sample.trip_path(month, HIGH_VOLUME).stat().st_size


def test_each_month_s_lineage_names_its_file_its_snapshot_and_its_own_columns(settings, ingested):
    sample, _, events, _ = ingested
    policy = naming(settings)
    files, raw = policy.asset([SOURCE.file_asset]), policy.table(RAW)
    step = f"monthly_ingestion.{RAW.replace('.', '__')}"
    wrote = [event for event in events if event["job"]["name"] == step and event["eventType"] == "COMPLETE"]
    for month in TEST_MONTHS:
        written_at = str(_published_month(RAW, f"{month}-01"))
        [event] = [e for e in wrote if [o["facets"]["version"]["datasetVersion"] for o in e["outputs"]] == [written_at]]
        digest = hashlib.sha256(sample.trip_path(month, HIGH_VOLUME).read_bytes()).hexdigest()
        (read,), (written,) = event["inputs"], event["outputs"]
        assert (read["namespace"], read["name"], read["facets"]["version"]["datasetVersion"]) == (
            files.namespace, files.name, f"sha256:{digest}"
        )  # fmt: skip
        assert (written["namespace"], written["name"]) == (raw.namespace, raw.name)
        fields = written["facets"]["columnLineage"]["fields"]
        for column in ("request_datetime", "driver_pay", "hvfhs_license_num"):
            origins = {(origin["name"], origin["field"].lower()) for origin in fields[column]["inputFields"]}
            assert origins == {(files.name, column)}, column
        [report] = event["run"]["facets"]["stepReport"]["reports"]
        assert report["dataset"] == RAW and report["figures"]["outcome"] == "published"


def test_a_second_kind_of_source_is_sampled_ingested_audited_and_traced(settings, ingested):
    sample, results, events, _ = ingested
    policy = naming(settings)
    raw = DAYLIGHT.table.identifier
    files, written_to = policy.asset([DAYLIGHT.file_asset]), policy.table(raw)
    step = f"monthly_ingestion.{raw.replace('.', '__')}"
    for month, result in results.items():
        served = sample.root / "daylight" / f"daylight_{month}.csv"
        lines = pd.read_csv(served, names=["date", "hours"], parse_dates=["date"])
        start = pd.Timestamp(f"{month}-01")
        published = table(raw).scan(
            row_filter=And(GreaterThanOrEqual("date", start.date().isoformat()),
                           LessThan("date", (start + pd.offsets.MonthBegin(1)).date().isoformat()))
        ).to_pandas().sort_values("date")  # fmt: skip
        assert published["hours"].tolist() == lines["hours"].tolist() and len(lines) == start.days_in_month
        evaluated = {
            e.check_name: e.passed for e in result.get_asset_check_evaluations() if e.asset_key == DAYLIGHT_KEYS[1]
        }
        assert evaluated == {audit.name: True for audit in DAYLIGHT.audits}, month
        written_at = str(_published_month(raw, f"{month}-01"))
        [event] = [
            e for e in events
            if e["job"]["name"] == step and e["eventType"] == "COMPLETE"
            and [o["facets"]["version"]["datasetVersion"] for o in e["outputs"]] == [written_at]
        ]  # fmt: skip
        (read,), (written,) = event["inputs"], event["outputs"]
        digest = hashlib.sha256(served.read_bytes()).hexdigest()
        assert (read["name"], read["facets"]["version"]["datasetVersion"]) == (files.name, f"sha256:{digest}")
        assert (written["namespace"], written["name"]) == (written_to.namespace, written_to.name)
        origins = written["facets"]["columnLineage"]["fields"]["hours"]["inputFields"]
        assert {(origin["name"], origin["field"]) for origin in origins} == {(files.name, "hours")}
