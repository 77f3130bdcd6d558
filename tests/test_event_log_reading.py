"""Dagster's SQLite files read in bulk give the same events as the instance's APIs, on both SQLite storages."""

import json
from pathlib import Path

import pytest
from dagster import DagsterInstance, materialize

from bridge.sources.dagster import DagsterSource
from bridge.sources.dagster_log import InstanceEventLog, SqliteEventLog, event_log
from bridge.translate.event_json import event_json
from tests.reuse_project.shop import CONSOLIDATED, TABLES, definitions, naming


def _events(source: DagsterSource) -> list[tuple[str, dict]]:
    cursor: dict = {}
    found = []
    while True:  # a batch of two runs per read: the cursor carries what is left over to the next
        events, cursor = source.read(cursor)
        if not events:
            return found
        found += [(key, json.loads(event_json(event))) for key, event in events]


@pytest.mark.parametrize("storage", ["sharded", "consolidated"])
def test_the_files_read_in_bulk_give_what_the_apis_give(tmp_path: Path, storage):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        "telemetry:\n  enabled: false\n" + (CONSOLIDATED.format(home=home) if storage == "consolidated" else "")
    )
    defs = definitions(tmp_path)
    graph = defs.resolve_asset_graph()
    with DagsterInstance.from_config(str(home)) as instance:
        for _ in range(5):
            assert materialize(graph.assets_defs, instance=instance, selection=TABLES).success
        assert isinstance(event_log(instance), SqliteEventLog)
        bulk = _events(DagsterSource(instance, graph, naming(tmp_path), batch=2))
        through_apis = _events(DagsterSource(instance, graph, naming(tmp_path), batch=2, log=InstanceEventLog))
    assert len(bulk) == 30
    assert bulk == through_apis
    read = [d for _, event in bulk for d in event.get("inputs", []) if "version" in d.get("facets", {})]
    assert read  # the upstream versions were looked up (in the files, then through the APIs)


@pytest.mark.parametrize("message", ["done", 'a "timestamp": 1.5, in the text', ""])
def test_an_entrys_time_is_read_from_its_text_as_parsing_it_whole_would(message):
    """A materialization whose metadata holds times of its own, as Dagster serializes it: the entry's time."""
    from datetime import UTC, datetime

    from dagster import AssetMaterialization, DagsterEvent, DagsterEventType, EventLogEntry, MetadataValue
    from dagster._core.events import StepMaterializationData
    from dagster_shared.serdes import serialize_value

    from bridge.sources.dagster_log import stored_at

    materialization = AssetMaterialization(
        "forecast",
        metadata={"timestamp": MetadataValue.timestamp(datetime(2026, 1, 2, tzinfo=UTC)), "plot": "x" * 200_000},
    )
    made = StepMaterializationData(materialization)
    event = DagsterEvent(DagsterEventType.ASSET_MATERIALIZATION.value, "job", event_specific_data=made)
    entry = EventLogEntry(
        error_info=None, level="INFO", user_message=message, run_id="run", timestamp=1764123456.789012,
        dagster_event=event,
    )  # fmt: skip
    text = serialize_value(entry)
    assert stored_at(text) == json.loads(text)["timestamp"] == 1764123456.789012
    without_message = text.replace(f', "user_message": {json.dumps(message)}}}', "}")
    assert without_message != text and stored_at(without_message) == 1764123456.789012
    nested_last = text[:-1] + ', "zzz": {"timestamp": 1.0}}'  # a layout Dagster does not write: parsed whole
    assert stored_at(nested_last) == 1764123456.789012
