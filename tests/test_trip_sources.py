"""Every TLC trip source of the registry, ingested by the real monthly job, against its own files.

Each source's month is held to the file the sample source served (read with pyarrow), its audits ran and passed,
and its lineage names that file's sha256 and the snapshot pyiceberg finds the month published at.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from dagster import AssetKey
from openlineage.client import OpenLineageClient
from pyiceberg.expressions import EqualTo

from bridge.run.lineage_pass import run_pass
from forecast_assets.lineage import naming
from forecast_assets.source_specs.registry import registered_sources
from forecast_assets.source_specs.tlc_trips import TripSource
from tests.iceberg_tables import table
from tests.lineage_bridges import bridge_at
from tests.sample_months import TEST_MONTHS

pytestmark = pytest.mark.integration

TRIP_SOURCES = [source for source in registered_sources() if isinstance(source, TripSource)]
by_service = pytest.mark.parametrize("source", TRIP_SOURCES, ids=lambda source: source.layout.service)


def _pickups_by_zone(rows, pickup: str, zone: str) -> Counter:
    hours = pc.floor_temporal(rows.column(pickup), unit="hour").to_pylist()
    return Counter(zip(hours, rows.column(zone).to_pylist(), strict=True))


def _published_month(identifier: str, partition: str) -> int:
    """The snapshot on ``main``'s ancestry that last wrote the partition, as Iceberg's own metadata says."""
    found = table(identifier)
    by_id = {snapshot.snapshot_id: snapshot for snapshot in found.snapshots()}
    snapshot = found.current_snapshot()
    while snapshot is not None:
        summary = snapshot.summary.additional_properties if snapshot.summary else {}
        source = by_id.get(int(summary.get("source-snapshot-id", 0)))  # a cherry-pick copies its source's summary
        properties = source.summary.additional_properties if source is not None and source.summary else summary
        if properties.get("dagster.partition") == partition:
            return snapshot.snapshot_id
        snapshot = by_id.get(snapshot.parent_snapshot_id)
    raise AssertionError(f"{identifier}: no snapshot on main wrote {partition}")


@pytest.fixture(scope="module")
def events(pipeline, tmp_path_factory):
    """One bridge pass over the pipeline's runs, to a JSON-lines file."""
    folder = tmp_path_factory.mktemp("trip_lineage")
    client = OpenLineageClient(
        config={"transport": {"type": "file", "log_file_path": str(folder / "events.jsonl"), "append": True}}
    )
    graph = pipeline.definitions().resolve_asset_graph()
    run_pass(bridge_at(folder, pipeline.settings), pipeline.instance, graph, client)
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]


@by_service
def test_each_month_holds_its_file_s_trips(pipeline, sample_source, source):
    for month in TEST_MONTHS:
        served = pq.read_table(sample_source.trip_path(month, source.layout))
        served = served.rename_columns([name.lower() for name in served.column_names])
        published = table(source.table.identifier).scan(row_filter=EqualTo("source_month", month)).to_arrow()
        assert published.num_rows == served.num_rows > 0, (source.name, month)
        pickup = source.layout.pickup
        assert _pickups_by_zone(published, pickup, "pulocationid") == _pickups_by_zone(served, pickup, "pulocationid")


@by_service
def test_each_month_passed_its_own_audits(pipeline, source):
    for month, result in pipeline.first_runs.items():
        evaluated = {
            evaluation.check_name: evaluation.passed
            for evaluation in result.get_asset_check_evaluations()
            if evaluation.asset_key == AssetKey(source.table.identifier.split("."))
        }
        assert evaluated == {audit.name: True for audit in source.audits}, month


@by_service
def test_each_month_s_lineage_names_its_file_and_its_published_snapshot(pipeline, sample_source, events, source):
    policy = naming(pipeline.settings)
    files, raw = policy.asset([source.file_asset]), policy.table(source.table.identifier)
    step = f"monthly_ingestion.{source.table.identifier.replace('.', '__')}"
    wrote = [event for event in events if event["job"]["name"] == step and event["eventType"] == "COMPLETE"]
    for month in TEST_MONTHS:
        written_at = _published_month(source.table.identifier, f"{month}-01")
        # Every event naming the snapshot that holds the month now: the run that wrote it (the first, in the event
        # log's order) and any later run that found the month unchanged at that snapshot.
        found = [
            event
            for event in wrote
            if [output["facets"]["version"]["datasetVersion"] for output in event["outputs"]] == [str(written_at)]
        ]
        assert found, (source.name, month)
        digest = hashlib.sha256(sample_source.trip_path(month, source.layout).read_bytes()).hexdigest()
        for event in found:
            (read,) = event["inputs"]
            assert (read["namespace"], read["name"]) == (files.namespace, files.name)
            assert read["facets"]["version"]["datasetVersion"] == f"sha256:{digest}"
            (written,) = event["outputs"]
            assert (written["namespace"], written["name"]) == (raw.namespace, raw.name)
            assert event["run"]["facets"]["nominalTime"]["nominalStartTime"].startswith(month)
        # The pickup column of what the first run wrote comes from the file's own pickup column.
        written = found[0]["outputs"][0]
        origins = written["facets"]["columnLineage"]["fields"][source.layout.pickup]["inputFields"]
        assert {(origin["name"], origin["field"].lower()) for origin in origins} == {(files.name, source.layout.pickup)}
