"""Delivery goes through the OpenLineage client's ``emit``: its own configuration (transport, filters, tags) applies."""

import json
import time
from pathlib import Path

import pytest
from openlineage.client import OpenLineageClient
from openlineage.client.serde import Serde
from openlineage.client.transport.file import FileConfig, FileTransport

from bridge.config import LineageBridge
from bridge.outbox.outbox import Outbox
from bridge.sinks.contract import SinkContext
from bridge.sinks.drain import DrainResult, drain
from bridge.sinks.openlineage import OpenLineageConfig, OpenLineageSink
from bridge.sinks.openlineage_client import make_client, run_event_from_json, target_of
from bridge.translate.naming import Naming

GOLDEN_EVENTS = Path(__file__).parent / "golden" / "openlineage"


def _queued(tmp_path) -> tuple[Outbox, list[dict]]:
    events = [entry for path in sorted(GOLDEN_EVENTS.glob("*.json")) for entry in json.loads(path.read_text())]
    outbox = Outbox(tmp_path / "outbox.sqlite")
    with outbox.queue.batch("golden") as batch:
        for entry in events:
            batch.add(entry["key"], json.dumps(entry["event"]))
    return outbox, [entry["event"] for entry in events]


def deliver(outbox: Outbox, client: OpenLineageClient) -> DrainResult:
    """Drain the outbox into the OpenLineage sink sending through ``client``, with an hour to do it."""
    bridge = LineageBridge(naming=Naming(), lineage_dir=outbox.path.parent / "lineage")
    sink = OpenLineageSink(OpenLineageConfig(client=client), SinkContext(bridge, outbox, "openlineage"))
    try:
        return drain(outbox, sink, time.monotonic() + 3600)
    finally:
        sink.close()


def test_a_queued_event_becomes_the_clients_typed_event_unchanged():
    for entry in json.loads(next(GOLDEN_EVENTS.glob("metaflow_*.json")).read_text()):
        event = run_event_from_json(json.dumps(entry["event"]))
        assert json.loads(Serde.to_json(event)) == entry["event"]


def test_without_a_configured_transport_events_go_to_the_lineage_folders_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    outbox, events = _queued(tmp_path)
    client = make_client(tmp_path / "lineage" / "events.jsonl")
    assert target_of(client) == f"file {tmp_path / 'lineage' / 'events.jsonl'}"
    assert target_of(client, tmp_path / "lineage") == "file events.jsonl"  # it moves with the lineage folder
    result = deliver(outbox, client)
    assert not result.failing and result.sent == len(events) and result.pending == 0
    assert len((tmp_path / "lineage" / "events.jsonl").read_text().splitlines()) == len(events)


def test_the_clients_own_configuration_file_applies_filters_and_tags(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    received = tmp_path / "received.jsonl"
    config = tmp_path / "openlineage.yml"
    config.write_text(
        f"transport:\n  type: file\n  log_file_path: {received}\n  append: true\n"
        "filters:\n  - type: regex\n    regex: 'TrainForecastModelFlow\\..*'\n"
        "tags:\n  job:\n    team: lineage\n"
    )
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
    outbox, events = _queued(tmp_path)
    result = deliver(outbox, make_client(tmp_path / "unused.jsonl"))
    assert not result.failing and result.pending == 0
    sent = [json.loads(line) for line in received.read_text().splitlines()]
    steps = [e for e in events if e["job"]["name"].startswith("TrainForecastModelFlow.")]
    assert steps and len(sent) == len(events) - len(steps)  # the filter dropped the Metaflow steps
    assert not any(e["job"]["name"].startswith("TrainForecastModelFlow.") for e in sent)
    tags = {(t["key"], t["value"]) for t in sent[0]["job"]["facets"]["tags"]["tags"]}
    assert ("team", "lineage") in tags
    assert not (tmp_path / "unused.jsonl").exists()


def test_a_transport_that_fails_keeps_the_rest_queued_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outbox, events = _queued(tmp_path)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    client = OpenLineageClient(transport=FileTransport(FileConfig(log_file_path=str(blocked / "events.jsonl"))))
    result = deliver(outbox, client)
    assert result.sent == 0 and result.pending == len(events) and result.waiting_on


@pytest.mark.parametrize(
    "configured_tags",
    ["tags:\n  job:\n    team: lineage\n  run:\n    shift: night\n", ""],
    ids=["job-and-run-tags", "the-clients-own-run-tag"],
)
def test_queued_json_is_sent_exactly_as_the_clients_emit_would_send_it(tmp_path, monkeypatch, configured_tags):
    """The fast path (bridge.sinks.enriched_send) adds the client's own facets (its tags) and nothing else."""
    from bridge.sinks.enriched_send import enriched_sender

    monkeypatch.chdir(tmp_path)
    config = tmp_path / "openlineage.yml"
    config.write_text(configured_tags)
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
    outbox, events = _queued(tmp_path)

    def client(path):
        return OpenLineageClient(transport=FileTransport(FileConfig(log_file_path=str(path), append=True)))

    fast = client(tmp_path / "fast.jsonl")
    first = json.dumps(events[0])
    assert enriched_sender(fast, run_event_from_json(first), first) is not None
    deliver(outbox, fast)
    emitted = client(tmp_path / "emitted.jsonl")
    for event in events:
        emitted.emit(run_event_from_json(json.dumps(event)))
    assert (tmp_path / "fast.jsonl").read_text() == (tmp_path / "emitted.jsonl").read_text()  # byte for byte
    sent = [json.loads(line) for line in (tmp_path / "fast.jsonl").read_text().splitlines()]
    run_tags = {(t["key"], t["value"]) for t in sent[0]["run"]["facets"]["tags"]["tags"]}
    assert "openlineage_client_version" in dict(run_tags)
    if not configured_tags:
        return
    assert ("team", "lineage") in {(t["key"], t["value"]) for t in sent[0]["job"]["facets"]["tags"]["tags"]}
    assert ("shift", "night") in {(t["key"], t["value"]) for t in sent[0]["run"]["facets"]["tags"]["tags"]}


def test_a_configured_filter_keeps_every_event_on_the_clients_emit(tmp_path, monkeypatch):
    from bridge.sinks.enriched_send import enriched_sender

    monkeypatch.chdir(tmp_path)
    config = tmp_path / "openlineage.yml"
    config.write_text("filters:\n  - type: regex\n    regex: 'nothing'\n")
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
    _, events = _queued(tmp_path)
    client = OpenLineageClient(transport=FileTransport(FileConfig(log_file_path=str(tmp_path / "x"), append=True)))
    first = json.dumps(events[0])
    assert enriched_sender(client, run_event_from_json(first), first) is None
