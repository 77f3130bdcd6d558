"""Read the DataHub Lite graph back: nodes, edges, walks up and down, model versions, an SVG picture."""

from __future__ import annotations

import difflib
import html
import logging
import re
import shutil
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bridge.errors import BridgeError
from bridge.translate.naming import dataset_urn_name
from bridge.wording import plural, short, when

if TYPE_CHECKING:
    from datahub.lite.lite_local import DataHubLiteLocal

log = logging.getLogger(__name__)


class NotInGraph(LookupError, BridgeError):
    """A name the graph does not hold; the message lists close names."""


def close_names(name: str, candidates: Iterable[str], limit: int = 5) -> list[str]:
    """Candidates that look like ``name``, closest first, compared whole and by their last part.

    The last part (after ``.`` or ``/``) lets ``raw_yelow`` find ``nyc_taxi.raw_yellow`` and a run
    id find its ``TrainForecastModelFlow/<id>``.
    """
    scores: dict[str, float] = {}
    for candidate in candidates:
        for key in {candidate, _last_part(candidate)}:
            for typed in {name, _last_part(name)}:
                ratio = difflib.SequenceMatcher(None, typed, key).ratio()
                scores[candidate] = max(scores.get(candidate, 0.0), ratio)
    best = max(scores.values(), default=0.0)
    close = [c for c, score in scores.items() if score >= max(0.6, best - 0.25)]
    return sorted(close, key=lambda c: (-scores[c], c))[:limit]


def _last_part(name: str) -> str:
    return re.split(r"[./]", name.rstrip("/"))[-1]


def not_found_message(what: str, name: str, candidates: Iterable[str]) -> str:
    candidates = sorted(set(candidates))
    close = close_names(name, candidates)
    if close:
        return f"No {what} '{name}' in the lineage graph; did you mean: {', '.join(close)}?"
    return f"No {what} '{name}' in the lineage graph, nor one like it ({plural(len(candidates), 'known name')})."


@dataclass(frozen=True)
class TreeLine:
    """One line of a lineage tree: ``node`` is a direct neighbour of ``parent``, ``depth`` steps from the root."""

    depth: int
    parent: str
    node: str
    repeated: bool = False


@dataclass(frozen=True)
class RunSummary:
    """A job's last run, from its OpenLineage events."""

    status: str
    started: str
    finished: str | None
    tool_run: ToolRunName | None = None  # the run as its tool names it

    @property
    def in_its_tool(self) -> str | None:
        return self.tool_run.label() if self.tool_run else None

    @property
    def seconds(self) -> float | None:
        if self.finished is None:
            return None
        return (_moment(self.finished) - _moment(self.started)).total_seconds()

    def describe(self, brief: bool = False) -> str:
        """``last run COMPLETE, started ..., finished ... (4.7 s); Metaflow task ...``; ``brief``: ``last run COMPLETE
        2026-11-27 02:18:51Z, 4.7 s; ...``, the time it finished to the second and the tool's run id shortened."""
        tool = f"; {self.tool_run.label(brief)}" if self.tool_run else ""
        if self.finished is None:
            started = when(self.started) if brief else self.started
            return f"last run {self.status}, started {started}, not finished{tool}"
        if brief:
            return f"last run {self.status} {when(self.finished)}, {self.seconds:.1f} s{tool}"
        return f"last run {self.status}, started {self.started}, finished {self.finished} ({self.seconds:.1f} s){tool}"


@dataclass(frozen=True)
class ToolRunName:
    """A run as its tool names it, to find it there: a Dagster run (and partition) or a Metaflow run or task."""

    orchestrator: str
    run_id: str
    task: str | None = None
    partition: str | None = None

    @classmethod
    def of(
        cls, orchestrator: str | None, run_id: str | None, task: str | None, partition: str | None
    ) -> ToolRunName | None:
        """None when the lineage does not say."""
        return cls(orchestrator, run_id, task, partition) if orchestrator and run_id else None

    def label(self, brief: bool = False) -> str:
        """``Dagster run 4f3c..., partition 2025-01-01`` or ``Metaflow task TrainForecastModelFlow/12/train/5``.

        ``brief`` shortens a Dagster run id, and names a Metaflow task as Metaflow's commands take it in its flow
        (``12/train/5``); a Metaflow run's pathspec is its model version's name, kept whole."""
        tool = {"dagster": "Dagster", "metaflow": "Metaflow"}.get(self.orchestrator, self.orchestrator)
        metaflow = self.orchestrator == "metaflow"
        run = short(self.run_id) if brief and not metaflow else self.run_id
        task = self.task.split("/", 1)[1] if brief and metaflow and self.task and "/" in self.task else self.task
        said = f"{tool} task {task}" if task else f"{tool} run {run}"
        return said + (f", partition {self.partition}" if self.partition else "")


def _moment(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def _dataset_label(urn: str) -> str:
    return dataset_urn_name(urn)


def _job_io(lite: DataHubLiteLocal[Any], urn: str) -> dict[str, Any]:
    """A job's ``dataJobInputOutput`` aspect as Lite holds it: JSON, as Lite returns aspects unless asked for types."""
    aspect = (lite.get(urn, aspects=["dataJobInputOutput"]) or {}).get("dataJobInputOutput") or {}
    if not isinstance(aspect, dict):
        raise TypeError(f"DataHub Lite returned {type(aspect).__name__} as the inputs and outputs of {urn}")
    return aspect


@dataclass
class LineageGraph:
    """Datasets and jobs as nodes; an edge ``a -> b`` means b was made from (or after) a."""

    labels: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    edges: set[tuple[str, str]] = field(default_factory=set)

    @classmethod
    def from_lite(cls, lite: DataHubLiteLocal[Any]) -> LineageGraph:
        graph = cls()
        for urn in lite.list_ids():
            if urn.startswith("urn:li:dataJob:"):
                io = _job_io(lite, urn)
                graph.add(urn)
                for dataset in io.get("inputDatasets", []):
                    graph.add(dataset)
                    graph.edges.add((dataset, urn))
                for dataset in io.get("outputDatasets", []):
                    graph.add(dataset)
                    graph.edges.add((urn, dataset))
                for job in io.get("inputDatajobs", []):
                    graph.add(job)
                    graph.edges.add((job, urn))
        return graph

    def add(self, urn: str) -> None:
        if urn in self.labels:
            return
        if urn.startswith("urn:li:dataJob:"):
            flow = urn.split("(urn:li:dataFlow:(", 1)[1].split(")", 1)[0]
            tool, name, _ = flow.split(",")
            self.labels[urn] = f"{name}.{urn.rsplit(',', 1)[1].rstrip(')')}"
            self.kinds[urn] = tool
        else:
            self.labels[urn] = _dataset_label(urn)
            self.kinds[urn] = "dataset"

    def find(self, name: str) -> str:
        """A node by URN, label or label suffix (``nyc_taxi.raw_yellow``, ``TrainForecastModelFlow.load``)."""
        matches = [u for u, label in self.labels.items() if name in (u, label) or label.endswith(name)]
        if not matches:
            raise NotInGraph(not_found_message("dataset or job", name, self.labels.values()))
        return min(matches, key=lambda u: len(self.labels[u]))

    def tree(self, start: str, upstream: bool) -> list[TreeLine]:
        """The nodes reachable from ``start`` as a tree: each child is a direct neighbour of its parent.

        Depth first, children by name; a node already shown elsewhere in the tree is listed again where it
        is reached, marked ``repeated``, and not expanded a second time.
        """
        neighbours = defaultdict(list)
        for a, b in self.edges:
            neighbours[b if upstream else a].append(a if upstream else b)
        lines: list[TreeLine] = []
        shown = {start}

        def visit(node: str, depth: int) -> None:
            for child in sorted(neighbours[node], key=lambda n: self.labels[n]):
                repeated = child in shown
                lines.append(TreeLine(depth, node, child, repeated))
                if not repeated:
                    shown.add(child)
                    visit(child, depth + 1)

        visit(start, 1)
        return lines

    def without_dead_ends(self) -> LineageGraph:
        """The graph minus jobs that only read (asset checks): they clutter a picture of the flow."""
        sources = {a for a, _ in self.edges}
        dead = {u for u, kind in self.kinds.items() if kind != "dataset" and u not in sources}
        dead = {u for u in dead if not any(b == u and a.startswith("urn:li:dataJob:") for a, b in self.edges)}
        keep = {u: label for u, label in self.labels.items() if u not in dead}
        return LineageGraph(
            labels=keep,
            kinds={u: self.kinds[u] for u in keep},
            edges={(a, b) for a, b in self.edges if a in keep and b in keep},
        )

    def layers(self) -> dict[str, int]:
        """Longest-path layer of each node, so every edge points rightwards."""
        incoming = defaultdict(set)
        for a, b in self.edges:
            incoming[b].add(a)
        layer: dict[str, int] = {}

        def depth(node: str, trail: frozenset[str] = frozenset()) -> int:
            if node not in layer:
                parents = [p for p in incoming[node] if p not in trail]
                layer[node] = 1 + max((depth(p, trail | {node}) for p in parents), default=-1)
            return layer[node]

        for node in self.labels:
            depth(node)
        return layer


COLOURS = {"dataset": "#e8f1fb", "dagster": "#f3e8fd", "metaflow": "#e6f6ea"}
BOX_H, GAP_X, GAP_Y, CHAR_W = 34, 60, 14, 6.6


def short_label(graph: LineageGraph, node: str) -> str:
    """What a person reads in a picture: a table's identifier, a file dataset's last two folders, a job's
    step (the part after its parent job, without an asset key's namespace) or its flow."""
    label = graph.labels[node]
    if graph.kinds[node] == "dataset":
        return "…/" + "/".join(label.rstrip("/").split("/")[-2:]) if label.startswith("/") else label
    parent, _, leaf = label.rpartition(".")
    return leaf.rpartition("__")[2] if parent else label


def to_svg(graph: LineageGraph, title: str, highlight: set[str] | None = None) -> str:
    """The graph as a standalone SVG laid out by Graphviz ``dot``: layered left to right, jobs grouped by tool.

    Boxes show short names, the full name on hover; ``highlight`` (one version's nodes) is drawn strong and
    the rest faded. Without ``dot`` on the PATH, a plain layered layout is drawn instead.
    """
    if shutil.which("dot") is None:
        log.warning("Graphviz dot is not installed (Debian: apt-get install graphviz); drawing a plain layout")
        return _plain_svg(graph, title)
    # graphviz (the Python package) is only needed to draw; the read commands never import it.
    import graphviz

    ids = {node: f"n{number}" for number, node in enumerate(sorted(graph.labels))}
    picture = graphviz.Digraph(
        graph_attr={"rankdir": "TB", "label": title, "labelloc": "t", "fontsize": "18", "fontname": "Helvetica",
                    "nodesep": "0.2", "ranksep": "0.5", "tooltip": title, "newrank": "true"},
        node_attr={"fontname": "Helvetica", "fontsize": "11", "style": "rounded,filled", "shape": "box"},
        edge_attr={"color": "#888888", "arrowsize": "0.7"},
    )  # fmt: skip

    def add(target: Any, node: str) -> None:  # the picture or one of its clusters
        kind = graph.kinds[node]
        faded = highlight is not None and node not in highlight
        target.node(
            ids[node],
            label=short_label(graph, node),
            tooltip=graph.labels[node],
            shape="cylinder" if kind == "dataset" else "box",
            fillcolor="#f4f4f4" if faded else COLOURS.get(kind, "#eeeeee"),
            color="#cccccc" if faded else ("#d9480f" if highlight else "#777777"),
            fontcolor="#999999" if faded else "#222222",
            penwidth="2.5" if highlight and not faded else "1",
        )

    for tool in sorted({kind for kind in graph.kinds.values() if kind != "dataset"}):
        with picture.subgraph(name=f"cluster_{tool}") as cluster:
            cluster.attr(label=tool.capitalize(), style="rounded,dashed", color="#bbbbbb", fontcolor="#555555")
            jobs = defaultdict(list)  # steps by the job or flow they belong to: a box shows only the step
            for node in sorted(n for n in graph.labels if graph.kinds[n] == tool):
                jobs[graph.labels[node].rpartition(".")[0]].append(node)
            for number, (parent, nodes) in enumerate(sorted(jobs.items())):
                if not parent:
                    for node in nodes:
                        add(cluster, node)
                    continue
                with cluster.subgraph(name=f"cluster_{tool}_{number}") as job:
                    job.attr(label=parent, style="rounded", color="#dddddd", fontcolor="#555555", fontsize="10")
                    for node in nodes:
                        add(job, node)
    for node in sorted(n for n in graph.labels if graph.kinds[n] == "dataset"):
        add(picture, node)
    for a, b in sorted(graph.edges):
        strong = highlight is not None and a in highlight and b in highlight
        picture.edge(ids[a], ids[b], color="#d9480f" if strong else "#888888", penwidth="2" if strong else "1")
    svg: str = picture.pipe(format="svg").decode()
    return svg


def _plain_svg(graph: LineageGraph, title: str) -> str:
    """Boxes in longest-path layers, left to right: readable, if wide, where Graphviz is missing."""
    layers = graph.layers()
    columns = defaultdict(list)
    for node, layer in layers.items():
        columns[layer].append(node)
    box_w = max((len(short_label(graph, n)) for n in graph.labels), default=20) * CHAR_W + 20
    position = {}
    for layer, nodes in columns.items():
        for row, node in enumerate(sorted(nodes, key=lambda n: (graph.kinds[n], graph.labels[n]))):
            position[node] = (20 + layer * (box_w + GAP_X), 50 + row * (BOX_H + GAP_Y))
    width = 40 + (max(columns, default=0) + 1) * (box_w + GAP_X)
    height = 80 + max((len(n) for n in columns.values()), default=1) * (BOX_H + GAP_Y)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
        'font-family="monospace" font-size="11">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="6" markerHeight="6" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker></defs>',
        f'<text x="20" y="25" font-size="15" font-weight="bold">{html.escape(title)}</text>',
    ]
    for a, b in sorted(graph.edges):
        (x1, y1), (x2, y2) = position[a], position[b]
        parts.append(
            f'<line x1="{x1 + box_w:.0f}" y1="{y1 + BOX_H / 2}" x2="{x2}" y2="{y2 + BOX_H / 2}" '
            'stroke="#999" stroke-width="1" marker-end="url(#arrow)"/>'
        )
    for node, (x, y) in position.items():
        kind = graph.kinds[node]
        parts.append(
            f"<g><title>{html.escape(graph.labels[node])}</title>"
            f'<rect x="{x}" y="{y}" width="{box_w:.0f}" height="{BOX_H}" rx="6" '
            f'fill="{COLOURS.get(kind, "#eee")}" stroke="#888"/>'
            f'<text x="{x + 8}" y="{y + 14}" fill="#555">{kind}</text>'
            f'<text x="{x + 8}" y="{y + 27}">{html.escape(short_label(graph, node))}</text></g>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def to_mermaid(graph: LineageGraph, highlight: set[str] | None = None) -> str:
    """The graph as a Mermaid flowchart (GitHub renders it in markdown): jobs grouped by tool, datasets between.

    ``highlight`` (one version's nodes) gets a strong outline.
    """
    ids = {node: f"n{number}" for number, node in enumerate(sorted(graph.labels, key=lambda n: graph.labels[n]))}

    def node_text(node: str) -> str:
        # Mermaid has no boxes per job: a step keeps its job's name.
        whole = graph.kinds[node] != "dataset"
        label = (graph.labels[node] if whole else short_label(graph, node)).replace('"', "'")
        return f'{ids[node]}[("{label}")]' if graph.kinds[node] == "dataset" else f'{ids[node]}["{label}"]'

    lines = ["flowchart LR"]
    for tool in sorted({kind for kind in graph.kinds.values() if kind != "dataset"}):
        lines.append(f"  subgraph {tool}[{tool.capitalize()}]")
        lines += [f"    {node_text(n)}" for n in ids if graph.kinds[n] == tool]
        lines.append("  end")
    lines += [f"  {node_text(n)}" for n in ids if graph.kinds[n] == "dataset"]
    lines += [f"  {ids[a]} --> {ids[b]}" for a, b in sorted(graph.edges, key=lambda e: (ids[e[0]], ids[e[1]]))]
    if highlight:
        lines.append("  classDef version stroke:#d9480f,stroke-width:3px")
        lines.append(f"  class {','.join(sorted(ids[n] for n in highlight if n in ids))} version")
    return "\n".join(lines) + "\n"
