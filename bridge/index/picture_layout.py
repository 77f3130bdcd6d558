"""What a lineage picture shows before anything is drawn: a name for each box that no other box shares, and
rows that keep the picture within a page's width however many jobs the graph holds."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

from bridge.index.graph_view import LineageGraph

PX_PER_PT = 96 / 72  # Graphviz measures in points, a browser in CSS pixels
# Helvetica at 11 pt (a name) and 9 pt (a detail) averages under these widths a character over lineage names, so a
# row is no wider than estimated.
CHAR_PT, DETAIL_CHAR_PT, BOX_MARGIN_PT, NODE_GAP_PT = 6.6, 5.4, 24.0, 14.4
ROW_SHARE = 0.8  # of the page's width, for the boxes of a row: dot staggers rows and routes edges in the rest


@dataclass(frozen=True)
class Box:
    """A node as a picture names it: its short ``name`` over smaller ``details`` lines saying what it is: a step's
    job or flow (``Dagster job monthly_ingestion``; one line per job where several run the same step), or
    ``dataset`` where a job has the dataset's short name. ``members`` are the full names it stands for."""

    name: str
    details: tuple[str, ...] = ()
    members: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return "\n".join((self.name, *self.details))

    @property
    def width_pt(self) -> float:
        widest_detail = max((len(line) for line in self.details), default=0) * DETAIL_CHAR_PT
        return max(len(self.name) * CHAR_PT, widest_detail) + BOX_MARGIN_PT


def short_name(graph: LineageGraph, node: str) -> str:
    """What a person reads in a box: a table's identifier, a file dataset's last two folders, a job's step (the
    part after its parent job, without an asset key's namespace) or its flow."""
    label = graph.labels[node]
    if graph.kinds[node] == "dataset":
        return "…/" + "/".join(label.rstrip("/").split("/")[-2:]) if label.startswith("/") else label
    parent, _, leaf = label.rpartition(".")
    return leaf.rpartition("__")[2] if parent else label


def job_of(graph: LineageGraph, node: str) -> str:
    """The job or flow a step belongs to (``monthly_ingestion``, ``TrainForecastModelFlow``); empty for a dataset
    or a job of its own."""
    return graph.labels[node].rpartition(".")[0] if graph.kinds[node] != "dataset" else ""


def job_title(parent: str, tool: str, asset_jobs: Collection[str]) -> str:
    """A job or flow as a person knows it in its tool. ``asset_jobs`` are the names lineage gives the jobs Dagster
    makes up to run a selection of assets (named for their code location, see ``dagster_job_name``): they are
    called by the one a person sees, the UI's ``__ASSET_JOB``, not by the code location's name."""
    if tool == "metaflow":
        return f"Metaflow flow {parent}"
    if tool == "dagster":
        return "Dagster asset job __ASSET_JOB" if parent in asset_jobs else f"Dagster job {parent}"
    return f"{tool} job {parent}"


def merged_steps(graph: LineageGraph) -> tuple[LineageGraph, dict[str, tuple[str, ...]]]:
    """Steps of different jobs that run the same step on the same datasets (an asset materialized by its job and
    from the UI) as one node: the graph with each such group as its first member, and the members of every node.

    So a picture has a box per dataset and per step, not one more for every job that ran it.
    """
    inputs, outputs = defaultdict(set), defaultdict(set)
    for a, b in graph.edges:
        outputs[a].add(b)
        inputs[b].add(a)
    groups: dict[tuple[object, ...], list[str]] = defaultdict(list)
    for node in sorted(graph.labels):
        if graph.kinds[node] != "dataset" and job_of(graph, node) and (inputs[node] or outputs[node]):
            key: tuple[object, ...] = (graph.kinds[node], short_name(graph, node))
            groups[(*key, frozenset(inputs[node]), frozenset(outputs[node]))].append(node)
        else:
            groups[(node,)].append(node)
    members = {nodes[0]: tuple(nodes) for nodes in groups.values()}
    return graph.subgraph(members), members


def box_names(
    graph: LineageGraph, asset_jobs: Collection[str] = (), members: dict[str, tuple[str, ...]] | None = None
) -> dict[str, Box]:
    """A box for every node of ``graph``, or for every node ``members`` keeps (each standing for its members, see
    ``merged_steps``), no two alike: a dataset by its short name, a step by its short name over its job or flow
    (each of its members' jobs). A dataset that shares its short name with a step or another dataset says it is
    a dataset; where boxes would still read the same, each shows its whole name."""
    members = members if members is not None else {node: (node,) for node in graph.labels}

    def details(node: str) -> tuple[str, ...]:
        kind = graph.kinds[node]
        if kind == "dataset":
            return ("dataset",)
        jobs = [job_of(graph, step) for step in members[node]]
        return tuple(job_title(job, kind, asset_jobs) if job else f"{kind} job" for job in jobs)

    step_names = {short_name(graph, node) for node in members if graph.kinds[node] != "dataset"}
    # A dataset named as a step is called a dataset from the start: a cylinder alone is easy to miss.
    levels = {node: int(graph.kinds[node] == "dataset" and short_name(graph, node) in step_names) for node in members}

    def box(node: str) -> Box:
        stands_for = tuple(graph.labels[step] for step in members[node])
        if levels[node] == 0 and graph.kinds[node] == "dataset":
            return Box(short_name(graph, node), members=stands_for)
        return Box(short_name(graph, node) if levels[node] < 2 else graph.labels[node], details(node), stands_for)

    while True:
        boxes = {node: box(node) for node in members}
        sharing = defaultdict(list)
        for node, named in boxes.items():
            sharing[named.text].append(node)
        alike = [node for nodes in sharing.values() if len(nodes) > 1 for node in nodes if levels[node] < 2]
        if not alike:
            return boxes
        for node in alike:
            levels[node] += 1


def rows(graph: LineageGraph, boxes: dict[str, Box], max_width_pt: float) -> list[list[str]]:
    """The nodes in rows, top to bottom, so that every edge points down and no row is wider than the page.

    Each node sits on the row below the lowest of its parents; a node without parents just above its highest
    child (a flow's first step beside the step it leads to, not at the top of the page). A row whose boxes would
    be wider than their share of ``max_width_pt`` keeps those that fit (the ones with the most below them first)
    and moves the rest down a row, with all they lead to: the picture grows down, not across. A single box wider
    than the page keeps its row.
    """
    budget = max_width_pt * ROW_SHARE
    below = _descendant_counts(graph)
    floor = _sources_pulled_down(graph, _layers(graph, {}))
    while True:  # each turn settles the highest row that is too wide; the rows above it stay as they are
        layer = _layers(graph, floor)
        by_row: dict[int, list[str]] = defaultdict(list)
        for node, row in layer.items():
            by_row[row].append(node)
        ordered = [sorted(by_row[row], key=lambda n: (-below[n], graph.labels[n])) for row in sorted(by_row)]
        full = next((row for row in ordered if len(row) > 1 and _width_pt(row, boxes) > budget), None)
        if full is None:
            return [sorted(row, key=lambda n: (job_of(graph, n), graph.labels[n])) for row in ordered]
        kept = 1
        while kept < len(full) and _width_pt(full[: kept + 1], boxes) <= budget:
            kept += 1
        for node in full[kept:]:
            floor[node] = layer[node] + 1


def _width_pt(row: list[str], boxes: dict[str, Box]) -> float:
    return sum(boxes[node].width_pt for node in row) + NODE_GAP_PT * (len(row) - 1)


def _layers(graph: LineageGraph, floor: dict[str, int]) -> dict[str, int]:
    """Each node's row: below all its parents and at least its floor (a cycle's back edge is not followed)."""
    parents = defaultdict(set)
    for a, b in graph.edges:
        parents[b].add(a)
    layer: dict[str, int] = {}
    for start in sorted(graph.labels):
        # Iterative depth first, so a long chain of steps cannot exhaust Python's recursion limit.
        stack: list[tuple[str, frozenset[str]]] = [(start, frozenset())]
        while stack:
            node, trail = stack[-1]
            if node in layer:
                stack.pop()
                continue
            waiting = [p for p in parents[node] if p not in layer and p not in trail and p != node]
            if waiting:
                stack.extend((p, trail | {node}) for p in waiting)
                continue
            stack.pop()
            above = [layer[p] for p in parents[node] if p in layer]
            layer[node] = max(floor.get(node, 0), 1 + max(above, default=-1))
    return layer


def _sources_pulled_down(graph: LineageGraph, layer: dict[str, int]) -> dict[str, int]:
    """The lowest row each node may take: a node without parents just above its highest child, any other the top."""
    parents, children = defaultdict(set), defaultdict(set)
    for a, b in graph.edges:
        parents[b].add(a)
        children[a].add(b)
    floor: dict[str, int] = {}
    for node in graph.labels:
        if not parents[node] and children[node]:
            floor[node] = min(layer[child] for child in children[node]) - 1
    return floor


def _descendant_counts(graph: LineageGraph) -> dict[str, int]:
    children = defaultdict(set)
    for a, b in graph.edges:
        children[a].add(b)
    counts = {}
    for node in graph.labels:
        seen, todo = set(), [node]
        while todo:
            for child in children[todo.pop()]:
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        counts[node] = len(seen - {node})
    return counts
