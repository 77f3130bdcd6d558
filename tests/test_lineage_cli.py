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
from bridge.wording import short
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


def _unwrapped(text: str) -> str:
    """Printed text with each line a long line was wrapped into joined back to it (a continuation has no arrow)."""
    return re.sub(r"\n +(?!<-|->|\(|\S+ \[)", " ", text)


def test_show_prints_a_tree_whose_every_edge_is_in_the_graph(queued, capsys):
    assert main(["show", FORECAST_NAME]) == 0
    printed = _unwrapped(capsys.readouterr().out)
    upstream = printed.split("\ndownstream")[0]
    assert "<- TrainForecastModelFlow.write  [metaflow job; last run COMPLETE 20" in upstream
    assert f"{ACTUALS_NAME}  [dataset, version " in upstream
    # Each job's last run names itself as its tool does, to be found there: shortened in text, whole in JSON.
    dagster_job = (
        r"<- \S+\.nyc_taxi__\S+  \[dagster job; last run COMPLETE [-0-9 :]+Z, [.0-9]+ s; Dagster run [0-9a-f-]{12}…"
    )
    assert re.search(dagster_job, upstream)
    assert re.search(r"\[metaflow job; last run .*Z, [.0-9]+ s; Metaflow task \d+/write/\d+\]", upstream)
    assert main(["show", FORECAST_NAME, "--json"]) == 0
    tree = json.loads(capsys.readouterr().out)
    tools = re.findall(r'"in_its_tool": "([^"]+)"', json.dumps(tree, indent=0))
    assert any(re.fullmatch(r"Dagster run [0-9a-f-]{36}(, partition \S+)?", tool) for tool in tools)
    assert any(re.fullmatch(r"Metaflow task TrainForecastModelFlow/\d+/write/\d+", tool) for tool in tools)
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
    assert printed[0].startswith(f"{second}  candidate glm_weather; ") and any(WEATHER_NAME in line for line in printed)
    assert any(line.startswith("  metrics: backtest_mae=") for line in printed)


def test_diff_says_the_later_version_started_reading_weather(queued, capsys):
    first, second = _model_versions(queued)
    assert main(["diff", second, first]) == 0  # either order: from the older to the newer
    printed = capsys.readouterr().out
    assert printed.startswith(f"From {first} (trained ")
    assert f"{second} started reading {WEATHER_NAME} (version " in " ".join(printed.split())
    assert f"{ACTUALS_NAME}: both read version " in printed and "backtest_mae: " in printed
    assert f"learned from new input columns: {WEATHER_NAME}.value" in printed
    assert main(["diff", first, second, "--json"]) == 0
    changes = json.loads(capsys.readouterr().out)["changes"]
    assert any(line.startswith(f"{second} started reading {WEATHER_NAME}") for line in changes)
    # The first line says it in short: what was read anew, and how many metrics moved.
    metrics = [line for line in changes if line.startswith(("backtest_", "held_out_"))]
    moved = sum(not line.endswith(", unchanged.") for line in metrics)
    assert changes[0].startswith(f"In short: candidate glm -> glm_weather; started reading {WEATHER_NAME}; ")
    assert f"; {moved} metric{'s' if moved > 1 else ''} changed" in changes[0] and moved > 0


def test_a_diff_of_a_version_with_itself_says_nothing_differs(queued, capsys):
    first, _ = _model_versions(queued)
    assert main(["diff", first, first]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[2] == "  No difference in inputs, versions, columns or metrics."
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
    assert f"version {short(second)} started reading {WEATHER_NAME} (version " in printed
    assert f"new column lineage: forecasted_total_rides <- {WEATHER_NAME}.value" in printed
    # A version shortened as the text shows it is found as well as the whole one.
    assert main(["diff", f"{FORECAST_NAME}@{short(first)}", f"{FORECAST_NAME}@{second}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["from"]["version"] == first


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
        f"<- {WEATHER_NAME}.value [date_month={month}] @ {short(v)} " in printed
        for month, v in _written(queued, WEATHER_NAME)
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
    assert printed.err.startswith(f"taxi-lineage model: error: No model version '{typo}'")
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
        said = capsys.readouterr().out.split()
        assert said[:4] == ["Lineage", "picture", "of", f"{dataset}:"] and said[4] == str(pictures / drawn), said
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


# What a person reads: every read command over the golden state (a demo and a weather run from the shell).
GOLDEN_RECORDS = Path(__file__).parent / "golden" / "records"
NOUNS = ("event", "run", "partition", "column", "feature", "row", "input", "metric", "parameter", "node", "pass")


def _read_commands(events) -> list[list[str]]:
    first, second = _model_versions(events)
    forecasts = _forecast_versions(events)
    column = f"{FORECAST_NAME}.forecasted_total_rides"
    return [
        ["status"],
        ["show", FORECAST_NAME],
        ["show", ACTUALS_NAME],
        ["show", column],
        ["show", column, "--direct"],
        ["show", column, "--version", second],
        ["show", column, "--version", second, "--all"],
        ["show", FORECAST_NAME, "--version", first],
        ["show", FORECAST_NAME, "--version", second],
        ["model"],
        ["model", second],
        ["diff", first, second],
        ["diff", f"{FORECAST_NAME}@{forecasts[0]}", f"{FORECAST_NAME}@{forecasts[1]}"],
        ["dead-letters"],
        ["picture"],
        ["picture", "--format", "mermaid"],
        ["--help"],
        *(["show" if name == "show" else name, "--help"] for name in ("show", "model", "diff", "status", "picture")),
    ]


def _printed(capsys, argv: list[str]) -> str:
    try:
        assert main(argv) == 0, argv
    except SystemExit as done:  # --help
        assert done.code == 0
    return capsys.readouterr().out


def test_every_read_command_prints_short_lines_in_words_not_reprs(queued, capsys):
    for argv in _read_commands(queued):
        printed = _printed(capsys, argv)
        assert printed.strip(), argv
        lines = printed.splitlines()
        assert max(len(line) for line in lines) <= 120, (argv, max(lines, key=len))
        for pattern in ("{'", "['", "('", "None", "Counter(", "dict_keys"):
            assert pattern not in printed, (argv, pattern, [line for line in lines if pattern in line])
        for noun in NOUNS:
            one = re.search(rf"(?<![\w.,-])1 {noun}s\b", printed)
            many = re.search(rf"(?<![\w.,-])(?:0|[2-9]|[1-9][\d,]*\d) {noun}\b", printed)
            assert one is None and many is None, (argv, (one or many).group(0))


def test_the_column_view_sums_up_a_file_s_days_and_all_lists_them(queued, capsys):
    _, second = _model_versions(queued)
    column = f"{FORECAST_NAME}.forecasted_total_rides"
    summed = _printed(capsys, ["show", column, "--version", second])
    every = _printed(capsys, ["show", column, "--version", second, "--all"])
    tree = json.loads(_printed(capsys, ["show", column, "--version", second, "--json"]))
    days = {(o["dataset"], o["version"], o["column"]) for o in _column_chain(tree) if o["column"].startswith("day_")}
    files = {(dataset, version) for dataset, version, _ in days}
    assert len(days) == 31 * len(files) and files  # the JSON names every day of every month's file
    assert summed.count("day_01 … day_31 (31 columns)") == len(files)
    assert "day_02" not in summed and len(summed.splitlines()) < len(every.splitlines())
    assert all(f"{dataset}.{day} @ {short(version)}" in every for dataset, version, day in days)


def test_json_carries_every_value_the_text_shortens(queued, capsys):
    first, second = _model_versions(queued)
    texts, documents = [], []
    for argv in _read_commands(queued):
        if argv[-1] == "--help" or argv[0] in ("picture", "status", "dead-letters"):
            continue
        texts.append(_printed(capsys, argv))
        documents.append(_printed(capsys, [*argv, "--json"]))
    whole = "\n".join(documents)
    assert "…" not in whole
    shortened = set(re.findall(r"((?:sha256:)?[0-9a-f-]{12})…", "\n".join(texts)))
    assert len(shortened) > 10
    values = {*re.findall(r"(?:sha256:)?[0-9a-f]{64}|\b\d{13,}\b|\b[0-9a-f]{8}-[0-9a-f-]{27}\b", whole)}
    assert [start for start in shortened if not any(value.startswith(start) for value in values)] == []
    assert any(re.fullmatch(r"sha256:[0-9a-f]{64}", value) for value in values)


def _recorded_models() -> dict[str, tuple[str, list[str]]]:
    """Each model version's candidate and features as its Metaflow run's predict task recorded them (its
    ``lineage_io`` artifact, read from Metaflow by the golden recorder), apart from any event or index."""
    found = {}
    for path in sorted(GOLDEN_RECORDS.glob("metaflow_*.json")):
        for task in json.loads(path.read_text())["tasks"]:
            for use in task["io"].get("writes", []):
                if use["kind"] == "model":
                    features = sorted(name for name in use["columns_from"] if name != "target")
                    found[use["version"]] = (use["params"]["name"], features)
    return found


def test_model_and_diff_name_the_candidate_and_features_each_run_recorded(queued, capsys):
    recorded = _recorded_models()
    first, second = _model_versions(queued)
    assert set(recorded) == {first, second} and recorded[first][0] != recorded[second][0]
    listed = json.loads(_printed(capsys, ["model", "--json"]))
    assert {v["version"]: (v["candidate"], sorted(v["features"])) for v in listed} == recorded
    compared = json.loads(_printed(capsys, ["diff", first, second, "--json"]))
    for side in ("from", "to"):
        assert (compared[side]["candidate"], sorted(compared[side]["features"])) == recorded[compared[side]["version"]]
    model_text = " ".join(_printed(capsys, ["model"]).split())  # as one line: wherever it wrapped
    diff_text = " ".join(_printed(capsys, ["diff", first, second]).split())
    for version, (candidate, features) in recorded.items():
        said = f"candidate {candidate}; {len(features)} features: {', '.join(features)}"
        assert f"{version} {said} trained by " in model_text
        assert f" {version}: {said}. " in diff_text
    assert f"In short: candidate {recorded[first][0]} -> {recorded[second][0]}; " in diff_text
