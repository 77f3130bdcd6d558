"""The bridge in another project: a tiny Dagster project and a two-step Metaflow flow, through the public API only.

No Spark and no taxi code: what the bridge needs, it is handed (the asset graph, a naming policy,
the flow to follow). The sensor is ticked with ``build_sensor_context`` on an instance holding the runs.
"""

import html
import json
import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, build_sensor_context, materialize
from metaflow import Runner

from bridge.cli import main as cli
from bridge.sinks.lite import open_lite
from tests.openlineage_schema import validation_errors
from tests.reuse_project.shop import FLOW, MODEL, definitions, shop_bridge

FLOW_FILE = Path(__file__).parent / "reuse_project" / "score_flow.py"


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """Materialize both assets, run the flow from the shell's point of view, tick the bridge's sensor twice."""
    root = tmp_path_factory.mktemp("shop")
    home = root / "dagster_home"
    home.mkdir()
    defs = definitions(root)
    with DagsterInstance.local_temp(tempdir=str(home)) as instance:
        tables = [AssetKey(["shop", "orders"]), AssetKey(["shop", "daily_totals"])]
        result = materialize(defs.resolve_asset_graph().assets_defs, instance=instance, selection=tables)
        assert result.success
        totals = instance.get_latest_materialization_event(AssetKey(["shop", "daily_totals"]))
        version = totals.asset_materialization.tags["dagster/data_version"]
        env = os.environ | {"SHOP_ROOT": str(root), "SHOP_TOTALS_VERSION": version}
        with Runner(str(FLOW_FILE), env=env, cwd=str(root), show_output=False) as runner:
            flow_run = runner.run().run
        assert flow_run.successful
        sensor = defs.resolve_sensor_def("openlineage_bridge")
        context = build_sensor_context(instance=instance, repository_def=defs.get_repository_def())
        first = sensor(context)
        again = sensor(context)
        events = [json.loads(line) for line in (root / "lineage" / "openlineage_events.jsonl").read_text().splitlines()]
        reported = instance.fetch_materializations(AssetKey(MODEL), limit=5).records
        yield {"root": root, "home": home, "events": events, "first": first, "again": again, "run": flow_run,
               "version": version, "reported": reported, "flow_events": _events_of(flow_run, events)}  # fmt: skip


def _events_of(flow_run, events):
    """The Dagster runs' events and this flow run's: the sensor also reports any other ScoreFlow run the worker's
    Metaflow store holds (another test module's), as it should."""
    (flow,) = [e for e in events if e["run"]["facets"].get("modelTraining", {}).get("version") == flow_run.pathspec]
    ours = flow["run"]["runId"]
    return [
        e
        for e in events
        if not e["job"]["name"].startswith(FLOW)
        or ours in (e["run"]["runId"], e["run"]["facets"].get("parent", {}).get("run", {}).get("runId"))
    ]


def _job(events, name, state):
    return [e for e in events if e["job"]["name"] == name and e["eventType"] == state]


def test_every_event_is_schema_valid_and_the_tick_says_what_it_did(shop):
    events = shop["events"]
    assert {e["job"]["name"] for e in events} == {
        "shop", "shop.shop__orders", "shop.shop__daily_totals",
        FLOW, f"{FLOW}.start", f"{FLOW}.end",
    }  # fmt: skip
    assert {name: validation_errors(e) for e in events if (name := e["job"]["name"]) and validation_errors(e)} == {}
    assert f"queued {len(events)} new events" in shop["first"].skip_message
    assert "queued 0 new events" in shop["again"].skip_message  # a second tick sends nothing twice


def test_the_dagster_step_reads_its_upstream_at_the_version_it_saw(shop):
    (totals,) = _job(shop["events"], "shop.shop__daily_totals", "COMPLETE")
    assert [(d["namespace"], d["name"]) for d in totals["inputs"]] == [("file", f"{shop['root']}/orders.csv")]
    assert totals["inputs"][0]["facets"]["version"]["datasetVersion"]
    assert totals["outputs"][0]["facets"]["version"]["datasetVersion"] == shop["version"]
    assert totals["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 2


def test_the_flow_reads_what_dagster_wrote_and_its_model_carries_what_it_learned(shop):
    (start,) = _job(shop["flow_events"], f"{FLOW}.start", "COMPLETE")
    (totals,) = _job(shop["flow_events"], "shop.shop__daily_totals", "COMPLETE")
    assert start["inputs"][0]["name"] == totals["outputs"][0]["name"]
    assert start["inputs"][0]["facets"]["version"]["datasetVersion"] == shop["version"]
    (end,) = _job(shop["flow_events"], f"{FLOW}.end", "COMPLETE")
    assert end["run"]["facets"]["jobDependencies"]["upstream"][0]["job"]["name"] == f"{FLOW}.start"
    (flow,) = _job(shop["flow_events"], FLOW, "COMPLETE")
    model = flow["run"]["facets"]["modelTraining"]
    assert model["model"] == MODEL and model["version"] == shop["run"].pathspec
    assert model["metrics"] == {"mean": 6.0} and model["params"] == {"kind": "mean"}


def test_the_shell_run_is_reported_back_to_dagster(shop):
    versions = [record.asset_materialization.metadata["version"].value for record in shop["reported"]]
    assert len(versions) == len(set(versions))  # each Metaflow run reported once
    (record,) = [r for r, version in zip(shop["reported"], versions, strict=True) if version == shop["run"].pathspec]
    assert record.run_id == ""  # runless: a report, not a Dagster run


def test_datahub_holds_the_model_version_and_the_command_reads_it(shop, capsys):
    lite = open_lite(shop["root"] / "lite.sqlite", read_only=True)
    try:
        ids = set(lite.list_ids())
    finally:
        lite.close()
    assert "urn:li:dataFlow:(metaflow,ScoreFlow,PROD)" in ids
    bridge = shop_bridge(shop["root"])
    assert cli.main(["model"], bridge) == 0
    printed = capsys.readouterr().out
    assert (
        shop["run"].pathspec in printed
        and "mean=6" in printed
        and f"input {shop['root']}/daily_totals.csv @ {shop['version']}" in printed
    )
    assert cli.main(["show", "daily_totals.csv"], bridge) == 0
    downstream = capsys.readouterr().out.split("\ndownstream")[1]
    assert f"{FLOW}.start" in downstream
    assert cli.main(["picture", "--out", str(shop["root"] / "graph.svg")], bridge) == 0
    assert "ScoreFlow.end" in (shop["root"] / "graph.svg").read_text()


def test_the_command_line_loads_the_code_location_named_in_workspace_yaml(shop, monkeypatch, capsys):
    root = shop["root"]
    (root / "shop_location.py").write_text(
        "from pathlib import Path\n\nfrom tests.reuse_project.shop import definitions\n\n"
        "defs = definitions(Path(__file__).parent)\n"
    )
    (root / "workspace.yaml").write_text(
        "load_from:\n  - python_file:\n      relative_path: shop_location.py\n      location_name: shop\n"
    )
    monkeypatch.setenv("DAGSTER_HOME", str(shop["home"]))
    bridge = replace(shop_bridge(root), workspace_file=root / "workspace.yaml")
    assert cli.main(["pass"], bridge) == 0
    printed = capsys.readouterr().out
    assert "Lineage pass: 0 new events" in printed and "sent 0, 0 waiting" in printed  # the sensor sent them all
    assert cli.main([], replace(bridge, code_location="warehouse")) == 2
    assert "has no code location 'warehouse' (it has: shop)" in capsys.readouterr().err


def _tree_edges(printed: str, root: str) -> set[tuple[str, str]]:
    """(from, to) pairs the printed trees claim, read back from their indentation."""
    edges, upstream, stack = set(), True, [root]
    for line in printed.splitlines():
        if line.startswith(("upstream", "downstream")):
            upstream, stack = line.startswith("upstream"), [root]
            continue
        arrow = "<- " if upstream else "-> "
        if arrow not in line:
            continue
        indent, rest = line.split(arrow, 1)
        depth = (len(indent) - 2) // 3 + 1
        label = rest.split("  [", 1)[0]
        stack = [*stack[:depth], label]
        parent = stack[depth - 1]
        edges.add((label, parent) if upstream else (parent, label))
    return edges


def test_every_line_of_the_tree_is_an_edge_of_the_graph_with_versions_and_runs(shop, capsys):
    from bridge.index.graph_view import LineageGraph
    from bridge.sinks.lite import open_for_reading

    bridge = shop_bridge(shop["root"])
    lite = open_for_reading(Path(bridge.sink_spec("datahub").options["path"]))
    graph = LineageGraph.from_lite(lite)
    lite.close()
    graph_edges = {(graph.labels[a], graph.labels[b]) for a, b in graph.edges}
    root = f"{shop['root']}/daily_totals.csv"
    assert cli.main(["show", "daily_totals.csv"], bridge) == 0
    printed = capsys.readouterr().out
    claimed = _tree_edges(printed, root)
    assert claimed and claimed <= graph_edges
    assert {("shop.shop__daily_totals", root), (root, f"{FLOW}.start")} <= claimed
    assert printed.splitlines()[0] == f"{root}  [dataset, version {shop['version']}]"
    assert f"{FLOW}.start  [metaflow job; last run COMPLETE 20" in printed  # then when it finished
    # The step's run as Metaflow's commands take it in its flow (run/step/task): the task that really ran.
    (task,) = list(shop["run"]["start"])
    assert f" s; Metaflow task {task.pathspec.split('/', 1)[1]}]" in " ".join(printed.split())


def test_the_picture_is_laid_out_by_graphviz_with_whole_names_and_comes_as_mermaid_too(shop):
    from bridge.index.graph_view import LineageGraph
    from bridge.index.picture_layout import short_name
    from bridge.sinks.lite import open_for_reading

    bridge = shop_bridge(shop["root"])
    lite = open_for_reading(Path(bridge.sink_spec("datahub").options["path"]))
    graph = LineageGraph.from_lite(lite).without_dead_ends()
    lite.close()
    assert cli.main(["picture", "--out", str(shop["root"] / "g.svg")], bridge) == 0
    svg = (shop["root"] / "g.svg").read_text()
    assert "Generated by graphviz" in svg
    texts = {html.unescape(text) for text in re.findall(r">([^<]*)</text>", svg)}
    hovers = {html.unescape(title) for title in re.findall(r'xlink:title="([^"]*)"', svg)}
    for node, label in graph.labels.items():
        assert short_name(graph, node) in texts and label in hovers
    assert f"…/{shop['root'].name}/daily_totals.csv" in texts  # a short name; the path on hover
    assert "start" in texts and "Metaflow flow ScoreFlow" in texts  # a step over its flow
    assert "Dagster asset job __ASSET_JOB" in texts  # materialize(): the shop's own asset job, not a job "shop"
    width, height = (float(size) for size in re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups())
    assert width <= 1200 and width < height  # top to bottom: read at 100% on a laptop, scrolled down
    assert cli.main(["picture", "--format", "mermaid", "--out", str(shop["root"] / "g.mmd")], bridge) == 0
    mermaid = (shop["root"] / "g.mmd").read_text().splitlines()
    assert mermaid[0] == "flowchart LR" and "  subgraph metaflow[Metaflow]" in mermaid
    assert len([line for line in mermaid if " --> " in line]) == len(graph.edges)
    assert any('["ScoreFlow.start"]' in line for line in mermaid)


def test_show_json_is_the_same_tree_for_scripts(shop, capsys):
    bridge = shop_bridge(shop["root"])
    root = f"{shop['root']}/daily_totals.csv"
    assert cli.main(["show", "daily_totals.csv"], bridge) == 0
    printed = capsys.readouterr().out
    assert cli.main(["show", "daily_totals.csv", "--json"], bridge) == 0
    tree = json.loads(capsys.readouterr().out)
    assert (tree["name"], tree["kind"], tree["version"]) == (root, "dataset", shop["version"])

    def pairs(nodes, parent, upstream):
        for node in nodes:
            yield (node["name"], parent) if upstream else (parent, node["name"])
            yield from pairs(node["children"], node["name"], upstream)

    from_json = {*pairs(tree["upstream"], root, True), *pairs(tree["downstream"], root, False)}
    assert from_json == _tree_edges(printed, root)
    (start,) = [n for n in tree["downstream"] if n["name"] == f"{FLOW}.start"]
    assert start["last_run"]["status"] == "COMPLETE" and start["last_run"]["seconds"] >= 0
