"""The lineage graph of datasets and jobs, from the index or DataHub Lite: finding a node, walks up and down, a
node's neighbourhood."""

from __future__ import annotations

import difflib
import re
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bridge.errors import BridgeError
from bridge.translate.naming import dataset_urn_name
from bridge.wording import plural, short, when

if TYPE_CHECKING:
    from datahub.lite.lite_local import DataHubLiteLocal


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
    if not isinstance(aspect, dict):  # an internal invariant: Lite returns JSON unless asked for typed aspects
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
        return self.subgraph(u for u in self.labels if u not in dead)

    def subgraph(self, nodes: Iterable[str]) -> LineageGraph:
        """The graph of ``nodes`` and the edges between them."""
        keep = {u: self.labels[u] for u in nodes if u in self.labels}
        return LineageGraph(
            labels=keep,
            kinds={u: self.kinds[u] for u in keep},
            edges={(a, b) for a, b in self.edges if a in keep and b in keep},
        )

    def neighbourhood(self, node: str, hops: int) -> LineageGraph:
        """``node`` with what lies upstream and downstream of it within ``hops`` hops, and the edges between them.

        A hop leads from a dataset through the jobs between (one step, or a chain of steps) to the next dataset:
        within one hop of a table lie the jobs that wrote it and the datasets they read, the jobs that read it,
        the steps after those and the datasets they wrote. A job past the last hop is left out.
        """
        keep = {node}
        for upstream in (True, False):
            for near, hop in self._hops_from(node, upstream).items():
                if hop < hops or (hop == hops and self.kinds[near] == "dataset"):
                    keep.add(near)
        return self.subgraph(keep)

    def _hops_from(self, start: str, upstream: bool) -> dict[str, int]:
        """Each node reachable from ``start`` (one way) and the fewest datasets on a path to it, itself included."""
        neighbours = defaultdict(set)
        for a, b in self.edges:
            neighbours[b if upstream else a].add(a if upstream else b)
        hops = {start: 0}
        frontier = deque([start])
        while frontier:  # 0-1 breadth first: a job costs nothing, a dataset one hop
            node = frontier.popleft()
            for near in neighbours[node]:
                hop = hops[node] + (self.kinds[near] == "dataset")
                if hop < hops.get(near, hop + 1):
                    hops[near] = hop
                    (frontier.append if self.kinds[near] == "dataset" else frontier.appendleft)(near)
        del hops[start]
        return hops
