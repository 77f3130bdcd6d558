"""The third source, TLC's taxi zone lookup: one declaration and one registration line, published whole.

Checked against what really happened: the served file's bytes (read here with the csv module and hashed)
and the table as pyiceberg reads it, never against what the pipeline says about itself.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil

import pandas as pd
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
        "taxi_zones_keeps_every_zone_in_use",
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


@pytest.fixture
def restored_lookup(published, pipeline):
    """After the test, TLC's lookup as the sample source serves it is published again."""
    yield
    assert pipeline.run_job(JOB).success


def _lookup_lines(path) -> list[str]:
    return path.read_text().splitlines()


def _write_lines(path, lines: list[str], newline: str = "\n", prefix: str = "") -> None:
    path.write_bytes((prefix + newline.join(lines) + newline).encode())


def _zones_in_published_trips() -> dict[int, int]:
    """Trips per zone id (pickups and dropoffs) in the published raw trips, read with pyiceberg."""
    trips = table("nyc_taxi.raw_yellow").scan(selected_fields=("pulocationid", "dolocationid")).to_pandas()
    return pd.concat([trips["pulocationid"], trips["dolocationid"]]).value_counts().to_dict()


def _busiest_zone() -> int:
    return max(_zones_in_published_trips().items(), key=lambda item: item[1])[0]


HELD_BACK_LOOKUPS = {
    "half_the_zones": lambda path: _write_lines(path, _lookup_lines(path)[:133]),
    "the_busiest_zone_lost": lambda path: _write_lines(
        path, [line for line in _lookup_lines(path) if not line.startswith(f"{_busiest_zone()},")]
    ),
}


@pytest.mark.parametrize("case", sorted(HELD_BACK_LOOKUPS))
def test_a_lookup_without_zones_the_trips_use_is_held_back(published, pipeline, sample_source, tmp_path, case):
    root = tmp_path / "source"
    shutil.copytree(sample_source.root / ZONES_DIR, root / ZONES_DIR)
    served = root / ZONES_DIR / LOOKUP
    HELD_BACK_LOOKUPS[case](served)
    in_use = _zones_in_published_trips()
    lost = sorted(set(in_use) - {row[0] for row in _file_rows(served)})
    before = table(ZONES).current_snapshot().snapshot_id

    with serve_folder(root) as base_url:
        result = pipeline.run_job(JOB, base_url=base_url)

    assert not result.success
    assert table(ZONES).current_snapshot().snapshot_id == before
    failure = next(e for e in result.get_step_failure_events() if e.step_key == "nyc_taxi__taxi_zones")
    message = failure.step_failure_data.user_failure_data.description
    assert message.startswith(f"{ZONES} (whole table) was NOT published: taxi_zones_keeps_every_zone_in_use failed")
    trips = sum(in_use[zone] for zone in lost)
    zones = "zone" if len(lost) == 1 else "zones"
    assert f"the lookup lacks {len(lost)} {zones} that {trips:,} published trips name" in message
    assert _sha256(served) in message


LEGITIMATE_LOOKUPS = {
    "byte_order_mark": lambda path: _write_lines(path, _lookup_lines(path), prefix="\ufeff"),
    "crlf_line_ends": lambda path: _write_lines(path, _lookup_lines(path), newline="\r\n"),
    "every_field_quoted": lambda path: _requoted(path),
    "a_new_zone_appended": lambda path: _write_lines(
        path, [*_lookup_lines(path), '266,"Queens","A zone TLC added","Boro Zone"']
    ),
}


def _requoted(path) -> None:
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    with path.open("w", newline="") as handle:
        csv.writer(handle, quoting=csv.QUOTE_ALL).writerows(rows)


@pytest.mark.parametrize("case", sorted(LEGITIMATE_LOOKUPS))
def test_a_legitimate_lookup_is_published_as_the_file_says(
    published, restored_lookup, pipeline, sample_source, tmp_path, case
):
    root = tmp_path / "source"
    shutil.copytree(sample_source.root / ZONES_DIR, root / ZONES_DIR)
    served = root / ZONES_DIR / LOOKUP
    LEGITIMATE_LOOKUPS[case](served)

    with serve_folder(root) as base_url:
        result = pipeline.run_job(JOB, base_url=base_url)

    assert result.success, [e.step_failure_data.error for e in result.get_step_failure_events()]
    with served.open(newline="", encoding="utf-8-sig") as handle:
        expected = sorted(
            (int(row["LocationID"]), row["Borough"], row["Zone"], row["service_zone"]) for row in csv.DictReader(handle)
        )
    published_rows = table(ZONES).scan(selected_fields=("location_id", "borough", "zone", "service_zone")).to_pandas()
    assert sorted(published_rows.itertuples(index=False, name=None)) == expected
