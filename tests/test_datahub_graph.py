"""Both tools' lineage as one DataHub graph, in DataHub Lite (the embedded default)."""

import json

import pytest
from openlineage.client import OpenLineageClient

from bridge.bridge_pass import run_pass
from bridge.datahub_sink import SINK_NAME, open_lite, write_to_datahub
from bridge.outbox import Outbox
from bridge.sources import sources_for

pytestmark = pytest.mark.integration

FLOW = "urn:li:dataFlow:(metaflow,TrainForecastModelFlow,PROD)"
ICEBERG = "urn:li:dataset:(urn:li:dataPlatform:iceberg,{},PROD)"


@pytest.fixture(scope="module")
def graph(pipeline, by_hand_run, dagster_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("datahub")
    outbox = Outbox(folder / "outbox.sqlite")
    client = OpenLineageClient(config={"transport": {"type": "file", "log_file_path": str(folder / "ol.jsonl")}})
    lite = open_lite(folder / "lite.sqlite")
    result = run_pass(sources_for(pipeline.instance), outbox, client, datahub=lite)
    assert result.datahub.error is None and result.datahub.events == sum(result.queued.values())
    yield lite, outbox
    lite.close()


def _aspect(lite, urn, name):
    found = lite.get(urn, aspects=[name]) or {}
    return found.get(name)


def _jobs(lite):
    return [urn for urn in lite.list_ids() if urn.startswith("urn:li:dataJob:")]


def _producers(lite, dataset):
    return [
        job
        for job in _jobs(lite)
        if dataset in ((_aspect(lite, job, "dataJobInputOutput") or {}).get("outputDatasets", []))
    ]  # noqa: E501


def test_the_graph_holds_the_whole_cross_tool_path(graph):
    lite, _ = graph
    forecast = ICEBERG.format("nyc_taxi.yellow_rides_hourly_forecast")
    actuals = ICEBERG.format("nyc_taxi.yellow_rides_hourly_actuals")
    raw = ICEBERG.format("nyc_taxi.raw_yellow")
    write = f"urn:li:dataJob:({FLOW},write)"
    assert write in _producers(lite, forecast)
    # Walk the Metaflow steps back through their job-to-job edges to the step that read actuals.
    seen, frontier = set(), [write]
    while frontier:
        job = frontier.pop()
        seen.add(job)
        frontier += [
            j for j in (_aspect(lite, job, "dataJobInputOutput") or {}).get("inputDatajobs", []) if j not in seen
        ]  # noqa: E501
    load = f"urn:li:dataJob:({FLOW},load)"
    assert load in seen
    assert actuals in _aspect(lite, load, "dataJobInputOutput")["inputDatasets"]
    dagster_actuals_jobs = [j for j in _producers(lite, actuals) if "urn:li:dataFlow:(dagster," in j]
    assert dagster_actuals_jobs
    assert raw in _aspect(lite, dagster_actuals_jobs[0], "dataJobInputOutput")["inputDatasets"]
    lineage = _aspect(lite, actuals, "upstreamLineage")
    assert raw in [u["dataset"] for u in lineage["upstreams"]]
    assert _aspect(lite, actuals, "datasetProperties")["customProperties"]["version"].isdigit()


def test_each_run_keeps_its_own_inputs_so_the_weather_version_shows(graph):
    lite, _ = graph
    load = f"urn:li:dataJob:({FLOW},load)"
    weather = ICEBERG.format("nyc_taxi.raw_weather")
    runs = [urn for urn in lite.list_ids() if urn.startswith("urn:li:dataProcessInstance:")]
    load_runs = [
        urn
        for urn in runs
        if (_aspect(lite, urn, "dataProcessInstanceRelationships") or {}).get("parentTemplate") == load
    ]  # noqa: E501
    inputs = [set((_aspect(lite, urn, "dataProcessInstanceInput") or {}).get("inputs", [])) for urn in load_runs]
    assert any(weather in found for found in inputs), "the weather-enabled run read raw_weather"
    assert any(found and weather not in found for found in inputs), "the first run did not"


def test_a_replay_leaves_the_graph_unchanged(graph):
    lite, outbox = graph

    def snapshot():
        return {urn: json.dumps(lite.get(urn, aspects=None), sort_keys=True, default=str) for urn in lite.list_ids()}

    before = snapshot()
    outbox.set_sink_offset(SINK_NAME, 0)
    result = write_to_datahub(outbox, lite)
    assert result.error is None and result.events > 0
    assert snapshot() == before
