"""An unchanged month is known from its tables' metadata: its run, in a new process as Dagster launches one, needs no
Java at all, writes nothing and reports each table as published, read independently with pyiceberg."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterEventType, DagsterInstance, EventRecordsFilter
from pyiceberg.expressions import EqualTo

from forecast_assets.assets.month_checks import REUSED
from forecast_assets.assets.table_metadata import COLUMN_SCHEMA, ROW_COUNT, SNAPSHOT_ID
from forecast_assets.audits import ACTUALS_AUDITS
from taxi_demo.sample_source import source_folders
from tests.iceberg_tables import MONTHLY_SOURCES, TABLES, month_filter, published_snapshots, table
from tests.sample_months import TEST_MONTHS

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
ACTUALS, RAW_YELLOW = "nyc_taxi.yellow_rides_hourly_actuals", "nyc_taxi.raw_yellow"


def _without_java(tmp_path: Path, base_url: str) -> dict[str, str]:
    """The tests' environment, with the sample source's addresses and a JAVA_HOME that holds no Java."""
    no_java = tmp_path / "no-java"
    no_java.mkdir()
    urls = {f"TAXI_{name.upper()}_BASE_URL": f"{base_url}/{folder}" for name, folder in source_folders().items()}
    return {**os.environ, **urls, "JAVA_HOME": str(no_java), "PYTHONPATH": str(ROOT)}


def _month_rows(name: str, month: str) -> int:
    """The month's rows on ``main``, selected as the table partitions them, counted by pyiceberg."""
    source = next((source for source in MONTHLY_SOURCES if source.table.identifier == name), None)
    spec = source.table if source else None
    if spec is not None and spec.month_column_kind == "text":
        row_filter = EqualTo(str(spec.month_column), month)
    else:
        row_filter = month_filter("date" if spec is not None else "pickup_hour", month)
    return table(name).scan(row_filter=row_filter).to_arrow().num_rows


def _month_snapshot(name: str, month: str) -> int:
    """The ``main`` snapshot that last wrote the month: the newest ancestor naming its partition."""
    found = table(name)
    snapshot = found.current_snapshot()
    while snapshot is not None:
        summary = snapshot.summary.additional_properties if snapshot.summary else {}
        source = summary.get("source-snapshot-id")
        properties = found.snapshot_by_id(int(source)).summary.additional_properties if source else summary
        if properties.get("dagster.partition") == f"{month}-01":
            return snapshot.snapshot_id
        snapshot = found.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    raise AssertionError(f"{name} has no snapshot publishing {month}")


def test_the_environment_without_java_cannot_start_spark(tmp_path, sample_server):
    """What the test below relies on: in that environment, starting Spark fails."""
    starting = "from pyspark.sql import SparkSession; SparkSession.builder.master('local[1]').getOrCreate()"
    env = _without_java(tmp_path, sample_server)
    started = subprocess.run([sys.executable, "-c", starting], env=env, capture_output=True, text=True, timeout=120)
    assert started.returncode != 0


# Each month in turn: raw_yellow's head is the snapshot of one of them at most, so the other's actuals were counted
# from a raw month that is not the table's head.
@pytest.mark.parametrize("month", TEST_MONTHS)
def test_an_unchanged_month_runs_in_a_new_process_without_java(pipeline, sample_server, tmp_path, month):
    assert pipeline.run(f"{month}-01").success  # the month published from what the source serves, whatever ran before
    before = published_snapshots()
    home = tmp_path / "dagster"
    home.mkdir()
    env = _without_java(tmp_path, sample_server) | {"DAGSTER_HOME": str(home)}
    command = [
        sys.executable, "-m", "dagster", "job", "execute", "-m", "forecast_assets.definitions",
        "-j", "monthly_ingestion", "--tags", json.dumps({"dagster/partition": f"{month}-01"}),
    ]  # fmt: skip
    ran = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output[-4000:]
    assert "Starting Spark" not in output
    assert output.count("Spark was not started") == len(TABLES)
    assert published_snapshots() == before  # nothing written

    instance = DagsterInstance.from_config(str(home))
    for name in TABLES:
        key = AssetKey(name.split("."))
        record = instance.get_event_records(
            EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION, asset_key=key), limit=1
        )[0]
        metadata = record.asset_materialization.metadata
        assert metadata["publication"].value == "unchanged", name
        assert int(metadata[SNAPSHOT_ID].value) == _month_snapshot(name, month), name
        assert metadata[ROW_COUNT].value == _month_rows(name, month), name
        if name == ACTUALS:  # counted from the raw month, whatever was published since
            assert metadata["raw_yellow_snapshot_id"].value == str(_month_snapshot(RAW_YELLOW, month))
        columns = [column.name for column in metadata[COLUMN_SCHEMA].value.columns]
        assert columns == [field.name for field in table(name).schema().fields], name
    checks = instance.get_event_records(EventRecordsFilter(DagsterEventType.ASSET_CHECK_EVALUATION))
    evaluations = [record.event_log_entry.dagster_event.event_specific_data for record in checks]
    audits = [*(audit for source in MONTHLY_SOURCES for audit in source.audits), *ACTUALS_AUDITS]
    assert sorted(evaluation.check_name for evaluation in evaluations) == sorted(audit.name for audit in audits)
    assert all(evaluation.metadata[REUSED].value is True for evaluation in evaluations)
