"""The lineage picture's layout: every box named as no other, one box per dataset and step however many runs,
versions and jobs made them, the whole graph within a laptop's window, and a node's own picture: exactly its
neighbourhood, itself outlined. Drawn by Graphviz as the command draws it, and by the plain layout without it."""

from __future__ import annotations

import json
import uuid
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bridge.cli import main as cli
from bridge.config import LineageBridge
from bridge.index import picture as picture_module
from bridge.index.graph_view import LineageGraph
from bridge.index.picture import PAGE_WIDTH_PX, PANEL_WIDTH_PX, STRONG, to_svg
from bridge.index.picture_layout import PX_PER_PT, box_names, merged_steps
from bridge.outbox.outbox import Outbox
from bridge.translate.naming import Naming

SVG, XLINK = "{http://www.w3.org/2000/svg}", "{http://www.w3.org/1999/xlink}"
GOLDEN_EVENTS = Path(__file__).parent / "golden" / "openlineage"
START = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class DrawnBox:
    classes: tuple[str, ...]
    names: tuple[str, ...]  # the full names on hover
    text: str  # what the box reads, line by line
    stroke: str


def drawn(svg: str) -> tuple[float, list[DrawnBox]]:
    """The SVG's width in CSS pixels and its boxes, as Graphviz or the plain layout drew them."""
    root = ET.fromstring(svg.encode())
    width = root.get("width", "0")
    width_px = float(width.removesuffix("pt")) * PX_PER_PT if width.endswith("pt") else float(width)
    boxes = []
    for group in root.iter(f"{SVG}g"):
        classes = tuple(group.get("class", "").split())
        if not {"dataset", "job"} & set(classes):
            continue
        link = next(group.iter(f"{SVG}a"), None)
        hover = link.get(f"{XLINK}title") if link is not None else group.findtext(f"{SVG}title")
        texts = [text.text or "" for text in group.iter(f"{SVG}text")]
        outline = next(shape for shape in group.iter() if shape.get("stroke") and shape.tag != f"{SVG}text")
        boxes.append(DrawnBox(classes, tuple(hover.split("\n")), "\n".join(texts), outline.get("stroke", "")))
    return width_px, boxes


@pytest.fixture(params=["graphviz", "plain"])
def layout(request, monkeypatch):
    """Each test draws twice: with Graphviz, and as a machine without it does."""
    if request.param == "plain":
        monkeypatch.setattr(picture_module.shutil, "which", lambda name: None)
    return request.param


def _graph(kinds: dict[str, str], edges: set[tuple[str, str]]) -> LineageGraph:
    return LineageGraph(labels={name: name for name in kinds}, kinds=kinds, edges=edges)


def colliding_graph() -> LineageGraph:
    """Short names that collide every way: a step, a dataset and a flow's step all called ``orders``; two
    folders both ``…/raw/orders``; the UI's asset job and a job running one step on different datasets; two
    jobs running the same step on the same datasets."""
    kinds = {
        "orders": "dataset",
        "/lake/a/raw/orders": "dataset",
        "/lake/b/raw/orders": "dataset",
        "shop.totals": "dataset",
        "shop.summary": "dataset",
        "daily.shop__orders": "dagster",
        "taxi_demand.shop__orders": "dagster",
        "ScoreFlow.orders": "metaflow",
        "daily.shop__summary": "dagster",
        "taxi_demand.shop__summary": "dagster",
    }
    edges = {
        ("/lake/a/raw/orders", "daily.shop__orders"),
        ("daily.shop__orders", "orders"),
        ("/lake/b/raw/orders", "taxi_demand.shop__orders"),
        ("taxi_demand.shop__orders", "orders"),
        ("orders", "ScoreFlow.orders"),
        ("ScoreFlow.orders", "shop.totals"),
        ("shop.totals", "daily.shop__summary"),
        ("shop.totals", "taxi_demand.shop__summary"),
        ("daily.shop__summary", "shop.summary"),
        ("taxi_demand.shop__summary", "shop.summary"),
    }
    return _graph(kinds, edges)


def test_no_two_boxes_read_the_same_and_each_says_what_it_is():
    graph = colliding_graph()
    pictured, members = merged_steps(graph)
    boxes = box_names(graph, asset_jobs={"taxi_demand"}, members=members)
    texts = [box.text for box in boxes.values()]
    assert len(texts) == len(set(texts)), texts
    assert boxes["orders"].text == "orders\ndataset"
    assert boxes["daily.shop__orders"].text == "orders\nDagster job daily"
    assert boxes["taxi_demand.shop__orders"].text == "orders\nDagster asset job __ASSET_JOB"
    assert boxes["ScoreFlow.orders"].text == "orders\nMetaflow flow ScoreFlow"
    # Two folders alike but for where they are: each shows its whole name.
    assert boxes["/lake/a/raw/orders"].name == "/lake/a/raw/orders"
    assert boxes["shop.totals"].text == "shop.totals"
    # The same step on the same datasets in two jobs: one box, over both jobs.
    assert "taxi_demand.shop__summary" not in pictured.labels
    assert boxes["daily.shop__summary"].text == "summary\nDagster job daily\nDagster asset job __ASSET_JOB"
    assert boxes["daily.shop__summary"].members == ("daily.shop__summary", "taxi_demand.shop__summary")


def test_the_drawn_boxes_read_as_named_and_name_every_node_on_hover(layout):
    graph = colliding_graph()
    width, boxes = drawn(to_svg(graph, "Collisions", asset_jobs={"taxi_demand"}))
    texts = [box.text for box in boxes]
    assert len(texts) == len(set(texts)) == len(graph.labels) - 1, texts  # the two summary steps share a box
    assert sorted(name for box in boxes for name in box.names) == sorted(graph.labels)
    assert "orders\nDagster asset job __ASSET_JOB" in texts and "orders\ndataset" in texts
    assert width <= PAGE_WIDTH_PX


def _dataset(name: str, version: str) -> dict:
    table = name.removeprefix("/warehouse/").replace("/", ".")
    facets: dict = {"version": {"datasetVersion": version}}
    if name.startswith("/warehouse/"):
        facets["symlinks"] = {"identifiers": [{"namespace": "iceberg", "name": table, "type": "TABLE"}]}
    return {"namespace": "file://lake", "name": name, "facets": facets}


def _run(job: str, tool: str, reads: list[dict], writes: list[dict], minute: int, after: str = "") -> list[dict]:
    run: dict = {"runId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{job}/{minute}")), "facets": {}}
    if after:  # the step before it in its flow, as a Metaflow step's run names it
        run["facets"]["jobDependencies"] = {"upstream": [{"job": {"namespace": "shop", "name": after}}]}
    facets = {"jobType": {"integration": tool.upper(), "jobType": "TASK", "processingType": "BATCH"}}
    return [
        {"eventType": state, "eventTime": (START + timedelta(minutes=minute + offset)).isoformat(), "run": run,
         "job": {"namespace": "shop", "name": job, "facets": facets}, "inputs": reads, "outputs": writes,
         "producer": "tests", "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json"}
        for state, offset in (("START", 0), ("COMPLETE", 1))
    ]  # fmt: skip


SOURCES = ("taxi", "weather", "zones", "holidays", "events")
STEPS = [  # a Dagster step per source's files and per table, as a monthly ingestion runs them
    *((f"{source}_files", [], [f"/staging/{source}"]) for source in SOURCES),
    *((f"nyc__raw_{source}", [f"/staging/{source}"], [f"/warehouse/nyc/raw_{source}"]) for source in SOURCES),
    ("nyc__actuals", ["/warehouse/nyc/raw_taxi"], ["/warehouse/nyc/actuals"]),
]
JOBS = ("monthly_ingestion", "taxi_demand", "backfill", "nightly_refresh", "zone_sensor_job")
FLOW_STEPS = ("start", "load", "train", "evaluate", "predict", "write")


def long_history(months: int = 36, trainings: int = 40) -> list[dict]:
    """Three years of every step run monthly by five jobs (its own, the UI's asset job, a backfill, a nightly
    refresh, a sensor's), a new version of every dataset each run, and forty trainings of a six-step flow."""
    events, minute = [], 0
    for month in range(months):
        for job in JOBS:
            for step, reads, writes in STEPS:
                version = f"{job}-{month}"
                events += _run(f"{job}.{step}", "dagster", [_dataset(d, version) for d in reads],
                               [_dataset(d, version) for d in writes], minute)  # fmt: skip
                minute += 2
    tables = [f"/warehouse/nyc/raw_{source}" for source in SOURCES[1:]] + ["/warehouse/nyc/actuals"]
    for training in range(trainings):
        for before, step in zip(("", *FLOW_STEPS), FLOW_STEPS, strict=False):
            reads = [_dataset(table, f"v{training}") for table in tables] if step == "load" else []
            writes = {"predict": ["/metaflow/ForecastFlow/model"], "write": ["/warehouse/nyc/forecast"]}.get(step, [])
            written = [_dataset(d, f"v{training}") for d in writes]
            events += _run(
                f"ForecastFlow.{step}", "metaflow", reads, written, minute, before and f"ForecastFlow.{before}"
            )
            minute += 2
    return events


def _bridge(root: Path, events: list[dict]) -> LineageBridge:
    bridge = LineageBridge(naming=Naming(), lineage_dir=root / "lineage", code_location="taxi_demand")
    outbox = Outbox(bridge.outbox_path)
    with outbox.queue.batch("history") as batch:
        for number, event in enumerate(events):
            batch.add(f"event-{number}", json.dumps(event))
    outbox.close()
    return bridge


def test_a_long_history_is_one_box_per_dataset_and_step_within_the_window(tmp_path, layout, capsys):
    events = long_history()
    assert len(events) > 2000
    bridge = _bridge(tmp_path, events)
    assert cli.main(["picture"], bridge) == 0
    width, boxes = drawn(bridge.picture_path.read_text())
    datasets = {d["name"] if "symlinks" not in d["facets"] else d["facets"]["symlinks"]["identifiers"][0]["name"]
                for e in events for d in (*e["inputs"], *e["outputs"])}  # fmt: skip
    steps = {e["job"]["name"] for e in events}
    # Every dataset and every job's step once on hover, whatever the runs and versions; a step run by five
    # jobs on the same datasets is one box over its five jobs.
    assert sorted(name for box in boxes for name in box.names) == sorted(datasets | steps)
    assert len(boxes) == len(datasets) + len(STEPS) + len(FLOW_STEPS)
    assert width <= PAGE_WIDTH_PX, width
    if layout == "graphviz":
        svg = bridge.picture_path.read_text()
        assert 'transform="scale(1 1)' in svg  # within the window at 100%, not shrunk to fit
    (box,) = [box for box in boxes if box.names[0] == "backfill.nyc__actuals"]
    assert box.text.splitlines() == ["actuals", "Dagster job backfill", "Dagster job monthly_ingestion",
                                     "Dagster job nightly_refresh", "Dagster asset job __ASSET_JOB",
                                     "Dagster job zone_sensor_job"]  # fmt: skip


def test_a_graph_wider_than_any_window_is_wrapped_then_scaled_to_its_width(layout):
    """Sixty sources read by one step: no row of sixty fits; the rows wrap, and what dot spreads wider still is
    scaled down to the window."""
    kinds = {f"/landing/feed_{n:02d}": "dataset" for n in range(60)} | {"ingest.load_feeds": "dagster"}
    kinds["lake.feeds"] = "dataset"
    edges = {(source, "ingest.load_feeds") for source in kinds if source.startswith("/landing")}
    edges.add(("ingest.load_feeds", "lake.feeds"))
    width, boxes = drawn(to_svg(_graph(kinds, edges), "Sixty feeds"))
    assert len(boxes) == 62 and width <= PAGE_WIDTH_PX


def within(graph: LineageGraph, start: str, hops: int) -> set[str]:
    """The neighbourhood by brute force over the edges: every simple path up from ``start`` and every one down,
    each node at the fewest datasets on a path to it (itself counted, ``start`` not); datasets within ``hops``,
    jobs before the last hop."""
    step: dict[bool, dict[str, set[str]]] = {True: defaultdict(set), False: defaultdict(set)}
    for a, b in graph.edges:
        step[True][b].add(a)
        step[False][a].add(b)
    fewest: dict[str, int] = {}

    def walk(node: str, path: frozenset[str], datasets: int, upstream: bool) -> None:
        for near in step[upstream][node] - path:
            counted = datasets + (graph.kinds[near] == "dataset")
            fewest[near] = min(fewest.get(near, counted), counted)
            walk(near, path | {near}, counted, upstream)

    for upstream in (True, False):
        walk(start, frozenset({start}), 0, upstream)
    return {start} | {
        n for n, count in fewest.items() if count < hops or (count == hops and graph.kinds[n] == "dataset")
    }


def golden_graph(tmp_path: Path) -> tuple[LineageBridge, LineageGraph]:
    events = [e["event"] for path in sorted(GOLDEN_EVENTS.glob("*.json")) for e in json.loads(path.read_text())]
    bridge = _bridge(tmp_path, events)
    from bridge.index import queries
    from bridge.index.lineage_index import LineageIndex

    outbox = Outbox(bridge.outbox_path)
    index = LineageIndex(bridge.index_path, outbox)
    with index.reading() as connection:
        graph = queries.graph(connection).without_dead_ends()
    outbox.close()
    return bridge, graph


def test_a_neighbourhood_is_exactly_what_lies_within_its_hops(tmp_path):
    _, graph = golden_graph(tmp_path)
    for node in graph.labels:
        for hops in (1, 2, 3):
            assert set(graph.neighbourhood(node, hops).labels) == within(graph, node, hops), (node, hops)
    # A table within two hops: what it is made from, what it feeds, across both tools; not its siblings.
    near = set(graph.neighbourhood("nyc_taxi.raw_yellow", 2).labels)
    assert {"/staging/taxi", "monthly_ingestion.taxi_trip_files", "TrainForecastModelFlow.load"} <= near
    assert "nyc_taxi.raw_weather" not in near and "monthly_ingestion.weather_files" not in near


def test_each_dataset_s_own_picture_is_its_neighbourhood_with_itself_outlined(tmp_path, layout, capsys):
    bridge, graph = golden_graph(tmp_path)
    assert cli.main(["picture"], bridge) == 0
    datasets = [node for node, kind in graph.kinds.items() if kind == "dataset"]
    assert f"({len(datasets)})" in capsys.readouterr().out
    for dataset in datasets:
        own = picture_module.picture_file(bridge.pictures_dir, dataset)
        width, boxes = drawn(own.read_text())
        assert sorted(name for box in boxes for name in box.names) == sorted(within(graph, dataset, 2)), dataset
        (focus,) = [box for box in boxes if "focus" in box.classes]
        assert focus.names == (dataset,) and focus.stroke == STRONG
        assert all(box.stroke != STRONG for box in boxes if box is not focus)
        assert width <= PANEL_WIDTH_PX


def test_one_node_s_picture_by_its_name_with_the_hops_asked(tmp_path, capsys):
    bridge, graph = golden_graph(tmp_path)
    assert cli.main(["picture", "TrainForecastModelFlow.load", "--hops", "1"], bridge) == 0
    printed = capsys.readouterr().out
    out = picture_module.picture_file(bridge.pictures_dir, "TrainForecastModelFlow.load")
    said = printed.split()
    assert said[:5] == ["Lineage", "picture", "of", "TrainForecastModelFlow.load:", str(out)], said
    assert "within 1 hop upstream" in printed
    _, boxes = drawn(out.read_text())
    assert sorted(name for box in boxes for name in box.names) == sorted(
        within(graph, "TrainForecastModelFlow.load", 1)
    )
    assert cli.main(["picture", "raw_yelow"], bridge) == 2
    assert "did you mean: nyc_taxi.raw_yellow" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="2"):
        cli.main(["picture", "nyc_taxi.raw_yellow", "--hops", "0"], bridge)
    assert "a picture reaches at least 1 hop" in capsys.readouterr().err
