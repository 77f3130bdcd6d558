"""The lineage graph drawn: an SVG laid out by Graphviz ``dot`` (or a plain layout without it), or Mermaid text.

The whole graph or one node's neighbourhood, by the same code: top to bottom, one box per dataset and per job
(however many runs), each named as no other box is, within a page's width.
"""

from __future__ import annotations

import html
import logging
import re
import shutil
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from bridge.index.graph_view import LineageGraph
from bridge.index.picture_layout import PX_PER_PT, Box, box_names, merged_steps, rows

log = logging.getLogger(__name__)

PAGE_WIDTH_PX = 1400  # a laptop's browser window: the whole graph, read at 100% and scrolled down
# One node's picture sits inside another page: Dagster's Markdown dialog is some 1,080 px wide in a 1,400 px window.
PANEL_WIDTH_PX = 1000
COLOURS = {"dataset": "#e8f1fb", "dagster": "#f3e8fd", "metaflow": "#e6f6ea"}
STRONG, FADED = "#d9480f", "#cccccc"
DRAWS = 4  # at most, to find rows dot lays out within the page
LINE_H, GAP_Y = 13, 36  # the plain layout's line of text and gap between rows, in pixels


def picture_file(folder: Path, name: str, suffix: str = ".svg") -> Path:
    """Where one node's picture is kept in ``folder``: its name with anything but letters, digits, ``.``, ``_``
    and ``-`` as ``_`` (``nyc_taxi.raw_yellow.svg``, ``staging_taxi.svg``)."""
    return folder / (re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") + suffix)


def to_svg(
    graph: LineageGraph,
    title: str,
    highlight: set[str] | None = None,
    focus: str | None = None,
    asset_jobs: Collection[str] = (),
    max_width_px: float = PAGE_WIDTH_PX,
) -> str:
    """The graph as a standalone SVG, at most ``max_width_px`` wide, laid out by Graphviz ``dot``.

    Rows run top to bottom; a row that would be too wide wraps onto the rows below (see ``rows``). Where
    ``dot`` still spreads the rows wider than the page, they are wrapped narrower and drawn again, a few times
    at most; what is left over is scaled down to the width. Boxes show short names, a step's over its job or
    flow (see ``box_names``), the full name on hover. ``highlight`` (one version's nodes) is drawn strong and
    the rest faded; ``focus`` (the node a neighbourhood is drawn for) is outlined. Without ``dot`` a plain
    layout of the same rows is drawn.
    """
    max_width_pt = max_width_px / PX_PER_PT
    boxed, members = merged_steps(graph)  # a node of ``boxed`` stands for its members of ``graph``
    boxes = box_names(graph, asset_jobs, members)
    strong = None if highlight is None else {node for node, steps in members.items() if highlight & set(steps)}
    outlined = next((node for node, steps in members.items() if focus in steps), None)
    if shutil.which("dot") is None:
        log.warning("Graphviz dot is not installed (Debian: apt-get install graphviz); drawing a plain layout")
        return _plain_svg(boxed, title, boxes, rows(boxed, boxes, max_width_pt), strong, outlined)
    drawing = Drawing(boxed, title, boxes, strong, outlined, max_width_pt)
    row_width_pt = max_width_pt
    for _ in range(DRAWS):
        svg = drawing.svg(rows(boxed, boxes, row_width_pt))
        laid_out = _laid_out_width_pt(svg)
        if laid_out <= max_width_pt:
            break
        row_width_pt *= max_width_pt / laid_out
    return svg


def _laid_out_width_pt(svg: str) -> float:
    """The width ``dot`` laid the picture out at, before it scaled it down to the page."""
    width = re.search(r'<svg width="([\d.]+)pt"', svg)
    scale = re.search(r'transform="scale\(([\d.]+)', svg)
    return float(width[1]) / float(scale[1]) if width and scale else 0.0


@dataclass(frozen=True)
class Drawing:
    """What ``dot`` is given for one picture, but for the rows: each draw wraps them anew."""

    graph: LineageGraph
    title: str
    boxes: dict[str, Box]
    highlight: set[str] | None
    focus: str | None
    max_width_pt: float

    def svg(self, placed: list[list[str]]) -> str:
        # graphviz (the Python package) is only needed to draw; the read commands never import it.
        import graphviz

        graph, highlight, focus = self.graph, self.highlight, self.focus
        ids = {node: f"n{number}" for number, node in enumerate(sorted(graph.labels))}
        picture = graphviz.Digraph(
            graph_attr={"rankdir": "TB", "label": self.title, "labelloc": "t", "fontsize": "16",
                        "fontname": "Helvetica", "nodesep": "0.2", "ranksep": "0.35", "tooltip": self.title,
                        "newrank": "true", "size": f"{self.max_width_pt / 72:.2f},1000"},  # scaled down, never up
            node_attr={"fontname": "Helvetica", "fontsize": "11", "style": "rounded,filled", "shape": "box"},
            edge_attr={"color": "#888888", "arrowsize": "0.7"},
        )  # fmt: skip
        for node in sorted(graph.labels):
            kind = graph.kinds[node]
            faded = highlight is not None and node not in highlight
            strong = node == focus or (highlight is not None and not faded)
            picture.node(
                ids[node],
                label=_label(self.boxes[node]),
                tooltip="\n".join(self.boxes[node].members),
                shape="cylinder" if kind == "dataset" else "box",
                fillcolor="#f4f4f4" if faded else COLOURS.get(kind, "#eeeeee"),
                color=FADED if faded else (STRONG if strong else "#777777"),
                fontcolor="#999999" if faded else "#222222",
                penwidth="3" if node == focus else ("2.5" if strong else "1"),
                **{"class": ("dataset" if kind == "dataset" else "job") + (" focus" if node == focus else "")},
            )
        for number, row in enumerate(placed):
            with picture.subgraph(name=f"row_{number}") as same:
                same.attr(rank="same")
                for node in row:
                    same.node(ids[node])
        for upper, lower in zip(placed, placed[1:], strict=False):  # rows in order even where no edge joins them
            picture.edge(ids[upper[0]], ids[lower[0]], style="invis", weight="0")
        for a, b in sorted(graph.edges):
            strong = highlight is not None and a in highlight and b in highlight
            picture.edge(ids[a], ids[b], color=STRONG if strong else "#888888", penwidth="2" if strong else "1")
        svg: str = picture.pipe(format="svg").decode()
        return svg


def _label(box: Box) -> str:
    """A box's text for Graphviz: the name, and its details on smaller lines below it."""
    if not box.details:
        return box.name.replace("\\", "\\\\")
    details = "".join(f'<BR/><FONT POINT-SIZE="9" COLOR="#555555">{html.escape(line)}</FONT>' for line in box.details)
    return f"<{html.escape(box.name)}{details}>"


def _plain_svg(
    graph: LineageGraph,
    title: str,
    boxes: dict[str, Box],
    placed: list[list[str]],
    highlight: set[str] | None,
    focus: str | None,
) -> str:
    """The same rows as plain boxes, top to bottom: readable where Graphviz is missing."""
    position: dict[str, tuple[float, float, float, float]] = {}  # left, top, width, height in pixels
    parents = defaultdict(list)
    for a, b in graph.edges:
        parents[b].append(a)

    def under_parents(node: str) -> float:  # fewer crossings: a box below the middle of its parents
        xs = [position[p][0] for p in parents[node] if p in position]
        return sum(xs) / len(xs) if xs else float("inf")

    top = 50.0
    for row in placed:
        left = 20.0
        for node in sorted(row, key=under_parents):
            width, height = boxes[node].width_pt * PX_PER_PT, LINE_H * (1 + len(boxes[node].details)) + 10
            position[node] = (left, top, width, height)
            left += width + 20
        top += max(position[node][3] for node in row) + GAP_Y
    width = max((x + w for x, _, w, _ in position.values()), default=200) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{top + 20:.0f}" '
        'font-family="Helvetica, sans-serif" font-size="11">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="6" markerHeight="6" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker></defs>',
        f'<text x="20" y="25" font-size="15" font-weight="bold">{html.escape(title)}</text>',
    ]
    for a, b in sorted(graph.edges):
        (x1, y1, w1, h1), (x2, y2, w2, _) = position[a], position[b]
        parts.append(
            f'<line x1="{x1 + w1 / 2:.0f}" y1="{y1 + h1:.0f}" x2="{x2 + w2 / 2:.0f}" y2="{y2:.0f}" '
            'stroke="#999" stroke-width="1" marker-end="url(#arrow)"/>'
        )
    for node, (x, y, w, h) in position.items():
        kind, box = graph.kinds[node], boxes[node]
        faded = highlight is not None and node not in highlight
        stroke = STRONG if node == focus or (highlight is not None and not faded) else "#888"
        sizes = [11] + [9] * len(box.details)
        texts = "".join(
            f'<text x="{x + 8:.0f}" y="{y + 16 + LINE_H * i:.0f}" font-size="{size}">{html.escape(line)}</text>'
            for i, (line, size) in enumerate(zip(box.text.splitlines(), sizes, strict=True))
        )
        parts.append(
            f'<g class="{"dataset" if kind == "dataset" else "job"}{" focus" if node == focus else ""}">'
            f"<title>{html.escape(chr(10).join(box.members))}</title>"
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{h:.0f}" rx="6" '
            f'fill="{"#f4f4f4" if faded else COLOURS.get(kind, "#eee")}" stroke="{stroke}" '
            f'stroke-width="{3 if node == focus else 1}"/>{texts}</g>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def to_mermaid(graph: LineageGraph, highlight: set[str] | None = None, focus: str | None = None) -> str:
    """The graph as a Mermaid flowchart (GitHub renders it in markdown): jobs grouped by tool, datasets between.

    ``highlight`` (one version's nodes) and ``focus`` get a strong outline.
    """
    ids = {node: f"n{number}" for number, node in enumerate(sorted(graph.labels, key=lambda n: graph.labels[n]))}
    short = box_names(graph)

    def node_text(node: str) -> str:
        # Mermaid has no boxes per job: a step keeps its job's name.
        whole = graph.kinds[node] != "dataset"
        label = (graph.labels[node] if whole else short[node].name).replace('"', "'")
        return f'{ids[node]}[("{label}")]' if graph.kinds[node] == "dataset" else f'{ids[node]}["{label}"]'

    lines = ["flowchart LR"]
    for tool in sorted({kind for kind in graph.kinds.values() if kind != "dataset"}):
        lines.append(f"  subgraph {tool}[{tool.capitalize()}]")
        lines += [f"    {node_text(n)}" for n in ids if graph.kinds[n] == tool]
        lines.append("  end")
    lines += [f"  {node_text(n)}" for n in ids if graph.kinds[n] == "dataset"]
    lines += [f"  {ids[a]} --> {ids[b]}" for a, b in sorted(graph.edges, key=lambda e: (ids[e[0]], ids[e[1]]))]
    for name, nodes in (("version", highlight or set()), ("focus", {focus} if focus else set())):
        if nodes & set(ids):
            lines.append(f"  classDef {name} stroke:{STRONG},stroke-width:3px")
            lines.append(f"  class {','.join(sorted(ids[n] for n in nodes if n in ids))} {name}")
    return "\n".join(lines) + "\n"
