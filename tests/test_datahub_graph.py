"""Both tools' lineage as one DataHub graph, in DataHub Lite (the embedded default)."""

import json
from pathlib import Path

import pytest
from openlineage.client import OpenLineageClient

from bridge.cli.main import main as lineage_command
from bridge.outbox.outbox import Outbox
from bridge.run.lineage_pass import run_pass
from bridge.sinks.contract import SinkContext
from bridge.sinks.datahub import FileConfig, FileSink, LiteSink, RestConfig, RestSink
from bridge.sinks.drain import drain
from bridge.sinks.lite import open_lite
from tests.lineage_bridges import bridge_at, lite_sink

pytestmark = pytest.mark.integration

FLOW = "urn:li:dataFlow:(metaflow,TrainForecastModelFlow,PROD)"
ICEBERG = "urn:li:dataset:(urn:li:dataPlatform:iceberg,{},PROD)"


@pytest.fixture(scope="module")
def graph(pipeline, by_hand_run, dagster_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("datahub")
    client = OpenLineageClient(config={"transport": {"type": "file", "log_file_path": str(folder / "ol.jsonl")}})
    bridge = bridge_at(folder, pipeline.settings, lite_sink(folder / "lite.sqlite"))
    result = run_pass(bridge, pipeline.instance, pipeline.definitions().resolve_asset_graph(), client)
    assert not result.sink("datahub").failing and result.sink("datahub").sent == sum(result.queued.values())
    lite = open_lite(folder / "lite.sqlite")
    outbox = Outbox(bridge.outbox_path)
    yield lite, outbox
    outbox.close()
    lite.close()


def _context(outbox, pipeline) -> SinkContext:
    """What a DataHub sink over the graph fixture's outbox is given: the project's bridge in that outbox's folder."""
    return SinkContext(bridge_at(outbox.path.parent, pipeline.settings), outbox, "datahub")


def _drained(outbox, sink, position=None):
    if position is not None:
        sink.advance(position)
    try:
        return drain(outbox, sink, deadline=float("inf"))
    finally:
        sink.close()


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
    assert _producers(lite, forecast) == [write]  # the Dagster step that launched the flow is not a producer
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
    properties = _aspect(lite, actuals, "datasetProperties")["customProperties"]
    assert properties["version"].isdigit() and int(properties["rows_written"]) > 0
    assert properties["partition"] in {"2024-12-01", "2025-01-01"}


def test_each_table_s_columns_carry_iceberg_s_descriptions(graph):
    from tests.iceberg_tables import table

    lite, _ = graph
    for name in (
        "nyc_taxi.raw_yellow",
        "nyc_taxi.yellow_rides_hourly_actuals",
        "nyc_taxi.yellow_rides_hourly_forecast",
    ):
        fields = _aspect(lite, ICEBERG.format(name), "schemaMetadata")["fields"]
        in_iceberg = {field.name: field.doc for field in table(name).schema().fields}
        assert {f["fieldPath"]: f.get("description") for f in fields} == in_iceberg, name


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
    assert weather in _aspect(lite, load, "dataJobInputOutput")["inputDatasets"]  # the job: every run's inputs
    assert any(found and weather not in found for found in inputs), "the first run did not"
    versions = [
        (_aspect(lite, urn, "dataProcessInstanceProperties") or {}).get("customProperties", {}) for urn in load_runs
    ]
    # Each load run that read the actuals names the snapshot it read (a run that failed before reading names none).
    read = [
        v["input:nyc_taxi.yellow_rides_hourly_actuals"]
        for v in versions
        if "input:nyc_taxi.yellow_rides_hourly_actuals" in v
    ]
    assert len(read) >= 2 and all(snapshot.isdigit() for snapshot in read)


def test_each_model_version_is_an_mlmodel_with_metrics_and_its_own_inputs(graph, by_hand_run, dagster_run):
    lite, _ = graph
    _, weather_run = dagster_run
    versions = {}
    for urn in lite.list_ids():
        if urn.startswith("urn:li:mlModel:"):
            properties = _aspect(lite, urn, "mlModelProperties")
            versions[properties["version"]["versionTag"]] = properties
    assert {by_hand_run.pathspec, weather_run.pathspec} <= set(versions)
    weather = ICEBERG.format("nyc_taxi.raw_weather")
    assert weather in versions[weather_run.pathspec]["customProperties"]["input_datasets"]
    assert weather not in versions[by_hand_run.pathspec]["customProperties"]["input_datasets"]
    metrics = {m["name"]: float(m["value"]) for m in versions[by_hand_run.pathspec]["trainingMetrics"]}
    champion = by_hand_run.data.metrics.set_index("candidate").loc[by_hand_run.data.champion]
    assert metrics["backtest_mae"] == pytest.approx(champion.mae, abs=1e-4)
    assert all("urn:li:mlModelGroup:" in g for v in versions.values() for g in v["groups"])


def test_asset_checks_are_assertions_with_results(graph):
    lite, _ = graph
    actuals = ICEBERG.format("nyc_taxi.yellow_rides_hourly_actuals")
    checks = {}
    for urn in lite.list_ids():
        if urn.startswith("urn:li:assertion:"):
            info = _aspect(lite, urn, "assertionInfo")
            if info["datasetAssertion"]["dataset"] == actuals:
                checks[info["datasetAssertion"]["nativeType"]] = urn
    assert set(checks) == {"actuals_no_null_keys", "actuals_no_duplicate_keys", "actuals_every_zone_has_every_hour"}


def test_a_replay_leaves_the_graph_unchanged(graph, pipeline):
    lite, outbox = graph

    def rows():
        query = "SELECT * FROM metadata_aspect_v2 ORDER BY urn, aspect_name, version"
        return lite.sqlite_client.execute(query).fetchall()

    before = rows()
    sink = LiteSink(FileConfig(path=Path(lite.location())), _context(outbox, pipeline))
    result = _drained(outbox, sink, position=0)
    assert not result.failing and result.sent == outbox.queue.count_after(0) > 0
    after = rows()
    changed = [(old, new) for old, new in zip(before, after, strict=False) if old != new]
    assert len(after) == len(before) and not changed, changed[:1]  # not one new version row, nor lastObserved


def test_the_lineage_command_shows_paths_model_inputs_and_a_picture(
    pipeline, by_hand_run, dagster_run, tmp_path, monkeypatch, capsys
):
    from forecast_assets.lineage_cli import main

    _, weather_run = dagster_run
    monkeypatch.setenv("DAGSTER_HOME", pipeline.instance.root_directory)
    monkeypatch.setenv("TAXI_STATE_DIR", str(tmp_path))
    assert main([]) == 0
    # The graph fixture's pass reported the shell run already: a pass with a new outbox does not report it twice.
    assert "reported" not in capsys.readouterr().out
    from dagster import AssetKey

    reported = pipeline.instance.fetch_materializations(AssetKey("forecast_model"), limit=10).records
    runless = [r for r in reported if r.asset_materialization.metadata["model_version"].value == by_hand_run.pathspec]
    assert len(runless) == 1
    versions = {r.asset_materialization.metadata["model_version"].value: r.run_id for r in reported}
    assert versions[by_hand_run.pathspec] == ""  # runless: reported, not run by Dagster
    assert versions[weather_run.pathspec]  # materialized by the Dagster run that launched it
    main(["show", "nyc_taxi.yellow_rides_hourly_forecast"])
    upstream = capsys.readouterr().out.split("\ndownstream")[0]
    for step in ("TrainForecastModelFlow.write", "TrainForecastModelFlow.load", "nyc_taxi.yellow_rides_hourly_actuals",
                 "monthly_ingestion.nyc_taxi__yellow_rides_hourly_actuals", "nyc_taxi.raw_yellow"):  # fmt: skip
        assert step in upstream
    main(["model", weather_run.pathspec])
    assert "input nyc_taxi.raw_weather" in capsys.readouterr().out
    main(["model", by_hand_run.pathspec])
    printed = capsys.readouterr().out
    assert by_hand_run.pathspec in printed and "raw_weather" not in printed
    main(["picture"])
    svg = (tmp_path / "lineage" / "lineage_graph.svg").read_text()
    assert "<svg" in svg and "nyc_taxi.yellow_rides_hourly_forecast" in svg and "TrainForecastModelFlow.load" in svg
    main(["show", "nyc_taxi.yellow_rides_hourly_forecast.forecasted_total_rides", "--version", weather_run.pathspec])
    # The weather was read whole: the column comes from each month read, each at the snapshot that wrote it.
    printed = capsys.readouterr().out
    assert "<- nyc_taxi.raw_weather.value [date_month=" in printed and "<- nyc_taxi.raw_weather.value @ " not in printed


def test_the_rest_emitter_sends_the_graph_to_a_gms(graph, pipeline):
    from tests.loopback_gms import GmsStandIn

    _, outbox = graph
    with GmsStandIn() as gms:
        sink = RestSink(RestConfig(server=gms.url), _context(outbox, pipeline))
        result = _drained(outbox, sink)
    assert not result.failing and result.sent == outbox.queue.count_after(0)
    assert len(gms.proposals()) == sink.aspects
    assert {
        ICEBERG.format("nyc_taxi.yellow_rides_hourly_forecast"),
        f"urn:li:dataJob:({FLOW},load)",
        "urn:li:dataFlow:(dagster,monthly_ingestion,PROD)",
    } <= gms.urns()


def test_the_file_emitter_output_passes_datahub_check_metadata_file(graph, pipeline, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    _, outbox = graph
    sink = FileSink(FileConfig(path=tmp_path / "metadata.json"), _context(outbox, pipeline))
    _drained(outbox, sink)
    datahub_cli = Path(sys.executable).parent / "datahub"
    check = subprocess.run(
        [str(datahub_cli), "check", "metadata-file", str(tmp_path / "metadata.json")], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"{sink.aspects} MCEs found - all valid" in check.stdout + check.stderr


def test_model_and_diff_name_each_run_s_champion_and_features_as_metaflow_kept_them(
    graph, pipeline, by_hand_run, dagster_run, capsys
):
    """The lineage command's candidate and features of a model version are the run's own artifacts."""
    _, outbox = graph
    _, weather_run = dagster_run
    bridge = bridge_at(outbox.path.parent, pipeline.settings)
    truth = {run.pathspec: (run.data.champion, sorted(run.data.used_features)) for run in (by_hand_run, weather_run)}
    assert lineage_command(["model", "--json"], bridge) == 0
    listed = {v["version"]: (v["candidate"], sorted(v["features"])) for v in json.loads(capsys.readouterr().out)}
    assert {version: listed[version] for version in truth} == truth
    assert lineage_command(["diff", by_hand_run.pathspec, weather_run.pathspec, "--json"], bridge) == 0
    compared = json.loads(capsys.readouterr().out)
    assert {compared[side]["version"]: (compared[side]["candidate"], sorted(compared[side]["features"]))
            for side in ("from", "to")} == truth  # fmt: skip
    assert lineage_command(["model"], bridge) == 0
    model_text = " ".join(capsys.readouterr().out.split())
    assert lineage_command(["diff", by_hand_run.pathspec, weather_run.pathspec], bridge) == 0
    diff_text = " ".join(capsys.readouterr().out.split())
    for version, (champion, features) in truth.items():
        said = f"candidate {champion}; {len(features)} features: {', '.join(features)}"
        assert f"{version} {said} trained by " in model_text and f" {version}: {said}. " in diff_text
