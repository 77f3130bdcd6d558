"""Golden tests: recorded runs -> the exact OpenLineage events -> the exact DataHub aspects. No JVM, no instance.

The records in ``tests/golden/records`` were read from a real pipeline (``tests/golden/record.py``);
the expected files beside them are what the translators must produce. After a deliberate change:
``GOLDEN_UPDATE=1 ./run tests tests/test_golden.py``, then read the diff.
"""

import json
import os
from pathlib import Path

import pytest
from openlineage.client.serde import Serde

from bridge.translate.dagster import translate_run
from bridge.translate.dagster_records import DagsterRunRecords
from bridge.translate.datahub import metadata_for
from bridge.translate.event_json import event_json
from bridge.translate.metaflow import FlowRunRecord, translate_flow_run
from forecast_assets.lineage import naming as project_naming
from taxi_core.settings import Settings
from tests.openlineage_schema import validation_errors

GOLDEN = Path(__file__).parent / "golden"
RECORDS = sorted((GOLDEN / "records").glob("*.json"))
UPDATE = os.environ.get("GOLDEN_UPDATE") == "1"
# The project's naming, with the state folder at /state as the records were written, in default settings.
NAMING = project_naming(Settings.model_construct().model_copy(update={"state_dir": Path("/state")}))


def _translate(path: Path) -> list[dict]:
    text = path.read_text()
    if path.name.startswith("dagster_"):
        untranslated: list[int] = []
        events = translate_run(DagsterRunRecords.from_json(text), NAMING, untranslated=untranslated)
        assert untranslated == []
    else:
        events = translate_flow_run(FlowRunRecord.from_json(text), NAMING)
    return [{"key": key, "event": json.loads(Serde.to_json(event))} for key, event in events]


def _check(expected: Path, actual) -> None:
    if UPDATE:
        expected.parent.mkdir(exist_ok=True)
        expected.write_text(json.dumps(actual, indent=1, sort_keys=True) + "\n")
    assert expected.exists(), f"no golden file {expected.name}: run with GOLDEN_UPDATE=1 and review it"
    assert actual == json.loads(expected.read_text())


def test_there_are_recordings_of_both_tools():
    assert {path.name.split("_")[0] for path in RECORDS} == {"dagster", "metaflow"}


@pytest.mark.parametrize("record", RECORDS, ids=[path.stem for path in RECORDS])
def test_records_translate_to_the_golden_openlineage_events(record):
    events = _translate(record)
    assert events, "every recorded run says something"
    assert {
        e["event"]["job"]["name"]: validation_errors(e["event"]) for e in events if validation_errors(e["event"])
    } == {}
    _check(GOLDEN / "openlineage" / record.name, events)


@pytest.mark.parametrize("record", RECORDS, ids=[path.stem for path in RECORDS])
def test_events_translate_to_the_golden_datahub_aspects(record):
    events = json.loads((GOLDEN / "openlineage" / record.name).read_text())
    aspects = [mcp.to_obj() for entry in events for mcp in metadata_for(entry["event"], NAMING)]
    _check(GOLDEN / "datahub" / record.name, aspects)


@pytest.mark.parametrize("record", RECORDS, ids=[path.stem for path in RECORDS])
def test_events_are_queued_as_the_clients_serde_writes_them(record):
    """The one-walk serialization the outbox uses writes the bytes the OpenLineage client's ``Serde.to_json`` does."""
    text = record.read_text()
    if record.name.startswith("dagster_"):
        events = translate_run(DagsterRunRecords.from_json(text), NAMING)
    else:
        events = translate_flow_run(FlowRunRecord.from_json(text), NAMING)
    for _, event in events:
        assert event_json(event) == Serde.to_json(event)
        as_dictionary = json.loads(Serde.to_json(event))
        assert event_json(as_dictionary) == Serde.to_json(as_dictionary)


def test_records_survive_a_round_trip_through_json():
    for path in RECORDS:
        kind = DagsterRunRecords if path.name.startswith("dagster_") else FlowRunRecord
        text = kind.from_json(path.read_text()).to_json()
        assert json.loads(text) == json.loads(path.read_text())


def test_a_range_s_partitions_survive_a_round_trip_through_json():
    """A run of a range keeps its partitions, their windows and their own upstream versions through JSON."""
    import dataclasses
    from datetime import datetime

    path = next(path for path in RECORDS if path.name.startswith("dagster_"))
    records = DagsterRunRecords.from_json(path.read_text())
    window = (datetime(2024, 12, 1), datetime(2025, 1, 1))
    ranged = dataclasses.replace(
        records, partitions=("2024-12-01",), partition_windows={"2024-12-01": window},
        partition_upstream={"2024-12-01": records.upstream},
    )  # fmt: skip
    back = DagsterRunRecords.from_json(ranged.to_json())
    assert (back.partitions, back.partition_windows) == (ranged.partitions, ranged.partition_windows)
    assert back.partition_upstream.keys() == ranged.partition_upstream.keys()
    assert json.loads(back.to_json()) == json.loads(ranged.to_json())


def test_every_written_table_carries_schema_valid_column_lineage():
    """The facets the schema test validates are there: each table a run wrote, with its column lineage."""
    written = {}
    for record in RECORDS:
        for entry in _translate(record):
            event = entry["event"]
            for dataset in event.get("outputs", []) if event["eventType"] == "COMPLETE" else []:
                catalog = dataset["facets"].get("symlinks", {}).get("identifiers", [{}])[0].get("name")
                if catalog and "version" in dataset["facets"]:
                    written.setdefault(catalog, set()).update(
                        dataset["facets"].get("columnLineage", {}).get("fields", {})
                    )
    assert written["nyc_taxi.raw_yellow"] >= {"tpep_pickup_datetime", "pulocationid"}
    assert written["nyc_taxi.raw_weather"] >= {"value", "county_fips", "date", "element"}
    assert written["nyc_taxi.yellow_rides_hourly_actuals"] == {"pickup_hour", "pulocationid", "total_rides"}
    assert "forecasted_total_rides" in written["nyc_taxi.yellow_rides_hourly_forecast"]
