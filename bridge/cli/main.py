"""The bridge's command line: each command's work (the arguments are read in bridge.cli.arguments)."""

from __future__ import annotations

import argparse
import json
import logging
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from bridge.cli.arguments import NEIGHBOURHOOD_HOPS, parser
from bridge.cli.commands import (
    UsageError,
    damaged_outbox,
    dead_letters,
    discard,
    lineage_pass,
    lineage_status,
    open_outbox,
    rebuild,
    retry,
    say,
    watch_lineage,
)
from bridge.config import LineageBridge
from bridge.errors import BridgeError
from bridge.index import queries, views
from bridge.index.graph_view import LineageGraph, NotInGraph, RunSummary, not_found_message
from bridge.index.lineage_index import LineageIndex
from bridge.index.model_versions import (
    Source,
    TrainedVersion,
    differences,
    find_version,
    learned,
    trained_versions,
    with_provenance,
)
from bridge.index.picture import PANEL_WIDTH_PX, picture_file, to_mermaid, to_svg
from bridge.outbox.outbox import Outbox
from bridge.redaction import redact
from bridge.run.unseen import unseen_line, unseen_runs
from bridge.translate.naming import NotNamed
from bridge.wording import matching, plural, short, when

SHORTENED = "(hashes, snapshot ids and run ids shortened; --json has them whole)"


@contextmanager
def _reading(bridge: LineageBridge) -> Iterator[sqlite3.Connection]:
    """The lineage index, brought up to date with the outbox; an empty lineage is a usage error."""
    if not bridge.outbox_path.exists():
        raise UsageError(f"No lineage yet in {bridge.lineage_dir}; {bridge.how_to_fill_graph}")
    outbox = open_outbox(bridge)
    try:
        behind = unseen_line(unseen_runs(bridge), bridge.repair_command)
        if behind:
            print(behind, file=sys.stderr)
        index = _caught_up(bridge, outbox)
        with index.reading() as connection:
            yield connection
    finally:
        outbox.close()


def _caught_up(bridge: LineageBridge, outbox: Outbox) -> LineageIndex:
    """The index, rebuilt from the outbox when its file is damaged: it holds nothing the outbox does not."""
    try:
        index = LineageIndex(bridge.index_path, outbox)
        index.catch_up()
    except sqlite3.DatabaseError as err:
        logging.getLogger(__name__).warning("Rebuilding the lineage index %s (%s)", bridge.index_path, err)
        for suffix in ("", "-wal", "-shm"):
            bridge.index_path.with_name(bridge.index_path.name + suffix).unlink(missing_ok=True)
        try:
            index = LineageIndex(bridge.index_path, outbox)
            index.catch_up()
        except sqlite3.DatabaseError as again:
            raise damaged_outbox(bridge, again) from again
    return index


def _graph(connection: sqlite3.Connection, bridge: LineageBridge) -> LineageGraph:
    graph = queries.graph(connection)
    if not graph.labels:
        raise UsageError(f"The lineage holds no jobs yet; {bridge.how_to_fill_graph}")
    return graph


def _describe(graph: LineageGraph, node: str, runs: dict[str, RunSummary], versions: dict[str, str]) -> str:
    label, kind = graph.labels[node], graph.kinds[node]
    if kind == "dataset":
        version = versions.get(label)
        return f"{label}  [dataset" + (f", version {short(version)}]" if version else "]")
    run = runs.get(label)
    return f"{label}  [{kind} job" + (f"; {run.describe(brief=True)}]" if run else "; no run yet]")


def _node_json(graph: LineageGraph, node: str, runs: dict[str, RunSummary], versions: dict[str, str]) -> dict[str, Any]:
    label, kind = graph.labels[node], graph.kinds[node]
    if kind == "dataset":
        return {"name": label, "kind": "dataset", "version": versions.get(label)}
    run = runs.get(label)
    last = None
    if run:
        last = {"status": run.status, "started": run.started, "finished": run.finished, "seconds": run.seconds}
        last["in_its_tool"] = run.in_its_tool
    return {"name": label, "kind": f"{kind} job", "last_run": last}


def _tree_json(
    graph: LineageGraph, node: str, upstream: bool, runs: dict[str, RunSummary], versions: dict[str, str]
) -> list[dict[str, Any]]:
    """The tree as nested nodes; a node already shown is listed with ``"repeated": true`` and no children."""
    children: dict[str, list[dict[str, Any]]] = {node: []}
    for line in graph.tree(node, upstream):
        entry = {**_node_json(graph, line.node, runs, versions), "repeated": line.repeated, "children": []}
        children[line.parent].append(entry)
        if not line.repeated:
            children[line.node] = entry["children"]
    return children[node]


def show(
    bridge: LineageBridge, name: str, as_json: bool = False, direct: bool = False, every_column: bool = False
) -> int:
    with _reading(bridge) as connection:
        graph = _graph(connection, bridge)
        found = _node_or_column(connection, graph, name)
        if found[1] is not None:
            return show_column(connection, *found[1], None, as_json, direct, every_column)
        node = found[0]
        runs, versions = queries.last_runs(connection), queries.current_versions(connection)
        upstream_count, downstream_count = queries.reach(connection, node)
    if as_json:
        tree = {
            **_node_json(graph, node, runs, versions),
            "upstream": _tree_json(graph, node, True, runs, versions),
            "downstream": _tree_json(graph, node, False, runs, versions),
        }
        print(json.dumps(tree, indent=2))
        return 0
    say(_describe(graph, node, runs, versions))
    say(f"  {plural(upstream_count, 'dataset and job', 'datasets and jobs')} upstream, {downstream_count} downstream")
    for title, upstream, arrow in (("upstream", True, "<-"), ("downstream", False, "->")):
        lines = graph.tree(node, upstream)
        say("", f'{title} ({arrow} reads as "{"is made from" if upstream else "feeds"}"):')
        if not lines:
            say("  (nothing)")
        for line in lines:
            seen = "  (shown above)" if line.repeated else ""
            say(f"  {'   ' * (line.depth - 1)}{arrow} {_describe(graph, line.node, runs, versions)}{seen}")
    say(SHORTENED)
    return 0


def _node_or_column(
    connection: sqlite3.Connection, graph: LineageGraph, name: str
) -> tuple[str, None] | tuple[None, tuple[str, str]]:
    """A node of the graph, or else ``(dataset, column)`` for ``DATASET.COLUMN``; neither is a usage error."""
    try:
        return graph.find(name), None
    except NotInGraph as err:
        column = _column_of(connection, graph, name)
        if column is None:
            raise UsageError(str(err)) from err
        return None, column


def _column_of(connection: sqlite3.Connection, graph: LineageGraph, name: str) -> tuple[str, str] | None:
    """``(dataset, column)`` when ``name`` is ``DATASET.COLUMN``; a known dataset with an unknown column is an error."""
    dataset_name, _, column = name.rpartition(".")
    if not dataset_name:
        return None
    try:
        dataset = graph.find(dataset_name)
    except NotInGraph:
        return None
    known = queries.columns_of(connection, dataset)
    if column not in known:
        what = f"column of {dataset} with column lineage"
        raise UsageError(not_found_message(what, column, known) if known else f"{dataset} has no column lineage yet")
    return dataset, column


def show_column(
    connection: sqlite3.Connection,
    dataset: str,
    column: str,
    version: str | None,
    as_json: bool,
    direct: bool = False,
    every_column: bool = False,
) -> int:
    tree = queries.column_tree(connection, dataset, column, version, direct_only=direct)
    if as_json:
        print(json.dumps(tree.to_json(), indent=2))
        return 0
    say(f"{tree.name}  [version {short(tree.version)}]" if tree.version else tree.name)
    say('upstream columns (<- reads as "is computed from"; DIRECT: from its values, INDIRECT: decides the rows):')
    lines = views.column_lines(tree, every_column)
    say(*(line.text() for line in lines))
    if not tree.origins:
        say("  (nothing recorded)")
    if any(len(line.columns) > 1 for line in lines):
        say("(columns of one file read the same way are one line; --all lists each)")
    say(SHORTENED)
    return 0


def _trained(connection: sqlite3.Connection, bridge: LineageBridge) -> list[TrainedVersion]:
    """Every model version, each partition it read traced to the run that wrote it and its source files."""

    @cache  # model versions share most of their months: each is traced once
    def provenance(dataset: str, version: str) -> tuple[queries.Run | None, tuple[Source, ...]]:
        tree = queries.version_tree(connection, dataset, version)
        return tree.written_by, tuple(Source(n.dataset, n.version) for n in tree.sources() if n is not tree)

    found = trained_versions(queries.trained_events(connection), bridge.model_candidate_param, bridge.model_targets)
    return [with_provenance(version, provenance) for version in found]


def _model_version(versions: list[TrainedVersion], wanted: str) -> TrainedVersion:
    found = find_version(versions, wanted)
    if found is None:
        raise UsageError(not_found_message("model version", wanted, [v.version for v in versions]))
    return found


def _metrics(version: TrainedVersion) -> str:
    return ", ".join(f"{name}={value:g}" for name, value in version.metrics.items()) or "none recorded"


def _live(figures: Mapping[str, float] | None) -> str:
    if not figures:
        return "not scored yet (no forecast of it has published actuals)"
    return ", ".join(f"{name}={value:g}" for name, value in figures.items())


def live_changes(before: TrainedVersion, after: TrainedVersion, live: Mapping[str, Mapping[str, float]]) -> list[str]:
    """How the live figures moved from ``before`` to ``after``, figure by figure (each as scored so far)."""
    old, new = live.get(before.version) or {}, live.get(after.version) or {}
    if not old and not new:
        return []
    if not old or not new:
        return [f"live accuracy: {before.version}: {_live(old)}; {after.version}: {_live(new)}."]
    moved = [f"{name} {old[name]:g} -> {new[name]:g}" for name in new if name in old and old[name] != new[name]]
    return [f"live accuracy: {', '.join(moved) or 'unchanged'}."]


def model_lines(version: TrainedVersion, live: Mapping[str, float] | None = None) -> list[str]:
    """One model version for a person: which candidate, its features, when, what it read, its metrics."""
    lines = [
        f"{version.version}  {learned(version, brief=True)}",
        f"  trained by {version.job} run {short(version.run_id)}, finished {when(version.trained_at)}",
    ]
    for dataset in version.inputs:
        lines.append(f"  input {dataset.name}" + (f" @ {short(dataset.version)}" if dataset.version else ""))
        for part in dataset.partitions:
            rows = f", {plural(part.rows, 'row')}" if part.rows is not None else ""
            lines.append(f"    [{part.partition}] @ {short(part.version)}{rows}, from {part.built_from(brief=True)}")
    if version.targets:
        lines.append(f"  learned to predict: {', '.join(c for cs in version.targets.values() for c in cs)}")
    if version.input_columns:
        lines.append(f"  input columns: {', '.join(sorted(version.input_columns))}")
    lines.append(f"  metrics: {_metrics(version)}")
    lines.append(f"  live: {_live(live)}")
    return lines


def model(bridge: LineageBridge, version: str | None, as_json: bool) -> int:
    with _reading(bridge) as connection:
        versions = _trained(connection, bridge)
    chosen = [_model_version(versions, version)] if version else versions
    live = bridge.live_accuracy() if bridge.live_accuracy and versions else {}
    if as_json:
        print(json.dumps([v.to_json() | {"live": dict(live.get(v.version) or {})} for v in chosen], indent=2))
        return 0
    if not versions:
        say(f"No model versions in the lineage yet; {bridge.how_to_fill_graph}.")
        return 0
    for found in chosen:
        say(*model_lines(found, live.get(found.version)))
    say(SHORTENED)
    return 0


def diff(bridge: LineageBridge, first: str, second: str, as_json: bool) -> int:
    with _reading(bridge) as connection:
        if "@" in first and "@" in second:
            return _diff_dataset_versions(connection, first, second, as_json)
        versions = _trained(connection, bridge)
    before, after = _model_version(versions, first), _model_version(versions, second)
    if before.trained_at > after.trained_at:
        before, after = after, before
    live = bridge.live_accuracy() if bridge.live_accuracy else {}
    if as_json:
        changes = differences(before, after) + live_changes(before, after, live)
        print(json.dumps({"from": before.to_json(), "to": after.to_json(), "changes": changes}, indent=2))
        return 0
    say(
        f"From {before.version} (trained {when(before.trained_at)})",
        f"  to {after.version} (trained {when(after.trained_at)}):",
    )
    say(*(f"  {line}" for line in differences(before, after, brief=True) + live_changes(before, after, live)))
    say(SHORTENED)
    return 0


def _dataset_version_arg(connection: sqlite3.Connection, text: str) -> tuple[str, str]:
    name, _, version = text.rpartition("@")
    graph = queries.graph(connection)
    try:
        dataset = graph.find(name)
    except NotInGraph as err:
        raise UsageError(str(err)) from err
    known = queries.versions_of(connection, dataset)
    found = matching(version, known)
    if found is None:
        raise UsageError(not_found_message(f"version of {dataset}", version, known))
    return dataset, found


def _diff_dataset_versions(connection: sqlite3.Connection, first: str, second: str, as_json: bool) -> int:
    """Two versions of one table by content: the partitions that differ and from what, then what their writers
    read; of two datasets, what each version's writer read."""
    (dataset_a, version_a), (dataset_b, version_b) = (
        _dataset_version_arg(connection, each) for each in (first, second)
    )
    if dataset_a == dataset_b and versions_of_order(connection, dataset_a, version_a, version_b) > 0:
        (dataset_a, version_a), (dataset_b, version_b) = (dataset_b, version_b), (dataset_a, version_a)
    before, after = (
        queries.version_tree(connection, dataset_a, version_a),
        queries.version_tree(connection, dataset_b, version_b),
    )
    columns = queries.column_lineage_of(connection, before), queries.column_lineage_of(connection, after)
    held = (
        (queries.contents_at(connection, dataset_a, version_a), queries.contents_at(connection, dataset_b, version_b))
        if dataset_a == dataset_b
        else None
    )
    if as_json:
        changes = (views.contents_differences(*held) if held else []) + views.version_differences(
            before, after, *columns
        )
        contents = (
            {
                "partitions": {
                    "from": [write.to_json() for write in held[0].values()],
                    "to": [write.to_json() for write in held[1].values()],
                }
            }
            if held
            else {}
        )
        print(json.dumps({"from": before.to_json(), "to": after.to_json(), **contents, "changes": changes}, indent=2))
        return 0
    say(f"From {before.dataset} @ {short(before.version)} to {after.dataset} @ {short(after.version)}:")
    partitions = views.contents_differences(*held, brief=True) if held else []
    if partitions:
        say(*(f"  {line}" for line in partitions), "  Their writers:")
    say(*(f"  {line}" for line in views.version_differences(before, after, *columns, brief=True)))
    say(SHORTENED)
    return 0


def versions_of_order(connection: sqlite3.Connection, dataset: str, first: str, second: str) -> int:
    """Negative when ``first`` was written before ``second``, positive after, 0 for the same version."""
    known = queries.versions_of(connection, dataset)
    return known.index(first) - known.index(second)


def _resolve_version(
    connection: sqlite3.Connection, bridge: LineageBridge, dataset: str, wanted: str
) -> tuple[str, TrainedVersion | None]:
    """A version of ``dataset``: given whole or shortened, or the one written by the run that trained model version
    ``wanted``."""
    found = matching(wanted, queries.versions_of(connection, dataset))
    if found is not None:
        return found, None
    trained = find_version(_trained(connection, bridge), wanted)
    if trained is not None:
        written = queries.written_by_run(connection, trained.run_id, dataset)
        if written is not None:
            return written, trained
        msg = f"Model version {trained.version} was trained by a run that did not write {dataset}"
        raise UsageError(msg + f"; it wrote: {', '.join(queries.outputs_of_run(connection, trained.run_id))}")
    candidates = [*queries.versions_of(connection, dataset), *(v.version for v in _trained(connection, bridge))]
    raise UsageError(not_found_message(f"version of {dataset} or model version", wanted, candidates))


def show_version(
    bridge: LineageBridge,
    name: str,
    wanted: str,
    as_json: bool = False,
    direct: bool = False,
    every_column: bool = False,
) -> int:
    """The lineage of one dataset version (or of what one model version's run wrote), exactly as each run read it."""
    with _reading(bridge) as connection:
        graph = _graph(connection, bridge)
        found = _node_or_column(connection, graph, name)
        if found[1] is not None:
            version, _ = _resolve_version(connection, bridge, found[1][0], wanted)
            return show_column(connection, *found[1], version, as_json, direct, every_column)
        dataset = found[0]
        version, trained = _resolve_version(connection, bridge, dataset, wanted)
        tree = queries.version_tree(connection, dataset, version)
    if as_json:
        print(json.dumps({"model_version": trained and trained.to_json(), "tree": tree.to_json()}, indent=2))
        return 0
    if trained is not None:
        say(f"Model {trained.model} {trained.version}  {learned(trained, brief=True)}")
        say(f"  trained by {trained.job} run {short(trained.run_id)}; metrics: {_metrics(trained)}")
    say('(<- reads as "was made from"; each version as the run that wrote it read it)')
    say(*views.version_lines(tree))
    say(SHORTENED)
    return 0


def picture(
    bridge: LineageBridge,
    out: Path | None,
    title: str,
    form: str,
    version: str | None = None,
    name: str | None = None,
    hops: int = NEIGHBOURHOOD_HOPS,
) -> int:
    """The whole graph and each dataset's own picture; or, for ``name``, that node's picture alone."""
    with _reading(bridge) as connection:
        graph = _graph(connection, bridge)
        highlight = _highlight(connection, bridge, graph, version) if version else None
    if name is not None:
        return _node_picture(bridge, graph, _picture_node(bridge, graph, name), out, form, hops, highlight)
    pictured = graph.without_dead_ends()
    suffix = ".svg" if form == "svg" else ".mmd"
    path = out or bridge.picture_path.with_suffix(suffix)
    path.parent.mkdir(parents=True, exist_ok=True)
    if form == "svg":
        path.write_text(to_svg(pictured, title, highlight, asset_jobs=bridge.asset_jobs))
    else:
        path.write_text(to_mermaid(pictured, highlight))
    say(
        f"Lineage picture: {path}",
        f"  {len(pictured.labels)} of {plural(len(graph.labels), 'node')}, asset-check jobs left out; "
        + _how_to_open(form),
    )
    datasets = sorted(node for node, kind in pictured.kinds.items() if kind == "dataset")
    bridge.pictures_dir.mkdir(parents=True, exist_ok=True)
    for node in datasets:
        drawn, _ = _neighbourhood_picture(bridge, pictured, node, hops, form, None)
        picture_file(bridge.pictures_dir, pictured.labels[node], suffix).write_text(drawn)
    say(f"Each dataset's own picture (its lineage within {hops} hops): {bridge.pictures_dir} ({len(datasets)})")
    return 0


def _node_picture(
    bridge: LineageBridge,
    graph: LineageGraph,
    node: str,
    out: Path | None,
    form: str,
    hops: int,
    highlight: set[str] | None,
) -> int:
    # Asset-check jobs are left out as in the whole picture, unless one is what was asked for.
    pictured = graph.without_dead_ends()
    pictured = pictured if node in pictured.labels else graph
    path = out or picture_file(bridge.pictures_dir, graph.labels[node], ".svg" if form == "svg" else ".mmd")
    drawn, near = _neighbourhood_picture(bridge, pictured, node, hops, form, highlight)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(drawn)
    within = f"within {plural(hops, 'hop')} upstream and downstream"
    shown = f"{len(near.labels)} of {plural(len(pictured.labels), 'node')}, {within}"
    say(f"Lineage picture of {graph.labels[node]}: {path}", f"  {shown}; {_how_to_open(form)}")
    return 0


def _how_to_open(form: str) -> str:
    return "open it in a browser" if form == "svg" else "paste it into a ```mermaid block in markdown"


def _neighbourhood_picture(
    bridge: LineageBridge, graph: LineageGraph, node: str, hops: int, form: str, highlight: set[str] | None
) -> tuple[str, LineageGraph]:
    """``node`` and what lies within ``hops`` of it upstream and downstream, ``node`` outlined: the picture and
    the nodes it shows."""
    near = graph.neighbourhood(node, hops)
    if form != "svg":
        return to_mermaid(near, highlight, focus=node), near
    title = f"{graph.labels[node]}: lineage within {hops} hops"
    return to_svg(near, title, highlight, node, bridge.asset_jobs, max_width_px=PANEL_WIDTH_PX), near


def _picture_node(bridge: LineageBridge, graph: LineageGraph, name: str) -> str:
    """A node by its name, a Dagster asset key (``nyc_taxi/raw_yellow``, ``taxi_trip_files``: the dataset the
    naming policy names it), or the end of its name (``raw_yellow``)."""
    if name in graph.labels:
        return name
    try:
        dataset = bridge.translation.asset_dataset(name.split("/"))
    except NotNamed:
        pass
    else:
        if (dataset.catalog_name or dataset.name) in graph.labels:
            return dataset.catalog_name or dataset.name
    try:
        return graph.find(name)
    except NotInGraph as err:
        raise UsageError(str(err)) from err


def _highlight(connection: sqlite3.Connection, bridge: LineageBridge, graph: LineageGraph, wanted: str) -> set[str]:
    """The nodes of one model version: what its run's steps read and wrote, and the steps themselves."""
    trained = _model_version(_trained(connection, bridge), wanted)
    nodes: set[str] = set()
    for step, reads, writes in queries.run_steps(connection, trained.run_id):
        nodes.add(step.job)
        nodes.update(dataset for dataset, _ in (*reads, *writes))
    nodes.update(i.name for i in trained.inputs)
    return {node for node in nodes if node in graph.labels}


def main(argv: list[str] | None, bridge: LineageBridge, prog: str = "lineage", title: str = "Lineage") -> int:
    """Run one command for ``bridge``; returns the exit status (2 for a usage error)."""
    return run(parser(prog).parse_args(argv), bridge, prog, title)


def run(args: argparse.Namespace, bridge: LineageBridge, prog: str = "lineage", title: str = "Lineage") -> int:
    """Run the command ``args`` (parsed by :func:`~bridge.cli.arguments.parser`) for ``bridge``."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "show" and args.version:
            return show_version(bridge, args.name, args.version, args.json, args.direct, args.all)
        if args.command == "show":
            return show(bridge, args.name, args.json, args.direct, args.all)
        if args.command == "model":
            return model(bridge, args.version, args.json)
        if args.command == "diff":
            return diff(bridge, args.first, args.second, args.json)
        if args.command == "picture":
            return picture(bridge, args.out, title, args.format, args.version, args.name, args.hops)
        if args.command == "watch":
            return watch_lineage(bridge, args.interval, args.while_sensor_ticks, args.started_by)
        if args.command == "dead-letters":
            return dead_letters(bridge, args.json)
        if args.command == "retry":
            return retry(bridge, args.ids, args.all)
        if args.command == "discard":
            return discard(bridge, args.ids, args.all)
        if args.command == "status":
            return lineage_status(bridge, args.json)
        if args.command == "rebuild":
            return rebuild(bridge, args.what, lambda: lineage_pass(bridge, wait=bridge.pass_seconds))
        return lineage_pass(bridge, getattr(args, "wait", 10.0))
    except UsageError as err:
        print(f"{prog} {args.command or 'pass'}: error: {err}", file=sys.stderr)
        return 2
    except BridgeError as err:  # the bridge's own errors name what to fix: one line, no traceback
        print(f"{prog} {args.command or 'pass'}: {redact(str(err))}", file=sys.stderr)
        return 1
