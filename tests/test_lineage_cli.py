"""The lineage command's answers over the golden events (a demo and a weather run), its imports, and job names."""

from __future__ import annotations

import html
import json
import logging
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dagster import DagsterEvent, DagsterEventType, EventLogEntry, EventLogRecord
from openlineage.client.serde import Serde

from bridge.index.lineage_index import dataset_label, dataset_version
from bridge.outbox.outbox import Outbox
from bridge.translate.dagster import translate_run
from bridge.translate.dagster_records import DagsterRunRecords
from bridge.translate.datahub import flow_and_job
from bridge.translate.naming import IcebergTables, Naming, dagster_job_name
from forecast_assets.lineage_cli import main

FORECAST = "urn:li:dataset:(urn:li:dataPlatform:iceberg,nyc_taxi.yellow_rides_hourly_forecast,PROD)"
ACTUALS = "urn:li:dataset:(urn:li:dataPlatform:iceberg,nyc_taxi.yellow_rides_hourly_actuals,PROD)"
WRITE_STEP = "urn:li:dataJob:(urn:li:dataFlow:(metaflow,TrainForecastModelFlow,PROD),write)"
MODEL = "urn:li:mlModel:(urn:li:dataPlatform:metaflow,forecast_model_TrainForecastModelFlow_1795332188731115,PROD)"
VERSION = "TrainForecastModelFlow/1795332188731115"
FORECAST_NAME, ACTUALS_NAME = "nyc_taxi.yellow_rides_hourly_forecast", "nyc_taxi.yellow_rides_hourly_actuals"
WEATHER_NAME = "nyc_taxi.raw_weather"
HEAVY = ("dagster", "openlineage", "metaflow", "pandas", "numpy", "pyarrow", "pyiceberg", "pyspark")


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("TAXI_STATE_DIR", str(tmp_path))
    return tmp_path


GOLDEN_EVENTS = Path(__file__).parent / "golden" / "openlineage"


@pytest.fixture
def queued(state):
    """The outbox of a demo (trained without weather, by Dagster) and a shell run with weather."""
    outbox = Outbox(state / "lineage" / "outbox.sqlite")
    with outbox.queue.batch("golden") as batch:
        for path in sorted(GOLDEN_EVENTS.glob("*.json")):
            for entry in json.loads(path.read_text()):
                batch.add(entry["key"], json.dumps(entry["event"]))
    return [entry["event"] for path in sorted(GOLDEN_EVENTS.glob("*.json")) for entry in json.loads(path.read_text())]


def _edges(events) -> set[tuple[str, str]]:
    """The job-level graph straight from the events: each step's inputs -> step -> outputs."""
    edges = set()
    for event in events:
        job = event["job"]["name"]
        if "." not in job:
            continue
        edges |= {(dataset_label(d), job) for d in event.get("inputs", [])}
        edges |= {(job, dataset_label(d)) for d in event.get("outputs", [])}
        edges |= {
            (u["job"]["name"], job) for u in event["run"]["facets"].get("jobDependencies", {}).get("upstream", [])
        }
    return edges


def _tree_edges(node: dict, upstream: bool) -> Iterator[tuple[str, str]]:
    for child in node["upstream" if upstream else "downstream"] if "upstream" in node else node["children"]:
        yield (child["name"], node["name"]) if upstream else (node["name"], child["name"])
        yield from _tree_edges({"name": child["name"], "children": child["children"]}, upstream)


def test_show_prints_a_tree_whose_every_edge_is_in_the_graph(queued, capsys):
    assert main(["show", FORECAST_NAME]) == 0
    printed = capsys.readouterr().out
    upstream = printed.split("\ndownstream")[0]
    assert "<- TrainForecastModelFlow.write  [metaflow job; last run COMPLETE, started " in upstream
    assert f"{ACTUALS_NAME}  [dataset, version " in upstream
    # Each job's last run names itself as its tool does, to be found there.
    dagster_job = r"<- \S+\.nyc_taxi__\S+  \[dagster job; last run COMPLETE, .* s\); Dagster run [0-9a-f-]{36}"
    assert re.search(dagster_job, upstream)
    assert re.search(r"\[metaflow job; .* s\); Metaflow task TrainForecastModelFlow/\d+/write/\d+\]", upstream)
    assert main(["show", FORECAST_NAME, "--json"]) == 0
    tree = json.loads(capsys.readouterr().out)
    graph = _edges(queued)
    printed_edges = [*_tree_edges(tree, True), *_tree_edges(tree, False)]
    assert len(printed_edges) > 10
    assert [edge for edge in printed_edges if edge not in graph] == []


def test_a_launching_step_is_no_producer_in_the_tree(queued, capsys):
    assert main(["show", FORECAST_NAME, "--json"]) == 0
    names = json.dumps(json.loads(capsys.readouterr().out)["upstream"])
    assert "TrainForecastModelFlow.write" in names and "run_training_flow" not in names


def test_a_typo_names_what_was_not_found_and_what_is_close(queued, capsys):
    assert main(["show", "nyc_taxi.yellow_rides_hourly_forecst"]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.startswith("taxi-lineage show: error: No dataset or job 'nyc_taxi.yellow_rides_hourly_forecst'")
    assert "did you mean: nyc_taxi.yellow_rides_hourly_forecast" in printed.err
    assert "Traceback" not in printed.err


def test_a_name_like_nothing_says_so(queued, capsys):
    assert main(["show", "zzzz"]) == 2
    assert "nor one like it" in capsys.readouterr().err


def _written(events, table: str) -> set[tuple[str, str]]:
    """(month, version) of each month a Dagster step wrote of ``table``, from its COMPLETE event."""
    found = set()
    for event in events:
        if (
            event["eventType"] != "COMPLETE"
            or "nominalTime" not in event["run"]["facets"]
            or "." not in event["job"]["name"]
        ):
            continue
        month = event["run"]["facets"]["nominalTime"]["nominalStartTime"][:7]
        for dataset in event.get("outputs", []):
            if dataset["facets"].get("symlinks", {}).get("identifiers", [{}])[0].get("name") == table:
                found.add((month, dataset["facets"]["version"]["datasetVersion"]))
    return found


def _model_versions(events):
    flows = [e for e in events if "modelTraining" in e["run"]["facets"] and e["eventType"] == "COMPLETE"]
    return [e["run"]["facets"]["modelTraining"]["version"] for e in sorted(flows, key=lambda e: e["eventTime"])]


def test_model_versions_list_what_each_training_run_read(queued, capsys):
    first, second = _model_versions(queued)
    assert main(["model", "--json"]) == 0
    versions = json.loads(capsys.readouterr().out)
    assert [v["version"] for v in versions] == [first, second]  # oldest first
    inputs = [{i["name"] for i in v["inputs"]} for v in versions]
    assert inputs == [{ACTUALS_NAME}, {ACTUALS_NAME, WEATHER_NAME}]
    assert all(i["version"].isdigit() for v in versions for i in v["inputs"])
    assert set(versions[0]["metrics"]) == {"backtest_mae", "backtest_rmse", "backtest_wape"}
    columns = [set(v["input_columns"]) for v in versions]
    assert f"{ACTUALS_NAME}.total_rides" in columns[0] and not any(c.startswith(WEATHER_NAME) for c in columns[0])
    assert f"{WEATHER_NAME}.value" in columns[1]
    assert main(["model", second.split("/")[1]]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(f"{second}  backtest_mae=") and any(WEATHER_NAME in line for line in printed)


def test_diff_says_the_later_version_started_reading_weather(queued, capsys):
    first, second = _model_versions(queued)
    assert main(["diff", second, first]) == 0  # either order: from the older to the newer
    printed = capsys.readouterr().out
    assert printed.startswith(f"From {first} ")
    assert f"{second} started reading {WEATHER_NAME} (version " in printed
    assert f"{ACTUALS_NAME}: both read version " in printed and "backtest_mae: " in printed
    assert f"learned from new input columns: {WEATHER_NAME}.value" in printed
    assert main(["diff", first, second, "--json"]) == 0
    changes = json.loads(capsys.readouterr().out)["changes"]
    assert any(line.startswith(f"{second} started reading {WEATHER_NAME}") for line in changes)
    # The first line says it in short: what was read anew, and how many metrics moved.
    metrics = [line for line in changes if line.startswith(("backtest_", "held_out_"))]
    moved = sum(not line.endswith(", unchanged.") for line in metrics)
    assert changes[0].startswith(f"In short: started reading {WEATHER_NAME}; ")
    assert f"; {moved} metric{'s' if moved > 1 else ''} changed" in changes[0] and moved > 0


def test_a_diff_of_a_version_with_itself_says_nothing_differs(queued, capsys):
    first, _ = _model_versions(queued)
    assert main(["diff", first, first]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1] == "  No difference in inputs, versions, columns or metrics."
    assert all(", unchanged." in line for line in printed if line.startswith(("  backtest_", "  held_out_")))
    forecast = _forecast_versions(queued)[0]
    assert main(["diff", f"{FORECAST_NAME}@{forecast}", f"{FORECAST_NAME}@{forecast}"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("  No difference: both read the same inputs")


def _forecast_versions(events) -> list[str]:
    return [
        dataset_version(d)
        for e in sorted(events, key=lambda e: e["eventTime"])
        if e["eventType"] == "COMPLETE" and "modelTraining" in e["run"]["facets"]
        for d in e["outputs"]
        if dataset_label(d) == FORECAST_NAME
    ]


def test_diff_of_two_forecast_versions_names_the_weather_read(queued, capsys):
    first, second = _forecast_versions(queued)
    assert main(["diff", f"{FORECAST_NAME}@{first}", f"{FORECAST_NAME}@{second}"]) == 0
    printed = capsys.readouterr().out
    assert f"version {second} started reading {WEATHER_NAME} (version " in printed
    assert f"new column lineage: forecasted_total_rides <- {WEATHER_NAME}.value" in printed


def test_show_version_is_the_lineage_as_that_run_read_it(queued, capsys):
    first, second = _model_versions(queued)
    assert main(["show", FORECAST_NAME, "--version", first]) == 0
    without = capsys.readouterr().out
    assert f"{FORECAST_NAME} @ " in without and "written by TrainForecastModelFlow (run " in without
    assert f"<- {ACTUALS_NAME} @ " in without and "<- nyc_taxi.raw_yellow @ " in without
    assert WEATHER_NAME not in without
    assert main(["show", FORECAST_NAME, "--version", second]) == 0
    assert f"<- {WEATHER_NAME} @ " in capsys.readouterr().out
    forecast_version = _forecast_versions(queued)[0]
    assert main(["show", FORECAST_NAME, "--version", forecast_version, "--json"]) == 0
    tree = json.loads(capsys.readouterr().out)["tree"]
    assert tree["version"] == forecast_version and [r["dataset"] for r in tree["read"]] == [ACTUALS_NAME]


def _column_chain(node: dict) -> Iterator[dict]:
    yield node
    for origin in node["origins"]:
        yield from _column_chain(origin)


def test_a_column_is_traced_to_the_trip_files_columns_across_both_tools(queued, capsys):
    first, second = _model_versions(queued)
    column = f"{FORECAST_NAME}.forecasted_total_rides"
    assert main(["show", column, "--version", first, "--json"]) == 0
    tree = json.loads(capsys.readouterr().out)
    direct = {
        (o["dataset"], o["column"])
        for o in tree["origins"]
        if any(t.startswith("DIRECT") for t in o["transformations"])
    }
    assert (ACTUALS_NAME, "total_rides") in direct and not any(d == WEATHER_NAME for d, _ in direct)
    # The flow read the actuals whole: the column comes from each month, at the version the month's run wrote.
    months = {(o["partition"], o["version"]) for o in tree["origins"] if o["column"] == "total_rides"}
    assert months == {(f"pickup_hour_month={month}", version) for month, version in _written(queued, ACTUALS_NAME)}
    total_rides = next(o for o in tree["origins"] if o["column"] == "total_rides")
    raw = {(o["dataset"], o["column"]) for o in total_rides["origins"]}
    assert ("nyc_taxi.raw_yellow", "tpep_pickup_datetime") in raw and ("nyc_taxi.raw_yellow", "pulocationid") in raw
    # Each column is expanded once in the tree, where it is first reached.
    pickup = next(o for o in _column_chain(tree) if o["column"] == "tpep_pickup_datetime" and not o["repeated"])
    files = [o for o in pickup["origins"] if o["dataset"].endswith("/staging/taxi")]
    assert [o["column"] for o in files] == ["tpep_pickup_datetime"] and files[0]["version"].startswith("sha256:")
    assert main(["show", column, "--version", second]) == 0
    printed = capsys.readouterr().out
    assert all(
        f"<- {WEATHER_NAME}.value [date_month={month}] @ {v} " in printed for month, v in _written(queued, WEATHER_NAME)
    )
    assert main(["show", column]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"{column}  [version ") and "<- nyc_taxi.raw_yellow.pulocationid @ " in printed
    assert main(["show", column, "--version", first, "--direct", "--json"]) == 0
    direct = list(_column_chain(json.loads(capsys.readouterr().out)))[1:]
    assert direct and all(any("DIRECT:" in t for t in node["transformations"]) for node in direct)
    assert ("nyc_taxi.raw_yellow", "pulocationid") in {(n["dataset"], n["column"]) for n in direct}


def test_an_unknown_column_is_answered_with_the_known_ones(queued, capsys):
    assert main(["show", f"{FORECAST_NAME}.forecasted_total_ride"]) == 2
    assert "did you mean: forecasted_total_rides" in capsys.readouterr().err


def test_an_unknown_model_version_is_answered_with_close_versions(queued, capsys):
    first, _ = _model_versions(queued)
    typo = first[:-1] + ("0" if first[-1] != "0" else "1")
    assert main(["model", typo]) == 2
    printed = capsys.readouterr()
    assert printed.err.startswith(f"taxi-lineage model: error: No model version {typo!r}")
    assert "did you mean: " in printed.err and first in printed.err


def _highlighted(svg: str) -> set[str]:
    """The full names of the nodes drawn with the highlight outline."""
    names = re.findall(r'<a xlink:title="([^"]+)">(.*?)</a>', svg, flags=re.S)
    return {html.unescape(name) for name, body in names if 'stroke="#d9480f"' in body}


def test_the_picture_highlights_one_version_s_actual_inputs(queued, capsys, state):
    first, second = _model_versions(queued)
    out = state / "picture.svg"
    assert main(["picture", "--out", str(out), "--version", first]) == 0
    without = _highlighted(out.read_text())
    assert ACTUALS_NAME in without and WEATHER_NAME not in without and "TrainForecastModelFlow.load" in without
    assert main(["picture", "--out", str(out), "--version", second]) == 0
    assert WEATHER_NAME in _highlighted(out.read_text())
    assert main(["picture", "--out", str(out), "--format", "mermaid", "--version", second]) == 0
    assert "classDef version" in out.read_text()


def test_a_dagster_asset_key_draws_its_dataset_s_own_picture(queued, capsys, state):
    """The name an asset page shows: a table's key or a file asset's, as the naming policy names its dataset."""
    pictures = state / "lineage" / "pictures"
    for asset, dataset, drawn in (
        ("nyc_taxi/raw_yellow", "nyc_taxi.raw_yellow", "nyc_taxi.raw_yellow.svg"),
        ("taxi_trip_files", "/staging/taxi", "staging_taxi.svg"),
    ):
        assert main(["picture", asset]) == 0
        assert capsys.readouterr().out.startswith(f"Lineage picture of {dataset}: {pictures / drawn} (")
        focus = r'class="node dataset focus">\s*<title>\w+</title>\s*<g id="\w+"><a xlink:title="([^"]+)"'
        assert re.findall(focus, (pictures / drawn).read_text()) == [dataset]


@pytest.mark.parametrize("content", [None, b"not a database"])
def test_without_lineage_the_command_says_how_to_make_it(state, capsys, content):
    if content is not None:
        (state / "lineage").mkdir()
        (state / "lineage" / "outbox.sqlite").write_bytes(content)
    assert main(["show", "nyc_taxi.raw_yellow"]) == 2
    err = capsys.readouterr().err
    assert str(state / "lineage") in err and "Traceback" not in err
    if content is None:
        assert "`./run demo`" in err
    else:
        assert "is damaged" in err and "taxi-lineage rebuild outbox" in err


def test_an_outbox_with_no_jobs_says_how_to_fill_it(state, capsys):
    Outbox(state / "lineage" / "outbox.sqlite")
    assert main(["picture"]) == 2
    assert "holds no jobs yet" in capsys.readouterr().err


def test_a_deleted_index_is_rebuilt_from_the_outbox(queued, state, capsys):
    assert main(["show", FORECAST_NAME]) == 0
    before = capsys.readouterr().out
    (state / "lineage" / "index.sqlite").unlink()
    assert main(["show", FORECAST_NAME]) == 0
    assert capsys.readouterr().out == before


def test_an_index_an_older_bridge_left_is_refilled_in_this_format(queued, state, capsys):
    assert main(["show", FORECAST_NAME]) == 0
    expected = capsys.readouterr().out
    index = state / "lineage" / "index.sqlite"
    index.unlink()
    # An older bridge's index: a runs table without the runs' own names, every event already applied.
    older = sqlite3.connect(index)
    older.execute("CREATE TABLE mark (id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL)")
    older.execute("INSERT INTO mark VALUES (0, 1000000)")
    older.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, job TEXT NOT NULL, parent_run_id TEXT, started TEXT,"
                  " status TEXT, finished TEXT)")  # fmt: skip
    older.commit()
    older.close()
    assert main(["show", FORECAST_NAME]) == 0
    assert capsys.readouterr().out == expected and "; Dagster run " in expected


def _modules_loaded(state, *argv: str) -> tuple[int, list[str]]:
    """Run the command in a fresh interpreter; its exit code and the heavy packages it imported."""
    script = (
        "import json, sys\n"
        "from forecast_assets.lineage_cli import main\n"
        "try:\n"
        "    code = main(sys.argv[1:])\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules})]))\n"
    )
    env = {**os.environ, "TAXI_STATE_DIR": str(state)}
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, env=env, check=True)
    code, modules = json.loads(done.stdout.splitlines()[-1])
    return code, [m for m in modules if m in (*HEAVY, "datahub")]


def test_help_imports_no_tool(state):
    assert _modules_loaded(state, "--help") == (0, [])


def test_reading_the_lineage_imports_no_tool(queued, state):
    assert _modules_loaded(state, "show", FORECAST_NAME) == (0, [])
    assert _modules_loaded(state, "model") == (0, [])


@pytest.mark.parametrize(
    ("job", "location", "expected"),
    [
        ("monthly_ingestion", "taxi_demand", "monthly_ingestion"),
        ("__ASSET_JOB", "taxi_demand", "taxi_demand"),
        ("__ASSET_JOB_0", "taxi_demand", "taxi_demand"),
        ("__ephemeral_asset_job__", "taxi_demand", "taxi_demand"),
        ("__anonymous_asset_job_new_source_months", "taxi_demand", "taxi_demand"),
        ("__ASSET_JOB", "defs.py", "defs_py"),
        ("__ASSET_JOB", "", "__ASSET_JOB"),
    ],
)
def test_jobs_dagster_made_up_are_named_for_their_code_location(job, location, expected):
    assert dagster_job_name(job, location) == expected


def _record(storage_id: int, kind: DagsterEventType, minute: int, step: str | None = None) -> EventLogRecord:
    event = DagsterEvent(event_type_value=kind.value, job_name="__ASSET_JOB", step_key=step)
    at = datetime(2025, 2, 1, 12, minute, tzinfo=UTC).timestamp()
    entry = EventLogEntry(None, logging.DEBUG, "", "ui-run-1", at, step, "__ASSET_JOB", event)
    return EventLogRecord(storage_id, entry)


def _materialize_from_the_ui(job: str = "__ASSET_JOB") -> list[tuple[str, object]]:
    """Events of a run that materialized raw_yellow from the Dagster UI (the implicit asset job)."""
    step = "nyc_taxi__raw_yellow"
    records = [
        _record(1, DagsterEventType.RUN_START, 0),
        _record(2, DagsterEventType.STEP_START, 1, step),
        _record(3, DagsterEventType.RUN_SUCCESS, 2),
    ]
    naming = Naming(IcebergTables("/lake"), table_namespaces=("nyc_taxi",), job_namespace="taxi-demand")
    return translate_run(DagsterRunRecords("ui-run-1", job, None, "taxi_demand", records), naming)


def test_a_ui_materialization_is_a_job_of_its_code_location_in_lineage_and_datahub():
    events = [json.loads(Serde.to_json(event)) for _, event in _materialize_from_the_ui()]
    assert [e["job"]["name"] for e in events] == ["taxi_demand", "taxi_demand.nyc_taxi__raw_yellow", "taxi_demand"]
    assert events[1]["run"]["facets"]["parent"]["job"]["name"] == "taxi_demand"
    flow, job = flow_and_job(events[1])
    assert flow == "urn:li:dataFlow:(dagster,taxi_demand,PROD)"
    assert job == "urn:li:dataJob:(urn:li:dataFlow:(dagster,taxi_demand,PROD),nyc_taxi__raw_yellow)"


def test_a_replay_gives_the_same_names_keys_and_run_ids():
    first, again = _materialize_from_the_ui(), _materialize_from_the_ui()
    assert [key for key, _ in first] == [key for key, _ in again]
    assert [Serde.to_json(e) for _, e in first] == [Serde.to_json(e) for _, e in again]
    # Naming the job differently does not change the run ids: they come from the Dagster run and step.
    named = _materialize_from_the_ui("monthly_ingestion")
    assert [e.run.runId for _, e in first] == [e.run.runId for _, e in named]
