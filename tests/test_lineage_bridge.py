"""The bridge on a real pipeline: spec-valid events, names that join across tools, cursors, delivery."""

import json
from collections import Counter

import pytest
from openlineage.client import OpenLineageClient

from bridge.outbox.outbox import Outbox
from bridge.run.lineage_pass import queue_source, run_pass, sources_for
from forecast_assets.lineage import naming
from tests.lineage_bridges import bridge_at
from tests.loopback_lineage import LineageServer, free_port
from tests.openlineage_schema import validation_errors

pytestmark = pytest.mark.integration


def _file_client(path) -> OpenLineageClient:
    return OpenLineageClient(config={"transport": {"type": "file", "log_file_path": str(path), "append": True}})


def _http_client(port: int) -> OpenLineageClient:
    transport = {"type": "http", "url": f"http://127.0.0.1:{port}", "timeout": 2, "retry": {"total": 0}}
    return OpenLineageClient(config={"transport": transport})


@pytest.fixture(scope="module")
def failed_run(pipeline):
    """An ingestion run that fails: the sample source has no 2025-03."""
    result = pipeline.run("2025-03-01")
    assert not result.success
    return result


@pytest.fixture(scope="module")
def graph(pipeline):
    return pipeline.definitions().resolve_asset_graph()


def _pass(pipeline, graph, folder, client):
    return run_pass(bridge_at(folder, pipeline.settings), pipeline.instance, graph, client)


@pytest.fixture(scope="module")
def emitted(pipeline, graph, by_hand_run, dagster_run, failed_run, tmp_path_factory):
    """One bridge pass over the whole pipeline, delivered to a JSON-lines file."""
    folder = tmp_path_factory.mktemp("lineage")
    result = _pass(pipeline, graph, folder, _file_client(folder / "events.jsonl"))
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    return result, events


def _jobs(events, name):
    return [e for e in events if e["job"]["name"] == name]


def test_every_event_validates_against_the_official_schemas(emitted):
    result, events = emitted
    assert not result.sink("openlineage").failing and result.sink("openlineage").pending == 0
    assert len(events) == sum(result.queued.values()) > 0
    problems = {e["job"]["name"]: validation_errors(e) for e in events if validation_errors(e)}
    assert problems == {}


def test_the_validator_rejects_a_broken_event(emitted):
    _, events = emitted
    broken = json.loads(json.dumps(events[0]))
    del broken["run"]["runId"]
    broken["job"]["facets"]["jobType"]["processingType"] = 7
    assert len(validation_errors(broken)) >= 2


def test_dagster_runs_steps_checks_and_metaflow_steps_become_jobs(emitted, by_hand_run):
    _, events = emitted
    names = {e["job"]["name"] for e in events}
    assert {"monthly_ingestion", "monthly_ingestion.nyc_taxi__raw_yellow", "train_forecast_model"} <= names
    assert {"TrainForecastModelFlow", "TrainForecastModelFlow.load", "TrainForecastModelFlow.write"} <= names
    integrations = {e["job"]["facets"]["jobType"]["integration"] for e in events}
    assert integrations == {"DAGSTER", "METAFLOW"}
    # A table asset audits its month in its own step: the checks ride on the dataset it published.
    assertions = [
        a
        for e in events
        for d in [*e.get("inputs", []), *e.get("outputs", [])]
        for a in d.get("facets", {}).get("dataQualityAssertions", {}).get("assertions", [])
    ]  # noqa: E501
    assert {"actuals_every_zone_has_every_hour", "raw_yellow_row_count_matches_source"} <= {
        a["name"] for a in assertions
    }


def test_a_failed_run_and_step_carry_the_error(emitted, failed_run):
    _, events = emitted
    failed = [e for e in events if e["eventType"] == "FAIL"]
    step = [e for e in failed if e["job"]["name"] == "monthly_ingestion.taxi_trip_files"]
    run = [e for e in failed if e["job"]["name"] == "monthly_ingestion"]
    assert step and run
    assert "yellow_tripdata_2025-03.parquet does not exist" in step[-1]["run"]["facets"]["errorMessage"]["message"]
    assert step[-1]["outputs"][0]["name"].endswith("/staging/taxi")  # the materialization that failed
    assert run[-1]["run"]["facets"]["errorMessage"]["message"]


def test_an_asset_step_has_its_upstream_inputs_and_versioned_outputs(emitted, pipeline):
    _, events = emitted
    complete = [
        e
        for e in _jobs(events, "monthly_ingestion.nyc_taxi__yellow_rides_hourly_actuals")
        if e["eventType"] == "COMPLETE"
    ]
    raw = naming(pipeline.settings).table("nyc_taxi.raw_yellow")
    actuals = naming(pipeline.settings).table("nyc_taxi.yellow_rides_hourly_actuals")
    published = [e for e in complete if e["outputs"]]
    assert published
    for event in complete:
        if not event["outputs"]:
            # A month found unchanged wrote nothing: the published month it audited is an input, with the checks.
            audited = event["inputs"][1]
            assert (audited["namespace"], audited["name"]) == (actuals.namespace, actuals.name)
            assert audited["facets"]["dataQualityAssertions"]["assertions"]
    for event in published:
        assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [(raw.namespace, raw.name)]
        assert event["inputs"][0]["facets"]["version"]["datasetVersion"].isdigit()
        output = event["outputs"][0]
        assert output["facets"]["dataQualityAssertions"]["assertions"]
        assert (output["namespace"], output["name"]) == (actuals.namespace, actuals.name)
        assert output["facets"]["symlinks"]["identifiers"][0]["name"] == "nyc_taxi.yellow_rides_hourly_actuals"
        assert [f["name"] for f in output["facets"]["schema"]["fields"]] == [
            "pickup_hour",
            "pulocationid",
            "total_rides",
        ]
        assert event["run"]["facets"]["parent"]["job"]["name"] == "monthly_ingestion"
        assert event["run"]["facets"]["nominalTime"]["nominalStartTime"].startswith(("2024-12-01", "2025-01-01"))
    latest = pipeline.latest_metadata("nyc_taxi.yellow_rides_hourly_actuals")["iceberg/snapshot_id"].value
    versions = {e["outputs"][0]["facets"]["version"]["datasetVersion"] for e in published}
    assert str(latest) in versions


def test_every_column_of_every_table_is_described_as_iceberg_describes_it(emitted):
    """The descriptions the lineage carries (each table's schema facet) are the Iceberg tables' own column docs."""
    from tests.iceberg_tables import table

    _, events = emitted
    described: dict[str, dict[str, str | None]] = {}
    for event in events:
        for dataset in event.get("outputs", []):
            fields = dataset.get("facets", {}).get("schema", {}).get("fields", [])
            symlinks = dataset["facets"].get("symlinks", {}).get("identifiers", [])
            if fields and symlinks:
                described[symlinks[0]["name"]] = {f["name"]: f.get("description") for f in fields}
    tables = ["nyc_taxi.raw_yellow", "nyc_taxi.raw_weather", "nyc_taxi.taxi_zones"]
    tables += ["nyc_taxi.yellow_rides_hourly_actuals", "nyc_taxi.yellow_rides_hourly_forecast"]
    assert set(tables) <= described.keys()
    for name in tables:
        in_iceberg = {field.name: field.doc for field in table(name).schema().fields}
        assert described[name] == in_iceberg, name
        assert all(in_iceberg.values()), f"{name} has columns without a description"


def test_the_table_dagster_writes_is_the_table_metaflow_reads(emitted, by_hand_run):
    _, events = emitted
    written = {
        (d["namespace"], d["name"])
        for e in _jobs(events, "monthly_ingestion.nyc_taxi__yellow_rides_hourly_actuals")
        for d in e["outputs"]
    }  # noqa: E501
    read = {(d["namespace"], d["name"]) for e in _jobs(events, "TrainForecastModelFlow.load") for d in e["inputs"]}
    assert written and written <= read
    model = [d for e in _jobs(events, "TrainForecastModelFlow.predict") for d in e["outputs"]]
    assert by_hand_run.pathspec in {d["facets"]["version"]["datasetVersion"] for d in model}


def test_a_dagster_launched_flow_has_the_dagster_run_as_root(emitted, dagster_run):
    _, events = emitted
    result, run = dagster_run
    dagster_run_ids = {e["run"]["runId"] for e in _jobs(events, "train_forecast_model")}
    flow_events = [e for e in _jobs(events, "TrainForecastModelFlow") if e["eventType"] == "COMPLETE"]
    roots = {e["run"]["facets"].get("parent", {}).get("root", {}).get("run", {}).get("runId") for e in flow_events}
    assert dagster_run_ids & roots
    steps = [
        e
        for e in _jobs(events, "TrainForecastModelFlow.train")
        if e["run"]["facets"]["parent"]["root"]["run"]["runId"] in dagster_run_ids
    ]  # noqa: E501
    assert steps, "the Dagster-launched run's steps name the Dagster run as root"
    upstream = steps[0]["run"]["facets"]["jobDependencies"]["upstream"]
    assert {u["job"]["name"] for u in upstream} == {"TrainForecastModelFlow.load"}


def _names_weather(event) -> bool:
    return any(d["name"].endswith("/nyc_taxi/raw_weather") for d in [*event["inputs"], *event["outputs"]])


def test_each_run_names_exactly_what_it_read_and_the_launching_step_is_the_flows_parent(
    emitted, by_hand_run, dagster_run
):
    """The flow run without weather never names raw_weather; the weather run does; the Dagster step that
    launched it names no dataset of its own: it is the flow run's parent."""
    _, events = emitted
    _, weather_run = dagster_run
    launcher = _jobs(events, "train_forecast_model.run_training_flow")
    assert launcher and all(e["inputs"] == [] and e["outputs"] == [] for e in launcher)
    assert not any(_names_weather(e) for e in _jobs(events, "train_forecast_model"))
    flows = {e["run"]["runId"]: e for e in _jobs(events, "TrainForecastModelFlow") if e["eventType"] == "COMPLETE"}
    by_version = {
        next(d["facets"]["version"]["datasetVersion"] for d in e["outputs"] if d["name"].endswith("forecast_model")): e
        for e in flows.values()
    }
    shell, weather = by_version[by_hand_run.pathspec], by_version[weather_run.pathspec]
    assert not _names_weather(shell) and _names_weather(weather)
    shell_runs = {
        e["run"]["runId"]
        for e in events
        if e["run"]["facets"].get("parent", {}).get("run", {}).get("runId") == shell["run"]["runId"]
    }
    assert shell_runs and not any(_names_weather(e) for e in events if e["run"]["runId"] in shell_runs)
    parent = weather["run"]["facets"]["parent"]
    assert parent["job"]["name"] == "train_forecast_model.run_training_flow"
    assert parent["run"]["runId"] == launcher[0]["run"]["runId"]
    assert parent["root"]["job"]["name"] == "train_forecast_model"


def test_a_replay_yields_the_same_run_ids_and_queues_nothing_new(pipeline, graph, by_hand_run, tmp_path, emitted):
    _, events = emitted
    first = _pass(pipeline, graph, tmp_path, _file_client(tmp_path / "a.jsonl"))
    again = _pass(pipeline, graph, tmp_path, _file_client(tmp_path / "a.jsonl"))
    assert sum(again.queued.values()) == 0
    replayed = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    original_ids = {e["run"]["runId"] for e in events}
    assert {e["run"]["runId"] for e in replayed} <= original_ids | {e["run"]["runId"] for e in replayed[len(events) :]}
    assert {e["run"]["runId"] for e in replayed[: len(events)]} == original_ids
    assert sum(first.queued.values()) >= len(events)


class ExplodingEvent:
    """Not an OpenLineage event: serializing it fails, so the pass dies in the middle of its batch."""


def test_an_interrupted_pass_resumes_with_nothing_lost_or_repeated(pipeline, graph, tmp_path, emitted):
    _, events = emitted
    source = sources_for(bridge_at(tmp_path, pipeline.settings), pipeline.instance, graph)[0]
    full, _ = source.read({})

    class Interrupted:
        name = source.name

        def read(self, cursor):
            produced, new_cursor = source.read(cursor)
            return produced[: len(produced) // 2] + [("boom", ExplodingEvent())] + produced[
                len(produced) // 2 :
            ], new_cursor

    outbox = Outbox(tmp_path / "outbox.sqlite")
    with pytest.raises(Exception, match="ExplodingEvent"):
        queue_source(outbox, Interrupted())
    assert outbox.queue.count_after(0) == 0 and outbox.queue.cursor("dagster") == {}
    added, _ = queue_source(outbox, source)
    assert added == len(full) == outbox.queue.count_after(0)
    keys = [event.key for event in outbox.queue.after(0, 100_000)]
    assert len(keys) == len(set(keys))
    assert queue_source(outbox, source)[0] == 0


def test_http_backend_down_then_up_receives_every_event_once(pipeline, graph, by_hand_run, tmp_path):
    port = free_port()
    down = _pass(pipeline, graph, tmp_path, _http_client(port))
    queued = sum(down.queued.values())
    assert queued > 0 and down.sink("openlineage").sent == 0 and down.sink("openlineage").pending == queued
    assert "Connection refused" in down.sink("openlineage").waiting_on
    with LineageServer(port) as server:
        up = _pass(pipeline, graph, tmp_path, _http_client(port))
    assert (
        not up.sink("openlineage").failing
        and up.sink("openlineage").sent == queued
        and up.sink("openlineage").pending == 0
    )
    identities = Counter((e["run"]["runId"], e["eventType"], e["job"]["name"]) for e in server.received)
    assert len(server.received) == queued and max(identities.values()) == 1


def test_the_sensor_tick_runs_a_pass_and_reports_it(pipeline, by_hand_run, tmp_path):
    from dagster import build_sensor_context

    from bridge.run.sensor import lineage_sensor

    definitions = pipeline.definitions()
    sensor = lineage_sensor(bridge_at(tmp_path, pipeline.settings))
    context = build_sensor_context(instance=pipeline.instance, repository_def=definitions.get_repository_def())
    result = sensor(context)
    assert "queued" in result.skip_message and "0 waiting" in result.skip_message
    events = (tmp_path / "openlineage_events.jsonl").read_text().splitlines()
    assert len(events) > 0
    assert f"queued {len(events)} new events" in result.skip_message


def test_the_command_does_one_pass_and_says_where_the_events_are(pipeline, by_hand_run, tmp_path, monkeypatch, capsys):
    from forecast_assets.lineage_cli import main

    monkeypatch.setenv("DAGSTER_HOME", pipeline.instance.root_directory)
    monkeypatch.setenv("TAXI_STATE_DIR", str(tmp_path))
    assert main([]) == 0
    events_file = tmp_path / "lineage" / "openlineage_events.jsonl"
    printed = capsys.readouterr().out
    assert f"file {events_file}: sent" in printed and "0 waiting" in printed
    assert f"Lineage pass: {len(events_file.read_text().splitlines())} new events" in printed


def test_a_damaged_outbox_is_rebuilt_without_sending_or_reporting_anything_twice(
    pipeline, by_hand_run, dagster_run, tmp_path, monkeypatch, capsys
):
    from dagster import AssetKey

    from forecast_assets.lineage_cli import main

    def reports_of_the_shell_run() -> int:
        records = pipeline.instance.fetch_materializations(AssetKey("forecast_model"), limit=100).records
        return sum(r.asset_materialization.metadata["model_version"].value == by_hand_run.pathspec for r in records)

    monkeypatch.setenv("DAGSTER_HOME", pipeline.instance.root_directory)
    monkeypatch.setenv("TAXI_STATE_DIR", str(tmp_path))
    lineage = tmp_path / "lineage"
    assert main(["pass"]) == 0
    sent = (lineage / "openlineage_events.jsonl").read_text().splitlines()
    reported = reports_of_the_shell_run()
    assert sent and reported == 1
    for suffix in ("-wal", "-shm"):
        (lineage / f"outbox.sqlite{suffix}").unlink(missing_ok=True)
    (lineage / "outbox.sqlite").write_bytes(b"not an outbox any more" * 200)
    capsys.readouterr()

    assert main(["pass"]) == 2
    assert "taxi-lineage rebuild outbox" in capsys.readouterr().err
    assert main(["rebuild", "outbox"]) == 0
    printed = capsys.readouterr().out
    assert "aside as" in printed and f"Lineage pass: {len(sent)} new events" in printed
    assert (lineage / "openlineage_events.jsonl").read_text().splitlines() == sent  # nothing sent twice
    assert reports_of_the_shell_run() == reported  # and the shell run not reported to Dagster again
    assert main(["show", "nyc_taxi.yellow_rides_hourly_forecast"]) == 0
