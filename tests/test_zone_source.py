"""The third source, TLC's taxi zone lookup: one declaration and one registration line, published whole.

Checked against what really happened: the served file's bytes (read here with the csv module and hashed)
and the table as pyiceberg reads it, never against what the pipeline says about itself.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil

import pytest

from forecast_assets.lineage import naming
from taxi_demo.sample_source import ZONES_DIR
from tests.iceberg_tables import table
from tests.lineage_bridges import bridge_at
from tests.loopback import serve_folder

pytestmark = pytest.mark.integration

ZONES, ZONE_FILES, JOB = "nyc_taxi.taxi_zones", "taxi_zone_files", "reference_data"
LOOKUP = "taxi_zone_lookup.csv"


@pytest.fixture(scope="module")
def published(pipeline, sample_source):
    """The reference job's run against the served sample source, and the file it served."""
    result = pipeline.run_job(JOB)
    assert result.success
    return result, sample_source.root / ZONES_DIR / LOOKUP


def _file_rows(path) -> list[tuple]:
    with path.open(newline="") as handle:
        return sorted(
            (int(row["LocationID"]), row["Borough"], row["Zone"], row["service_zone"]) for row in csv.DictReader(handle)
        )


def _sha256(path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_table_holds_the_file_s_zones_exactly(published):
    _, served = published
    rows = table(ZONES).scan().to_pandas()
    got = sorted(rows[["location_id", "borough", "zone", "service_zone"]].itertuples(index=False, name=None))
    assert got == _file_rows(served)
    assert set(rows.source_fingerprint) == {_sha256(served)} and set(rows.source_file) == {LOOKUP}


def test_its_checks_ran_on_the_staged_table_and_passed(published):
    result, _ = published
    evaluations = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == {
        "taxi_zones_row_count_matches_source",
        "taxi_zones_no_null_keys",
        "taxi_zones_no_duplicate_keys",
        "taxi_zones_boroughs_known",
    }
    assert all(evaluations.values()), evaluations


def test_an_unchanged_file_is_not_written_again(published, pipeline):
    before = table(ZONES).current_snapshot().snapshot_id
    again = pipeline.run_job(JOB)
    assert again.success
    assert table(ZONES).current_snapshot().snapshot_id == before
    assert pipeline.latest_metadata(ZONES)["publication"].value == "unchanged"


def test_the_lineage_names_the_file_version_and_the_snapshot_down_to_the_column(published, pipeline, tmp_path):
    from openlineage.client import OpenLineageClient

    from bridge.run.lineage_pass import run_pass

    _, served = published
    events_file = tmp_path / "events.jsonl"
    client = OpenLineageClient(
        config={"transport": {"type": "file", "log_file_path": str(events_file), "append": True}}
    )
    graph = pipeline.definitions().resolve_asset_graph()
    run_pass(bridge_at(tmp_path, pipeline.settings), pipeline.instance, graph, client)
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    written = [
        e for e in events
        if e["job"]["name"] == f"{JOB}.nyc_taxi__taxi_zones" and e["eventType"] == "COMPLETE" and e["outputs"]
    ]  # fmt: skip
    assert written, "no COMPLETE event of the zone table's step wrote it"
    event = written[0]
    policy = naming(pipeline.settings)
    file_dataset, zone_table = policy.asset([ZONE_FILES]), policy.table(ZONES)
    [read] = event["inputs"]
    assert (read["namespace"], read["name"]) == (file_dataset.namespace, file_dataset.name)
    assert read["facets"]["version"]["datasetVersion"] == _sha256(served)
    [output] = event["outputs"]
    assert (output["namespace"], output["name"]) == (zone_table.namespace, zone_table.name)
    first_snapshot = min(table(ZONES).snapshots(), key=lambda s: s.timestamp_ms)
    published_ids = {
        str(s.snapshot_id) for s in table(ZONES).snapshots() if s.snapshot_id != first_snapshot.snapshot_id
    }
    assert output["facets"]["version"]["datasetVersion"] in published_ids
    columns = output["facets"]["columnLineage"]["fields"]
    for column, from_field in (("location_id", "LocationID"), ("borough", "Borough"), ("zone", "Zone")):
        sources = {(f["namespace"], f["name"], f["field"]) for f in columns[column]["inputFields"]}
        assert (file_dataset.namespace, file_dataset.name, from_field) in sources, (column, sources)


def _spoil(kind: str, path) -> None:
    text = path.read_text()
    if kind == "html":
        path.write_text("<!DOCTYPE html><html><head><title>Taxi Zone Maps and Lookup Tables</title></head></html>\n")
    elif kind == "missing_column":
        rows = list(csv.reader(text.splitlines()))
        with path.open("w", newline="") as handle:
            csv.writer(handle, quoting=csv.QUOTE_NONNUMERIC).writerows(row[:2] + row[3:] for row in rows)
    elif kind == "duplicate_ids":
        lines = text.splitlines()
        path.write_text("\n".join([*lines, lines[5].replace(lines[5].split(",")[1], '"Queens"')]) + "\n")


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("html", f"{LOOKUP} from .* is an HTML page, not TLC's zone lookup CSV"),
        ("missing_column", f"{LOOKUP} from .* has no column Zone .*TLC's zone lookup has LocationID, Borough"),
        ("duplicate_ids", f"{LOOKUP} from .* has two rows for LocationID 5 \\(lines 6 and 267\\)"),
    ],
)
def test_a_bad_file_fails_clearly_and_leaves_the_published_table_as_it_was(
    published, pipeline, sample_source, tmp_path, kind, expected
):
    import re

    root = tmp_path / "source"
    shutil.copytree(sample_source.root / ZONES_DIR, root / ZONES_DIR)
    _spoil(kind, root / ZONES_DIR / LOOKUP)
    before = table(ZONES).current_snapshot().snapshot_id
    staged_before = pipeline.latest_metadata(ZONE_FILES)["source_fingerprint"].value
    with serve_folder(root) as base_url:
        result = pipeline.run_job(JOB, base_url=base_url)
    assert not result.success
    failure = next(e for e in result.get_step_failure_events() if e.step_key == ZONE_FILES)
    message = failure.step_failure_data.error.message + " " + str(failure.step_failure_data.user_failure_data)
    assert re.search(expected, message), message
    assert "this run does not write nyc_taxi.taxi_zones" in message
    assert table(ZONES).current_snapshot().snapshot_id == before
    assert pipeline.latest_metadata(ZONE_FILES)["source_fingerprint"].value == staged_before
